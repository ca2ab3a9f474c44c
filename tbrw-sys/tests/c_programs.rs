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

/// The same file enumerated by a program written to the guide (callback
/// names as arguments) and by one written to Intel's headers (addresses of
/// callback variables): every enumeration hands both the same records.
#[test]
fn both_callback_conventions_enumerate_the_same_records() {
    let dir = temp();
    let f = dir.path().join("enum.tb5");
    let f = f.to_str().unwrap();
    let guide = check_program("enumerate_guide", &[f]);
    let intel = check_program("enumerate_intel", &[f]);
    assert_eq!(intel, guide, "Intel's convention saw other records than the guide's");
    // What both saw is the file: 300 records, 3 again from 297, 300 bound.
    let count = |prefix: &str| guide.lines().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(count("  eip "), 300 + 3 + 300, "{guide}");
    assert_eq!(count("  a.out pid 10") + count("  lib.so pid") + count("  b.out pid 20"), 5 + 2);
    assert_eq!(count("event "), 3);
    assert_eq!(count("  type "), 2);
    assert!(guide.contains("  eip 0x400000 event 0 pid 20 tid 100 tsc 5000\n"), "{guide}");
    // 0x43000c lies in no module; 0x410004 in pid 10's lib.so, 0x400000 in pid 20's b.out.
    // The stored bind (Intel's layout, docs/BIND.md "In Intel's layout")
    // indexes the file's own tables: its 2 processes and 2 threads first,
    // which are the bind's processes (pid 10 = 0, pid 20 = 1: same pid,
    // start and name, whatever path the exe module gives), then the bind's
    // threads not in the file ((20, 100) = 2, (10, 101) = 3).
    assert!(guide.contains("  eip 0x43000c module -1 process 0 thread 3\n"), "{guide}");
    assert!(guide.contains("  eip 0x410004 module 1 process 0 thread 3\n"), "{guide}");
    assert!(guide.contains("  eip 0x400000 module 3 process 1 thread 2\n"), "{guide}");
    assert!(guide.contains("  tid 101 of pid 20 main\n") && guide.contains("  pid 20 b.out\n"), "{guide}");
    assert!(guide.ends_with("callbacks\n"), "{guide}");
}

/// Source written to Intel's headers compiles as it is with every C and
/// C++ compiler installed (gcc and g++ always; clang and clang++ when
/// present), warnings as errors; so does the guide's style without the
/// define.
#[test]
fn intel_style_source_compiles_with_every_compiler() {
    let include = sys_dir().join("include");
    let dir = sys_dir().join("tests/c");
    for (compiler, std) in
        [("gcc", "-std=c11"), ("clang", "-std=c11"), ("g++", "-std=c++17"), ("clang++", "-std=c++17")]
    {
        if Command::new(compiler).arg("--version").output().is_err() {
            eprintln!("{compiler} is not installed: skipping its compile check");
            continue;
        }
        for name in ["enumerate_intel", "enumerate_guide"] {
            let mut cmd = Command::new(compiler);
            if compiler.ends_with("++") {
                cmd.args(["-x", "c++"]);
            }
            let out = cmd
                .args([std, "-Wall", "-Wextra", "-Werror", "-c", "-o", "/dev/null", "-I"])
                .arg(&include)
                .arg("-I")
                .arg(&dir)
                .arg(source(name))
                .output()
                .unwrap();
            assert!(out.status.success(), "{compiler} {name}:\n{}", String::from_utf8_lossy(&out.stderr));
        }
    }
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

// --- the read side: damaged counts, tables of a read-only bind ---

/// The stream tables of a file in Intel's layout (as this project writes
/// it: the file header's first entry is the global table), in stream
/// order: (table offset, table length) each.
fn intel_stream_tables(bytes: &[u8]) -> Vec<(usize, usize)> {
    let rd = |at: usize, n: usize| bytes[at..at + n].iter().rev().fold(0u64, |a, &x| (a << 8) | x as u64) as usize;
    let link = |at: usize, len: usize| {
        (at..at + len).step_by(40).find(|&e| rd(e + 28, 4) == 0x29).map(|e| (rd(e + 8, 8), rd(e, 8)))
    };
    assert_eq!(rd(16 + 28, 4), 0x22, "the global table first");
    let mut tables = Vec::new();
    let mut next = link(rd(16 + 8, 8), rd(16, 8));
    while let Some((at, len)) = next {
        tables.push((at, len));
        next = link(at, len);
    }
    tables
}

/// The entry of section type `ty` in the stream table at `table`.
fn intel_entry(bytes: &[u8], (at, len): (usize, usize), ty: u32) -> usize {
    (at..at + len).step_by(40).find(|&e| bytes[e + 28..e + 32] == ty.to_le_bytes()).expect("the section")
}

#[test]
fn damaged_counts_are_refused_before_any_callback() {
    let dir = temp();
    let good = dir.path().join("good.tb5");
    check_program("guide_write_read", &[good.to_str().unwrap(), "1000"]);
    let bytes = std::fs::read(&good).unwrap();
    assert_eq!(&bytes[..8], b"Sample6 ");
    let tables = intel_stream_tables(&bytes);
    // Intel's layout has no checksums: lengths are checked against what
    // the tables say. The bind data stream (type 4, its information's
    // third word) cut to one 32-byte entry, for 1000 records.
    let stream_type = |t: (usize, usize)| {
        let info = intel_entry(&bytes, t, 0x28);
        let at = u64::from_le_bytes(bytes[info + 8..info + 16].try_into().unwrap()) as usize;
        u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap())
    };
    let bind = *tables.iter().find(|&&t| stream_type(t) == 4).expect("a bind data stream");
    let mut short = bytes.clone();
    let e = intel_entry(&short, bind, 0x26);
    short[e..e + 8].copy_from_slice(&32u64.to_le_bytes());
    // Stream 0's records: 20 bytes short of whole 40-byte records.
    let mut cut = bytes;
    let e = intel_entry(&cut, tables[0], 0x26);
    let len = u64::from_le_bytes(cut[e..e + 8].try_into().unwrap());
    cut[e..e + 8].copy_from_slice(&(len - 20).to_le_bytes());
    let (a, b) = (dir.path().join("short_bind.tb5"), dir.path().join("cut.tb5"));
    std::fs::write(&a, short).unwrap();
    std::fs::write(&b, cut).unwrap();
    let out = check_program("damaged_reads", &[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out, "damaged reads: ok\n");
}

#[test]
fn a_read_only_bind_makes_its_process_thread_tables_readable() {
    let dir = temp();
    let f = dir.path().join("tables.tb5");
    assert_eq!(check_program("bind_tables", &[f.to_str().unwrap()]), "bind tables: ok\n");
}

// --- hostile callers and systems ---

#[test]
fn hostile_paths_counts_writers_and_os_errors() {
    let dir = temp();
    assert_eq!(check_program("hostile", &[dir.path().to_str().unwrap()]), "hostile: ok\n");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["shared.tb5"], "no work file, no aborted file");
}

#[test]
fn exiting_without_close_leaves_no_work_file_either() {
    // A process that exits with its handle open (the guide's chapter 10 does
    // after a failed close): nothing may stay beside the target either.
    let dir = temp();
    let f = dir.path().join("never.tb5");
    let exe = compile(&source("no_close"), Lang::C);
    run(&exe, &[f.to_str().unwrap()]);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "{left:?}");
}

// --- the writing side: ids, any-order sections, verify before close, done_, const ---

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

/// Unload records with and without an address, two loads of one module in
/// one process: docs/BIND.md's pairing, through the C API (stored and
/// in-memory binds).
#[test]
fn unloads_without_an_address_end_the_load_of_their_module() {
    let dir = temp();
    let f = dir.path().join("unloads.tb5");
    assert_eq!(check_program("bind_unloads", &[f.to_str().unwrap()]), "bind unloads: ok\n");
}

/// Guide 5 step 3: what a session finished is read back before close, in a
/// new file and an append, with read permission (without: 111).
#[test]
fn sections_and_streams_finished_in_the_session_are_readable() {
    let dir = temp();
    assert_eq!(check_program("session_reads", &[dir.path().to_str().unwrap()]), "session reads: ok\n");
    let t = tb5::Tb5File::open(dir.path().join("session.tb5")).unwrap();
    t.verify().unwrap();
    assert_eq!(t.stream_count(), 4);
    let d = t.stream(1).unwrap().data().unwrap().unwrap();
    assert_eq!(d.len(), 100_000);
    assert_eq!(d.record(99_999).unwrap()[..8], (0x900000u64 + 99_999).to_le_bytes());
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "no work or spill file left: {left:?}");
}

#[test]
fn a_stream_of_the_writing_session_is_bound_at_close() {
    let dir = temp();
    let f = dir.path().join("bound.tb5");
    assert_eq!(check_program("bind_same_session", &[f.to_str().unwrap()]), "bind in the same session: ok\n");
    let t = tb5::Tb5File::open(&f).unwrap();
    let s = t.stream(0).unwrap();
    assert!(s.is_bound());
    assert_eq!(s.bind_view().unwrap().unwrap().len(), 1000);
}

/// A perf `-g` import keeps its stacks in a stack table: a C reader that
/// knows nothing of it reads stream 0's descriptor, records and binds as
/// the Rust reader does (the table is an extra section C readers skip),
/// and binds it through the C API.
#[test]
fn a_file_with_a_stack_table_reads_as_any_other() {
    let dir = temp();
    let f = dir.path().join("perf-stacks.tb5");
    std::fs::copy(sys_dir().join("../cli/tests/data/matrix/perf-stacks.tb5"), &f).unwrap();
    // The C reader binds the copy (each run of check_program finds it bound
    // after the first), then reads it.
    let out = check_program("read_stream", &[f.to_str().unwrap()]);
    let file = tb5::Tb5File::open(&f).unwrap();
    let stream = file.stream(0).unwrap();
    assert!(stream.stack_table().unwrap().is_some_and(|t| !t.is_empty()), "the fixture has a stack table");
    let data = stream.data().unwrap().unwrap();
    let (mut records, mut ip_sum) = (0u64, 0u64);
    for r in data.records() {
        records += 1;
        ip_sum = ip_sum.wrapping_add(u64::from_le_bytes(r[..8].try_into().unwrap()));
    }
    let binds = stream.bind_view().unwrap().expect("bound by the C reader");
    let in_module =
        (0..binds.len()).filter(|&i| binds.data_bind(i).unwrap().module_index != tb5::UNKNOWN_MODULE).count();
    assert!(out.contains("field stack_id offset "), "{out}");
    assert!(out.contains(&format!("\nrecords {records}\n")), "{out}");
    assert!(out.contains(&format!("\nip sum {ip_sum:#x}\n")), "{out}");
    assert!(out.contains(&format!("\nbound {records}\nin a module {in_module}\n")), "{out}");
}
