//! `tbrw import perf` checked against perf itself: small programs are
//! recorded with `perf record` (plain, `-g`, two events, a leader-sampled
//! group, pipe mode saved to a file and through `perf inject`, JIT code
//! with its perf map, `--call-graph dwarf`), imported, and the counts per
//! event and module, thread and process must equal perf's (`perf report
//! --sort dso`/`--sort pid`, `perf script -F pid,event`), the functions
//! per module perf's `--sort dso,sym`, and the unwound call chains perf
//! script's. A version 1 header, a killed recording and a cut file give
//! perf's answer or a clear error. Skipped, with a note, where `cc` or
//! `perf record` fail. The files of other machines are checked in
//! `perf_corpus.rs`.

mod perf_support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use perf_support::*;

const PROG: &str = r#"
#include <math.h>
#include <stdlib.h>
#include <pthread.h>
static volatile double sink;
static int cmp(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
static void *work(void *arg) { double s = 0; for (long i = 0; i < 3000000L; i++) s += sin((double)i) * (long)arg; sink = s; return 0; }
int main(void) {
  pthread_t t; pthread_create(&t, 0, work, (void *)2);
  int *v = malloc(sizeof(int) * 1000000);
  for (int r = 0; r < 2; r++) { for (int i = 0; i < 1000000; i++) v[i] = (i * 2654435761u) >> 7; qsort(v, 1000000, sizeof(int), cmp); }
  sink = v[7]; free(v); pthread_join(t, 0); return 0; }
"#;

/// The program recorded with `perf record ARGS`, or `None` (with a note).
fn record_prog(dir: &Path, name: &str, args: &[&str]) -> Option<PathBuf> {
    let exe = build(dir, "prog", PROG, &["-O1"])?;
    record(&dir.join(name), args, &[&exe])
}

/// PLT stubs are the one place where perf 6.1's names are not the
/// symbolizer's, as docs/SYMBOLS.md says ("Where perf 6.1 differs"):
/// perf names a stub after the size-0 `_init` its table stretches over
/// `.plt`, or `@plt` alone; the symbolizer `name@plt`. Both spellings
/// become `[plt]`.
fn plt_as_one(m: BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (k, n) in m {
        let (dso, sym) = k.split_once('\t').unwrap();
        let sym = if sym.ends_with("@plt") || sym == "_init" { "[plt]" } else { sym };
        *out.entry(format!("{dso}\t{sym}")).or_default() += n;
    }
    out
}

/// Ours and perf's function counts, each through [`plt_as_one`], with
/// one more difference allowed: a sample in a module's PLT header (the
/// lazy binder's trampoline, hit now and then while a first call binds),
/// which the symbolizer leaves unnamed (`?`, docs/SYMBOLS.md) and perf
/// names `_init`, stretched over `.plt`. Such samples count as `[plt]` on
/// our side exactly when perf has that many more `[plt]` samples there.
fn as_perf_names(
    ours: BTreeMap<String, u64>,
    perf: BTreeMap<String, u64>,
) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let (mut ours, perf) = (plt_as_one(ours), plt_as_one(perf));
    let dsos: Vec<String> = ours.keys().filter_map(|k| k.strip_suffix("\t?")).map(str::to_owned).collect();
    for dso in dsos {
        let (unnamed, plt) = (format!("{dso}\t?"), format!("{dso}\t[plt]"));
        let more = perf.get(&plt).copied().unwrap_or(0).saturating_sub(ours.get(&plt).copied().unwrap_or(0));
        if more > 0 && ours.get(&unnamed) == Some(&more) && !perf.contains_key(&unnamed) {
            ours.remove(&unnamed);
            *ours.entry(plt).or_default() += more;
        }
    }
    (ours, perf)
}

#[test]
fn module_process_thread_and_function_counts_equal_perfs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record_prog(dir.path(), "plain.data", &["-F", "2000"]) else { return };
    assert!(check_counts(&data) > 20);
    let (tb5, _) = import(&data);
    let (ours, perf) = as_perf_names(tbrw_functions(&tb5), perf_functions(&data));
    assert_eq!(ours, perf);
}

#[test]
fn call_chains_become_a_stack_table_and_counts_still_equal_perfs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record_prog(dir.path(), "g.data", &["-F", "2000", "-g"]) else { return };
    check_counts(&data);
    let f = tbrw::Tb5File::open(data.with_extension("tb5")).unwrap();
    // The call chains are a stack table, not a stream of frames: in Intel's
    // layout (the default) the table is stream 1, a custom stream that says
    // whose table it is (docs/FORMAT.md, "This project's sections in Intel's layout").
    assert_eq!(f.stream_count(), 2, "stream 0 and its stack table");
    let info = f.stream(1).unwrap().info().unwrap().unwrap();
    assert_eq!(f.string(info.comment).unwrap(), "tbrw stack table 01 of data stream 0000");
    let s0 = f.stream(0).unwrap();
    let table = s0.stack_table().unwrap().expect("a stack table");
    let layout = s0.layout().unwrap().unwrap();
    let id = *layout.find(tbrw::STACK_ID_FIELD, None).expect("a stack id field");
    // Every sample's stack: innermost its own ip (perf's chain starts with
    // the sampled ip), and far fewer nodes than frames.
    let ip = *layout.find(tbrw::desc_type::IP, None).unwrap();
    let (mut frames, mut out) = (0usize, Vec::new());
    let data = s0.data().unwrap().unwrap();
    for rec in data.records() {
        out.clear();
        table.frames(id.read_le(rec).unwrap() as u32, &mut out).unwrap();
        assert_eq!(out[0], ip.read_le(rec).unwrap());
        frames += out.len();
    }
    assert!(frames as u64 > 2 * table.len(), "{frames} frames in {} nodes", table.len());
}

#[test]
fn two_events_count_per_event_as_perf_does() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record_prog(dir.path(), "two.data", &["-F", "2000", "-e", "cpu-clock,task-clock"]) else {
        return;
    };
    check_counts(&data);
    assert_eq!(perf_counts(&data, "dso").unwrap().len(), 2);
}

/// Leader sampling (`{a,b}:S`): the leader's samples read the group, and
/// perf counts a sample for each member whose count grew; the event table
/// names each member.
#[test]
fn a_leader_sampled_group_counts_a_sample_per_member() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record_prog(dir.path(), "group.data", &["-F", "2000", "-e", "{cpu-clock,task-clock}:S"]) else {
        return;
    };
    let total = check_counts(&data);
    let theirs = perf_counts(&data, "dso").unwrap();
    assert_eq!(theirs.keys().cloned().collect::<Vec<_>>(), ["cpu-clock", "task-clock"], "{theirs:?}");
    assert!(theirs.values().all(|m| m.values().sum::<u64>() * 3 > total), "both members counted: {theirs:?}");
    let f = tbrw::Tb5File::open(data.with_extension("tb5")).unwrap();
    let events: Vec<String> = f
        .stream(0)
        .unwrap()
        .events()
        .unwrap()
        .unwrap()
        .iter()
        .map(|e| f.resolve(e.clone()).unwrap().name.unwrap())
        .collect();
    assert_eq!(events, ["cpu-clock", "task-clock"]);
}

/// What `perf record -o -` writes, saved to a file, and what `perf inject`
/// writes from it (pipe format too), import by path.
#[test]
fn pipe_format_files_import_by_path() {
    let dir = tempfile::tempdir().unwrap();
    if !have_perf() {
        return;
    }
    let Some(exe) = build(dir.path(), "prog", PROG, &["-O1"]) else { return };
    let piped = dir.path().join("piped.data");
    let o = Command::new("perf")
        .args(["record", "-N", "-F", "2000", "-o", "-"])
        .arg(&exe)
        .stdout(std::fs::File::create(&piped).unwrap())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    if !o.success() {
        return eprintln!("note: skipped: perf record -o - failed");
    }
    assert_eq!(&std::fs::read(&piped).unwrap()[..8], b"PERFILE2");
    assert!(check_counts(&piped) > 20);
    let injected = dir.path().join("injected.data");
    let o = Command::new("perf")
        .args(["inject", "-o"])
        .arg(&injected)
        .stdin(std::fs::File::open(&piped).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // From a pipe, perf inject writes the pipe format.
    let head = std::fs::read(&injected).unwrap();
    assert_eq!(u64::from_le_bytes(head[8..16].try_into().unwrap()), 16);
    assert!(check_counts(&injected) > 20);

    // Cut inside a record: perf reports the records before it, and so does the import.
    let bytes = std::fs::read(&piped).unwrap();
    let cut = dir.path().join("cut-pipe.data");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3 + 5]).unwrap();
    let (_, err) = import(&cut);
    assert!(err.contains("the input ends inside record"), "{err}");
    check_counts(&cut);
}

/// A file of perf's version 1 (`PERFFILE`, 72-byte header, attributes of
/// `PERF_ATTR_SIZE_VER4`), made from a recording: perf reads it, and the
/// import gives its counts.
#[test]
fn a_version_1_header_is_read_as_perf_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record_prog(dir.path(), "v2.data", &["-F", "2000", "-e", "cpu-clock"]) else { return };
    let b = std::fs::read(&data).unwrap();
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (attr_size, attrs, attrs_len, data_at, data_len) = (u64_at(16), u64_at(24), u64_at(32), u64_at(40), u64_at(48));
    let mut out = vec![0u8; 72];
    out[..8].copy_from_slice(b"PERFFILE");
    out[8..16].copy_from_slice(&72u64.to_le_bytes());
    out[16..24].copy_from_slice(&(104u64 + 16).to_le_bytes());
    let n = (attrs_len / attr_size) as usize;
    let attrs_at = out.len() as u64;
    let ids_at = attrs_at + n as u64 * 120;
    let mut ids = Vec::new();
    for i in 0..n {
        let a = (attrs + i as u64 * attr_size) as usize;
        let mut attr = b[a..a + 104].to_vec();
        attr[4..8].copy_from_slice(&104u32.to_le_bytes());
        out.extend_from_slice(&attr);
        let (ids_off, ids_len) = (u64_at(a + attr_size as usize - 16) as usize, u64_at(a + attr_size as usize - 8));
        out.extend_from_slice(&(ids_at + ids.len() as u64).to_le_bytes());
        out.extend_from_slice(&ids_len.to_le_bytes());
        ids.extend_from_slice(&b[ids_off..ids_off + ids_len as usize]);
    }
    out.extend_from_slice(&ids);
    let new_data_at = out.len() as u64;
    out.extend_from_slice(&b[data_at as usize..(data_at + data_len) as usize]);
    out[24..32].copy_from_slice(&attrs_at.to_le_bytes());
    out[32..40].copy_from_slice(&(n as u64 * 120).to_le_bytes());
    out[40..48].copy_from_slice(&new_data_at.to_le_bytes());
    out[48..56].copy_from_slice(&data_len.to_le_bytes());
    let v1 = dir.path().join("v1.data");
    std::fs::write(&v1, &out).unwrap();
    assert!(check_counts(&v1) > 20);
    assert_eq!(check_counts(&v1), check_counts(&data));
}

/// A recording whose `perf record` was killed: its header says the data
/// section is empty, perf cannot read it, and the import says why in one
/// line naming the file.
#[test]
fn a_killed_recording_is_an_error_saying_it_was_not_finished() {
    let dir = tempfile::tempdir().unwrap();
    if !have_perf() {
        return;
    }
    let Some(exe) = build(dir.path(), "prog", PROG, &["-O1"]) else { return };
    let data = dir.path().join("killed.data");
    let mut child = Command::new("perf")
        .args(["record", "-N", "-F", "2000", "-o"])
        .arg(&data)
        .arg(&exe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once it has begun its file and sampled for a while. A fixed
    // wait alone was not enough on a loaded machine: perf could be killed
    // before writing a byte, which is another case (an empty file).
    let begun = std::time::Instant::now();
    while std::fs::metadata(&data).map_or(true, |m| m.len() == 0) && begun.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(400));
    // SIGKILL, as an OOM kill or a lost session does: perf writes nothing more.
    child.kill().unwrap();
    child.wait().unwrap();
    if std::fs::metadata(&data).map_or(true, |m| m.len() == 0) {
        return eprintln!("note: skipped: perf record wrote nothing before it was killed");
    }
    let out = dir.path().join("killed.tb5");
    let o = tbrw().args(["import", "perf"]).arg(&data).arg("-o").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.success() {
        // perf wrote its header before the kill: then perf reads it too.
        check_counts(&data);
        return eprintln!("note: perf finished its header before the kill; nothing to check");
    }
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("killed.data") && err.contains("not finished"), "{err}");
    assert!(!out.exists());
    let theirs = Command::new("perf").args(["report", "--stdio", "-i"]).arg(&data).output().unwrap();
    let said = String::from_utf8_lossy(&theirs.stderr);
    assert!(said.contains("properly terminated") || !theirs.status.success(), "{said}");
}

#[test]
fn a_truncated_file_names_file_record_and_offset_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record_prog(dir.path(), "cut.data", &["-F", "2000"]) else { return };
    let bytes = std::fs::read(&data).unwrap();
    // The data section ends before the feature sections: cut inside it.
    let data_offset = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let data_size = u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize;
    let cut = dir.path().join("cut-short.data");
    std::fs::write(&cut, &bytes[..data_offset + data_size / 2 + 3]).unwrap();
    let out = dir.path().join("cut.tb5");
    let o = tbrw().args(["import", "perf"]).arg(&cut).arg("-o").arg(&out).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cut-short.data") && err.contains("record ") && err.contains("byte offset"), "{err}");
    assert!(!out.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name().to_string_lossy().contains("tb5") || e.file_name().to_string_lossy().starts_with(".tbrw")
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Cut in the feature sections after the data: perf reads the file
    // without them, and so does the import.
    let features = dir.path().join("features-cut.data");
    std::fs::write(&features, &bytes[..data_offset + data_size + 40]).unwrap();
    let (_, err) = import(&features);
    assert!(err.contains("feature sections are cut short"), "{err}");
    check_counts(&features);

    // Too short for a header, and not perf.data at all: one line each.
    for (name, bytes) in [("tiny.data", &bytes[..50]), ("elf.data", &b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\0\0"[..])]
    {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let o = tbrw().args(["import", "perf"]).arg(&p).arg("-o").arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.lines().count() == 1 && err.contains(name), "{err}");
    }
}

/// A program that writes its own machine code into anonymous executable
/// memory and names it in `/tmp/perf-<pid>.map`, as JITs do: perf names
/// the module `[JIT] tid <pid>` and the function from the map, in every
/// report; so do the import, the reports, annotate and the exports.
#[test]
fn jit_code_is_named_from_its_perf_map_as_perf_names_it() {
    if !cfg!(target_arch = "x86_64") {
        return eprintln!("note: skipped: the JIT test's machine code is x86-64");
    }
    const JIT: &str = r#"
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* long f(long n) { long s = 0; do s += n; while (--n); return s; }:
   xor %rax,%rax; 1: add %rdi,%rax; dec %rdi; jnz 1b; ret */
static const unsigned char code[] = {0x48, 0x31, 0xc0, 0x48, 0x01, 0xf8, 0x48, 0xff, 0xcf, 0x75, 0xf8, 0xc3};
int main(void) {
    unsigned char *page = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return 1;
    memcpy(page + 64, code, sizeof code);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *m = fopen(path, "w");
    if (!m) return 2;
    fprintf(m, "%lx %zx jit_spin\n", (unsigned long)(page + 64), sizeof code);
    fclose(m);
    long (*f)(long) = (long (*)(long))(void *)(page + 64);
    volatile long sink = 0;
    for (int i = 0; i < 4; i++) sink += f(100000000L);
    printf("%d\n", (int)getpid());
    return 0;
}
"#;
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), "jit", JIT, &["-O1"]) else { return };
    let data = dir.path().join("jit.data");
    if !have_perf() {
        return;
    }
    let o = Command::new("perf").args(["record", "-N", "-F", "2000", "-o"]).arg(&data).arg(&exe).output().unwrap();
    if !o.status.success() {
        return eprintln!("note: skipped: perf record failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    let pid = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let map = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    // The map is the program's: removed whatever the checks say.
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _remove = Remove(map.clone());
    assert!(map.exists());
    check_counts(&data);
    let (tb5, _) = import(&data);
    let jit = format!("[JIT] tid {pid}");
    let ours = tbrw_functions(&tb5);
    let (named, perf) = as_perf_names(ours.clone(), perf_functions(&data));
    assert_eq!(named, perf);
    let spin = ours.get(&format!("{jit}\tjit_spin")).copied().unwrap_or(0);
    assert!(spin > 100, "{ours:?}");

    // Annotate and an export name it too.
    let a = tbrw().arg("annotate").arg(&tb5).args(["--function", "jit_spin"]).output().unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert!(String::from_utf8_lossy(&a.stdout).contains(&spin.to_string()), "{}", String::from_utf8_lossy(&a.stdout));
    let folded = dir.path().join("jit.folded");
    let e = tbrw().args(["export", "flamegraph", "--folded"]).arg(&tb5).arg("-o").arg(&folded).output().unwrap();
    assert!(e.status.success(), "{}", String::from_utf8_lossy(&e.stderr));
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(text.lines().any(|l| l.contains(&format!("{jit};jit_spin"))), "{text}");

    // Without the map: the module still has perf's name, its functions
    // are unknown (perf shows addresses), and the warning says why.
    drop(_remove);
    let o = tbrw().arg("report").arg(&tb5).args(["--by", "module,function"]).output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("/tmp/perf-{pid}.map")));
    assert!(String::from_utf8_lossy(&o.stdout).contains(&jit));
    assert!(plt_as_one(tbrw_functions(&tb5)).contains_key(&format!("{jit}\t?")));
}

/// `--call-graph dwarf`: each sample's user frames, unwound by the import,
/// are perf script's for at least 95 % of the samples, on a program built
/// without frame pointers calling into libm and libc.
#[test]
fn dwarf_call_graphs_unwind_to_perfs_frames() {
    if !cfg!(target_arch = "x86_64") {
        return eprintln!("note: skipped: the comparison runs on x86-64");
    }
    const CHAIN: &str = r#"
#include <math.h>
#include <string.h>
volatile double sink;
static char src[8192], dst[8192];
__attribute__((noinline)) double leaf(int n, double x) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        s += sin(x + i);
        memcpy(dst + (i & 1023), src + ((i * 7) & 1023), 1024 + (i & 2047));
        s += dst[i & 4095];
    }
    return s;
}
__attribute__((noinline)) double middle(int n, double x) { double r = leaf(n, x); sink = r; return r * 2; }
__attribute__((noinline)) double top(int n, double x) { double r = middle(n, x) + 1; sink = r; return r; }
int main(void) { double t = 0; for (int r = 0; r < 250; r++) t += top(40000, r); return (int)t & 1; }
"#;
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), "chain", CHAIN, &["-O2", "-fomit-frame-pointer", "-fno-builtin"]) else {
        return;
    };
    let Some(data) = record(&dir.path().join("dwarf.data"), &["--call-graph", "dwarf", "-e", "cpu-clock"], &[&exe])
    else {
        return;
    };
    let (tb5, _) = import(&data);
    check_counts(&data);

    // perf's user frames per sample, by (tid, time): each as (file offset,
    // path), the sampled address itself and each caller's return address
    // minus 1, as perf script prints frames it unwound.
    let script = Command::new("perf")
        .args([
            "script",
            "-F",
            "tid,time,ip,dso",
            "--ns",
            "--no-inline",
            "--full-source-path",
            "--show-mmap-events",
            "-i",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(script.status.success(), "{}", String::from_utf8_lossy(&script.stderr));
    let mut theirs: HashMap<(u32, u64), Vec<(u64, String)>> = HashMap::new();
    let mut current: Option<(u32, u64)> = None;
    for line in String::from_utf8_lossy(&script.stdout).lines() {
        if line.trim().is_empty() || line.contains("PERF_RECORD_") {
            continue;
        }
        if !line.starts_with('\t') {
            let mut w = line.split_whitespace();
            let tid = w.next().and_then(|t| t.parse().ok());
            let time = w.next().and_then(|t| {
                let (s, ns) = t.trim_end_matches(':').split_once('.')?;
                Some(s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?)
            });
            current = tid.zip(time);
            if let Some(k) = current {
                theirs.entry(k).or_default();
            }
            continue;
        }
        let Some(k) = current else { continue };
        let addr = line.split_whitespace().next().and_then(|a| u64::from_str_radix(a, 16).ok()).unwrap();
        let dso = line.rsplit_once(" (").map_or("", |(_, d)| d.trim_end_matches(')')).to_owned();
        if dso != "[kernel.kallsyms]" {
            theirs.entry(k).or_default().push((addr, dso));
        }
    }

    // Ours: each sample's stack (stack table) past its kernel frames, as
    // perf prints them, with the modules the import wrote.
    use tbrw::*;
    let f = Tb5File::open(&tb5).unwrap();
    let modules: Vec<Module> = f.modules().unwrap().unwrap().iter().map(|m| f.resolve(m.unwrap()).unwrap()).collect();
    let notes = tbrw_schema::module_notes::decode(&String::from_utf8_lossy(f.user_defined_global().unwrap().unwrap()));
    let place = |pid: u32, a: u64| -> Option<(u64, String)> {
        let (i, m) = modules.iter().enumerate().rev().find(|(_, m)| {
            (m.associated_pid == pid || m.flags.contains(ModuleFlags::GLOBAL_LOAD))
                && a >= m.load_address
                && a - m.load_address < m.length
        })?;
        if m.flags.contains(ModuleFlags::GLOBAL_LOAD) {
            return None;
        }
        let pgoff = notes.get(&(i as u64)).and_then(|n| n.offset).unwrap_or(0);
        Some((a - m.load_address + pgoff, m.path.clone().unwrap()))
    };
    let u32_at = |r: &[u8], at: usize| u32::from_le_bytes(r[at..at + 4].try_into().unwrap());
    let u64_at = |r: &[u8], at: usize| u64::from_le_bytes(r[at..at + 8].try_into().unwrap());
    // The stack id is the record's last field.
    let stream = f.stream(0).unwrap();
    let table = stream.stack_table().unwrap().expect("a stack table");
    let mut samples: Vec<(u32, u32, u64)> = Vec::new();
    let mut chains: Vec<Vec<u64>> = Vec::new();
    for r in stream.data().unwrap().unwrap().records() {
        samples.push((u32_at(r, 8), u32_at(r, 12), u64_at(r, 16)));
        let mut chain = Vec::new();
        let id = u32_at(r, r.len() - 4);
        if id != NO_STACK {
            table.frames(id, &mut chain).unwrap();
        }
        chains.push(chain);
    }
    let (mut compared, mut agreed, mut deep) = (0usize, 0usize, 0usize);
    let mut differences = Vec::new();
    for ((pid, tid, time), chain) in samples.iter().zip(&chains) {
        let Some(want) = theirs.get(&(*tid, *time)) else { continue };
        let mut got = Vec::new();
        let mut user = false;
        for &a in chain {
            // The first user frame is the sampled (or interrupted) pc; the
            // ones after it are return addresses.
            let Some(frame) = place(*pid, if user { a - 1 } else { a }) else {
                if user {
                    got.push((a - 1, "[unknown]".to_owned()));
                }
                continue;
            };
            user = true;
            got.push(frame);
        }
        compared += 1;
        if &got == want {
            agreed += 1;
            deep += usize::from(got.iter().filter(|f| f.1 == exe.to_str().unwrap()).count() >= 4);
        } else if differences.len() < 5 {
            differences.push(format!("perf  {want:x?}\ntbrw  {got:x?}"));
        }
    }
    let share = agreed as f64 / compared.max(1) as f64;
    eprintln!(
        "--call-graph dwarf: {agreed} of {compared} samples give perf script's user frames ({:.2} %), {deep} of them through leaf, middle, top and main",
        100.0 * share
    );
    for d in &differences {
        eprintln!("{d}");
    }
    assert!(compared >= 200, "too few samples compared: {compared}");
    assert!(deep * 2 >= compared, "{deep} of {compared} samples unwound through the program's four functions");
    assert!(share >= 0.95, "{agreed} of {compared}");

    // The unwinder's options: `--no-unwind` leaves the stack copies
    // unread; with the program moved away its file is found by
    // `--search-path`, and without that it is named as missing.
    let run = |args: &[&str]| {
        let o = tbrw()
            .args(["import", "perf"])
            .arg(&data)
            .arg("-o")
            .arg(dir.path().join("options.tb5"))
            .arg("--force")
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let counted = |out: &str| -> u64 {
        out.split(" samples unwound")
            .next()
            .and_then(|h| h.rsplit('(').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let (with, _) = run(&[]);
    assert!(counted(&with) >= compared as u64, "{with}");
    let (without, _) = run(&["--no-unwind"]);
    assert_eq!(counted(&without), 0, "{without}");
    let away = dir.path().join("away");
    std::fs::create_dir(&away).unwrap();
    std::fs::rename(&exe, away.join("chain")).unwrap();
    let (found, _) = run(&["--search-path", away.to_str().unwrap()]);
    assert_eq!(counted(&found), counted(&with), "{found}");
    let (_, missing) = run(&[]);
    assert!(missing.contains("chain"), "the moved program is not named: {missing}");
}

/// A three-deep chain `top -> middle -> leaf`, a second leaf `side`
/// called from `top` and from the bottom of a recursion `rec` (four
/// frames of `rec` in one stack: its children count each sample once).
const CHAIN_PROG: &str = r#"
static volatile unsigned long sink;
__attribute__((noinline)) void leaf(long n) { for (long i = 0; i < n; i++) sink += i ^ (sink >> 3); }
__attribute__((noinline)) void middle(long n) { leaf(n); sink++; }
__attribute__((noinline)) void side(long n) { for (long i = 0; i < n; i++) sink += i * 7 + (sink >> 5); }
__attribute__((noinline)) void rec(int depth, long n) { if (depth == 0) { side(n); return; } rec(depth - 1, n); sink++; }
__attribute__((noinline)) void top(long n) { for (int r = 0; r < 30; r++) { middle(n); side(n / 2); rec(3, n / 2); } }
int main(void) { top(5000000); sink++; return 0; }
"#;

/// CHAIN_PROG's functions.
const FUNCTIONS: [&str; 6] = ["main", "top", "middle", "leaf", "side", "rec"];

/// `perf report --children --sort sym` as symbol → (children %, self %).
fn perf_children(data: &Path) -> BTreeMap<String, (f64, f64)> {
    let o = Command::new("perf")
        .args(["report", "--children", "--sort", "sym", "--stdio", "-q", "-g", "none", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut m = BTreeMap::new();
    // "    75.63%     0.00%  [.] top"
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let pct = |s: &str| s.strip_suffix('%').and_then(|p| p.parse::<f64>().ok());
        if let [c, s, _mode, sym @ ..] = &w[..] {
            if let (Some(c), Some(s)) = (pct(c), pct(s)) {
                m.insert(sym.join(" "), (c, s));
            }
        }
    }
    m
}

/// `tbrw report --children` of a `perf record -g` import: each function's
/// children and self shares are perf's `--children` ones, and are what
/// the folded flame graph's stacks add up to; a file without stacks is refused.
#[test]
fn report_children_equals_perf_report_children() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), "chain", CHAIN_PROG, &["-O1", "-g", "-fno-omit-frame-pointer"]) else { return };
    // A fixed period: perf's percentages (of periods) are shares of samples.
    let args = ["-e", "cpu-clock:u", "-c", "250000", "-g"];
    let Some(data) = record(&dir.path().join("children.data"), &args, &[&exe]) else { return };
    let (tb5, _) = import(&data);
    let o = tbrw().arg("report").arg(&tb5).args(["--children", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let total = v["samples"].as_u64().unwrap();
    let mut ours: BTreeMap<String, (f64, f64, u64, u64)> = BTreeMap::new();
    for row in v["rows"].as_array().unwrap() {
        let name = row["key"]["name"].as_str().or(row["key"]["unknown"].as_str()).unwrap().to_owned();
        let c = &row["children"];
        let figures = (
            c["percent"].as_f64().unwrap(),
            row["percent"].as_f64().unwrap(),
            c["samples"].as_u64().unwrap(),
            row["samples"].as_u64().unwrap(),
        );
        ours.insert(name, figures);
    }
    let theirs = perf_children(&data);
    eprintln!("tbrw: {ours:?}\nperf: {theirs:?}");
    // `middle` is in perf's chains only where the compiler gave `leaf` a
    // frame (GCC 12 leaves it frameless, whatever -fno-omit-frame-pointer
    // says): then neither side has a row for it.
    for f in FUNCTIONS {
        let Some(&(c, s, ..)) = ours.get(f) else {
            assert!(f == "middle" && !theirs.contains_key(f), "no row for {f}: {ours:?}");
            continue;
        };
        let (pc, ps) = *theirs.get(f).unwrap_or_else(|| panic!("perf has no row for {f}: {theirs:?}"));
        assert!((c - pc).abs() < 0.011, "{f}: children {c:.3} %, perf's {pc:.2} %");
        assert!((s - ps).abs() < 0.011, "{f}: self {s:.3} %, perf's {ps:.2} %");
    }
    // A function four times in a stack counts once: rec's children are
    // the samples under it, at most all of them.
    assert!(ours["rec"].2 <= total && ours["rec"].2 >= ours["rec"].3);
    assert!(ours["top"].2 >= ours["leaf"].2 + ours["rec"].2, "{ours:?}");

    // The reference from the folded stacks: a function's children are the
    // samples of the stacks it is in, once per stack; self, of those it ends.
    let o = tbrw()
        .args(["export", "flamegraph", "--folded", "--by", "function"])
        .arg(&tb5)
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut inclusive: BTreeMap<String, u64> = BTreeMap::new();
    let mut own: BTreeMap<String, u64> = BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        let frames: Vec<&str> = stack.split(';').collect();
        let distinct: std::collections::BTreeSet<&str> = frames.iter().copied().collect();
        for f in distinct {
            *inclusive.entry(f.to_owned()).or_default() += n;
        }
        *own.entry(frames.last().unwrap().to_string()).or_default() += n;
    }
    for f in FUNCTIONS {
        let Some(&(.., children, own_samples)) = ours.get(f) else { continue };
        assert_eq!(children, inclusive[f], "{f}'s children against the folded stacks");
        assert_eq!(own_samples, own.get(f).copied().unwrap_or(0), "{f}'s self against the folded stacks");
    }

    // The table: perf's columns, sorted by children.
    let o = tbrw().arg("report").arg(&tb5).arg("--children").output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.lines().nth(1).is_some_and(|l| l.contains("children")), "{text}");

    // Without stacks: refused, saying why.
    let Some(plain) = record(&dir.path().join("plain.data"), &["-e", "cpu-clock:u"], &[&exe]) else { return };
    let (plain, _) = import(&plain);
    let o = tbrw().arg("report").arg(&plain).arg("--children").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("no call stacks"), "{err}");
}
