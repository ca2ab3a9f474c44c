//! A file from another machine at scale (issue #40): the issue's commands
//! timed against `tbrw report --by module` on the same file in the same
//! run. Each round runs every command once, each right after a module
//! report of its own (the pair's ratio: a shared machine's load, and what
//! the command before left to the kernel, fall on both alike), at
//! real-time priority where `chrt -f 10` works (root), each output written
//! afresh. Prints per command the median and fastest wall time, the median
//! CPU time (the child's rusage), the peak resident set, the median of its
//! pairs' ratios, and the issue's bound where it sets one (2x for the
//! flame graph by process and module, 3x for the default flame graph, the
//! report by function and Firefox).
//!
//! ```sh
//! cargo bench -p tbrw-cli --bench remote
//! ```
//!
//! The file is `make_scale_inputs other-machine`'s: `TBRW_REMOTE_SAMPLES`
//! samples (default 5,000,000) at random addresses of 10,000 modules (100
//! processes × 100 libraries) whose files are not on this machine, no
//! stored bind; made once in `$TBRW_BENCH_DIR` (default
//! `target/remote-bench`) and reused. `TBRW_REMOTE_ROUNDS` rounds (default
//! 7).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod support;
use support::{scale_inputs, waited, Took};

/// A command of the issue: its label, its arguments (`IN` the input,
/// `OUT` the output's path), the output's name, and the issue's bound.
struct Step {
    label: &'static str,
    args: &'static [&'static str],
    output: Option<&'static str>,
    bound: Option<f64>,
}

const STEPS: &[Step] = &[
    Step { label: "report --by module", args: &["report", "IN", "--by", "module"], output: None, bound: None },
    Step {
        label: "export flamegraph --by process,module --folded",
        args: &["export", "flamegraph", "IN", "--by", "process,module", "--folded", "-o", "OUT"],
        output: Some("f.folded"),
        bound: Some(2.0),
    },
    Step {
        label: "export flamegraph",
        args: &["export", "flamegraph", "IN", "-o", "OUT"],
        output: Some("f.svg"),
        bound: Some(3.0),
    },
    Step { label: "report --by function", args: &["report", "IN", "--by", "function"], output: None, bound: Some(3.0) },
    Step {
        label: "export firefox -o p.json",
        args: &["export", "firefox", "IN", "-o", "OUT"],
        output: Some("p.json"),
        bound: Some(3.0),
    },
    Step {
        label: "export firefox -o p.json.gz",
        args: &["export", "firefox", "IN", "-o", "OUT"],
        output: Some("p.json.gz"),
        bound: Some(3.0),
    },
    Step { label: "export pprof", args: &["export", "pprof", "IN", "-o", "OUT"], output: Some("p.pb.gz"), bound: None },
    Step { label: "report --by address", args: &["report", "IN", "--by", "address"], output: None, bound: None },
];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let samples: u64 = std::env::var("TBRW_REMOTE_SAMPLES").ok().and_then(|v| v.parse().ok()).unwrap_or(5_000_000);
    let rounds: usize = std::env::var("TBRW_REMOTE_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(7).max(1);
    let dir = std::env::var_os("TBRW_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/remote-bench"));
    std::fs::create_dir_all(&dir).expect("bench folder");
    let input = dir.join(format!("remote-{samples}.tb5"));
    if !input.exists() {
        scale_inputs::other_machine(&input, samples, None).expect("the file from another machine");
    }
    let tbrw = env!("CARGO_BIN_EXE_tbrw");
    // Real-time priority where it may be had: the machine's other work
    // then does not decide which command gets the cores.
    let chrt = Command::new("chrt").args(["-f", "10", "true"]).status().is_ok_and(|s| s.success());
    let step_run = |step: &Step| {
        let output = step.output.map(|o| dir.join(o));
        if let Some(o) = &output {
            let _ = std::fs::remove_file(o);
        }
        let mut cmd = match chrt {
            true => {
                let mut c = Command::new("chrt");
                c.args(["-f", "10", tbrw]);
                c
            }
            false => Command::new(tbrw),
        };
        for a in step.args {
            match (*a, &output) {
                ("IN", _) => cmd.arg(&input),
                ("OUT", Some(o)) => cmd.arg(o),
                _ => cmd.arg(a),
            };
        }
        waited(&mut cmd)
    };
    // Per step: its runs and, per run, its ratio to the module report run
    // just before it (the module report's own: 1).
    let mut runs: Vec<Vec<Took>> = (0..STEPS.len()).map(|_| Vec::new()).collect();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); STEPS.len()];
    for _ in 0..rounds {
        for (k, step) in STEPS.iter().enumerate().skip(1) {
            let base = step_run(&STEPS[0]);
            let took = step_run(step);
            ratios[k].push(took.wall.as_secs_f64() / base.wall.as_secs_f64());
            runs[0].push(base);
            ratios[0].push(1.0);
            runs[k].push(took);
        }
    }
    println!(
        "# {samples} samples over 10,000 modules not here, {rounds} rounds{}",
        if chrt { ", real-time priority" } else { "" }
    );
    println!(
        "{:<48} {:>9} {:>9} {:>9} {:>8} {:>7}  bound",
        "command", "median s", "fastest s", "CPU s", "RSS MB", "ratio"
    );
    for ((step, took), ratios) in STEPS.iter().zip(&runs).zip(ratios) {
        let wall = median(took.iter().map(|r| r.wall).collect());
        let fastest = took.iter().map(|r| r.wall).min().unwrap_or_default();
        let cpu = median(took.iter().map(|r| r.cpu).collect());
        let rss = took.iter().map(|r| r.maxrss_kib).max().unwrap_or(0) / 1024;
        let mut ratios = ratios;
        ratios.sort_by(f64::total_cmp);
        let ratio = ratios[ratios.len() / 2];
        let bound = match step.bound {
            Some(b) if ratio <= b => format!("≤ {b}x: within"),
            Some(b) => format!("≤ {b}x: over"),
            None => String::new(),
        };
        println!(
            "{:<48} {:>9.3} {:>9.3} {:>9.3} {:>8} {:>6.1}x  {bound}",
            step.label,
            wall.as_secs_f64(),
            fastest.as_secs_f64(),
            cpu.as_secs_f64(),
            rss,
            ratio
        );
    }
}
