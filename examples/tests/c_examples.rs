//! The C versions of print_tb5, tbrw_reader and tbrw_writer (examples/c),
//! built against tbrw-sys/include and libtbrw, print and write exactly
//! what the Rust versions do on the shipped sample.

#[path = "../../tests/support/c_build.rs"]
mod c_build;

use std::path::PathBuf;

use c_build::{compile, run, run_sanitized, run_valgrind, Lang};
use tbrw_examples::dat::{dat_to_tb5, tb5_to_dat};
use tbrw_examples::print::{print_file, Options, Records};

fn c_source(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/c")).join(format!("{name}.c"))
}

fn sample() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample.tb5"))
}

fn rust_print(p: &std::path::Path, records: Records) -> String {
    let mut out = Vec::new();
    print_file(p, Options { json: false, records }, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn c_print_tb5_prints_what_the_rust_one_does() {
    let s = sample();
    let s = s.to_str().unwrap();
    for lang in [Lang::C, Lang::Cxx, Lang::CStatic] {
        let exe = compile(&c_source("print_tb5"), lang);
        let out = String::from_utf8(run(&exe, &[s]).stdout).unwrap();
        assert_eq!(out, rust_print(&sample(), Records::First(5)), "{lang:?}");
    }
    let exe = compile(&c_source("print_tb5"), Lang::C);
    let all = String::from_utf8(run(&exe, &[s, "--records", "all"]).stdout).unwrap();
    assert_eq!(all, rust_print(&sample(), Records::All));
    run_valgrind(&exe, &[s, "--records", "20"]);
    if let Some(out) = run_sanitized(&c_source("print_tb5"), &[s, "--records", "all"]) {
        assert_eq!(String::from_utf8(out.stdout).unwrap(), all, "under ASan/UBSan");
    }
}

#[test]
fn c_reader_and_writer_match_the_rust_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let (rd, cd) = (tmp.path().join("rust"), tmp.path().join("c"));
    std::fs::create_dir_all(&rd).unwrap();
    std::fs::create_dir_all(&cd).unwrap();
    let reader = compile(&c_source("tbrw_reader"), Lang::C);
    let writer = compile(&c_source("tbrw_writer"), Lang::C);
    let s = sample();

    // Same dump, byte for byte.
    tb5_to_dat(&s, &rd.join("sample.dat")).unwrap();
    run(&reader, &[s.to_str().unwrap(), cd.join("sample.dat").to_str().unwrap()]);
    assert!(std::fs::read(rd.join("sample.dat")).unwrap() == std::fs::read(cd.join("sample.dat")).unwrap());
    assert!(std::fs::read(rd.join("sample.tb5.dat")).unwrap() == std::fs::read(cd.join("sample.tb5.dat")).unwrap());

    // The C writer's file prints like the original (and like the Rust writer's).
    run(&writer, &[cd.join("sample.dat").to_str().unwrap(), cd.join("new.tb5").to_str().unwrap()]);
    dat_to_tb5(&rd.join("sample.dat"), &rd.join("new.tb5")).unwrap();
    let original = rust_print(&s, Records::All);
    assert_eq!(rust_print(&cd.join("new.tb5"), Records::All), original);
    assert_eq!(rust_print(&rd.join("new.tb5"), Records::All), original);

    // Each run in its own folder: the data file's name follows the input's,
    // and the reader does not replace it.
    let (vd, ad) = (tmp.path().join("valgrind"), tmp.path().join("sanitized"));
    std::fs::create_dir_all(&vd).unwrap();
    std::fs::create_dir_all(&ad).unwrap();
    run_valgrind(&reader, &[s.to_str().unwrap(), vd.join("v.dat").to_str().unwrap()]);
    run_valgrind(&writer, &[cd.join("sample.dat").to_str().unwrap(), vd.join("v.tb5").to_str().unwrap()]);
    if run_sanitized(&c_source("tbrw_reader"), &[s.to_str().unwrap(), ad.join("a.dat").to_str().unwrap()]).is_some() {
        assert!(std::fs::read(ad.join("a.dat")).unwrap() == std::fs::read(cd.join("sample.dat")).unwrap());
        run_sanitized(
            &c_source("tbrw_writer"),
            &[cd.join("sample.dat").to_str().unwrap(), cd.join("a.tb5").to_str().unwrap()],
        );
        assert_eq!(rust_print(&cd.join("a.tb5"), Records::All), original);
    }
    for lang in [Lang::Cxx, Lang::CStatic] {
        compile(&c_source("tbrw_reader"), lang);
        compile(&c_source("tbrw_writer"), lang);
    }
}

#[test]
fn c_writer_rejects_a_damaged_dump_and_leaves_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dat = tmp.path().join("sample.dat");
    tb5_to_dat(&sample(), &dat).unwrap();
    let good = std::fs::read(&dat).unwrap();
    std::fs::write(&dat, &good[..good.len() / 2]).unwrap();
    let writer = compile(&c_source("tbrw_writer"), Lang::C);
    let new = tmp.path().join("new.tb5");
    let out = std::process::Command::new(&writer).arg(&dat).arg(&new).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with(&format!("tbrw_writer: {}: record ", dat.display())) && err.contains("byte"), "{err}");
    assert!(!new.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2, "only the dump and its data file");
}

fn c_stderr(exe: &std::path::Path, args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let out = std::process::Command::new(exe).args(args).output().unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn c_error_messages_name_the_file_the_step_and_the_code() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.tb5");
    let bad = tmp.path().join("bad.tb5");
    // Record 42 of stream 0 gets time 0 in a stream its writer said is in
    // time order: a file that opens, which verify refuses.
    let mut b = std::fs::read(sample()).unwrap();
    let data_at = tbrw::Tb5File::open(sample()).unwrap().stream(0).unwrap().data().unwrap().unwrap().file_offset();
    let at = data_at as usize + 42 * 40 + 32;
    b[at..at + 8].fill(0);
    std::fs::write(&bad, &b).unwrap();
    let print = compile(&c_source("print_tb5"), Lang::C);
    let reader = compile(&c_source("tbrw_reader"), Lang::C);

    // One line: the file, the step, the code's text (not the call's source) and number.
    let one_line = |err: &str| {
        assert!(err.lines().count() == 1 && !err.contains("TBRW_") && err.trim_end().ends_with(')'), "{err}");
        assert!(err.contains("(TBRW error "), "{err}");
    };
    let (code, err) = c_stderr(&print, &[missing.as_os_str()]);
    assert_eq!(code, Some(1));
    assert!(err.starts_with(&format!("print_tb5: {}: opening it: ", missing.display())), "{err}");
    one_line(&err);
    let (code, err) = c_stderr(&reader, &[bad.as_os_str(), tmp.path().join("x.dat").as_os_str()]);
    assert_eq!(code, Some(1));
    assert!(err.starts_with(&format!("tbrw_reader: {}: verifying it: ", bad.display())), "{err}");
    one_line(&err);
    let (code, err) = c_stderr(&print, &[sample().as_os_str(), "--records".as_ref(), "x".as_ref()]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("print_tb5: --records takes a number or 'all', not 'x'\n"), "{err}");
}

#[test]
fn c_reader_and_writer_replace_outputs_only_with_force_and_never_an_input() {
    let tmp = tempfile::tempdir().unwrap();
    let reader = compile(&c_source("tbrw_reader"), Lang::C);
    let writer = compile(&c_source("tbrw_writer"), Lang::C);
    let tb5 = tmp.path().join("in.tb5");
    std::fs::copy(sample(), &tb5).unwrap();
    let (dat, data, new) = (tmp.path().join("in.dat"), tmp.path().join("in.tb5.dat"), tmp.path().join("new.tb5"));
    let p = |x: &PathBuf| x.as_os_str().to_owned();
    run(&reader, &[tb5.to_str().unwrap(), dat.to_str().unwrap()]);
    let dump = std::fs::read(&dat).unwrap();

    let (code, err) = c_stderr(&reader, &[&p(&tb5), &p(&dat)]);
    assert_eq!((code, err), (Some(1), format!("tbrw_reader: {} exists: give --force to replace it\n", dat.display())));
    run(&reader, &[tb5.to_str().unwrap(), dat.to_str().unwrap(), "--force"]);
    assert!(std::fs::read(&dat).unwrap() == dump);

    run(&writer, &[dat.to_str().unwrap(), new.to_str().unwrap()]);
    std::fs::write(&new, b"keep").unwrap();
    let (code, err) = c_stderr(&writer, &[&p(&dat), &p(&new)]);
    assert_eq!((code, err), (Some(1), format!("tbrw_writer: {} exists: give --force to replace it\n", new.display())));
    assert_eq!(std::fs::read(&new).unwrap(), b"keep");
    run(&writer, &["-f", dat.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(rust_print(&new, Records::All), rust_print(&sample(), Records::All));

    // Inputs, even with --force: the TB5 input, the dump, the data file it names.
    let original = std::fs::read(&tb5).unwrap();
    let data_bytes = std::fs::read(&data).unwrap();
    for (exe, input, output) in [(&reader, &tb5, &tb5), (&writer, &dat, &dat), (&writer, &dat, &data)] {
        let (code, err) = c_stderr(exe, &[&p(input), &p(output), "--force".as_ref()]);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains(&*output.to_string_lossy()) && err.contains("cannot also be the output"), "{err}");
    }
    // The dump where its own data file goes.
    let (code, err) = c_stderr(&reader, &[&p(&tb5), &p(&data), "-f".as_ref()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("is where the data file"), "{err}");
    assert!(std::fs::read(&tb5).unwrap() == original);
    assert!(std::fs::read(&dat).unwrap() == dump);
    assert!(std::fs::read(&data).unwrap() == data_bytes);
}

/// The files Intel's library wrote (tbrw/tests/data/intel), and the real
/// VTune files of `TBRW_VTUNE_FILES` when that names a folder of them.
fn intel_files() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tbrw/tests/data/intel"))];
    dirs.extend(std::env::var_os("TBRW_VTUNE_FILES").map(PathBuf::from));
    let mut v: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tb7" || e == "tb6"))
        .collect();
    v.sort();
    v
}

#[test]
fn the_c_examples_read_intels_files_as_the_rust_ones_do() {
    let print = compile(&c_source("print_tb5"), Lang::C);
    let reader = compile(&c_source("tbrw_reader"), Lang::C);
    let tmp = tempfile::tempdir().unwrap();
    for f in intel_files() {
        let s = f.to_str().unwrap();
        let mut rust = Vec::new();
        if let Err(e) = print_file(&f, Options { json: false, records: Records::All }, &mut rust) {
            // Both refuse what Intel's TBRW_verify refuses (24: no legacy sample records).
            let c = std::process::Command::new(&print).arg(s).output().unwrap();
            assert_eq!(c.status.code(), Some(1), "{s}");
            assert!(String::from_utf8_lossy(&c.stderr).contains("(TBRW error 24)"), "{s}");
            assert!(e.to_string().contains("requires the legacy section"), "{s}: {e}");
            continue;
        }
        let out = String::from_utf8(run(&print, &[s, "--records", "all"]).stdout).unwrap();
        assert_eq!(out, String::from_utf8(rust).unwrap(), "{s}");
        let (rd, cd) = (tmp.path().join("r.dat"), tmp.path().join("c.dat"));
        tb5_to_dat(&f, &rd).unwrap();
        run(&reader, &[s, cd.to_str().unwrap(), "--force"]);
        assert!(std::fs::read(&rd).unwrap() == std::fs::read(&cd).unwrap(), "{s}: the .dat dumps differ");
    }
    let guide = intel_files().into_iter().find(|p| p.ends_with("guide.tb7")).unwrap();
    run_valgrind(&print, &[guide.to_str().unwrap(), "--records", "20"]);
}

/// Names from a file reach the terminal escaped in the C `print_tb5` as in
/// the Rust one (`tbrw::text::Quoted`): quotes, backslashes, control
/// characters and the characters that turn text around.
#[test]
fn the_c_print_escapes_names_as_the_rust_one_does() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("names.tb5");
    let mut w = tbrw::Tb5Writer::create(&f).unwrap();
    let leaf =
        tbrw::CpuidIa32 { eax_input: 0, eax: 0xa, ebx: 0x756e6547, ecx: 0x6c65746e, edx: 0x49656e69, reserved: 0 };
    let arch = tbrw::CpuArch { arch_type: tbrw::arch_type::X86, cpuids: tbrw::Cpuids::Ia32(vec![leaf]) };
    let cpu = tbrw::Cpu { native_arch_type: tbrw::native_arch::IA32, archs: vec![arch], ..Default::default() };
    let node = tbrw::Node { num_available: 1, num_used: 1, cpus: vec![cpu], ..Default::default() };
    w.write_hardware(&tbrw::System { nodes: vec![node] }).unwrap();
    let module = tbrw::Module {
        associated_pid: 7,
        load_address: 0x400000,
        length: 0x1000,
        path: Some("C:\\dir\\a\"b\x1b[31m\t\u{9b}\u{202e}é.so".into()),
        name: Some("a\"b\x7f.so".into()),
        ..Default::default()
    };
    w.write_modules([&module]).unwrap();
    w.close().unwrap();
    let mut rust = Vec::new();
    print_file(&f, Options { json: false, records: Records::All }, &mut rust).unwrap();
    let rust = String::from_utf8(rust).unwrap();
    assert!(rust.contains(r#"path="C:\\dir\\a\"b\x1b[31m\t\u{9b}\u{202e}é.so" name="a\"b\x7f.so""#), "{rust}");
    let print = compile(&c_source("print_tb5"), Lang::C);
    let c = String::from_utf8(run(&print, &[f.to_str().unwrap(), "--records", "all"]).stdout).unwrap();
    assert_eq!(c, rust);
}
