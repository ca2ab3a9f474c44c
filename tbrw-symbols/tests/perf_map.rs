//! perf maps (`/tmp/perf-<pid>.map`) as a module's symbols: found as ELF
//! files are (under the symfs first, then the path, then the search
//! paths), addresses absolute, what is missing said once.

use tbrw_symbols::{Config, KernelSymbols, Mapping, ModuleSpec, SymbolSource, Symbolizer, Unknown};

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
