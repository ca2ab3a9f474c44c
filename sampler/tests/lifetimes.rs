//! Short lives recorded whole, under the on-CPU default: tests/c/pool.c (a
//! long thread, 150 threads of 0.25 to 1 ms of CPU time each, most of them
//! shorter than the 1 ms period, and the main thread) and tests/c/forks.c
//! (200 children of 5 ms each beside their parent). Each thread's (each
//! process's) CPU time as `--weight cputime` weighs it and its sample count
//! against the program's own CPU clock (`CLOCK_THREAD_CPUTIME_ID`, printed
//! by the program), and the shares of each kind of thread beside perf's
//! `cpu-clock` (of its own run, against that run's clocks). Also: every
//! thread of the pool is a thread of its one process, and the summary says
//! nothing that is not true.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::*;
use tbrw::{PidTidFlags, Tb5File};
use tbrw_query::report::Key;
use tbrw_query::By;
use tbrw_query::Weight;

/// The sampling period (`-F 1000`), ns.
const PERIOD: f64 = 1e6;

/// The CPU time a thread uses after its last clock reading and before the
/// tracer reads its CPU time at its exit stop: the kernel's part of its
/// exit system call and of that stop (measured: 10 to 30 µs, median 15).
const EXIT_NS: f64 = 50_000.0;

/// The most such CPU time any thread may have: now and then the kernel
/// charges a thread for much more there on a busy virtual machine (up to
/// 0.35 ms measured on 5 ms children), as it would anywhere in its run.
const EXIT_NOISE_NS: f64 = 500_000.0;

struct Recorded {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    bin: PathBuf,
    tb5: PathBuf,
    stdout: String,
    stderr: String,
}

/// `name` built and recorded with the defaults (on-CPU, 1000 Hz).
fn record(name: &str, extra: &[&str]) -> Option<Recorded> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let bin = build(&dir, name, extra);
    let tb5 = dir.join("run.tb5");
    let args: [&OsStr; 4] = ["-d".as_ref(), "-o".as_ref(), tb5.as_ref(), bin.as_ref()];
    let out = sampler_in(&dir, &args)?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Some(Recorded { _tmp: tmp, dir, bin, tb5, stdout, stderr })
}

/// The program's own clocks: (tid or pid, name, CPU time ns) of each
/// `kind` line (`thread TID NAME NS`, `process PID NAME NS`).
fn clocks(stdout: &str, kind: &str) -> Vec<(u32, String, f64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 4 && w[0] == kind).then(|| (w[1].parse().unwrap(), w[2].to_owned(), w[3].parse().unwrap()))
        })
        .collect()
}

/// Per tid (`By::Thread`) or pid (`By::Process`): samples, CPU time
/// weight (ns) and name, from the reports `tbrw report` makes.
fn recorded(tb5: &Path, by: By) -> HashMap<u32, (f64, f64, Option<String>)> {
    let id = |k: &Key| match k {
        Key::Thread { tid, name, .. } => (*tid, name.clone()),
        Key::Process { pid, name, .. } => (*pid, name.clone()),
        other => panic!("{other:?}"),
    };
    let mut out: HashMap<u32, (f64, f64, Option<String>)> = HashMap::new();
    for row in report(tb5, by, Weight::Cputime) {
        let (i, name) = id(&row.key);
        let e = out.entry(i).or_insert((0.0, 0.0, name));
        e.0 += row.samples as f64;
        e.1 += row.weight.unwrap();
    }
    out
}

/// Each one's CPU time weight within 2 % of its own clock (and the end of
/// its exit: [`EXIT_NS`], for all but one in twenty; [`EXIT_NOISE_NS`],
/// for every one), and its samples within one period of its clock (and
/// the same).
fn check_each(clocks: &[(u32, String, f64)], ours: &HashMap<u32, (f64, f64, Option<String>)>) {
    let mut over = Vec::new();
    for (id, name, clock) in clocks {
        let Some((samples, weight, recorded_name)) = ours.get(id) else {
            panic!("{name} ({id}, {clock} ns of CPU time) has no sample");
        };
        assert_eq!(recorded_name.as_deref(), Some(name.as_str()), "{id}");
        let off = (weight - clock).abs() - 0.02 * clock;
        assert!(off <= EXIT_NOISE_NS, "{name} ({id}): {weight} ns recorded, its clock says {clock} ns");
        let count_off = (samples - clock / PERIOD).abs() - 1.0;
        assert!(count_off <= EXIT_NOISE_NS / PERIOD, "{name} ({id}): {samples} samples for {clock} ns of CPU time");
        if off > EXIT_NS || count_off > EXIT_NS / PERIOD {
            over.push(format!("{name} ({id}): {weight} ns, {samples} samples, clock {clock} ns"));
        }
    }
    assert!(over.len() * 20 <= clocks.len(), "more than one in twenty off: {over:#?}");
}

/// Per group: its share of the clocks, of the recorded CPU time and of the
/// samples, in percent.
fn shares(
    clocks: &[(u32, String, f64)],
    ours: &HashMap<u32, (f64, f64, Option<String>)>,
    group: fn(&str) -> &str,
) -> BTreeMap<String, (f64, f64, f64)> {
    let total_clock: f64 = clocks.iter().map(|c| c.2).sum();
    let total_weight: f64 = ours.values().map(|o| o.1).sum();
    let total_samples: f64 = ours.values().map(|o| o.0).sum();
    let mut out: BTreeMap<String, (f64, f64, f64)> = BTreeMap::new();
    for (id, name, clock) in clocks {
        let (samples, weight) = ours.get(id).map_or((0.0, 0.0), |o| (o.0, o.1));
        let e = out.entry(group(name).to_owned()).or_default();
        e.0 += clock * 100.0 / total_clock;
        e.1 += weight * 100.0 / total_weight;
        e.2 += samples * 100.0 / total_samples;
    }
    out
}

/// perf's share per group (`perf report --sort pid`: its keys are `TID:comm`)
/// against the clocks the program printed in perf's run: (clock %, perf %).
fn perf_groups(r: &Recorded, kind: &str, group: fn(&str) -> &str) -> Option<BTreeMap<String, (f64, f64)>> {
    let (perf, stdout) = match perf_shares_by(&r.dir, &[&r.bin], "pid") {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED the comparison with perf: {why}");
            return None;
        }
    };
    let clocks = clocks(&stdout, kind);
    let total: f64 = clocks.iter().map(|c| c.2).sum();
    let mut out: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for (id, name, clock) in &clocks {
        let e = out.entry(group(name).to_owned()).or_default();
        e.0 += clock * 100.0 / total;
        e.1 += perf.get(&format!("{id}:{name}")).copied().unwrap_or(0.0);
    }
    Some(out)
}

/// The groups' shares: by CPU time within a point of the clocks, and no
/// further from them than perf's (samples: printed, they round each
/// thread up).
fn compare(r: &Recorded, kind: &str, ours: &BTreeMap<String, (f64, f64, f64)>, group: fn(&str) -> &str) {
    let perf = perf_groups(r, kind, group);
    for (g, (clock, weight, samples)) in ours {
        let p = perf.as_ref().and_then(|p| p.get(g)).copied();
        eprintln!(
            "{g:>12}: clock {clock:5.1} %  sampler cputime {weight:5.1} %  samples {samples:5.1} %  perf {} (its run's clock {})",
            p.map_or("-".into(), |p| format!("{:5.1} %", p.1)),
            p.map_or("-".into(), |p| format!("{:5.1} %", p.0)),
        );
        assert!(
            (weight - clock).abs() <= 1.0,
            "{g}: {weight:.1} % of the CPU time recorded, {clock:.1} % by its clock"
        );
        if let Some((perf_clock, perf_share)) = p {
            let perf_error = (perf_share - perf_clock).abs();
            assert!(
                (weight - clock).abs() <= perf_error.max(1.0),
                "{g}: sampler {weight:.1} % against {clock:.1} %, perf {perf_share:.1} % against {perf_clock:.1} %"
            );
        }
    }
}

fn thread_kind(name: &str) -> &str {
    name.split('-').next().unwrap_or(name)
}

#[test]
fn a_pool_of_short_threads_keeps_their_cpu_time() {
    let Some(r) = record("pool", &["-lpthread"]) else { return };
    // The summary says only what is true: every thread ended with the
    // command, all of one process.
    assert!(!r.stderr.contains("outlived") && !r.stderr.contains("could not read"), "{}", r.stderr);
    assert!(r.stderr.contains("152 threads in 1 processes seen"), "{}", r.stderr);
    let file = Tb5File::open(&r.tb5).unwrap();
    file.verify().unwrap();
    let pt = file.processes().unwrap().unwrap();
    let created: Vec<_> =
        pt.pids().filter(|p| !p.flags.contains(PidTidFlags::DESTROYED)).map(|p| file.resolve(p).unwrap()).collect();
    assert_eq!(created.len(), 1, "one process: {created:?}");
    assert_eq!(created[0].name.as_deref(), Some("pool"));
    assert!(pt.tids().all(|t| t.associated_pid == created[0].id), "every thread is the pool's");

    let clocks = clocks(&r.stdout, "thread");
    assert_eq!(clocks.len(), 152, "{}", r.stdout);
    let ours = recorded(&r.tb5, By::Thread);
    check_each(&clocks, &ours);
    let short: f64 = clocks.iter().filter(|c| c.1.starts_with("short-")).map(|c| c.2).sum();
    let short_ours: f64 =
        ours.values().filter(|o| o.2.as_deref().is_some_and(|n| n.starts_with("short-"))).map(|o| o.1).sum();
    assert!(
        (short_ours - short).abs() <= 0.02 * short + 150.0 * EXIT_NS,
        "short threads: {short_ours} ns, clocks {short} ns"
    );
    compare(&r, "thread", &shares(&clocks, &ours, thread_kind), thread_kind);
}

fn process_kind(name: &str) -> &str {
    if name == "forks-child" {
        "children"
    } else {
        "parent"
    }
}

#[test]
fn two_hundred_children_keep_their_cpu_time() {
    let Some(r) = record("forks", &[]) else { return };
    assert!(!r.stderr.contains("outlived") && !r.stderr.contains("could not read"), "{}", r.stderr);
    assert!(r.stderr.contains("201 threads in 201 processes seen"), "{}", r.stderr);
    let clocks = clocks(&r.stdout, "process");
    assert_eq!(clocks.len(), 201, "{}", r.stdout);
    // Processes by their comm, as perf names them (the children rename
    // themselves after the fork).
    let ours = recorded(&r.tb5, By::Process);
    check_each(&clocks, &ours);
    compare(&r, "process", &shares(&clocks, &ours, process_kind), process_kind);
}
