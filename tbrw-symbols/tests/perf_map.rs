//! perf maps (`/tmp/perf-<pid>.map`) as a module's symbols: found as ELF
//! files are (under the symfs first, then the path, then the search
//! paths), addresses absolute, what is missing said once; read as
//! untrusted input (no link followed, no FIFO or device read, another
//! user's map refused, bounded in bytes and lines).

use tbrw_symbols::MapLimit;
use tbrw_symbols::{
    Config, JitMaps, KernelSymbols, Mapping, ModuleInfo, ModuleSpec, SymbolSource, Symbolizer, Unknown, Warning,
};

const MAP: &str = "7f0000001000 40 LazyCompile:~add /app.js:3\n7f0000002000 10 Builtin: ArgumentsAdaptorTrampoline\n";

fn config() -> Config {
    Config { kernel: KernelSymbols::Off, ..Config::default() }
}

fn spec() -> ModuleSpec {
    // A perf import's JIT module: its mapping's file offset is no use.
    ModuleSpec::new("/tmp/perf-4242424.map", Mapping::LoadBase { load_base: 0 })
}

#[test]
fn a_perf_map_under_the_symfs_or_a_search_path_names_jit_code() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("tmp")).unwrap();
    std::fs::write(root.path().join("tmp/perf-4242424.map"), MAP).unwrap();
    let mut s = Symbolizer::new(Config { symfs: Some(root.path().to_path_buf()), ..config() });
    let id = s.add_module(spec());
    let info = s.module_info(id).unwrap();
    assert_eq!(info.symbols, Some(SymbolSource::PerfMap));
    assert_eq!((info.symbol_count, info.dwarf), (2, false));
    assert_eq!(info.file, root.path().join("tmp/perf-4242424.map"));
    let hit = s.symbolize(id, 0x7f00_0000_1010);
    assert_eq!((hit.function.as_deref(), hit.offset), (Some("LazyCompile:~add /app.js:3"), Some(0x10)));
    assert_eq!(s.symbolize(id, 0x7f00_0000_2000).function.as_deref(), Some("Builtin: ArgumentsAdaptorTrampoline"));
    // Between and past the symbols: no symbol there.
    assert_eq!(s.symbolize(id, 0x7f00_0000_1040).unknown, Some(Unknown::NoSymbolAt));

    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("perf-4242424.map"), MAP).unwrap();
    let mut s = Symbolizer::new(Config { search_paths: vec![other.path().to_path_buf()], ..config() });
    let id = s.add_module(spec());
    assert_eq!(s.symbolize(id, 0x7f00_0000_103f).function.as_deref(), Some("LazyCompile:~add /app.js:3"));
}

#[test]
fn a_missing_perf_map_says_where_it_was_looked_for() {
    let root = tempfile::tempdir().unwrap();
    let mut s = Symbolizer::new(Config { symfs: Some(root.path().to_path_buf()), ..config() });
    let id = s.add_module(spec());
    match s.module_info(id) {
        Err(Unknown::NotFound { tried }) => {
            assert_eq!(tried, [root.path().join("tmp/perf-4242424.map"), "/tmp/perf-4242424.map".into()]);
        }
        other => panic!("{other:?}"),
    }
    assert!(s.symbolize(id, 0x7f00_0000_1010).function.is_none());
}

/// Runs `f` on a thread of its own and gives its answer, or fails the
/// test when it has none within `secs` seconds (a read that spins or
/// blocks would otherwise hang the run).
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs)).unwrap_or_else(|_| panic!("{what}: no answer in {secs} s"))
}

/// The symfs `root` with `tmp/` made, for a map at `tmp/perf-4242424.map`.
fn symfs() -> (tempfile::TempDir, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("tmp")).unwrap();
    let map = root.path().join("tmp/perf-4242424.map");
    (root, map)
}

/// What module info says for the map under `root` with `jit_maps`.
fn info_under(root: &std::path::Path, jit_maps: JitMaps) -> Result<ModuleInfo, Unknown> {
    let root = root.to_path_buf();
    within(10, "module_info", move || {
        let mut s = Symbolizer::new(Config { symfs: Some(root), jit_maps, ..config() });
        let id = s.add_module(spec());
        s.module_info(id)
    })
}

#[test]
fn a_map_that_is_a_link_to_dev_zero_is_not_read() {
    let (root, map) = symfs();
    std::os::unix::fs::symlink("/dev/zero", &map).unwrap();
    match info_under(root.path(), JitMaps::default()) {
        Err(e @ Unknown::LinkRefused { .. }) => {
            assert_eq!(e, Unknown::LinkRefused { path: map.clone() });
            assert!(e.to_string().ends_with("a symbolic link, not followed"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // Trusted, the link is followed, and what it reaches is no regular file.
    match info_under(root.path(), JitMaps { trust: true, ..JitMaps::default() }) {
        Err(Unknown::Unreadable { message, .. }) => assert!(message.contains("character device"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_fifo_as_map_does_not_block_and_is_not_read() {
    let (root, map) = symfs();
    let c = std::ffi::CString::new(map.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "{}", std::io::Error::last_os_error());
    match info_under(root.path(), JitMaps { trust: true, ..JitMaps::default() }) {
        Err(Unknown::Unreadable { message, .. }) => assert!(message.contains("FIFO"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_map_of_another_user_is_not_trusted_unless_asked() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return eprintln!("note: skipped: giving a map to another user (chown) needs root");
    }
    let (root, map) = symfs();
    std::fs::write(&map, MAP).unwrap();
    std::os::unix::fs::chown(&map, Some(65534), Some(65534)).unwrap();
    match info_under(root.path(), JitMaps::default()) {
        Err(e @ Unknown::Untrusted { owner: 65534, user: 0, .. }) => {
            // The library's words name no option: the command line adds it.
            assert!(e.to_string().ends_with("not trusted, as perf does not trust it"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    let info = info_under(root.path(), JitMaps { trust: true, ..JitMaps::default() }).unwrap();
    assert_eq!(info.symbol_count, 2);
}

#[test]
fn a_map_past_its_bounds_is_cut_with_a_warning() {
    let (root, map) = symfs();
    std::fs::write(&map, MAP).unwrap();
    let info = info_under(root.path(), JitMaps { max_lines: 1, ..JitMaps::default() }).unwrap();
    assert_eq!(info.symbol_count, 1);
    assert_eq!(info.warnings, [Warning::PerfMapCut { path: map.clone(), limit: MapLimit::Lines(1), symbols: 1 }]);
    assert!(info.warnings[0].to_string().contains("longer than 1 lines"), "{}", info.warnings[0]);
    let info = info_under(root.path(), JitMaps { max_bytes: 50, ..JitMaps::default() }).unwrap();
    assert_eq!(info.warnings, [Warning::PerfMapCut { path: map.clone(), limit: MapLimit::Bytes(50), symbols: 1 }]);
    // Within both: no warning.
    assert_eq!(info_under(root.path(), JitMaps::default()).unwrap().warnings, []);
}

/// A 10 M-line map read with the default bounds: cut at 4 Mi lines. A
/// measurement (`cargo test --release -p tbrw-symbols --test perf_map --
/// --ignored`, under `/usr/bin/time -v` for the peak), not a CI test.
#[test]
#[ignore]
fn ten_million_lines_are_cut_at_the_bound() {
    use std::io::Write;
    let (root, map) = symfs();
    let mut w = std::io::BufWriter::new(std::fs::File::create(&map).unwrap());
    for i in 0..10_000_000u64 {
        writeln!(w, "{:x} 10 LazyCompile:~f{i} /app.js:{}", 0x1000_0000_0000 + i * 16, i % 1000).unwrap();
    }
    drop(w);
    let t = std::time::Instant::now();
    let info = info_under(root.path(), JitMaps::default()).unwrap();
    eprintln!("{} symbols in {:?}, {:?}", info.symbol_count, t.elapsed(), info.warnings);
    assert_eq!(info.symbol_count, JitMaps::MAX_LINES as usize);
}
