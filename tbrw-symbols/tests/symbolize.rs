//! End-to-end symbolization of programs built here with `cc -g`: the three
//! address translations on a PIE, a shared library, a non-PIE and a static
//! executable; separate debug files; the file search; every reason an
//! address stays unknown; and bad input.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{build, build_id, have, is_exec, loads, run, symbol, CALL_LINE, INNER_LINE};
use tbrw_symbols::{
    BuildId, Config, IndexedSymbol, KernelSymbols, Mapping, ModuleSpec, RecentSymbols, SymbolRef, SymbolSource,
    Symbolized, Symbolizer, Unknown,
};

const PAGE: u64 = 4096;

fn config() -> Config {
    // Keep the machine's own debug directory out of the tests.
    Config { debug_dirs: Vec::new(), kernel: KernelSymbols::Off, ..Config::default() }
}

fn symbolize(config: Config, spec: ModuleSpec, pc: u64) -> Arc<Symbolized> {
    let mut s = Symbolizer::new(config);
    let id = s.add_module(spec);
    s.symbolize(id, pc)
}

/// The three mappings of `path` loaded at `base` (0 for `ET_EXEC`), each with
/// the pc that `vaddr` has under it.
fn mappings(path: &Path, vaddr: u64) -> Vec<(&'static str, Mapping, u64)> {
    let base = if is_exec(path) { 0 } else { 0x7f12_3400_0000 };
    let segs = loads(path);
    let &(ev, eo, _) = segs.iter().find(|s| s.2).expect("an executable segment");
    let lowest = segs.iter().map(|s| s.0).min().unwrap();
    vec![
        ("exec segment", Mapping::ExecSegment { map_start: base + (ev & !(PAGE - 1)) }, base + vaddr),
        (
            "file offset",
            Mapping::FileOffset { map_start: base + (ev & !(PAGE - 1)), pgoff: eo & !(PAGE - 1) },
            base + vaddr,
        ),
        ("load base", Mapping::LoadBase { load_base: base + (lowest & !(PAGE - 1)) }, base + vaddr),
    ]
}

fn check_kind(name: &str, flags: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let Some(path) = build(dir.path(), name, flags) else { return };
    let (work, work_size) = symbol(&path, "work");
    let (helper, _) = symbol(&path, "helper");
    for (case, mapping, pc) in mappings(&path, work + 1) {
        let label = path.to_str().unwrap();
        let s = symbolize(config(), ModuleSpec::new(label, mapping), pc);
        assert_eq!(s.vaddr, Some(work + 1), "{name}, {case}");
        assert_eq!(s.function.as_deref(), Some("work"), "{name}, {case}: {s}");
        assert_eq!(s.offset, Some(1), "{name}, {case}");
        assert!(s.file().is_some_and(|f| f.ends_with("fixture.c")), "{name}, {case}: {s:?}");
        assert_eq!(s.file_used.as_deref(), Some(path.as_path()));
        assert!(s.unknown.is_none());
        // The static function: only `.symtab` has it.
        let pc2 = pc - work - 1 + helper;
        let h = symbolize(config(), ModuleSpec::new(label, mapping), pc2);
        assert_eq!(h.function.as_deref(), Some("helper"), "{name}, {case}: {h}");
        assert_eq!(h.offset, Some(0));
        // Far below the module.
        let low = symbolize(config(), ModuleSpec::new(label, mapping), 0x10);
        assert_eq!(low.unknown, Some(Unknown::OutsideSegments), "{name}, {case}");
    }
    // The inline chain: some address of `work` is `inner`'s body, inlined at the call.
    let mut s = Symbolizer::new(config());
    let id = s.add_module(ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: 0 }));
    let found = (work..work + work_size).map(|v| s.symbolize(id, v)).find(|r| {
        r.frames.len() == 2
            && r.frames[0].function.as_deref() == Some("inner")
            && r.line() == Some(INNER_LINE)
            && r.frames[1].location.as_ref().and_then(|l| l.line) == Some(CALL_LINE)
    });
    let r = found.unwrap_or_else(|| panic!("{name}: no address of work is inlined inner"));
    assert_eq!(r.inlined().len(), 1);
    assert_eq!(r.function.as_deref(), Some("work"));
    let text = r.to_string();
    assert!(text.starts_with("inner at ") && text.contains(" inlined into work+0x"), "{text}");
}

#[test]
fn pie_executable() {
    check_kind("pie", &["-fPIE", "-pie", "-DWITH_MAIN"]);
}

#[test]
fn shared_library() {
    check_kind("libfixture.so", &["-fPIC", "-shared"]);
}

#[test]
fn non_pie_executable() {
    check_kind("nopie", &["-fno-pie", "-no-pie", "-DWITH_MAIN"]);
}

#[test]
fn static_executable() {
    check_kind("static", &["-static", "-DWITH_MAIN"]);
}

/// A stripped binary and its debug file, the way distributions ship them.
fn split(dir: &Path, name: &str) -> Option<(PathBuf, PathBuf, String)> {
    if !have("objcopy") {
        eprintln!("note: no objcopy, skipping the separate debug file tests");
        return None;
    }
    let path = build(dir, name, &["-fPIC", "-shared"])?;
    let id = build_id(&path);
    let debug = dir.join(format!("{name}.debug"));
    let (p, d) = (path.to_str().unwrap(), debug.to_str().unwrap());
    run("objcopy", &["--only-keep-debug", p, d]);
    run("objcopy", &["--strip-all", p]);
    Some((path, debug, id))
}

#[test]
fn debug_file_by_build_id() {
    let dir = tempfile::tempdir().unwrap();
    let Some((path, debug, id)) = split(dir.path(), "libsplit.so") else { return };
    let (helper, _) = symbol(&debug, "helper");
    let debug_dir = dir.path().join("debug");
    let target = debug_dir.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..]));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(&debug, &target).unwrap();

    // Without the debug directory: `.dynsym` names exported functions only.
    let spec = ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: 0x10_0000 });
    let mut bare = Symbolizer::new(config());
    let id0 = bare.add_module(spec.clone());
    assert_eq!(bare.module_info(id0).unwrap().symbols, Some(SymbolSource::Dynsym));
    let s = bare.symbolize(id0, 0x10_0000 + helper);
    assert_eq!(s.unknown, Some(Unknown::NoSymbolAt), "{s}");
    assert_eq!(s.to_string(), "[unknown in libsplit.so: no symbol at address]");

    let cfg = Config { debug_dirs: vec![debug_dir], ..config() };
    let mut sym = Symbolizer::new(cfg);
    let m = sym.add_module(spec);
    let info = sym.module_info(m).unwrap();
    assert_eq!(info.debug_file.as_deref(), Some(target.as_path()));
    assert_eq!(info.symbols, Some(SymbolSource::Symtab));
    assert!(info.dwarf);
    let s = sym.symbolize(m, 0x10_0000 + helper);
    assert_eq!(s.function.as_deref(), Some("helper"));
    assert_eq!(s.file_used.as_deref(), Some(target.as_path()));
    assert!(matches!(s.line(), Some(13 | 14)), "{s:?}");
}

#[test]
fn debug_file_by_debuglink() {
    let dir = tempfile::tempdir().unwrap();
    let Some((path, debug, _)) = split(dir.path(), "liblink.so") else { return };
    run("objcopy", &[&format!("--add-gnu-debuglink={}", debug.display()), path.to_str().unwrap()]);
    let (work, _) = symbol(&debug, "work");
    // In the binary's `.debug/` directory.
    let dot_debug = dir.path().join(".debug");
    std::fs::create_dir(&dot_debug).unwrap();
    let moved = dot_debug.join("liblink.so.debug");
    std::fs::rename(&debug, &moved).unwrap();
    let spec = ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: 0 });
    let s = symbolize(config(), spec.clone(), work + 2);
    assert_eq!(s.file_used.as_deref(), Some(moved.as_path()));
    assert_eq!(s.function.as_deref(), Some("work"));
    assert!(s.line().is_some());
    // Under a debug directory plus the binary's own directory.
    let root = dir.path().join("dbg");
    let nested = tbrw_symbols_under(&root, dir.path()).join("liblink.so.debug");
    std::fs::create_dir_all(nested.parent().unwrap()).unwrap();
    std::fs::rename(&moved, &nested).unwrap();
    let s = symbolize(Config { debug_dirs: vec![root], ..config() }, spec.clone(), work + 2);
    assert_eq!(s.file_used.as_deref(), Some(nested.as_path()));
    // A debug file of another build under the link's name is refused.
    let other = build(dir.path(), "other.so", &["-fPIC", "-shared", "-DWITH_MAIN"]).unwrap();
    std::fs::copy(&other, &moved).unwrap();
    let s = symbolize(config(), spec, work + 2);
    assert_eq!(s.file_used.as_deref(), Some(path.as_path()), "the other build's file was used: {s:?}");
}

/// `dir` re-rooted under `root`, as the debug directory search does.
fn tbrw_symbols_under(root: &Path, dir: &Path) -> PathBuf {
    root.join(dir.strip_prefix("/").unwrap())
}

#[test]
fn only_the_debug_file_exists() {
    let dir = tempfile::tempdir().unwrap();
    let Some((path, debug, id)) = split(dir.path(), "libgone.so") else { return };
    let (work, _) = symbol(&debug, "work");
    let debug_dir = dir.path().join("debug");
    let target = debug_dir.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..]));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(&debug, &target).unwrap();
    // The real file's program headers: the debug file must place the module alike.
    let &(ev, eo, _) = loads(&path).iter().find(|s| s.2).unwrap();
    std::fs::remove_file(&path).unwrap();
    let spec = ModuleSpec::new(path.to_str().unwrap(), Mapping::FileOffset { map_start: 0x7000_0000 + ev, pgoff: eo })
        .with_build_id(BuildId::from_hex(&id).unwrap());
    let s = symbolize(Config { debug_dirs: vec![debug_dir], ..config() }, spec, 0x7000_0000 + work + 3);
    assert_eq!(s.function.as_deref(), Some("work"), "{s:?}");
    assert_eq!(s.file_used.as_deref(), Some(target.as_path()));
}

#[test]
fn build_id_mismatch_is_reported_and_search_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let Some(path) = build(dir.path(), "libid.so", &["-fPIC", "-shared"]) else { return };
    let (work, _) = symbol(&path, "work");
    let wrong = BuildId(vec![0xde, 0xad, 0xbe, 0xef]);
    let spec = ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: 0 }).with_build_id(wrong.clone());
    let s = symbolize(config(), spec, work);
    let found = Some(BuildId::from_hex(&build_id(&path)).unwrap());
    assert_eq!(s.unknown, Some(Unknown::BuildIdMismatch { path: path.clone(), expected: wrong, found }));
    assert_eq!(s.to_string(), "[unknown in libid.so: build id mismatch]");
    assert!(s.function.is_none());

    // The right build id in a search path wins over the wrong one at the path.
    let good = dir.path().join("good");
    std::fs::create_dir(&good).unwrap();
    std::fs::rename(&path, good.join("libid.so")).unwrap();
    let other = build(dir.path(), "libid.so", &["-fPIC", "-shared", "-DWITH_MAIN"]).unwrap();
    assert_eq!(other, path);
    let right = BuildId::from_hex(&build_id(&good.join("libid.so"))).unwrap();
    let spec = ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: 0 }).with_build_id(right);
    let s = symbolize(Config { search_paths: vec![good.clone()], ..config() }, spec, work);
    assert_eq!(s.function.as_deref(), Some("work"));
    assert_eq!(s.file_used.as_deref(), Some(good.join("libid.so").as_path()));
}

#[test]
fn symfs_and_search_paths() {
    let dir = tempfile::tempdir().unwrap();
    let Some(path) = build(dir.path(), "libfs.so", &["-fPIC", "-shared"]) else { return };
    let (work, _) = symbol(&path, "work");
    let root = dir.path().join("sysroot");
    let inside = root.join("opt/app/lib/libfs.so");
    std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
    std::fs::copy(&path, &inside).unwrap();
    let mapping = Mapping::LoadBase { load_base: 0 };

    let spec = ModuleSpec::new("/opt/app/lib/libfs.so", mapping);
    let s = symbolize(Config { symfs: Some(root.clone()), ..config() }, spec.clone(), work);
    assert_eq!(s.file_used.as_deref(), Some(inside.as_path()));
    assert_eq!(s.function.as_deref(), Some("work"));

    // A base-name label, found through a search path.
    let s = symbolize(
        Config { search_paths: vec![dir.path().join("nowhere"), dir.path().into()], ..config() },
        ModuleSpec::new("libfs.so", mapping),
        work,
    );
    assert_eq!(s.function.as_deref(), Some("work"));
    assert_eq!(s.file_used.as_deref(), Some(path.as_path()));

    // Not found: every candidate listed.
    let s = symbolize(config(), spec, work);
    match &s.unknown {
        Some(Unknown::NotFound { tried }) => assert_eq!(tried, &[PathBuf::from("/opt/app/lib/libfs.so")]),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.to_string(), "[unknown in libfs.so: file not found]");
}

#[test]
fn missing_pieces_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let m = Mapping::LoadBase { load_base: 0 };
    let d = dir.path().to_str().unwrap();
    let s = symbolize(config(), ModuleSpec::new(d, m), 0x1000);
    assert_eq!(s.unknown, Some(Unknown::Directory { path: dir.path().into() }));
    assert!(s.to_string().ends_with(": a directory, not a file]"), "{s}");

    for pseudo in ["[vdso]", "//anon", ""] {
        let s = symbolize(config(), ModuleSpec::new(pseudo, m), 0x1000);
        assert_eq!(s.unknown, Some(Unknown::NotAFile), "{pseudo}");
    }

    let mut sym = Symbolizer::new(config());
    assert_eq!(sym.unmapped().to_string(), "[no module]");
    let k = sym.kernel();
    assert_eq!(sym.kernel(), k);
    let s = sym.symbolize(k, 0xffff_ffff_8100_0000);
    assert_eq!(s.to_string(), "[kernel]");
    assert!(matches!(sym.module_info(k), Err(Unknown::Kernel { .. })));

    // A PIE stripped of everything: `.dynsym` holds imports only.
    let Some(path) = build(dir.path(), "bare", &["-fPIE", "-pie", "-DWITH_MAIN", "-s"]) else { return };
    let s = symbolize(config(), ModuleSpec::new(path.to_str().unwrap(), m), 0x1000 + 8);
    assert_eq!(s.unknown, Some(Unknown::NoSymbols), "{s:?}");
    assert_eq!(s.to_string(), "[unknown in bare: no symbols]");
}

#[test]
fn kallsyms_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kallsyms");
    std::fs::write(&file, "ffffffff81000000 T _stext\nffffffff81000200 t schedule\nffffffffc0000000 t xfs_x\t[xfs]\n")
        .unwrap();
    let mut sym = Symbolizer::new(Config { kernel: KernelSymbols::File(file.clone()), ..config() });
    let k = sym.kernel();
    let s = sym.symbolize(k, 0xffff_ffff_8100_0210);
    assert_eq!(s.to_string(), "schedule+0x10");
    assert_eq!(s.file_used.as_deref(), Some(file.as_path()));
    assert_eq!(sym.symbolize(k, 0xffff_ffff_c000_0004).function.as_deref(), Some("xfs_x [xfs]"));
    assert_eq!(sym.symbolize(k, 0x1000).unknown, Some(Unknown::NoSymbolAt));
    assert_eq!(sym.module_info(k).unwrap().symbol_count, 3);
}

#[test]
fn truncated_and_garbage_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.so");
    std::fs::write(&garbage, (0..10_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<_>>())
        .unwrap();
    let m = Mapping::LoadBase { load_base: 0 };
    let s = symbolize(config(), ModuleSpec::new(garbage.to_str().unwrap(), m), 0x1000);
    assert!(matches!(&s.unknown, Some(Unknown::Malformed { message, .. }) if message == "not an ELF file"), "{s:?}");
    assert_eq!(s.to_string(), "[unknown in garbage.so: not a valid ELF file]");
    let empty = dir.path().join("empty.so");
    std::fs::write(&empty, b"").unwrap();
    let s = symbolize(config(), ModuleSpec::new(empty.to_str().unwrap(), m), 0x1000);
    assert!(matches!(s.unknown, Some(Unknown::Malformed { .. })), "{s:?}");

    let Some(path) = build(dir.path(), "libcut.so", &["-fPIC", "-shared"]) else { return };
    let (work, _) = symbol(&path, "work");
    let bytes = std::fs::read(&path).unwrap();
    for len in [4, 16, 63, 64, 200, bytes.len() / 3, bytes.len() / 2, bytes.len() - 1] {
        let cut = dir.path().join(format!("cut{len}.so"));
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let s = symbolize(config(), ModuleSpec::new(cut.to_str().unwrap(), m), work);
        assert!(matches!(s.unknown, Some(Unknown::Malformed { .. })), "cut at {len}: {s:?}");
    }
    // Corrupt bytes inside an intact layout: whatever comes out, no panic.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..150 {
        let mut b = bytes.clone();
        for _ in 0..16 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % b.len() as u64) as usize;
            b[at] = (state >> 32) as u8;
        }
        let f = dir.path().join(format!("flip{round}.so"));
        std::fs::write(&f, &b).unwrap();
        let mut sym = Symbolizer::new(config());
        let id = sym.add_module(ModuleSpec::new(f.to_str().unwrap(), m));
        for pc in [work, work + 5, 0, u64::MAX] {
            let _ = sym.symbolize(id, pc).to_string();
        }
        let _ = sym.module_info(id);
        std::fs::remove_file(&f).unwrap();
    }
}

#[test]
fn cpp_names_are_demangled() {
    if !have("c++") {
        eprintln!("note: no c++, skipping the C++ demangling test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("f.cpp");
    std::fs::write(&src, "namespace ns { template <class T> struct Box { __attribute__((noinline)) T get(T x) const { return x + 1; } }; }\nint use(int v) { return ns::Box<int>().get(v); }\n").unwrap();
    let out = dir.path().join("libcpp.so");
    run("c++", &["-g", "-O1", "-fPIC", "-shared", src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let data = std::fs::read(&out).unwrap();
    let file = object::File::parse(&*data).unwrap();
    use object::{Object, ObjectSymbol};
    let sym = file.symbols().find(|s| s.name().is_ok_and(|n| n.starts_with("_ZNK2ns3BoxIiE3get"))).unwrap();
    let s =
        symbolize(config(), ModuleSpec::new(out.to_str().unwrap(), Mapping::LoadBase { load_base: 0 }), sym.address());
    // As perf report shows it (`c++filt -p`), and with `signatures` as
    // `c++filt` prints it.
    assert_eq!(s.function.as_deref(), Some("ns::Box<int>::get"), "{s:?}");
    let full = symbolize(
        Config { signatures: true, ..config() },
        ModuleSpec::new(out.to_str().unwrap(), Mapping::LoadBase { load_base: 0 }),
        sym.address(),
    );
    assert_eq!(full.function.as_deref(), Some("ns::Box<int>::get(int) const"), "{full:?}");
    let raw = symbolize(
        Config { demangle: false, ..config() },
        ModuleSpec::new(out.to_str().unwrap(), Mapping::LoadBase { load_base: 0 }),
        sym.address(),
    );
    assert!(raw.function.as_deref().unwrap().starts_with("_ZNK2ns3Box"));
}

#[inline(never)]
fn marker(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(3)
}

/// This test binary itself, placed through its own `/proc/self/maps`: a
/// Rust PIE with DWARF, the perf-style mapping.
#[test]
fn this_process() {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        eprintln!("note: no /proc/self/maps, skipping");
        return;
    };
    let pc = marker as *const () as u64 + 1;
    let _ = marker(pc);
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    let line = maps
        .lines()
        .find(|l| {
            let mut f = l.split_whitespace();
            let range = f.next().unwrap();
            let (lo, hi) = range.split_once('-').unwrap();
            let (lo, hi) = (u64::from_str_radix(lo, 16).unwrap(), u64::from_str_radix(hi, 16).unwrap());
            (lo..hi).contains(&pc)
        })
        .expect("the pc is mapped");
    let f: Vec<&str> = line.split_whitespace().collect();
    let map_start = u64::from_str_radix(f[0].split_once('-').unwrap().0, 16).unwrap();
    let pgoff = u64::from_str_radix(f[2], 16).unwrap();
    let mut sym = Symbolizer::new(config());
    let id = sym.add_module(ModuleSpec::new(f[5], Mapping::FileOffset { map_start, pgoff }));
    let s = sym.symbolize(id, pc);
    assert_eq!(s.file_used.as_deref().map(|p| p.canonicalize().unwrap()), Some(exe.canonicalize().unwrap()));
    assert!(s.function.as_deref().is_some_and(|f| f.ends_with("marker")), "{s:?}");
    assert_eq!(s.offset, Some(1));
    // `black_box` is inlined into `marker`: the outermost frame is this file.
    let outer = s.frames.last().and_then(|f| f.location.as_ref()).map(|l| &*l.file);
    assert!(outer.is_some_and(|f| f.ends_with("symbolize.rs")), "{s:?}");
    // Cached: the same result object.
    assert!(Arc::ptr_eq(&s, &sym.symbolize(id, pc)));
    assert_eq!(sym.cached(), 1);
}

/// `function_symbol`, a `FunctionIndex` snapshot (from another thread) and
/// `symbol_name` agree on every address of a PIE and a shared library
/// mapped in two modules each, and name the functions `symbolize` names.
#[test]
fn function_index_agrees_with_the_symbolizer() {
    let dir = tempfile::tempdir().unwrap();
    let Some(pie) = build(dir.path(), "pie", &["-fPIE", "-pie"]) else { return };
    let Some(lib) = build(dir.path(), "lib.so", &["-shared", "-fPIC"]) else { return };
    let mut s = Symbolizer::new(config());
    let mut ids = Vec::new();
    for (i, path) in [&pie, &lib, &pie, &lib].into_iter().enumerate() {
        let base = 0x7f00_0000_0000 + i as u64 * 0x100_0000;
        ids.push((s.add_module(ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: base })), base));
    }
    let (work, size) = symbol(&pie, "work");
    let pcs: Vec<(usize, u64)> = (0..ids.len()).flat_map(|m| (0..size + 64).map(move |o| (m, work - 32 + o))).collect();
    let direct: Vec<Option<SymbolRef>> = pcs.iter().map(|&(m, v)| s.function_symbol(ids[m].0, ids[m].1 + v)).collect();
    assert!(direct.iter().any(Option::is_some));
    let index = s.function_index(ids.iter().map(|(id, _)| *id).take(3));
    let indexed: Vec<IndexedSymbol> = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut recent = RecentSymbols::default();
                pcs.iter().map(|&(m, v)| index.function_symbol(ids[m].0, ids[m].1 + v, &mut recent)).collect()
            })
            .join()
            .unwrap()
    });
    for (((m, v), d), i) in pcs.iter().zip(&direct).zip(&indexed) {
        let want = match (m, d) {
            (3, _) => IndexedSymbol::NotIndexed,
            (_, Some(d)) => IndexedSymbol::Found(*d),
            (_, None) => IndexedSymbol::NoSymbol,
        };
        assert_eq!(*i, want, "module {m}, vaddr {v:#x}");
        let named = s.symbolize(ids[*m].0, ids[*m].1 + v).function.clone();
        assert_eq!(d.and_then(|d| s.symbol_name(d)), named.as_deref(), "module {m}, vaddr {v:#x}");
    }
    // The same file in two modules: the same symbols.
    assert_eq!(direct[..pcs.len() / 4], direct[pcs.len() / 2..3 * pcs.len() / 4]);
}

/// Symbols stored from a symbolizer that had the file name the same
/// functions once the file is gone, and not when the file is there.
#[test]
fn stored_symbols_stand_in_for_a_missing_file() {
    use tbrw_symbols::stored::{decode, encode};
    let dir = tempfile::tempdir().unwrap();
    let Some(pie) = build(dir.path(), "pie", &["-fPIE", "-pie"]) else { return };
    let (work, size) = symbol(&pie, "work");
    let (helper, _) = symbol(&pie, "helper");
    let base = 0x7f00_0000_0000u64;
    let spec = || ModuleSpec::new(pie.to_str().unwrap(), Mapping::LoadBase { load_base: base });
    let mut s = Symbolizer::new(config());
    let id = s.add_module(spec());
    let pcs = [base + work, base + work + size - 1, base + helper];
    let hit: Vec<SymbolRef> = pcs.iter().filter_map(|&pc| s.function_symbol(id, pc)).collect();
    assert_eq!(hit.len(), 3);
    let stored = decode(&encode(&s.stored_files(hit.iter().copied()))).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].symbols.len(), 2, "work and helper, once each");

    // The file is there: it is used (with its lines), not the stored symbols.
    let mut there = Symbolizer::new(config());
    there.add_stored(stored.clone());
    let id = there.add_module(spec());
    assert_eq!(there.module_info(id).unwrap().symbols, Some(SymbolSource::Symtab));
    assert!(there.symbolize(id, base + work).file().is_some());

    std::fs::remove_file(&pie).unwrap();
    let mut gone = Symbolizer::new(config());
    gone.add_stored(stored);
    let id = gone.add_module(spec());
    let info = gone.module_info(id).unwrap();
    assert_eq!(info.symbols, Some(SymbolSource::Stored));
    assert!(!info.dwarf);
    for (pc, want, offset) in [(pcs[0], "work", 0), (pcs[1], "work", size - 1), (pcs[2], "helper", 0)] {
        let r = gone.symbolize(id, pc);
        assert_eq!(r.function.as_deref(), Some(want), "{r}");
        assert_eq!(r.offset, Some(offset));
        assert_eq!(r.file(), None, "no lines without the file");
    }
    // Without stored symbols the missing file is reported as such.
    let mut none = Symbolizer::new(config());
    let id = none.add_module(spec());
    assert!(matches!(none.module_info(id), Err(Unknown::NotFound { .. })), "{:?}", none.module_info(id));
}

/// A module whose file cannot be used names every address alike, and says
/// so once ([`Symbolizer::uniform`]): the one result, whatever the
/// address. One whose file is here does not, and its addresses
/// symbolized without the cache are those of the cached lookup, with
/// nothing kept.
#[test]
fn a_missing_file_is_uniform_and_uncached_lookups_keep_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Symbolizer::new(config());
    let gone = s.add_module(ModuleSpec::new(
        dir.path().join("libgone.so").to_str().unwrap(),
        Mapping::LoadBase { load_base: 0x1000 },
    ));
    let one = s.uniform(gone).expect("a missing file is uniform");
    assert!(matches!(one.unknown, Some(Unknown::NotFound { .. })), "{one:?}");
    for pc in [0x1000, 0x1234, u64::MAX] {
        assert!(Arc::ptr_eq(&s.symbolize(gone, pc), &one));
        assert!(Arc::ptr_eq(&s.symbolize_uncached(gone, pc), &one));
    }
    assert_eq!(s.cached(), 0);
    let Some(path) = build(dir.path(), "pie", &["-fPIE", "-pie", "-DWITH_MAIN"]) else { return };
    let (work, _) = symbol(&path, "work");
    let (_, mapping, pc) = mappings(&path, work + 1).remove(2);
    let here = s.add_module(ModuleSpec::new(path.to_str().unwrap(), mapping));
    assert!(s.uniform(here).is_none(), "its addresses are told apart");
    let uncached = s.symbolize_uncached(here, pc);
    assert_eq!(s.cached(), 0, "nothing kept per address");
    assert_eq!(*uncached, *s.symbolize(here, pc));
    assert_eq!(uncached.function.as_deref(), Some("work"));
    assert_eq!(s.cached(), 1);
}
