//! A signal handler's samples land where the thread ran: tests/c/alarm.c
//! takes SIGALRM every 1 ms of its CPU time, and its handler `on_alarm`
//! spends 15 % of the CPU time in `handler_work` (the program measures it
//! with its own CPU clock, inside the handler). Recorded by `sampler`
//! (on-CPU, 1000 Hz): no sample is at the handler's first instruction (a
//! thread stopped there right after the signal's delivery has not run any
//! of the handler yet), and the handler's share of the CPU time is the
//! program's own figure. perf's `cpu-clock` share is printed beside it, not
//! checked: the kernel runs the handler just after its scheduler tick
//! (when it checks CPU timers), perf's 1 ms timer keeps step with that
//! tick, and perf finds the handler 1 % of the time in most runs.

mod common;

use std::ffi::OsStr;
use std::process::Command;

use common::*;
use tbrw_query::report::Key;
use tbrw_query::By;
use tbrw_query::Weight;

/// `handler_ns N total_ns M`: the handler's share of the CPU time, percent.
fn handler_share(stdout: &str) -> f64 {
    let w: Vec<&str> = stdout.split_whitespace().collect();
    let at = |k: &str| w.iter().position(|&x| x == k).map(|i| w[i + 1].parse::<f64>().unwrap()).unwrap();
    at("handler_ns") * 100.0 / at("total_ns")
}

/// The handler's functions' share of a report by function (by samples or
/// by CPU time): `on_alarm` and `handler_work`.
fn in_handler(rows: &[(String, f64, bool)]) -> f64 {
    rows.iter().filter(|(f, ..)| f == "on_alarm" || f == "handler_work").map(|(_, p, _)| p).sum()
}

/// The offset of symbol `name` in `bin` (`nm`).
fn symbol(bin: &std::path::Path, name: &str) -> u64 {
    let out = Command::new("nm").arg(bin).output().expect("nm runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.split_whitespace().nth(2) == Some(name)).expect("symbol listed");
    u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
}

#[test]
fn handler_samples_are_where_the_thread_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bin = build(dir, "alarm", &["-lrt"]);
    let tb5 = dir.join("run.tb5");
    let args: [&OsStr; 4] = ["-d".as_ref(), "-o".as_ref(), tb5.as_ref(), bin.as_ref()];
    let Some(out) = sampler_in(dir, &args) else { return };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let clock = handler_share(&String::from_utf8_lossy(&out.stdout));
    eprintln!("{err}");

    // No sample at the handler's first instruction.
    let entry = symbol(&bin, "on_alarm");
    let at_entry: Vec<_> = report(&tb5, By::Address, Weight::Samples)
        .into_iter()
        .filter(|r| matches!(&r.key, Key::Address { vaddr: Some(v), .. } if *v == entry))
        .collect();
    assert!(at_entry.is_empty(), "samples at on_alarm's first instruction: {at_entry:?}");

    // The handler's share, by samples and by CPU time, against its clock.
    let (rows, _) = function_report(&tb5);
    let by_samples = in_handler(&rows);
    let weighted: Vec<(String, f64, bool)> = report(&tb5, By::Function, Weight::Cputime)
        .iter()
        .map(|r| (r.key.printed_str().unwrap_or("?").to_owned(), r.percent, true))
        .collect();
    let by_cputime = in_handler(&weighted);
    let perf = match perf_shares_by(dir, &[&bin], "sym") {
        Ok((shares, stdout)) => {
            let p: f64 = ["on_alarm", "handler_work"].iter().map(|f| shares.get(*f).copied().unwrap_or(0.0)).sum();
            Some((p, handler_share(&stdout)))
        }
        Err(why) => {
            eprintln!("SKIPPED the comparison with perf: {why}");
            None
        }
    };
    eprintln!(
        "handler: clock {clock:.1} %  sampler {by_samples:.1} % (cputime {by_cputime:.1} %)  perf {}",
        perf.map_or("-".into(), |(p, c)| format!("{p:.1} % (its run's clock {c:.1} %)"))
    );
    // About 3000 samples (2000 ticks): measured over 12 runs on a
    // 2-vCPU machine at load 2 to 4, the handler's share was a point short
    // of its clock's on average (the ticks are not quite independent of
    // the signals on a busy machine), 1.8 points off in the mean square,
    // 3.4 at most; five allowed.
    for share in [by_samples, by_cputime] {
        assert!((share - clock).abs() <= 5.0, "the handler: {share:.1} %, its clock {clock:.1} %: {rows:?}");
    }
}
