//! Build ids: a recording names the GNU build id of each module's file, so
//! that after the binary is rebuilt at the same path a report refuses the
//! new file (and says so, with both ids) instead of naming the new file's
//! functions at the old addresses.

mod common;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use common::*;
use tbrw::{ModuleFlags, Tb5File};
use tbrw_schema::module_notes::{self, ModuleNote};

/// Builds spin.c again at `bin`, linked after an 8 KiB function: spin()
/// moves past it, and the addresses sampled in the old spin() are in
/// padding() in the new file (what a report without build ids names).
fn rebuild_changed(dir: &Path, bin: &Path) {
    let pad = dir.join("pad.c");
    std::fs::write(
        &pad,
        "__attribute__((noinline)) void padding(void) {\n    __asm__ volatile(\".fill 8192, 1, 0x90\");\n}\n",
    )
    .unwrap();
    // The linker lays out .text in command-line order: pad.c's first.
    cc(&pad, bin, &[c_source("spin").to_str().unwrap()]);
}

/// The build id `readelf -n` prints for `bin`, if readelf is here.
fn readelf_build_id(bin: &Path) -> Option<Vec<u8>> {
    let out = Command::new("readelf").arg("-n").arg(bin).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text.lines().find_map(|l| l.trim().strip_prefix("Build ID: "))?;
    module_notes::unhex(hex.trim())
}

#[test]
fn a_rebuilt_binary_is_refused_not_misnamed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bin = dir.join("app");
    cc(&c_source("spin"), &bin, &[]);
    let tb5 = dir.join("run.tb5");
    let args: [&OsStr; 5] = ["-o".as_ref(), tb5.as_ref(), "--".as_ref(), bin.as_ref(), "0.3".as_ref()];
    let Some(out) = sampler_in(dir, &args) else { return };
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));

    // The executable's module note has the file's build id.
    let file = Tb5File::open(&tb5).unwrap();
    let notes = module_notes::decode(&String::from_utf8_lossy(file.user_defined_global().unwrap().unwrap()));
    let table = file.modules().unwrap().unwrap();
    let exe = (0..table.len())
        .find(|&i| file.resolve(table.get(i).unwrap()).unwrap().flags.contains(ModuleFlags::IS_EXE))
        .expect("the executable's module");
    let recorded = match &notes[&exe] {
        ModuleNote { build_id: Some(id), offset: Some(_) } => id.clone(),
        n => panic!("no build id in the executable's note: {n:?}"),
    };
    match readelf_build_id(&bin) {
        Some(id) => assert_eq!(recorded, id, "the id readelf shows"),
        None => eprintln!("NOTE: no readelf here; the recorded build id is not compared with its"),
    }
    let (rows, warn) = function_report(&tb5);
    let spin = rows.iter().find(|(f, ..)| f == "spin").map_or(0.0, |r| r.1);
    assert!(spin > 85.0, "before the rebuild, spin() is named: {rows:?} {warn}");

    // Rebuilt at the same path with spin() moved: the file is refused, with
    // both ids said, and none of its functions is named (without the build
    // id, the samples would all be named padding()).
    rebuild_changed(dir, &bin);
    let rebuilt = readelf_build_id(&bin);
    let (rows, warn) = function_report(&tb5);
    assert!(warn.contains("build id mismatch") && warn.contains(&module_notes::hex(&recorded)), "{warn}");
    if let Some(id) = &rebuilt {
        assert!(warn.contains(&module_notes::hex(id)), "the new file's id too: {warn}");
    }
    let named: Vec<&String> = rows.iter().filter(|(_, _, named)| *named).map(|(f, ..)| f).collect();
    assert!(
        !named.iter().any(|f| ["spin", "padding", "main", "now"].contains(&f.as_str())),
        "functions of the rebuilt file named: {named:?}"
    );
    assert!(rows.iter().any(|(f, p, _)| f == "[app]" && *p > 85.0), "reported as the module: {rows:?}");

    // The same through the command line, where it is built.
    match tbrw_bin() {
        None => eprintln!("NOTE: no target/debug/tbrw (cargo build -p tbrw-cli); the command line is not checked"),
        Some(tbrw) => {
            let out = Command::new(tbrw).args(["report", "--by", "function"]).arg(&tb5).output().unwrap();
            let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success(), "{err}");
            assert!(err.contains("build id mismatch"), "{err}");
            assert!(text.contains("[app]") && !text.contains(" spin") && !text.contains("padding"), "{text}");
        }
    }
}
