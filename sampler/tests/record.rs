//! End-to-end runs of the `sampler` binary on small C programs built with
//! `cc -O1 -g`: the files it records verify, bind, and put the samples
//! where the programs spend their time. Where ptrace is refused the tests
//! say so and pass without checking.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tbrw::*;

const SAMPLER: &str = env!("CARGO_BIN_EXE_sampler");

fn c_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(format!("{name}.c"))
}

fn build(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(if extra.contains(&"-shared") { format!("lib{name}.so") } else { name.to_owned() });
    let st = Command::new("cc")
        .args(["-O1", "-g"])
        .arg(c_source(name))
        .arg("-o")
        .arg(&out)
        .args(extra)
        .status()
        .expect("cc runs");
    assert!(st.success(), "cc {name}");
    out
}

/// Runs the sampler; `None` (after saying why) where ptrace is refused.
fn sample(args: &[&str], cmd: &[&Path], cmd_args: &[&str]) -> Option<Output> {
    let out = Command::new(SAMPLER).args(args).arg("--").args(cmd).args(cmd_args).output().expect("sampler runs");
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("ptrace is refused") {
        eprintln!("SKIPPED: {}", err.trim());
        return None;
    }
    Some(out)
}

#[derive(Debug, Clone, Copy)]
struct Rec {
    pc: u64,
    pid: u32,
    tid: u32,
    time: u64,
    cputime: u64,
    cputime_delta: u64,
}

struct Recorded {
    file: Tb5File,
    recs: Vec<Rec>,
    /// The module path of each record (bound), `None`: unknown module.
    modules: Vec<Option<String>>,
}

/// The module the sampler names the vDSO.
const VDSO: &str = "[vdso]";

fn load(path: &Path) -> Recorded {
    let file = Tb5File::open(path).unwrap();
    file.verify().unwrap();
    let s = file.stream(0).unwrap();
    let layout = s.layout().unwrap().unwrap();
    let at = |t: u16| {
        let f = layout.find(t, None).unwrap();
        (f.offset as usize, f.size as usize)
    };
    let rd = |r: &[u8], (o, n): (usize, usize)| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&r[o..o + n]);
        u64::from_le_bytes(b)
    };
    let (ip, pid, tid, ts, ct, cd) =
        (at(desc_type::IP), at(desc_type::PID), at(desc_type::TID), at(desc_type::TIME_STAMP), at(0x4000), at(0x4004));
    let recs: Vec<Rec> = match s.data().unwrap() {
        Some(d) => d
            .records()
            .map(|r| Rec {
                pc: rd(r, ip),
                pid: rd(r, pid) as u32,
                tid: rd(r, tid) as u32,
                time: rd(r, ts),
                cputime: rd(r, ct),
                cputime_delta: rd(r, cd),
            })
            .collect(),
        None => Vec::new(),
    };
    let table = file.modules().unwrap().unwrap();
    let paths: Vec<String> =
        (0..table.len()).map(|i| file.resolve(table.get(i).unwrap()).unwrap().path.unwrap_or_default()).collect();
    let bind = tbrw::bind::bind_in_memory(&file, 0).unwrap();
    assert_eq!(bind.len(), recs.len() as u64);
    let modules = bind
        .to_vec()
        .iter()
        .map(|b| {
            let m = b.module_index;
            (m != UNKNOWN_MODULE).then(|| paths[m as usize].clone())
        })
        .collect();
    Recorded { file, recs, modules }
}

fn share(r: &Recorded, pick: impl Fn(&Rec, Option<&str>) -> bool, of: impl Fn(&Rec) -> bool) -> f64 {
    let all: Vec<usize> = (0..r.recs.len()).filter(|&i| of(&r.recs[i])).collect();
    let hit = all.iter().filter(|&&i| pick(&r.recs[i], r.modules[i].as_deref())).count();
    hit as f64 / all.len().max(1) as f64
}

fn symbol_size(bin: &Path, sym: &str) -> u64 {
    let out = Command::new("nm").arg("-S").arg(bin).output().expect("nm runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.split_whitespace().nth(3) == Some(sym)).expect("symbol listed");
    u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
}

#[test]
fn one_thread_spinning_in_a_known_function() {
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "spin", &[]);
    let out_file = dir.path().join("run.tb5");
    let Some(out) = sample(&["-f", "500", "-d", "-o", out_file.to_str().unwrap()], &[&bin], &[]) else { return };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "the command's exit status: {stderr}");
    assert!(stderr.contains("reached frequency"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let spin = u64::from_str_radix(stdout.trim().strip_prefix("spin=0x").unwrap(), 16).unwrap();
    let size = symbol_size(&bin, "spin");
    let r = load(&out_file);
    assert!(r.recs.len() >= 50, "{} samples: {stderr}", r.recs.len());
    let exe = bin.to_str().unwrap();
    let in_spin = share(&r, |s, _| (spin..spin + size).contains(&s.pc), |_| true);
    // On a loaded machine a thread waiting for a CPU is sampled where it
    // was preempted, often the vDSO's clock read (docs/SAMPLER.md): here
    // (load 9 on 2 cores) two thirds of the samples were in spin(), on an
    // idle machine over 95 %. Most, not all, must be.
    assert!(in_spin > 0.5, "{in_spin} of the samples in spin()");
    assert!(share(&r, |_, m| m == Some(exe), |_| true) > 0.5);
    // Time stamps grow, CPU time never goes back, and each record's delta
    // is the CPU time since the thread's previous record (since the exec
    // for the first: less than the cumulative time).
    assert!(r.recs.windows(2).all(|w| w[0].time <= w[1].time && w[0].cputime <= w[1].cputime));
    assert!(r.recs.windows(2).all(|w| w[1].cputime_delta == w[1].cputime - w[0].cputime));
    assert!(r.recs[0].cputime_delta <= r.recs[0].cputime);
    assert!(r.recs.last().unwrap().cputime > 300_000_000, "CPU time of a 0.6 s spin");
    // On-CPU by default: a busy thread, about one sample per period of its
    // CPU time (the deltas of a tick's length; many ticks are missed on a
    // loaded machine, so the count is of CPU time, not of wall time).
    let periods = (r.recs.last().unwrap().cputime - r.recs[0].cputime) as f64 / 2e6; // -f 500: 2 ms
    assert!(r.recs.len() as f64 >= 0.25 * periods, "{} samples for {periods} periods of CPU time", r.recs.len());
    let m = r.file.modules().unwrap().unwrap();
    let first = r.file.resolve(m.get(0).unwrap()).unwrap();
    assert!(first.flags.contains(ModuleFlags::IS_EXE | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS));
    assert_eq!(first.path.as_deref(), Some(exe));
    let info = r.file.resolve(r.file.stream(0).unwrap().info().unwrap().unwrap()).unwrap();
    assert!(info.command_line.unwrap().ends_with("/spin"));

    // The command line reads it: a report, and the VTune CSV export.
    let mut folder = tbrw_export::MemoryFolder::new();
    let f = tbrw::Tb5File::open(&out_file).unwrap();
    let rep = tbrw_export::vtune_csv::export_vtune_csv(&f, &mut folder, &Default::default()).unwrap();
    let text = String::from_utf8(folder.files()[&rep.files[0]].clone()).unwrap();
    assert!(text.lines().next().unwrap().contains("CLOCK_MONOTONIC_RAW"), "{text:.200}");
}

/// `--off-cpu`: every thread at every tick, as the seed samples.
#[test]
fn four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "threads", &["-lpthread"]);
    let out_file = dir.path().join("run.tb5");
    let Some(out) = sample(&["--off-cpu", "-f", "200", "-o", out_file.to_str().unwrap()], &[&bin], &[]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r = load(&out_file);
    let pid = r.recs[0].pid;
    let mut tids: Vec<u32> = r.recs.iter().map(|s| s.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids.len(), 5, "main and four workers: {tids:?}");
    // The main thread waits in pthread_join: sampled at every tick all the
    // same, most of its deltas 0 or the few µs a stop costs.
    let main: Vec<&Rec> = r.recs.iter().filter(|s| s.tid == pid).collect();
    let idle = main.iter().filter(|s| s.cputime_delta < 100_000).count();
    assert!(main.len() >= 20 && idle * 10 >= main.len() * 8, "{idle} of {} main-thread samples idle", main.len());
    let exe = bin.to_str().unwrap();
    // Of the workers' samples that ran (CPU time grew since the thread's
    // previous one): on a loaded machine a waiting thread is often caught
    // in a system call, in libc. The workers' clock_gettime of their CPU
    // clock is a system call made from the vDSO: those count as theirs.
    let mut last = std::collections::HashMap::new();
    let (mut ran, mut hits) = (0, 0);
    for (i, s) in r.recs.iter().enumerate().filter(|(_, s)| s.tid != pid) {
        if last.insert(s.tid, s.cputime).is_some_and(|before| s.cputime > before + 200_000) {
            ran += 1;
            hits += usize::from(matches!(r.modules[i].as_deref(), Some(m) if m == exe || m == VDSO));
        }
    }
    assert!(ran >= 20 && hits as f64 > 0.8 * ran as f64, "{hits} of {ran} running worker samples in the program");
    let threads = r.file.processes().unwrap().unwrap();
    assert!(threads.tid_count() >= 5);
}

#[test]
fn fork_and_exec() {
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "forkexec", &[]);
    let spin = build(dir.path(), "spin", &[]);
    let out_file = dir.path().join("run.tb5");
    let Some(out) = sample(&["-f", "300", "-o", out_file.to_str().unwrap()], &[&bin], &[spin.to_str().unwrap()]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(3), "the child's status: {}", String::from_utf8_lossy(&out.stderr));
    let r = load(&out_file);
    // The command's process is the first module's (its executable); the
    // first record may already be the child's.
    let parent = {
        let m = r.file.modules().unwrap().unwrap();
        r.file.resolve(m.get(0).unwrap()).unwrap().associated_pid
    };
    let child: Vec<&Rec> = r.recs.iter().filter(|s| s.pid != parent).collect();
    assert!(child.len() >= 30, "{} samples of the child", child.len());
    let cpid = child[0].pid;
    let spin_path = spin.to_str().unwrap();
    // Of the child's samples that ran (CPU time grew since its previous
    // one), nearly all are in the exec'd program's spin loop, or in the
    // vDSO's clock_gettime it calls every few ms (on a loaded machine a
    // thread waiting for a CPU is often sampled where it was preempted, on
    // the way out of that call: docs/SAMPLER.md, "Limits").
    let idx: Vec<usize> = (0..r.recs.len()).filter(|&i| r.recs[i].pid == cpid).collect();
    let ran: Vec<usize> =
        idx.windows(2).filter(|w| r.recs[w[1]].cputime > r.recs[w[0]].cputime + 200_000).map(|w| w[1]).collect();
    let hits =
        ran.iter().filter(|&&i| matches!(r.modules[i].as_deref(), Some(m) if m == spin_path || m == VDSO)).count();
    assert!(
        hits as f64 > 0.8 * ran.len() as f64,
        "{hits} of {} running samples of the child in the program",
        ran.len()
    );
    // The child's exec is a new process instance with its own executable.
    let m = r.file.modules().unwrap().unwrap();
    let exes: Vec<Module> = (0..m.len())
        .map(|i| r.file.resolve(m.get(i).unwrap()).unwrap())
        .filter(|m| m.flags.contains(ModuleFlags::IS_EXE) && m.associated_pid == cpid)
        .collect();
    assert!(exes.iter().any(|m| m.path.as_deref() == Some(spin_path)));
    assert!(exes.iter().any(|m| m.path.as_deref() == Some(bin.to_str().unwrap())), "the forked copy before exec");
}

#[test]
fn dlopen_after_a_while() {
    let dir = tempfile::tempdir().unwrap();
    let lib = build(dir.path(), "lib", &["-shared", "-fPIC"]);
    let bin = build(dir.path(), "dlopen", &["-ldl"]);
    let out_file = dir.path().join("run.tb5");
    let Some(out) = sample(&["-f", "300", "-d", "-o", out_file.to_str().unwrap()], &[&bin], &[lib.to_str().unwrap()])
    else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r = load(&out_file);
    let lib_path = lib.to_str().unwrap();
    // 0.3 s asleep, then 0.6 s in the library: on-CPU, the sleep has no
    // samples (but the one of the tick that catches the wake-up, and the
    // library's clock_gettime system calls in the vDSO).
    let in_lib = share(&r, |_, m| m == Some(lib_path) || m == Some(VDSO), |_| true);
    assert!(in_lib > 0.9, "{in_lib} of the samples in the library: {stderr}");
    // Of the samples that ran (CPU time grew), nearly all are in the library
    // or in the vDSO's clock_gettime it calls to know when to stop (a
    // thread's CPU clock is a system call, so a stop there is common: up
    // to a fifth of these samples).
    let running: Vec<usize> =
        (1..r.recs.len()).filter(|&i| r.recs[i].cputime > r.recs[i - 1].cputime + 200_000).collect();
    let hits =
        running.iter().filter(|&&i| matches!(r.modules[i].as_deref(), Some(m) if m == lib_path || m == VDSO)).count();
    assert!(hits as f64 > 0.8 * running.len() as f64, "{hits} of {} running samples", running.len());
    // The library was found when a pc fell outside the known mappings.
    let m = r.file.modules().unwrap().unwrap();
    let start = r.file.processes().unwrap().unwrap().pids().next().unwrap().event_when;
    let lib_mod = (0..m.len())
        .map(|i| r.file.resolve(m.get(i).unwrap()).unwrap())
        .find(|m| m.path.as_deref() == Some(lib_path))
        .expect("the library is a module");
    assert!(lib_mod.event_when > start + 200_000_000, "loaded at +{} ns", lib_mod.event_when - start);

    // --off-cpu: the sleep is a third of the run's samples.
    let Some(out) = sample(
        &["--off-cpu", "-f", "300", "--force", "-o", out_file.to_str().unwrap()],
        &[&bin],
        &[lib.to_str().unwrap()],
    ) else {
        return;
    };
    assert_eq!(out.status.code(), Some(0));
    let r = load(&out_file);
    let in_lib = share(&r, |_, m| m == Some(lib_path), |_| true);
    assert!((0.4..0.95).contains(&in_lib), "{in_lib} of the samples in the library");
}

/// With call stacks (`stacks`), the file's stack table is there and every
/// record's stack id names one of its stacks (`verify` checks them).
fn check_stacks(r: &Recorded, stacks: bool) {
    let s = r.file.stream(0).unwrap();
    let table = s.stack_table().unwrap();
    let field = s.layout().unwrap().unwrap().find(STACK_ID_FIELD, None).copied();
    assert_eq!((field.is_some(), table.is_some()), (stacks, stacks));
    if let (Some(f), Some(t)) = (field, table) {
        let mut frames = Vec::new();
        for rec in s.data().unwrap().unwrap().records() {
            frames.clear();
            t.frames(f.read_le(rec).unwrap() as u32, &mut frames).unwrap();
            assert!(!frames.is_empty());
        }
    }
}

#[test]
fn killed_command_still_leaves_a_complete_file() {
    for stacks in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let bin = build(dir.path(), "killself", &[]);
        let out_file = dir.path().join("run.tb5");
        let mut args = vec!["-f", "300", "-o", out_file.to_str().unwrap()];
        if stacks {
            args.push("-g");
        }
        let Some(out) = sample(&args, &[&bin], &[]) else { return };
        assert_eq!(out.status.code(), Some(128 + 9));
        let r = load(&out_file);
        assert!(r.recs.len() > 20);
        check_stacks(&r, stacks);
    }
}

#[test]
fn interrupted_sampler_finishes_the_file() {
    interrupted(false);
}

#[test]
fn interrupted_sampler_with_stacks_finishes_the_file_and_its_stack_table() {
    interrupted(true);
}

fn interrupted(stacks: bool) {
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "spin", &[]);
    let out_file = dir.path().join("run.tb5");
    let mut cmd = Command::new(SAMPLER);
    cmd.args(["-f", "300", "-o", out_file.to_str().unwrap()])
        .args(if stacks { &["--call-graph", "dwarf"][..] } else { &[] })
        .arg("--")
        .arg(&bin)
        .arg("20")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SIGINT as an interactive shell leaves it: a test run started in the
    // background of a script inherits it ignored, and so would the command.
    // SAFETY: signal() is async-signal-safe, called between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        })
    };
    let child = cmd.spawn().unwrap();
    // The signal is sent once the command runs under the sampler (its
    // child exists), however long starting takes on a loaded machine.
    let children = format!("/proc/{}/task/{}/children", child.id(), child.id());
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&children).unwrap_or_default().trim().is_empty()
        && started.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("ptrace is refused") {
        eprintln!("SKIPPED: {}", err.trim());
        return;
    }
    // SIGINT reached only the sampler: it passes it on, the spin dies of it.
    assert_eq!(out.status.code(), Some(128 + libc::SIGINT), "{err}");
    assert!(err.contains("passed signal 2"), "{err}");
    let r = load(&out_file);
    assert!(r.recs.len() > 20);
    check_stacks(&r, stacks);
}

/// The sampler killed (`SIGKILL`) in the middle of a `--format profile`
/// recording leaves no profile at all (it is built in a work file put in
/// place at the end), never a partial one whose header is all zeros, which
/// `tbrw import sampler` refuses (before: it left that).
#[test]
fn a_killed_profile_recording_leaves_no_profile() {
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "spin", &[]);
    let out_file = dir.path().join("run.profile");
    let child = Command::new(SAMPLER)
        .args(["-f", "300", "-o", out_file.to_str().unwrap(), "--"])
        .arg(&bin)
        .arg("20")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let children = format!("/proc/{}/task/{}/children", child.id(), child.id());
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&children).unwrap_or_default().trim().is_empty()
        && started.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Samples written meanwhile: the killed run had a profile to leave.
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("ptrace is refused") {
        eprintln!("SKIPPED: {}", err.trim());
        return;
    }
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{err}");
    let mut left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, ["spin"], "nothing but the program: no profile, no work file");
}

/// A script without `#!` (which `execve` refuses with `ENOEXEC`) is run by
/// `/bin/sh`, as `execvp` and `perf record` run it, with its arguments; the
/// exit status is the script's (before: "the command did not start (exit
/// status 127 before its exec)").
#[test]
fn a_script_without_a_shebang_runs_under_the_shell() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("count");
    std::fs::write(&script, "i=0\nwhile [ $i -lt 20000 ]; do i=$((i+1)); done\nexit \"$1\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out_file = dir.path().join("run.tb5");
    let Some(out) = sample(&["-o", out_file.to_str().unwrap()], &[&script], &["7"]) else { return };
    assert_eq!(out.status.code(), Some(7), "{}", String::from_utf8_lossy(&out.stderr));
    let r = load(&out_file);
    assert!(!r.recs.is_empty(), "the shell running the script was sampled");
}

#[test]
fn own_profile_format() {
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "spin", &[]);
    let out_file = dir.path().join("run.profile");
    let Some(out) = sample(&["-f", "200", "-p", "dummy", "-o", out_file.to_str().unwrap()], &[&bin], &["0.3"]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(3));
    let bytes = std::fs::read(&out_file).unwrap();
    // The header, read by hand: u32 magic, u64 wall µs, u64 latency µs,
    // u64 samples, u32 PMU-data size, u32 maps.
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    let (magic, wall_us, samples, pmu_size, maps) = (u32_at(0), u64_at(4), u64_at(20), u32_at(28), u32_at(32));
    assert_eq!((magic, pmu_size), (0, 8));
    assert!(samples > 5 && maps >= 2 && wall_us > 250_000, "{samples} {maps} {wall_us}");
    // Walk the samples: each has a time, the value, one thread.
    let mut at = 36;
    let mut threads = 0;
    for _ in 0..samples {
        let value = f64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap());
        assert_eq!(value, sampler::pmu::DUMMY_VALUE);
        let n = u32::from_le_bytes(bytes[at + 16..at + 20].try_into().unwrap()) as usize;
        threads += n as u64;
        at += 20 + n * 20;
    }
    assert_eq!(bytes.len() - at, maps as usize * (16 + 256));
    assert_eq!(&bytes[at + 16..at + 21], b"spin\0", "the executable is the first map");

    // The command line's importer reads it back: the current writer's
    // layout, every sample, one record per thread sample.
    let tb5 = dir.path().join("run.tb5");
    let opts = tbrw_import::elf_profile::ImportOptions { pid: None, hostname: Some("box".into()) };
    let mut w = tbrw::Tb5Writer::create(&tb5).unwrap();
    let input = std::fs::File::open(&out_file).unwrap();
    let input_name = out_file.display().to_string();
    let st =
        tbrw_import::elf_profile::import_profile(input, &input_name, &mut w, &opts, &Default::default(), ()).unwrap();
    w.close().unwrap();
    assert_eq!(st.format.map(|f| f.layout), Some(tbrw_import::elf_profile::Layout::Head));
    assert_eq!((st.samples, st.records), (samples, threads));
    assert!(!st.killed);
}

#[test]
fn existing_output_needs_force_and_pmu_errors_list_sources() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.tb5");
    std::fs::write(&f, b"keep").unwrap();
    let out = Command::new(SAMPLER).args(["-o", f.to_str().unwrap(), "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(std::fs::read(&f).unwrap(), b"keep");
    let out = Command::new(SAMPLER).args(["--no-output", "-p", "rapl", "--", "true"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !err.contains("ptrace is refused") && out.status.code() == Some(1) {
        assert!(err.contains("Available here: none, dummy"), "{err}");
    }
}
