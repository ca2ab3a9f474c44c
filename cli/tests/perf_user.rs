//! The command line a perf user expects (issue 34): a closed pipe ends
//! every printing command quietly, `--time` in percent and seconds,
//! `tbrw info`'s times and instance counts, `--by auto` by function when
//! the symbols are at hand, completions and man pages, exit codes, every
//! value `--help` lists accepted, and numbers printed as a person reads
//! them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn shipped(p: &str) -> String {
    format!("{ROOT}/{p}")
}

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let o = tbrw(args);
    assert_eq!(o.status.code(), Some(1), "tbrw {}: {}", args.join(" "), String::from_utf8_lossy(&o.stdout));
    String::from_utf8(o.stderr).unwrap()
}

/// Runs `tbrw` with standard output a pipe whose reader is already gone.
fn closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(args)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// The test files: the shipped sample, the collector's recording, imports
/// of an MTMC log, a winIDEA export, and a current profile with --volts
/// (power: `--weight energy`), made in `dir`.
struct Files {
    sample: String,
    collector: String,
    tasks: String,
    raw: String,
    winidea: String,
    power: String,
}

fn files(dir: &Path) -> Files {
    let p = |n: &str| dir.join(n).to_str().unwrap().to_owned();
    let f = Files {
        sample: shipped("examples/data/sample.tb5"),
        collector: shipped("cli/tests/data/matrix/collector.tb5"),
        tasks: p("tasks.tb5"),
        raw: p("raw.tb5"),
        winidea: p("w.tb5"),
        power: p("power.tb5"),
    };
    ok(&["import", "mtmc", &shipped("cli/tests/data/mtmc/doc_example.log"), "-o", &f.tasks]);
    ok(&["import", "mtmc", &shipped("cli/tests/data/mtmc/mtmc_raw_140736934563840"), "-o", &f.raw]);
    ok(&["import", "winidea", &shipped("cli/tests/data/winidea/doc_completed.txt"), "-o", &f.winidea]);
    ok(&["import", "sampler", &shipped("examples/data/sampler/current.prof"), "-o", &f.power, "--volts", "3.3"]);
    f
}

#[test]
fn a_closed_pipe_ends_every_printing_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    let copy = p("copy.tb5");
    std::fs::copy(&f.sample, &copy).unwrap();
    let symbolized = p("symbolized.tb5");
    std::fs::copy(&f.collector, &symbolized).unwrap();
    let commands: Vec<Vec<String>> = [
        vec!["--help"],
        vec!["--version"],
        vec!["report", "--help"],
        vec!["info", &f.sample],
        vec!["verify", &f.sample],
        vec!["bind", &copy],
        vec!["report", &f.sample, "--by", "module"],
        vec!["report", &f.collector],
        vec!["report", &f.collector, "--json"],
        vec!["report", &f.tasks],
        vec!["annotate", &f.collector, "--function", "__sincos_fma"],
        vec!["annotate", &f.collector, "--function", "__sincos_fma", "--json"],
        vec!["symbolize", &symbolized],
        vec!["import", "mtmc", &shipped("cli/tests/data/mtmc/doc_example.log"), "-o", &p("i.tb5")],
        vec!["import", "sampler", &shipped("examples/data/sampler/current.prof"), "-o", &p("s.tb5")],
        vec!["import", "winidea", &shipped("cli/tests/data/winidea/doc_completed.txt"), "-o", &p("wi.tb5")],
        vec!["export", "vtune-csv", &f.sample, "-o", &p("csv")],
        vec!["export", "sampler", &f.power, "-o", "-"],
        vec!["export", "sampler", &f.power, "-o", &p("again.prof")],
        vec!["export", "flamegraph", &f.collector, "-o", "-", "--folded"],
        vec!["export", "flamegraph", &f.collector, "-o", "-"],
        vec!["export", "flamegraph", &f.collector, "-o", &p("flame.svg")],
        vec!["export", "pprof", &f.collector, "-o", "-"],
        vec!["export", "firefox", &f.collector, "-o", "-"],
        vec!["export", "timeline", &f.raw, "-o", "-"],
        vec!["export", "parquet", &f.sample, "-o", &p("pq")],
        vec!["completions", "bash"],
        vec!["man", &p("man")],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(str::to_owned).collect())
    .collect();
    for args in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = closed_stdout(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "tbrw {}: {err}", args.join(" "));
        assert!(!err.contains("Broken pipe") && !err.contains("writing the output"), "tbrw {}: {err}", args.join(" "));
    }
    // The work was done before the printing failed.
    assert!(ok(&["info", &copy]).contains(", bound"));
    assert!(ok(&["report", &p("i.tb5")]).contains("1 task"));
    assert!(Path::new(&p("man/tbrw-report.1")).is_file());
}

/// `(first, last)` from `tbrw info`'s time line of stream 0.
fn info_times(file: &str) -> (u64, u64, String) {
    let info = ok(&["info", file]);
    let line = info.lines().find(|l| l.trim_start().starts_with("time: ")).unwrap_or_else(|| panic!("{info}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    (w[1].parse().unwrap(), w[3].parse().unwrap(), line.to_owned())
}

fn samples(file: &str, extra: &[&str]) -> u64 {
    let mut args = vec!["report", file, "--by", "thread", "--json"];
    args.extend(extra);
    let v: Value = serde_json::from_str(&ok(&args)).unwrap();
    v["samples"].as_u64().unwrap()
}

#[test]
fn time_ranges_take_percentages_and_seconds() {
    let c = shipped("cli/tests/data/matrix/collector.tb5");
    let (first, last, line) = info_times(&c);
    // Both forms: clock values, and seconds from the first.
    assert_eq!(line.trim(), format!("time: {first} .. {last} ns (time_monotonic_raw_ns) = 0 s .. 2.367 s"));
    let all = samples(&c, &[]);
    assert_eq!(samples(&c, &["--time", "0%..100%"]), all);
    assert_eq!(samples(&c, &["--time", "..50%"]) + samples(&c, &["--time", "50%.."]), all);
    let at = |pc: f64| first + ((last - first) as f64 * pc / 100.0).round() as u64;
    let abs = format!("{}..{}", at(10.0), at(20.0));
    let n = samples(&c, &["--time", "10%..20%"]);
    assert!(n > 0 && n < all);
    assert_eq!(n, samples(&c, &["--time", &abs]));
    let secs = samples(&c, &["--time", "0.5s..1.5s"]);
    assert_eq!(secs, samples(&c, &["--time", &format!("{}..{}", first + 500_000_000, first + 1_500_000_000)]));
    assert_eq!(secs, samples(&c, &["--time", "500ms..1500ms"]));
    assert_eq!(secs, samples(&c, &["--time", "500000us..1500000000ns"]));
    assert_eq!(samples(&c, &["--time", "..1s"]) + samples(&c, &["--time", "1s.."]), all);
    // Nothing in the range: the range as given, and as values.
    let e = fails(&["report", &c, "--time", "30%..30%"]);
    assert!(e.contains(&format!("no sample matches --time 30%..30% ({}..{})", at(30.0), at(30.0))), "{e}");
    // A TSC clock: percentages work, seconds are refused naming the unit.
    let s = shipped("examples/data/sample.tb5");
    let (_, _, tsc) = info_times(&s);
    assert!(tsc.ends_with("TSC ticks"), "{tsc}");
    assert!(samples(&s, &["--time", "10%..20%"]) > 0);
    let e = fails(&["report", &s, "--time", "0.5s.."]);
    assert!(e.contains("its times are TSC ticks, not nanoseconds") && e.contains("percentages"), "{e}");
    assert!(fails(&["report", &s, "--time", "5%"]).contains("is not A..B"));
    // The viewer exports and the timeline take them too.
    let folded = ok(&["export", "flamegraph", &c, "-o", "-", "--folded", "--time", "10%..20%", "--by", "thread"]);
    let total: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert_eq!(total, n);
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.tb5");
    ok(&["import", "mtmc", &shipped("cli/tests/data/mtmc/mtmc_raw_140736934563840"), "-o", raw.to_str().unwrap()]);
    let half = ok(&["export", "timeline", raw.to_str().unwrap(), "-o", "-", "--time", "0%..10%"]);
    let whole = ok(&["export", "timeline", raw.to_str().unwrap(), "-o", "-"]);
    assert!(half.matches("<rect").count() < whole.matches("<rect").count());
}

#[test]
fn info_counts_instances_not_records() {
    let info = ok(&["info", &shipped("cli/tests/data/matrix/collector.tb5")]);
    // One process of four threads, each with a start and an end record.
    assert!(info.contains("processes: 1, threads: 4 (10 records)\n"), "{info}");
}

#[test]
fn by_auto_is_by_function_when_the_symbols_are_at_hand() {
    let c = shipped("cli/tests/data/matrix/collector.tb5");
    // Its functions are stored in it (`tbrw symbolize`).
    let text = ok(&["report", &c, "--top", "3"]);
    assert!(
        text.lines().next().unwrap().ends_with(
            "by function (chosen automatically: 1279 of 1279 samples are in modules whose symbols were found)"
        ),
        "{text}"
    );
    let v: Value = serde_json::from_str(&ok(&["report", &c, "--json"])).unwrap();
    assert_eq!(v["by"], "function");
    assert_eq!(v["rows"][0]["key"]["kind"], "function");
    assert!(v["auto"].as_str().unwrap().contains("symbols were found"));
    // Asked for, the grouping is not explained.
    let v: Value = serde_json::from_str(&ok(&["report", &c, "--by", "module", "--json"])).unwrap();
    assert_eq!(v["by"], "module");
    assert!(v.get("auto").is_none());
    // A profile of binaries that are not on this machine: by module.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.tb5");
    ok(&["import", "sampler", &shipped("examples/data/sampler/current.prof"), "-o", run.to_str().unwrap()]);
    let text = ok(&["report", run.to_str().unwrap()]);
    assert!(text.lines().next().unwrap().contains(", by module (chosen automatically: 0 of "), "{text}");
    let v: Value = serde_json::from_str(&ok(&["report", run.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(v["by"], "module");
    // --top still applies.
    assert_eq!(ok(&["report", &c, "--top", "2"]).lines().count(), 4);
}

#[test]
fn completions_and_man_pages() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let s = ok(&["completions", shell]);
        assert!(s.contains("tbrw") && s.contains("annotate") && s.contains("flamegraph"), "{shell}: {s}");
    }
    assert_eq!(tbrw(&["completions", "tcsh"]).status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("share/man/man1");
    let listed = ok(&["man", man.to_str().unwrap()]);
    for page in
        ["tbrw.1", "tbrw-report.1", "tbrw-annotate.1", "tbrw-export-flamegraph.1", "tbrw-import-perf.1", "tbrw-man.1"]
    {
        let path = man.join(page);
        assert!(listed.contains(path.to_str().unwrap()), "{page} not listed: {listed}");
        let roff = std::fs::read_to_string(&path).unwrap();
        assert!(roff.starts_with(".ie \\n(.g .ds Aq") || roff.contains(".TH"), "{page}: {roff}");
    }
    let flame = std::fs::read_to_string(man.join("tbrw-export-flamegraph.1")).unwrap();
    assert!(flame.contains("tbrw\\-export\\-flamegraph") && flame.contains("folded"), "{flame}");
    // Made again over the old ones.
    ok(&["man", man.to_str().unwrap()]);
}

#[test]
fn bind_that_binds_nothing_fails_and_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.tb5");
    ok(&["import", "winidea", &shipped("cli/tests/data/winidea/doc_completed.txt"), "-o", w.to_str().unwrap()]);
    let before = std::fs::read(&w).unwrap();
    let e = fails(&["bind", w.to_str().unwrap()]);
    assert!(e.starts_with(&format!("tbrw: {}: nothing bound: stream 0 not bound: ", w.display())), "{e}");
    assert_eq!(e.lines().count(), 1);
    assert_eq!(std::fs::read(&w).unwrap(), before);
}

/// The values `--help` lists after `--OPTION` in `help`.
fn listed(help: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for l in help.lines() {
        let Some((_, values)) = l.split_once("[possible values: ") else { continue };
        let option = l.split_whitespace().find(|w| w.starts_with("--")).map(str::to_owned).unwrap_or_default();
        let values = values.trim_end_matches(']').split(", ").map(str::to_owned).collect();
        out.push((option, values));
    }
    out
}

/// Every value every command's `--help` lists is tried: each must work on
/// one of the test files (a grouping, weight, layout or clock the format
/// lists but then refuses fails here).
#[test]
fn each_listed_value_is_tried() {
    let dir = tempfile::tempdir().unwrap();
    let f = files(dir.path());
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    let samples = [&f.sample, &f.collector, &f.tasks, &f.power];
    let mut n = 0;
    let mut tried = 0;
    let commands: &[&[&str]] = &[
        &["report"],
        &["annotate"],
        &["export", "flamegraph"],
        &["export", "pprof"],
        &["export", "firefox"],
        &["export", "timeline"],
        &["export", "vtune-csv"],
        &["export", "sampler"],
        &["export", "parquet"],
        &["import", "sampler"],
        &["import", "winidea"],
        &["import", "mtmc"],
        &["import", "perf"],
        &["completions"],
        &["symbolize"],
    ];
    for cmd in commands {
        let help = ok(&[&cmd[..], &["--help"]].concat());
        for (option, values) in listed(&help) {
            for v in values {
                n += 1;
                let out = p(&format!("out{n}"));
                // (input files to try, args after the input)
                let attempts: Vec<Vec<String>> = match (cmd, option.as_str()) {
                    (["report"], _) => samples.iter().map(|s| vec![s.to_string(), option.clone(), v.clone()]).collect(),
                    (["export", "flamegraph" | "pprof" | "firefox"], _) => samples
                        .iter()
                        .map(|s| vec![s.to_string(), "-o".into(), out.clone(), option.clone(), v.clone()])
                        .collect(),
                    (["export", "timeline"], _) => {
                        vec![vec![f.raw.clone(), "-o".into(), out.clone(), option.clone(), v.clone()]]
                    }
                    (["export", "vtune-csv"], _) => vec![vec![
                        f.winidea.clone(),
                        "-o".into(),
                        out.clone(),
                        "--hostname".into(),
                        "h".into(),
                        option.clone(),
                        v.clone(),
                    ]],
                    (["export", "sampler"], _) => {
                        vec![vec![f.power.clone(), "-o".into(), out.clone(), option.clone(), v.clone()]]
                    }
                    (["import", "sampler"], "--layout") => {
                        // A profile in that layout: exported from an import first.
                        let prof = p(&format!("p{n}.prof"));
                        ok(&["export", "sampler", &f.power, "-o", &prof, "--layout", &v]);
                        vec![vec![prof, "-o".into(), out.clone(), option.clone(), v.clone()]]
                    }
                    (["import", "winidea"], "--bin-version") => {
                        let bin = p(&format!("t{n}.BIN"));
                        std::fs::write(&bin, b"").unwrap();
                        vec![vec![
                            shipped("cli/tests/data/winidea/doc_completed.txt"),
                            "--bin".into(),
                            bin,
                            "-o".into(),
                            out.clone(),
                            option.clone(),
                            v.clone(),
                        ]]
                    }
                    (["completions"], _) => vec![vec![v.clone()]],
                    // `--demangle` of the commands that name functions.
                    (["annotate"], "--demangle") => {
                        vec![vec![
                            f.collector.clone(),
                            "--function".into(),
                            "__sincos_fma".into(),
                            option.clone(),
                            v.clone(),
                        ]]
                    }
                    (["export", "parquet"], "--demangle") => vec![vec![
                        f.collector.clone(),
                        "-o".into(),
                        out.clone(),
                        "--functions".into(),
                        option.clone(),
                        v.clone(),
                    ]],
                    (["symbolize"], "--demangle") => {
                        let copy = p(&format!("s{n}.tb5"));
                        std::fs::copy(&f.collector, &copy).unwrap();
                        vec![vec![copy, option.clone(), v.clone()]]
                    }
                    _ => panic!("tbrw {} --help lists {option} values {v:?} that no attempt here tries", cmd.join(" ")),
                };
                let errors: Vec<String> = attempts
                    .iter()
                    .map(|a| {
                        let args: Vec<&str> = cmd.iter().copied().chain(a.iter().map(String::as_str)).collect();
                        let _ = std::fs::remove_dir_all(&out);
                        let _ = std::fs::remove_file(&out);
                        tbrw(&args)
                    })
                    .filter(|o| !o.status.success())
                    .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                    .collect();
                assert!(
                    errors.len() < attempts.len(),
                    "tbrw {} {option} {v}: listed but refused on every test file: {errors:?}",
                    cmd.join(" ")
                );
                tried += 1;
            }
        }
    }
    assert!(tried >= 30, "only {tried} values tried");
}

#[test]
fn numbers_read_as_a_person_reads_them() {
    let c = shipped("cli/tests/data/matrix/collector.tb5");
    let t = ok(&["report", &c, "--by", "module", "--weight", "cputime"]);
    let head = t.lines().next().unwrap();
    assert!(head.ends_with(", 920.634 ms cputime, by module"), "{head}");
    assert!(t.contains("       466.856 ms  50.71%  libm.so.6 (pid 2802)"), "{t}");
    assert!(!t.contains("e8") && !t.contains("e7"), "no exponent: {t}");
    // MTMC: singular and plural, and no negative zero.
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("t.tb5");
    let said = ok(&["import", "mtmc", &shipped("cli/tests/data/mtmc/doc_example.log"), "-o", tasks.to_str().unwrap()]);
    assert!(said.contains(": 1 task, 8 counters and topdown, 2 threads,"), "{said}");
    let r = ok(&["report", tasks.to_str().unwrap()]);
    assert!(r.lines().next().unwrap().ends_with("stream 0, 1 task, 8 counters"), "{r}");
    assert!(r.contains("branch_mispredicts=0.00%") && !r.contains("-0.00"), "{r}");
    let raw = dir.path().join("raw.tb5");
    let o = tbrw(&[
        "import",
        "mtmc",
        &shipped("cli/tests/data/mtmc/mtmc_raw_140736934563840"),
        "-o",
        raw.to_str().unwrap(),
    ]);
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(
        e.contains("1 task has no end and 1 ended on another CPU than it began on: they have no counter deltas"),
        "{e}"
    );
}

#[test]
fn vtune_csv_names_are_short_and_keep_vtunes_rule() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("csv");
    let c = shipped("cli/tests/data/matrix/collector.tb5");
    let listed = ok(&["export", "vtune-csv", &c, "-o", out.to_str().unwrap(), "--hostname", "vm"]);
    let names: Vec<PathBuf> = listed.lines().map(PathBuf::from).collect();
    let names: Vec<&str> = names.iter().map(|n| n.file_name().unwrap().to_str().unwrap()).collect();
    // The CPU time's table and the samples per module.
    assert_eq!(names, ["sampler-s0-hostname-vm.csv", "sampler-s0-modules-hostname-vm.csv"], "{listed}");
    let name = names[0];
    // `<user-defined>-hostname-<host>.csv`: the user part holds no `-hostname-`.
    let (user, host) = name.strip_suffix(".csv").unwrap().split_once("-hostname-").unwrap();
    assert!(!user.contains("hostname") && host == "vm");
}

#[test]
fn export_sampler_takes_the_collectors_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let c = shipped("cli/tests/data/matrix/collector.tb5");
    let prof = dir.path().join("c.prof");
    let said = ok(&["export", "sampler", &c, "-o", prof.to_str().unwrap()]);
    // This recording read all 4 threads each tick: 1279 records in 320 samples.
    assert_eq!(said, format!("{}: 320 samples\n", prof.display()));
    let back = dir.path().join("c.tb5");
    ok(&["import", "sampler", prof.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    // The same CPU time per thread, and the same samples per thread.
    let json = |f: &str, w: &str| -> Vec<(u64, u64)> {
        let v: Value = serde_json::from_str(&ok(&["report", f, "--by", "thread", "--json", "--weight", w])).unwrap();
        let mut rows: Vec<(u64, u64)> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["key"]["tid"].as_u64().unwrap(),
                    r["weight"].as_f64().map_or(r["samples"].as_u64().unwrap(), |w| w as u64),
                )
            })
            .collect();
        rows.sort_unstable();
        rows
    };
    assert_eq!(json(&c, "samples"), json(back.to_str().unwrap(), "samples"));
    let (a, b) = (json(&c, "cputime"), json(back.to_str().unwrap(), "cputime"));
    for ((ta, wa), (tb, wb)) in a.iter().zip(&b) {
        assert_eq!(ta, tb);
        // The profile keeps whole microseconds of CPU time.
        assert!(wa.abs_diff(*wb) < 1000 * 400, "tid {ta}: {wa} ns, {wb} ns");
    }
}
