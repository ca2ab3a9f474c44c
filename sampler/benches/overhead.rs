//! What sampling costs a CPU-bound program with a three-deep call chain:
//! its run time bare, under `sampler -f 1000` without stacks, with
//! frame-pointer stacks (`-g`) and with DWARF stacks (`--call-graph
//! dwarf`, on a build without frame pointers), each writing its TB5 file,
//! and under `perf record -F 1000`, `-g` and `--call-graph dwarf` when perf
//! works here, as ratios to the bare time of the same build. One thread,
//! then four threads (more threads than cores shows the reached frequency
//! dropping). The runs take turns, REPEATS rounds, and each keeps its best
//! time, so that a change of the machine's load over the minutes of the
//! bench reaches the bare runs and the others alike.
//!
//! `cargo bench -p sampler --bench overhead [-- REPEATS]`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const SOURCE: &str = r#"
#include <pthread.h>
#include <stdlib.h>
volatile unsigned long sink;
static long iters;
__attribute__((noinline)) static unsigned long leaf(unsigned long x, long i) { return x * 31 + i; }
__attribute__((noinline)) static unsigned long middle(unsigned long x, long i) { return leaf(x, i) ^ (x >> 7); }
__attribute__((noinline)) static unsigned long top(long n) {
    unsigned long x = 0;
    for (long i = 0; i < n; i++) x = middle(x, i);
    return x;
}
static void *work(void *a) {
    (void)a;
    sink = top(iters);
    return 0;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    iters = argc > 2 ? atol(argv[2]) : 400000000L;
    pthread_t t[64];
    for (int i = 0; i < n; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < n; i++) pthread_join(t[i], 0);
    return 0;
}
"#;

fn time(cmd: &mut Command, repeats: usize) -> Option<(f64, String)> {
    let mut best = f64::MAX;
    let mut err = String::new();
    for _ in 0..repeats {
        let t = Instant::now();
        let out = cmd.output().ok()?;
        if !out.status.success() {
            return None;
        }
        best = best.min(t.elapsed().as_secs_f64());
        err = String::from_utf8_lossy(&out.stderr).into_owned();
    }
    Some((best, err))
}

fn line<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines().find_map(|l| l.split_once(key)).map_or("", |(_, v)| v.trim_start_matches(':').trim())
}

/// One measured configuration: a label, the program's build, and the
/// command that runs it (`None`: the program alone).
struct Run<'a> {
    label: &'a str,
    build: &'a Path,
    wrapper: Option<Vec<std::ffi::OsString>>,
}

fn main() {
    let repeats: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("cpu.c");
    std::fs::write(&src, SOURCE).unwrap();
    // Frame pointers kept for `--call-graph fp` and `perf -g`; left out
    // for `--call-graph dwarf`, whose unwinding needs none.
    let fp: PathBuf = dir.path().join("cpu-fp");
    let nofp: PathBuf = dir.path().join("cpu-nofp");
    for (bin, flag) in [(&fp, "-fno-omit-frame-pointer"), (&nofp, "-fomit-frame-pointer")] {
        let ok = Command::new("cc").args(["-O2", "-g", flag]).arg(&src).arg("-o").arg(bin).arg("-lpthread").status();
        assert!(ok.is_ok_and(|s| s.success()), "cc");
    }
    let sampler = Path::new(env!("CARGO_BIN_EXE_sampler"));
    let tb5 = dir.path().join("run.tb5");
    let perf_data = dir.path().join("perf.data");
    let perf_ok = Command::new("perf")
        .args(["record", "-q", "-F", "1000", "-o"])
        .arg(&perf_data)
        .args(["--", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    let os = |v: &[&str]| -> Vec<std::ffi::OsString> { v.iter().map(Into::into).collect() };
    let with = |mut v: Vec<std::ffi::OsString>, out: &Path| {
        v.push("-o".into());
        v.push(out.into());
        v.push("--".into());
        v
    };
    let samp = |args: &[&str]| {
        let mut v = vec![sampler.as_os_str().to_owned()];
        v.extend(os(&["--force", "-f", "1000"]));
        v.extend(os(args));
        Some(with(v, &tb5))
    };
    let perf = |args: &[&str]| {
        let mut v = os(&["perf", "record", "-q", "-F", "1000"]);
        v.extend(os(args));
        Some(with(v, &perf_data))
    };
    let mut runs = vec![
        Run { label: "bare (frame pointers)", build: &fp, wrapper: None },
        Run { label: "bare (no frame pointers)", build: &nofp, wrapper: None },
        Run { label: "sampler -f 1000 --call-graph none", build: &fp, wrapper: samp(&["--call-graph", "none"]) },
        Run { label: "sampler -f 1000 -g (fp)", build: &fp, wrapper: samp(&["-g"]) },
        Run { label: "sampler -f 1000 --call-graph dwarf", build: &nofp, wrapper: samp(&["--call-graph", "dwarf"]) },
    ];
    if perf_ok {
        runs.push(Run { label: "perf record -F 1000", build: &fp, wrapper: perf(&[]) });
        runs.push(Run { label: "perf record -F 1000 -g", build: &fp, wrapper: perf(&["-g"]) });
        runs.push(Run {
            label: "perf record -F 1000 --call-graph dwarf",
            build: &nofp,
            wrapper: perf(&["--call-graph", "dwarf"]),
        });
    } else {
        println!("perf record: not usable here");
    }
    println!(
        "overhead of sampling a CPU-bound program with a three-deep call chain (best of {repeats}; {} cpus)",
        num_cpus()
    );
    for threads in ["1", "4"] {
        // About 4 s a run: long enough that the profilers' start and end
        // (perf's is about 0.3 s) do not decide the ratio.
        let iters = if threads == "1" { "2000000000" } else { "750000000" };
        println!("{threads} thread(s):");
        // The runs take turns, round after round, and each keeps its best:
        // a machine shared with other work changes its load over minutes,
        // and the bare runs must see the same machine as the others.
        let mut best: Vec<Option<(f64, String, u64)>> = vec![None; runs.len()];
        for _ in 0..repeats {
            for (run, best) in runs.iter().zip(&mut best) {
                let mut cmd = match &run.wrapper {
                    Some(w) => {
                        let mut c = Command::new(&w[0]);
                        c.args(&w[1..]).arg(run.build);
                        c
                    }
                    None => Command::new(run.build),
                };
                cmd.args([threads, iters]);
                let Some((t, err)) = time(&mut cmd, 1) else { continue };
                let out = if run.label.starts_with("perf") { &perf_data } else { &tb5 };
                let size = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
                if best.as_ref().is_none_or(|b| t < b.0) {
                    *best = Some((t, err, size));
                }
            }
        }
        let mut bare = [0.0f64; 2];
        for (run, best) in runs.iter().zip(&best) {
            let Some((t, err, size)) = best else {
                println!("  {:<40} could not run here", run.label);
                continue;
            };
            let which = usize::from(run.build == nofp.as_path());
            if run.wrapper.is_none() {
                bare[which] = *t;
                println!("  {:<40} {t:.3} s", run.label);
                continue;
            }
            let reached = line(err, "reached frequency");
            let reached = if reached.is_empty() { String::new() } else { format!(", reached {reached}") };
            println!("  {:<40} {t:.3} s  x{:.3} of bare  ({size} bytes{reached})", run.label, t / bare[which]);
        }
    }
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
