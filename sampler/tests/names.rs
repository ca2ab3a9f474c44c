//! Names as perf gives them, each beside `perf record`/`perf report` of
//! the same program: a process by its `comm` (a `#!/bin/sh` script is
//! `loop.sh`, not `dash`); the vDSO's functions from the process's own
//! vDSO image (`__vdso_clock_gettime`, not `[vdso]`); C++ functions
//! without their parameters (`Accum<32ul>::sum`), the whole signature on
//! asking, in a recording of the sampler and in a perf import alike; and
//! the exported functions of a library that has only `.dynsym`
//! (libgcc_s's `_Unwind_Find_FDE`).

mod common;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use tbrw::Tb5File;
use tbrw_query::file_symbols::{Demangle, SymbolOptions};
use tbrw_query::By;
use tbrw_query::Weight;

/// `cmd` recorded by the sampler in `dir` (on-CPU, 1000 Hz).
fn record(dir: &Path, cmd: &Path) -> Option<PathBuf> {
    let tb5 = dir.join(format!("{}.tb5", cmd.file_name().unwrap().to_string_lossy()));
    let args: [&OsStr; 3] = ["-o".as_ref(), tb5.as_ref(), cmd.as_ref()];
    let out = sampler_in(dir, &args)?;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    Some(tb5)
}

/// Percent per function of a report by function with `demangle`.
fn functions(tb5: &Path, demangle: Demangle) -> HashMap<String, f64> {
    let file = Tb5File::open(tb5).unwrap();
    let symbols = SymbolOptions { demangle, ..SymbolOptions::default() };
    let mut warn = Vec::new();
    let opts = tbrw_query::report::ReportOptions::new(Default::default(), &[By::Function]).symbols(symbols);
    let r = tbrw_query::report::run(&file, &opts, &mut warn, &mut |_| {}).unwrap();
    r.rows.iter().map(|row| (row.key.printed_str().unwrap_or("?").to_owned(), row.percent)).collect()
}

/// perf's shares by `sort` of `cmd`, or `None` (said) where perf cannot run.
fn perf(dir: &Path, cmd: &Path, sort: &str) -> Option<HashMap<String, f64>> {
    match perf_shares_by(dir, &[cmd], sort) {
        Ok((shares, _)) => Some(shares),
        Err(why) => {
            eprintln!("SKIPPED the comparison with perf: {why}");
            None
        }
    }
}

/// Whether `c++` is here (the C++ programs are skipped, with a note, without).
fn cxx(dir: &Path, name: &str) -> Option<PathBuf> {
    let out = dir.join(name);
    let src = c_source(name).with_extension("cpp");
    match Command::new("c++").args(["-O1", "-g"]).arg(&src).arg("-o").arg(&out).status() {
        Ok(st) if st.success() => Some(out),
        _ => {
            eprintln!("SKIPPED: no c++ to build {}", src.display());
            None
        }
    }
}

#[test]
fn a_script_is_named_by_its_comm() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("loop.sh");
    std::fs::write(&script, "#!/bin/sh\ni=0\nwhile [ $i -lt 100000 ]; do i=$((i+1)); done\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let Some(tb5) = record(tmp.path(), &script) else { return };
    let rows = report(&tb5, By::Process, Weight::Samples);
    let names: Vec<String> = rows.iter().map(|r| r.key.to_string()).collect();
    assert!(names.iter().all(|n| n.starts_with("loop.sh (pid ")), "{names:?}");
    if let Some(perf) = perf(tmp.path(), &script, "comm") {
        assert!(perf.get("loop.sh").is_some_and(|&p| p > 90.0), "perf: {perf:?}");
    }
}

#[test]
fn the_vdso_is_named_from_the_process_image() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = build(tmp.path(), "vdso", &[]);
    let Some(tb5) = record(tmp.path(), &bin) else { return };
    // Its symbols are stored in the recording: found without any file.
    assert!(Tb5File::open(&tb5)
        .unwrap()
        .stored_symbols()
        .unwrap()
        .is_some_and(|s| { String::from_utf8_lossy(s).contains("__vdso_clock_gettime") }));
    let ours = functions(&tb5, Demangle::Short);
    let share = ours.get("__vdso_clock_gettime").copied().unwrap_or(0.0);
    assert!(!ours.contains_key("[vdso]"), "{ours:?}");
    if let Some(perf) = perf(tmp.path(), &bin, "sym") {
        let p = perf.get("__vdso_clock_gettime").copied().unwrap_or(0.0);
        eprintln!("__vdso_clock_gettime: sampler {share:.1} %, perf {p:.1} %");
        assert!((share - p).abs() <= 10.0, "sampler {ours:?}, perf {perf:?}");
    }
    assert!(share > 50.0, "{ours:?}");
}

#[test]
fn cpp_names_as_perf_report_shows_them() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bin) = cxx(tmp.path(), "names") else { return };
    let Some(tb5) = record(tmp.path(), &bin) else { return };
    let short = functions(&tb5, Demangle::Short);
    let full = functions(&tb5, Demangle::Full);
    assert!(short.get("Accum<32ul>::sum").is_some_and(|&p| p > 50.0), "{short:?}");
    assert!(short.contains_key("ns::Worker::make"), "{short:?}");
    assert!(full.contains_key("Accum<32ul>::sum(unsigned long)"), "{full:?}");
    assert!(full.contains_key(
        "ns::Worker::make(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int)"
    ));
    let Some(perf) = perf(tmp.path(), &bin, "sym") else { return };
    for name in ["Accum<32ul>::sum", "ns::Worker::make"] {
        assert!(perf.contains_key(name), "perf names {name} so: {perf:?}");
    }
    // perf's own recording, imported: the same names.
    let imported = tmp.path().join("perf.tb5");
    let mut w = tbrw::Tb5Writer::create(&imported).unwrap();
    let data = std::fs::File::open(tmp.path().join("perf.data")).unwrap();
    tbrw_import::perf::import_perf_file(data, "perf.data", &mut w, ()).unwrap();
    w.close().unwrap();
    let from_perf = functions(&imported, Demangle::Short);
    for (name, p) in &perf {
        if name.contains("::") {
            let ours = from_perf.get(name).copied().unwrap_or(0.0);
            assert!((ours - p).abs() < 0.5, "{name}: perf {p} %, its import {ours} %: {from_perf:?}");
        }
    }
    assert!(functions(&imported, Demangle::Full).contains_key("Accum<32ul>::sum(unsigned long)"));
}

#[test]
fn a_library_with_only_dynamic_symbols_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bin) = cxx(tmp.path(), "throw") else { return };
    let Some(tb5) = record(tmp.path(), &bin) else { return };
    let ours = functions(&tb5, Demangle::Short);
    assert!(ours.contains_key("_Unwind_Find_FDE"), "{ours:?}");
    let Some(perf) = perf(tmp.path(), &bin, "dso,sym") else { return };
    // Every libgcc_s function perf names (not a bare address), named here too.
    let named: Vec<&String> = perf
        .iter()
        .filter(|(k, &p)| k.starts_with("libgcc_s") && !k.contains("0x") && p >= 2.0)
        .map(|(k, _)| k)
        .collect();
    assert!(!named.is_empty(), "perf: {perf:?}");
    for k in named {
        let function = k.rsplit(' ').next().unwrap();
        assert!(ours.contains_key(function), "perf names {function}, the sampler's report: {ours:?}");
    }
}
