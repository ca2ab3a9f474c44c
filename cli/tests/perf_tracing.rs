//! perf recordings with tracepoints, checked against perf: in pipe mode
//! the tracepoints' formats follow a tracing-data record (its payload,
//! whose size is in the record's body), in file mode they are a header
//! feature. Each recording is imported by path and from standard input,
//! and its counts per event, module, thread and process and its events'
//! names (`sched:sched_switch`, named from the tracing data) must be
//! perf's. Skipped, with a note, where tracefs is missing or perf cannot
//! record tracepoints (they need root). perfparser's uprobe recordings
//! are in `perf_corpus.rs`.

mod perf_support;

use std::path::Path;
use std::process::{Command, Stdio};

use perf_support::*;

/// Computes, then sleeps: context switches for `sched:sched_switch`.
const SLEEPER: &str = r#"
#include <time.h>
static volatile double sink;
int main(void) {
  for (int r = 0; r < 6; r++) {
    for (long i = 0; i < 2000000L; i++) sink += i * 0.5;
    struct timespec t = {0, 2000000}; nanosleep(&t, 0);
  }
  return 0; }
"#;

const EVENTS: [&str; 6] = ["-e", "cpu-clock", "-c", "200000", "-e", "sched:sched_switch"];

fn tracefs() -> bool {
    let there =
        ["/sys/kernel/tracing/events/sched/sched_switch", "/sys/kernel/debug/tracing/events/sched/sched_switch"]
            .iter()
            .any(|p| Path::new(p).exists());
    if !there {
        eprintln!("note: skipped: tracefs is not mounted (sched:sched_switch cannot be recorded)");
    }
    there
}

/// The file's events by name, imported from standard input.
fn events_from_stdin(data: &Path) -> std::collections::BTreeMap<String, u64> {
    let out = data.with_extension("stdin.tb5");
    let o = tbrw()
        .args(["import", "perf", "-", "-o"])
        .arg(&out)
        .stdin(std::fs::File::open(data).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    tbrw_events(&out)
}

#[test]
fn a_pipe_with_a_tracepoint_gives_perfs_counts_by_path_and_on_stdin() {
    if !have_perf() || !tracefs() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), "sleeper", SLEEPER, &["-O1"]) else { return };
    let piped = dir.path().join("piped.data");
    let o = Command::new("perf")
        .args(["record", "-N"])
        .args(EVENTS)
        .args(["-o", "-"])
        .arg(&exe)
        .stdout(std::fs::File::create(&piped).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    if !o.status.success() {
        return eprintln!("note: skipped: perf record -o - failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    let theirs = perf_events(&piped);
    assert!(theirs.get("sched:sched_switch").is_some_and(|&n| n >= 6), "{theirs:?}");
    check_counts(&piped);
    let (tb5, _) = import(&piped);
    assert_eq!(tbrw_events(&tb5), theirs);
    assert_eq!(events_from_stdin(&piped), theirs);

    // File mode: the tracing data is a header feature.
    let Some(file) = record(&dir.path().join("file.data"), &EVENTS, &[&exe]) else { return };
    check_counts(&file);
    let (tb5, _) = import(&file);
    assert_eq!(tbrw_events(&tb5), perf_events(&file));
}
