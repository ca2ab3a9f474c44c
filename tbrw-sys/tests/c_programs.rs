//! The C tests: programs in `tests/c/` compiled with the system C compiler
//! (`-std=c11 -Wall -Wextra -Werror`, and again as C++) against
//! `include/` and the library this workspace builds, then run, and run
//! again under valgrind when it is installed.

#[path = "../../tests/support/c_build.rs"]
mod c_build;

use std::path::PathBuf;
use std::process::Command;

use c_build::{compile, run, run_sanitized, run_valgrind, Lang};

fn sys_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn source(name: &str) -> PathBuf {
    sys_dir().join("tests/c").join(format!("{name}.c"))
}

/// Compiles `name` as C, C++ and statically linked C, runs each, and the C one under valgrind.
fn check_program(name: &str, args: &[&str]) -> String {
    let c = compile(&source(name), Lang::C);
    let stdout = String::from_utf8(run(&c, args).stdout).unwrap();
    for lang in [Lang::Cxx, Lang::CStatic] {
        let exe = compile(&source(name), lang);
        let again = String::from_utf8(run(&exe, args).stdout).unwrap();
        assert_eq!(again, stdout, "{name}: C++ or static build printed something else");
    }
    run_valgrind(&c, args);
    if let Some(out) = run_sanitized(&source(name), args) {
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            stdout,
            "{name}: the sanitized build printed something else"
        );
    }
    stdout
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn abi_sizes_offsets_and_constants() {
    assert_eq!(check_program("abi_check", &[]), "abi ok\n");
}

#[test]
fn guide_chapter_6_written_read_back_verified_and_bound() {
    let dir = temp();
    let file = dir.path().join("guide.tb5");
    let f = file.to_str().unwrap();
    let out = check_program("guide_write_read", &[f, "1000"]);
    assert_eq!(out, "guide file: 1000 samples written, read back, verified and bound\n");

    // The Rust reader reads the C-written file back equal.
    let t = tb5::Tb5File::open(&file).unwrap();
    t.verify().unwrap();
    let m = t.resolve(t.modules().unwrap().unwrap().get(0).unwrap()).unwrap();
    assert_eq!((m.load_address, m.length, m.associated_pid), (0x400000, 0x2000, 0x1000));
    assert_eq!(
        (m.path.as_deref(), m.name.as_deref(), m.segment_name.as_deref()),
        (Some("C:\\sample\\sample.exe"), Some("sample.exe"), Some(""))
    );
    let sw = t.resolve(t.software().unwrap().unwrap()).unwrap();
    assert_eq!(sw.host.unwrap().name.as_deref(), Some("testhost.intel.com"));
    assert_eq!(sw.os.unwrap().name.as_deref(), Some("Windows XP"));
    let s = t.stream(0).unwrap();
    assert_eq!(s.data().unwrap().unwrap().record_size(), 40);
    let samples: Vec<_> = s.legacy_samples().unwrap().collect();
    assert_eq!(samples.len(), 1000);
    for (i, smp) in samples.iter().enumerate() {
        assert_eq!(smp.pc.ip(), 0x400000 + (i as u64 * 4) % 0x2000);
        assert_eq!(smp.tsc, Some(0x1972178D8F5E + i as u64));
        assert_eq!(smp.pc.tid, 100 + i as u32 % 3);
    }
    assert!(s.is_bound());
    let events = s.events().unwrap().unwrap();
    assert_eq!((events[0].sav, events[0].details[0].value), (2_000_000, 0xffe17b80));
}

#[test]
fn chapter_10_usage_example() {
    let dir = temp();
    let f = dir.path().join("ch10.tb5");
    let out = check_program("usage_example", &[f.to_str().unwrap()]);
    assert!(out.starts_with("TBRW_done_stream number 0 returned error 78 \""), "{out}");
    assert!(out.ends_with("chapter 10 example: ok\n"), "{out}");
    let t = tb5::Tb5File::open(&f).unwrap();
    let info = t.resolve(t.stream(0).unwrap().info().unwrap().unwrap()).unwrap();
    assert_eq!(info.comment.as_deref(), Some("chapter 10"));
    // The aborted runs left no temporary file behind.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["ch10.tb5"]);
}

#[test]
fn lifecycle_errors_buffer_protocol_and_callbacks() {
    let dir = temp();
    assert_eq!(check_program("lifecycle", &[dir.path().to_str().unwrap()]), "lifecycle: ok\n");
}

#[test]
fn several_handles_in_several_threads() {
    let dir = temp();
    assert_eq!(check_program("threads", &[dir.path().to_str().unwrap()]), "threads: ok\n");
    for i in 0..4u64 {
        let t = tb5::Tb5File::open(dir.path().join(format!("t{i}.tb5"))).unwrap();
        let d = t.stream(0).unwrap().data().unwrap().unwrap();
        assert_eq!(d.len(), 20000);
        assert_eq!(d.record(7).unwrap(), ((i + 1) * 1_000_000 + 7).to_le_bytes());
    }
}

#[test]
fn exiting_without_close_leaves_no_file_at_the_target() {
    let dir = temp();
    let f = dir.path().join("never.tb5");
    let exe = compile(&source("no_close"), Lang::C);
    run(&exe, &[f.to_str().unwrap()]);
    assert!(!f.exists());
}

#[test]
fn pkg_config_file_gives_the_flags() {
    if Command::new("pkg-config").arg("--version").output().is_err() {
        eprintln!("pkg-config is not installed: skipping");
        return;
    }
    let out = Command::new("pkg-config")
        .args(["--cflags", "--libs", "tbrw"])
        .env("PKG_CONFIG_PATH", sys_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let flags = String::from_utf8(out.stdout).unwrap();
    assert!(
        flags.contains("tbrw-sys/include") && flags.contains("-ltbrw") && flags.contains("target/release"),
        "{flags}"
    );
    // Found through an absolute PKG_CONFIG_PATH, the library folder is also
    // an absolute rpath, so the program finds libtbrw.so.0 wherever it runs.
    let lib = sys_dir().join("../target/release");
    assert!(flags.contains(&format!("-Wl,-rpath,{}", lib.display())), "{flags}");
}

// ---- issue 12, writing side (items 2, 7, 8, 9, 10)

#[test]
fn const_prototypes_as_intels_header() {
    let dir = temp();
    let f = dir.path().join("const.tb5");
    assert_eq!(check_program("const_prototypes", &[f.to_str().unwrap()]), "const prototypes: ok\n");
}

#[test]
fn structures_read_from_one_handle_are_written_to_another() {
    let dir = temp();
    assert_eq!(check_program("copy_reader_writer", &[dir.path().to_str().unwrap()]), "copy reader to writer: ok\n");
    let t = tb5::Tb5File::open(dir.path().join("copy.tb5")).unwrap();
    let m = t.resolve(t.modules().unwrap().unwrap().get(1).unwrap()).unwrap();
    assert_eq!((m.path.as_deref(), m.name.as_deref()), (Some("/usr/bin/copied"), Some("copied")));
}

#[test]
fn stream_sections_in_any_order() {
    let dir = temp();
    let f = dir.path().join("any.tb5");
    assert_eq!(check_program("any_order_stream", &[f.to_str().unwrap()]), "any order stream: ok\n");
    let t = tb5::Tb5File::open(&f).unwrap();
    let s: Vec<_> = t.stream(0).unwrap().legacy_samples().unwrap().collect();
    assert_eq!(s.len(), 50);
    assert_eq!((s[49].pc.eip(), s[49].tsc), (0x1000 + 49, Some(49)));
}

#[test]
fn verify_on_a_writing_handle_and_close_agree() {
    let dir = temp();
    assert_eq!(check_program("verify_before_close", &[dir.path().to_str().unwrap()]), "verify before close: ok\n");
    assert!(!dir.path().join("bad.tb5").exists(), "the refused file was never committed");
}

#[test]
fn done_closes_its_section_whatever_it_returns() {
    let dir = temp();
    let f = dir.path().join("done.tb5");
    assert_eq!(check_program("done_always_closes", &[f.to_str().unwrap()]), "done always closes: ok\n");
    let t = tb5::Tb5File::open(&f).unwrap();
    assert!(!t.has_section(tb5::GlobalSection::Hardware));
    assert_eq!(t.stream(0).unwrap().data().unwrap().unwrap().len(), 1);
}
