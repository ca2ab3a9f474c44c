//! What files name reaches the terminal escaped, and what files hold is
//! read within bounds (docs/SYMBOLS.md, docs/FORMAT.md "Names in text
//! outputs"): names holding terminal escapes, line breaks and `;` in a
//! thread, a process, a module path, an event and a JIT map's symbols,
//! through report, annotate, the folded flame graph, info and warnings;
//! a JIT map of another user refused unless `--trust-jit-maps`; a line
//! table whose compression header claims 3 GiB skipped with a warning.

use std::path::Path;
use std::process::{Command, Output};

mod program;

use tbrw::*;
use tbrw_import::globals::write_globals;
use tbrw_schema::descriptor::field;

const PID: u32 = 4242424;
/// The JIT map's two symbols: a terminal escape and a `;`; a tab.
const RED: &str = "jit\x1b[31m_red;semi";
const TAB: &str = "tab\there";
const MAP_START: u64 = 0x7f00_0000_1000;
/// The module whose file is missing: its name holds "clear the screen".
const LIB: &str = "/nonexistent/lib\x1b[2Jx.so";
const EVENT: &str = "cycles\x1b[1m";
/// The executable, which names the process.
const PROCESS: &str = "/bin/proc\x1b[31m";
/// Two threads: an OSC title sequence ending in BEL; a tab and a line break.
const THREADS: [(u32, &str); 2] = [(PID, "th\x1b]0;pwned\x07"), (PID + 1, "tab\tnew\nline")];

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

/// Standard output and error of a command that must succeed.
fn ok(args: &[&str]) -> (String, String) {
    let o = tbrw(args);
    let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "tbrw {args:?}: {err}");
    (out, err)
}

/// Whether `text` holds a character a terminal acts on (other than the
/// line breaks between lines).
fn raw_controls(text: &str) -> bool {
    text.chars().any(|c| c != '\n' && tbrw::text::needs_escape(c))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn module(path: &str, load_address: u64, length: u64, first: bool) -> Module {
    let mut flags = ModuleFlags::LOADED;
    if first {
        flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
    }
    Module {
        associated_pid: PID,
        flags,
        segment_type: processor_mode::BIT64,
        load_address,
        length,
        unload_tsc: NEVER_UNLOADED,
        name: Some(path.rsplit('/').next().unwrap().to_owned()),
        path: Some(path.to_owned()),
        ..Default::default()
    }
}

/// A TB5 file of one process and two threads sampled in `modules` at
/// (tid, pc), its event named [`EVENT`].
fn write_tb5(path: &Path, modules: &[Module], samples: &[(u32, u64)]) {
    let mut w = Tb5Writer::create(path).unwrap();
    let os = Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() };
    write_globals(&mut w, &Software { host: None, os: Some(os), application: None }).unwrap();
    w.write_modules(modules).unwrap();
    let pids = [Pid { id: PID, flags: PidTidFlags::CREATED, ..Default::default() }];
    let tids = THREADS.map(|(tid, name)| Tid {
        associated_pid: PID,
        id: tid,
        flags: PidTidFlags::CREATED,
        name: Some(name.into()),
        ..Default::default()
    });
    w.write_process_threads(&pids, &tids).unwrap();
    let mut st = w
        .stream(0)
        .unwrap()
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
        .unwrap()
        .data_descriptor(&[
            field(desc_type::IP, desc_subtype::NONE, 8, "pc"),
            field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
            field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
        ])
        .unwrap();
    st.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some(EVENT.into()), ..Default::default() }]).unwrap();
    let mut data = st.data().unwrap();
    for &(tid, pc) in samples {
        let mut rec = pc.to_le_bytes().to_vec();
        rec.extend_from_slice(&PID.to_le_bytes());
        rec.extend_from_slice(&tid.to_le_bytes());
        data.add(&rec).unwrap();
    }
    data.done().unwrap();
    st.finish().unwrap();
    w.close().unwrap();
}

/// The file with JIT code named by `dir/sym/tmp/perf-PID.map` and a
/// missing library: 3 samples in [`RED`], 2 in [`TAB`], 1 in [`LIB`].
fn hostile_names(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let symfs = dir.join("sym");
    std::fs::create_dir_all(symfs.join("tmp")).unwrap();
    let map = format!("{MAP_START:x} 100 {RED}\n{:x} 100 {TAB}\n", MAP_START + 0x100);
    std::fs::write(symfs.join(format!("tmp/perf-{PID}.map")), map).unwrap();
    let tb5 = dir.join("names.tb5");
    let exe = module(PROCESS, 0x40_0000, 0x1000, true);
    let modules = [
        Module { flags: exe.flags | ModuleFlags::IS_EXE, ..exe },
        module(&format!("/tmp/perf-{PID}.map"), MAP_START, 0x1000, false),
        module(LIB, 0x5555_0000_0000, 0x1000, false),
    ];
    let (a, b) = THREADS.map(|t| t.0).into();
    let samples = [
        (a, MAP_START + 4),
        (a, MAP_START + 8),
        (b, MAP_START + 12),
        (b, MAP_START + 0x104),
        (a, MAP_START + 0x108),
        (b, 0x5555_0000_0010),
    ];
    write_tb5(&tb5, &modules, &samples);
    (tb5, symfs)
}

#[test]
fn names_from_files_reach_every_text_output_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let (tb5, symfs) = hostile_names(dir.path());
    let (f, sym) = (s(&tb5), s(&symfs));
    let esc = |name: &str| tbrw::text::escape(name).into_owned();

    // Functions: the map's names, the missing library's label; its warning.
    let (out, err) = ok(&["report", f, "--by", "function", "--symfs", sym]);
    assert!(!raw_controls(&out) && !raw_controls(&err), "{out:?} {err:?}");
    assert!(out.contains("jit\\x1b[31m_red;semi") && out.contains("tab\\there"), "{out}");
    assert!(out.contains("[lib\\x1b[2Jx.so]"), "{out}");
    assert!(err.contains("warning: /nonexistent/lib\\x1b[2Jx.so: file not found"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Threads, processes, modules, events: one line each (after the
    // heading and the column names), escaped.
    for (by, names, rows) in [
        ("thread", vec![format!("{} (tid {PID}, pid {PID})", esc(THREADS[0].1)), esc(THREADS[1].1)], 2),
        ("process", vec![format!("{} (pid {PID})", esc("proc\x1b[31m"))], 1),
        ("module", vec![esc("lib\x1b[2Jx.so")], 2),
        ("event", vec![esc(EVENT)], 1),
    ] {
        let (out, _) = ok(&["report", f, "--by", by]);
        assert!(!raw_controls(&out), "{by}: {out:?}");
        for n in names {
            assert!(out.contains(&n), "{by}: {n} in {out}");
        }
        assert_eq!(out.lines().count(), 2 + rows, "{out}");
    }
    // JSON keeps the exact names.
    let (out, _) = ok(&["report", f, "--by", "function", "--symfs", sym, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = v["rows"].as_array().unwrap().iter().filter_map(|r| r["key"]["name"].as_str()).collect();
    assert!(names.contains(&RED) && names.contains(&TAB), "{names:?}");

    // Annotate: the function as named, its heading escaped.
    let (out, err) = ok(&["annotate", f, "--function", RED, "--symfs", sym]);
    assert!(!raw_controls(&out) && !raw_controls(&err), "{out:?} {err:?}");
    assert!(out.starts_with(&format!("{} in ", esc(RED))), "{out}");

    // Folded stacks: one line per stack, `;` inside a name as `:`, the
    // names otherwise spelled as the report spells them.
    let folded = dir.path().join("out.folded");
    ok(&["export", "flamegraph", "--folded", "--by", "thread,function", f, "-o", s(&folded), "--symfs", sym]);
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(!raw_controls(&text), "{text:?}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    for l in &lines {
        let (stack, count) = l.rsplit_once(' ').unwrap();
        assert!(count.parse::<u64>().is_ok() && stack.split(';').count() == 2, "{l}");
    }
    let folded_name = |name: &str| esc(name).replace(';', ":");
    let want = format!("{} (tid {PID});{} 2", folded_name(THREADS[0].1), folded_name(RED));
    assert!(lines.contains(&want.as_str()), "{want} in {text}");

    // info: the event's name quoted and escaped.
    let (out, _) = ok(&["info", f]);
    assert!(!raw_controls(&out), "{out:?}");
    assert!(out.contains("\"cycles\\x1b[1m\""), "{out}");

    // An error naming what a file holds: one line, escaped.
    let o = tbrw(&["annotate", f, "--function", "no\x1b[31msuch", "--symfs", sym]);
    let err = String::from_utf8_lossy(&o.stderr);
    let errors = err.lines().filter(|l| !l.starts_with("tbrw: warning:")).count();
    assert!(!o.status.success() && !raw_controls(&err) && errors == 1, "{err:?}");
}

#[test]
fn a_jit_map_of_another_user_is_used_only_with_trust_jit_maps() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return eprintln!("note: skipped: giving the map to another user (chown) needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    let (tb5, symfs) = hostile_names(dir.path());
    let map = symfs.join(format!("tmp/perf-{PID}.map"));
    std::os::unix::fs::chown(&map, Some(65534), Some(65534)).unwrap();
    let (f, sym) = (s(&tb5), s(&symfs));
    let (out, err) = ok(&["report", f, "--by", "function", "--symfs", sym]);
    assert!(err.contains("belongs to uid 65534") && err.contains("--trust-jit-maps"), "{err}");
    assert!(!out.contains("tab\\there"), "{out}");
    let (out, err) = ok(&["report", f, "--by", "function", "--symfs", sym, "--trust-jit-maps"]);
    assert!(out.contains("tab\\there") && !err.contains("65534"), "{out} {err}");
    // A link at the map's name is not followed; a FIFO does not block.
    std::fs::remove_file(&map).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &map).unwrap();
    let (_, err) = ok(&["report", f, "--by", "function", "--symfs", sym]);
    assert!(err.contains("a symbolic link, not followed"), "{err}");
    let (_, err) = ok(&["report", f, "--by", "function", "--symfs", sym, "--trust-jit-maps"]);
    assert!(err.contains("not a regular file (a character device)"), "{err}");
}

/// `dir/prog`'s `.debug_line` replaced by a zlib stream behind a
/// compression header claiming 3 GiB (appended at the end of the file).
fn claim_3_gib(prog: &Path) {
    use object::{Object, ObjectSection};
    let elf = std::fs::read(prog).unwrap();
    let file = object::File::parse(&*elf).unwrap();
    let section = file.section_by_name(".debug_line").unwrap();
    let (index, plain) = (section.index().0, section.data().unwrap().to_vec());
    drop(file);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut z, &plain).unwrap();
    let mut contents = [1u32.to_le_bytes(), 0u32.to_le_bytes()].concat();
    contents.extend_from_slice(&(3u64 << 30).to_le_bytes());
    contents.extend_from_slice(&1u64.to_le_bytes());
    contents.extend_from_slice(&z.finish().unwrap());
    let mut out = elf.clone();
    out.resize(out.len().next_multiple_of(8), 0);
    let at = out.len() as u64;
    out.extend_from_slice(&contents);
    let rd = |at: usize, n: usize| out[at..at + n].iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x));
    let sh = rd(0x28, 8) as usize + index * rd(0x3a, 2) as usize;
    let flags = rd(sh + 8, 8) | 0x800; // SHF_COMPRESSED
    for (off, v) in [(8, flags), (24, at), (32, contents.len() as u64), (48, 8)] {
        out[sh + off..sh + off + 8].copy_from_slice(&v.to_le_bytes());
    }
    std::fs::write(prog, out).unwrap();
}

#[test]
fn a_line_table_claiming_3_gib_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let source = "volatile long sink;\n__attribute__((noinline)) void spin(long n) { for (long i = 0; i < n; i++) sink += i; }\nint main(void) { spin(1000); return 0; }\n";
    let Some(prog) = program::build_prog(dir.path(), "prog.c", source, &["-g", "-O1", "-Wl,--build-id"]) else {
        return;
    };
    claim_3_gib(&prog);
    let (spin, size) = program::elf_symbol(&prog, "spin");
    let base = 0x5555_0000_0000u64;
    let tb5 = dir.path().join("line.tb5");
    let m = Module { associated_pid: PID, ..module(s(&prog), base, 0x10_0000, true) };
    write_tb5(&tb5, &[m], &(0..size).step_by(4).map(|o| (PID, base + spin + o)).collect::<Vec<_>>());
    let (out, err) = ok(&["report", s(&tb5), "--by", "line"]);
    assert!(err.contains("section .debug_line skipped: its header claims 3221225472 bytes"), "{err}");
    assert!(!out.contains("prog.c:"), "{out}");
    // The functions are still named from the symbol table.
    let (out, _) = ok(&["report", s(&tb5), "--by", "function"]);
    assert!(out.contains("spin"), "{out}");
}
