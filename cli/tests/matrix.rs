//! The consistency matrix: one recording gives the same answer in every
//! output. For committed recordings of each kind (the collector's, `perf
//! record -g` imports with call chains as a stream of frames, as imported
//! before the stack table, and as a stack table, the shipped sample, an
//! MTMC and a winIDEA import),
//! each applicable weight and a few filter sets, the totals per function,
//! per module and per thread, and the threads' names, are read back from
//! `tbrw report --json`, `export flamegraph --folded`, pprof (decoded),
//! the Firefox Profiler's JSON (decoded), Parquet (through DuckDB, skipped
//! with a note where it is not installed) and VTune CSV (per thread, where
//! the export takes the stream), and must be equal.
//!
//! Each output is read the way its readers read it: a folded stack's last
//! frame, pprof's first location of a sample with its function and
//! mapping, a Firefox sample's stack's frame with its function and
//! resource, a Parquet sample row with its module and function rows.
//!
//! Inline frames: the stack outputs are compared with the report with
//! `--no-inline` (a leaf is then the sampled address's function, what
//! `report --by function` counts, self by symbol as perf's); with inline
//! frames on (the default), a leaf is the innermost function inlined at
//! the sampled address (`do_sin` in `__sin_fma`), and the stack outputs
//! agree with each other on it, and `report --children` with the folded
//! stacks on every function's inclusive samples.

mod common;
use common::check_vtune_csv;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use prost::Message;
use serde_json::Value;

/// What a sample's leaf is counted under, with what it weighs.
#[derive(Clone, Debug, Default, PartialEq)]
struct Totals {
    functions: BTreeMap<String, f64>,
    modules: BTreeMap<String, f64>,
    threads: BTreeMap<u32, f64>,
    /// Thread names, where the output has one.
    names: BTreeMap<u32, String>,
}

/// A recording and what the matrix asks of it.
struct Case {
    name: &'static str,
    file: PathBuf,
    weights: &'static [&'static str],
    /// Samples with addresses (function and module totals); else intervals.
    samples: bool,
}

fn shipped(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(p)
}

fn tbrw(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
    o.stdout
}

fn gunzip(p: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap()).read_to_end(&mut out).unwrap();
    out
}

/// `NAME (tid T)` or `tid T`: the tid and the name.
fn thread_label(label: &str) -> (u32, Option<String>) {
    let tid = |s: &str| s.trim_end_matches(')').split(&[' ', ','][..]).next().unwrap().parse::<u32>().unwrap();
    match label.rsplit_once(" (tid ") {
        Some((name, rest)) => (tid(rest), Some(name.to_owned())),
        None => (tid(label.strip_prefix("tid ").unwrap_or_else(|| panic!("{label:?} is not a thread label"))), None),
    }
}

/// The report's totals: `--by function`, `module`, `thread` with JSON.
fn report(file: &Path, weight: &str, filters: &[String], samples: bool) -> Totals {
    let mut t = Totals::default();
    let groupings: &[&str] = if samples { &["function", "module", "thread"] } else { &["thread"] };
    for by in groupings {
        let mut args = vec!["report", file.to_str().unwrap(), "--by", by, "--json", "--weight", weight];
        args.extend(filters.iter().map(String::as_str));
        let v: Value = serde_json::from_slice(&ok(&args)).unwrap();
        for row in v["rows"].as_array().unwrap() {
            let x =
                if weight == "samples" { row["samples"].as_f64().unwrap() } else { row["weight"].as_f64().unwrap() };
            let k = &row["key"];
            match *by {
                "function" => {
                    let name = k["name"].as_str().or(k["unknown"].as_str()).unwrap().to_owned();
                    *t.functions.entry(name).or_default() += x;
                }
                "module" => {
                    let name = k["name"].as_str().unwrap_or("[unknown]").to_owned();
                    *t.modules.entry(name).or_default() += x;
                }
                _ => {
                    let tid = k["tid"].as_u64().unwrap() as u32;
                    *t.threads.entry(tid).or_default() += x;
                    if let Some(n) = k["name"].as_str() {
                        t.names.insert(tid, n.to_owned());
                    }
                }
            }
        }
    }
    t
}

/// `--no-inline` unless `inline`: the stack outputs' leaves are then the
/// sampled addresses' functions, what `report --by function` counts.
fn inline_arg(inline: bool) -> &'static [&'static str] {
    if inline {
        &[]
    } else {
        &["--no-inline"]
    }
}

/// Folded stacks' totals by their last frame: `--by function`, `module`, `thread`
/// (`function` alone with `inline`: the other levels have no inline frames).
fn folded(file: &Path, dir: &Path, weight: &str, filters: &[String], inline: bool) -> Totals {
    let mut t = Totals::default();
    let levels: &[&str] = if inline { &["function"] } else { &["function", "module", "thread"] };
    for &by in levels {
        let out = dir.join(format!("{by}.folded"));
        let mut args = vec!["export", "flamegraph", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-f"];
        args.extend(["--folded", "--by", by, "--weight", weight]);
        args.extend(filters.iter().map(String::as_str));
        args.extend(inline_arg(inline));
        ok(&args);
        for line in std::fs::read_to_string(&out).unwrap().lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            let n: f64 = n.parse().unwrap();
            let leaf = stack.rsplit(';').next().unwrap();
            match by {
                "function" => *t.functions.entry(leaf.to_owned()).or_default() += n,
                "module" => *t.modules.entry(leaf.to_owned()).or_default() += n,
                _ => {
                    let (tid, name) = thread_label(leaf);
                    *t.threads.entry(tid).or_default() += n;
                    if let Some(name) = name {
                        t.names.insert(tid, name);
                    }
                }
            }
        }
    }
    t
}

/// pprof's totals: each sample's first location, its function and mapping,
/// and the `tid` and `thread` labels. `names` maps a mapping's file (the
/// module's path) to the module's name.
fn pprof(
    file: &Path,
    dir: &Path,
    weight: &str,
    filters: &[String],
    names: &BTreeMap<String, String>,
    inline: bool,
) -> Totals {
    let out = dir.join("p.pb.gz");
    let mut args = vec!["export", "pprof", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-f"];
    args.extend(["--weight", weight]);
    args.extend(filters.iter().map(String::as_str));
    args.extend(inline_arg(inline));
    ok(&args);
    let p = tbrw_export::pprof::Profile::decode(gunzip(&out).as_slice()).unwrap();
    let s = |i: i64| p.string_table[i as usize].as_str();
    let value_at =
        p.sample_type.iter().position(|v| s(v.r#type) == if weight == "samples" { "samples" } else { "cpu" });
    let value_at = value_at.unwrap_or_else(|| panic!("pprof has no {weight} sample type"));
    let mut t = Totals::default();
    for smp in &p.sample {
        let x = smp.value[value_at] as f64;
        let loc = p.location.iter().find(|l| l.id == smp.location_id[0]).unwrap();
        let func = loc.line.first().map(|l| p.function.iter().find(|f| f.id == l.function_id).unwrap());
        let func = func.map_or("(no function)".to_owned(), |f| s(f.name).to_owned());
        *t.functions.entry(func).or_default() += x;
        let module = match p.mapping.iter().find(|m| m.id == loc.mapping_id) {
            Some(m) => names.get(s(m.filename)).cloned().unwrap_or_else(|| s(m.filename).to_owned()),
            None => "[unknown]".to_owned(),
        };
        *t.modules.entry(module).or_default() += x;
        let label = |key: &str| smp.label.iter().find(|l| s(l.key) == key);
        let tid = label("tid").unwrap().num as u32;
        *t.threads.entry(tid).or_default() += x;
        if let Some(l) = label("thread") {
            t.names.insert(tid, s(l.str).to_owned());
        }
    }
    t
}

/// The Firefox profile's totals: each sample's stack's frame, its function
/// and resource (library), per thread; CPU time from `threadCPUDelta` (µs).
fn firefox(file: &Path, dir: &Path, weight: &str, filters: &[String], samples: bool, inline: bool) -> Totals {
    let out = dir.join("f.json.gz");
    let mut args = vec!["export", "firefox", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-f"];
    if samples {
        args.extend(["--weight", weight]);
        args.extend(filters.iter().map(String::as_str));
        args.extend(inline_arg(inline));
    }
    ok(&args);
    let v: Value = serde_json::from_slice(&gunzip(&out)).unwrap();
    let mut t = Totals::default();
    for th in v["threads"].as_array().unwrap() {
        let strings = th["stringArray"].as_array().unwrap();
        let string = |i: &Value| strings[i.as_u64().unwrap() as usize].as_str().unwrap().to_owned();
        let tid: u32 = th["tid"].as_str().map_or_else(|| th["tid"].to_string(), str::to_owned).parse().unwrap();
        // The profiler shows a process's main thread under the process's
        // name; other threads carry their own label.
        if th["isMainThread"] != true {
            let label = th["name"].as_str().unwrap();
            // A winIDEA context (no OS thread) is shown by its name alone.
            if !samples && !label.contains("(tid ") {
                t.names.insert(tid, label.to_owned());
            } else {
                let (labelled, name) = thread_label(label);
                assert_eq!(labelled, tid, "{label}");
                if let Some(name) = name {
                    t.names.insert(tid, name);
                }
            }
        }
        if !samples {
            let markers = th["markers"]["length"].as_u64().unwrap() as f64;
            *t.threads.entry(tid).or_default() += markers;
            continue;
        }
        let smp = &th["samples"];
        let stacks = smp["stack"].as_array().unwrap();
        let cpu = smp["threadCPUDelta"].as_array();
        for (i, stack) in stacks.iter().enumerate() {
            let x = match weight {
                "samples" => smp["weight"].as_array().map_or(1.0, |w| w[i].as_f64().unwrap()),
                _ => cpu.expect("threadCPUDelta")[i].as_f64().unwrap() * 1000.0,
            };
            *t.threads.entry(tid).or_default() += x;
            let frame = &th["stackTable"]["frame"][stack.as_u64().unwrap() as usize];
            let func = th["frameTable"]["func"][frame.as_u64().unwrap() as usize].as_u64().unwrap() as usize;
            *t.functions.entry(string(&th["funcTable"]["name"][func])).or_default() += x;
            let resource = th["funcTable"]["resource"][func].as_i64().unwrap();
            let module = if resource < 0 {
                "[unknown]".to_owned()
            } else {
                string(&th["resourceTable"]["name"][resource as usize])
            };
            *t.modules.entry(module).or_default() += x;
        }
    }
    t
}

/// Runs `sql` in DuckDB (Python), with `DS` the dataset folder; the rows as
/// JSON arrays. `None` when DuckDB is missing.
fn duckdb(ds: &Path, sql: &str) -> Option<Vec<Vec<Value>>> {
    let script = "import duckdb, json, sys\ncon = duckdb.connect()\nrows = con.execute(sys.argv[1].replace('DS', sys.argv[2])).fetchall()\nprint(json.dumps([list(r) for r in rows], default=str))\n";
    let o = Command::new("python3").arg("-c").arg(script).arg(sql).arg(ds).output().ok()?;
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() && (err.contains("No module named 'duckdb'") || err.contains("ModuleNotFoundError")) {
        return None;
    }
    assert!(o.status.success(), "DuckDB: {err}\n{sql}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    Some(v.as_array().unwrap().iter().map(|r| r.as_array().unwrap().clone()).collect())
}

/// The Parquet dataset's totals, the filters as SQL (`None`: DuckDB is missing).
fn parquet(ds: &Path, weight: &str, filters: &[String], samples: bool) -> Option<Totals> {
    let table = |t: &str| format!("read_parquet('DS/**/{t}.parquet', hive_partitioning = true, union_by_name = true)");
    let mut t = Totals::default();
    if !samples {
        for r in duckdb(ds, &format!("SELECT tid, count(*) FROM {} GROUP BY tid", table("intervals")))? {
            t.threads.insert(r[0].as_u64().unwrap() as u32, r[1].as_f64().unwrap());
        }
        let names = duckdb(ds, &format!("SELECT tid, name FROM {} WHERE name IS NOT NULL", table("threads")))?;
        for r in names {
            t.names.insert(r[0].as_u64().unwrap() as u32, r[1].as_str().unwrap().to_owned());
        }
        return Some(t);
    }
    let mut wher = vec!["s.stream = 0".to_owned()];
    let mut f = filters.iter();
    while let (Some(k), Some(v)) = (f.next(), f.next()) {
        wher.push(match k.as_str() {
            "--pid" => format!("s.pid = {v}"),
            "--tid" => format!("s.tid = {v}"),
            "--module" => format!("(m.name = '{v}' OR m.path = '{v}')"),
            "--time" => {
                let (a, b) = v.split_once("..").unwrap();
                format!("s.time >= {a} AND s.time < {b}")
            }
            other => panic!("{other}"),
        });
    }
    let x = if weight == "samples" { "count(*)" } else { "sum(s.cputime_ns)" };
    let from = format!(
        "{} s LEFT JOIN {} m ON s.module_id = m.module_id AND s.run = m.run LEFT JOIN {} fn ON s.function_id = fn.function_id AND s.run = fn.run WHERE {}",
        table("samples"),
        table("modules"),
        table("functions"),
        wher.join(" AND ")
    );
    // The one spelling of an unknown function: its module in brackets
    // (`[unknown]` without one).
    let unknown =
        "CASE WHEN m.name IS NULL THEN '[unknown]' WHEN m.name LIKE '[%]' THEN m.name ELSE '[' || m.name || ']' END";
    let q = format!("SELECT coalesce(fn.name, {unknown}), {x} FROM {from} GROUP BY 1");
    for r in duckdb(ds, &q)? {
        t.functions.insert(r[0].as_str().unwrap().to_owned(), r[1].as_f64().unwrap());
    }
    for r in duckdb(ds, &format!("SELECT coalesce(m.name, '[unknown]'), {x} FROM {from} GROUP BY 1"))? {
        t.modules.insert(r[0].as_str().unwrap().to_owned(), r[1].as_f64().unwrap());
    }
    for r in duckdb(ds, &format!("SELECT s.tid, {x} FROM {from} GROUP BY 1"))? {
        t.threads.insert(r[0].as_u64().unwrap() as u32, r[1].as_f64().unwrap());
    }
    let names = duckdb(ds, &format!("SELECT tid, name FROM {} WHERE name IS NOT NULL", table("threads")))?;
    for r in names {
        t.names.insert(r[0].as_u64().unwrap() as u32, r[1].as_str().unwrap().to_owned());
    }
    Some(t)
}

/// Rows per tid of the stream-0 CSV of `export vtune-csv` (`None`: the
/// export does not take the stream, or its CSV has no tid column).
fn csv_threads(file: &Path, dir: &Path) -> Option<BTreeMap<u32, f64>> {
    let out = dir.join("csv");
    let o = tbrw(&["export", "vtune-csv", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-f", "--stream", "0"]);
    if !o.status.success() {
        return None;
    }
    let first = String::from_utf8(o.stdout).unwrap().lines().next()?.to_owned();
    let text = std::fs::read_to_string(first).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next()?.split(',').collect();
    let at = header.iter().position(|h| *h == "tid")?;
    let mut per = BTreeMap::new();
    for l in lines {
        let tid: u32 = l.split(',').nth(at).unwrap().parse().unwrap();
        *per.entry(tid).or_default() += 1.0;
    }
    Some(per)
}

/// The last row of the stream-0 module counts of `export vtune-csv`
/// (`<name>-modules-hostname-<host>.csv`: cumulative `MODULE.COUNT` columns),
/// keyed by the report's spelling of each module (`None`: no such file).
fn csv_modules(file: &Path, dir: &Path, report_names: &BTreeMap<String, f64>) -> Option<BTreeMap<String, f64>> {
    let out = dir.join("csv-modules");
    let o = tbrw(&["export", "vtune-csv", file.to_str().unwrap(), "-o", out.to_str().unwrap(), "-f", "--stream", "0"]);
    if !o.status.success() {
        return None;
    }
    let listed = String::from_utf8(o.stdout).unwrap();
    let path = listed.lines().find(|l| l.contains("-modules-hostname-"))?;
    let rows = check_vtune_csv(Path::new(path));
    assert!(rows > 1, "{path}: a first row of zeros and the buckets");
    let text = std::fs::read_to_string(path).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let last: Vec<&str> = text.lines().last().unwrap().split(',').collect();
    // Column names are VTune's: characters other than letters, digits, `_`
    // and `.` written as `_`.
    let column_of = |name: &str| -> String {
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' { c } else { '_' }).collect()
    };
    let spelled: BTreeMap<String, String> = report_names.keys().map(|k| (column_of(k), k.clone())).collect();
    let mut per = BTreeMap::new();
    for (h, v) in header.iter().zip(&last).skip(1) {
        let column = h.strip_suffix(".COUNT").unwrap_or_else(|| panic!("{path}: {h} is a .COUNT column"));
        let name = spelled.get(column).cloned().unwrap_or_else(|| column.to_owned());
        per.insert(name, v.parse::<f64>().unwrap());
    }
    Some(per)
}

/// The module table's paths to names, so that pprof's mapping files (paths)
/// read as the module names the other outputs give.
fn module_names(file: &Path) -> BTreeMap<String, String> {
    let f = tbrw::Tb5File::open(file).unwrap();
    tbrw_query::stream::modules(&f)
        .unwrap()
        .iter()
        .filter_map(|m| Some((m.path.clone()?, m.name.clone().or_else(|| tbrw_query::names::module_name(m))?)))
        .collect()
}

/// Whether two totals agree: equal keys, and values equal (samples) or
/// within what rounding per stack or per sample can take (weights).
fn assert_same(what: &str, want: &BTreeMap<String, f64>, got: &BTreeMap<String, f64>, weight: &str) {
    let keys = |m: &BTreeMap<String, f64>| -> BTreeSet<String> {
        m.iter().filter(|(_, v)| **v != 0.0).map(|(k, _)| k.clone()).collect()
    };
    assert_eq!(keys(want), keys(got), "{what}: the same names\n want {want:?}\n got  {got:?}");
    for (k, w) in want {
        let g = got.get(k).copied().unwrap_or(0.0);
        let ok = match weight {
            "samples" => g == *w,
            // ns: stacks are rounded to whole ns, Firefox samples to whole µs
            // (with the remainder carried).
            _ => (g - w).abs() <= 1e-3 * w.abs() + 2000.0,
        };
        assert!(ok, "{what}: {k}: {g} where the report has {w}\n want {want:?}\n got  {got:?}");
    }
}

fn threads_as_strings(m: &BTreeMap<u32, f64>) -> BTreeMap<String, f64> {
    m.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn compare(case: &str, want: &Totals, got: &Totals, output: &str, weight: &str, samples: bool) {
    let what = |x: &str| format!("{case}, {output}, {x}");
    if samples {
        assert_same(&what("functions"), &want.functions, &got.functions, weight);
        assert_same(&what("modules"), &want.modules, &got.modules, weight);
    }
    assert_same(&what("threads"), &threads_as_strings(&want.threads), &threads_as_strings(&got.threads), weight);
    // Every thread the report names has that name here (where the output
    // shows the thread under a name of its own).
    for (tid, name) in &want.names {
        if got.names.contains_key(tid) || (output != "Firefox" && got.threads.contains_key(tid)) {
            assert_eq!(got.names.get(tid), Some(name), "{}: thread {tid}'s name", what("names"));
        }
    }
}

/// The filter sets of a sample recording: none, the top thread's pid and
/// tid, the top module, and the middle half of the time range.
fn filter_sets(file: &Path) -> Vec<Vec<String>> {
    let v: Value =
        serde_json::from_slice(&ok(&["report", file.to_str().unwrap(), "--by", "thread", "--json"])).unwrap();
    let top = &v["rows"][0]["key"];
    let pid = top["pid"].as_u64().unwrap();
    let tid = top["tid"].as_u64().unwrap();
    let v: Value =
        serde_json::from_slice(&ok(&["report", file.to_str().unwrap(), "--by", "module", "--json"])).unwrap();
    let module = v["rows"].as_array().unwrap().iter().find_map(|r| r["key"]["name"].as_str()).unwrap().to_owned();
    let f = tbrw::Tb5File::open(file).unwrap();
    let fields = tbrw_query::stream::SampleFields::of(&f, 0).unwrap();
    let data = f.stream(0).unwrap().data().unwrap().unwrap();
    let times: Vec<u64> = (0..data.len()).map(|k| fields.time(data.record(k).unwrap(), k)).collect();
    let (lo, hi) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
    let (a, b) = (lo + (hi - lo) / 4, lo + 3 * (hi - lo) / 4);
    let s = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        vec![],
        s(&["--pid", &pid.to_string()]),
        s(&["--tid", &tid.to_string()]),
        s(&["--module", &module]),
        s(&["--time", &format!("{a}..{b}")]),
    ]
}

fn cases(dir: &Path) -> Vec<Case> {
    let mtmc = dir.join("tasks.tb5");
    ok(&[
        "import",
        "mtmc",
        shipped("cli/tests/data/mtmc/mtmc_raw_140736934563840").to_str().unwrap(),
        "-o",
        mtmc.to_str().unwrap(),
    ]);
    let winidea = dir.join("winidea.tb5");
    ok(&[
        "import",
        "winidea",
        shipped("cli/tests/data/matrix/winidea_calls.txt").to_str().unwrap(),
        "-o",
        winidea.to_str().unwrap(),
    ]);
    vec![
        Case {
            name: "collector",
            file: shipped("cli/tests/data/matrix/collector.tb5"),
            weights: &["samples", "cputime"],
            samples: true,
        },
        Case { name: "perf -g", file: shipped("cli/tests/data/matrix/perf.tb5"), weights: &["samples"], samples: true },
        Case {
            name: "perf -g stack table",
            file: shipped("cli/tests/data/matrix/perf-stacks.tb5"),
            weights: &["samples"],
            samples: true,
        },
        Case {
            name: "shipped sample",
            file: shipped("examples/data/sample.tb5"),
            weights: &["samples"],
            samples: true,
        },
        Case { name: "MTMC", file: mtmc, weights: &["samples"], samples: false },
        Case { name: "winIDEA", file: winidea, weights: &["samples"], samples: false },
    ]
}

/// The Parquet dataset's samples by the function of their stack's
/// innermost row (with inline frames, the innermost inlined function).
/// `None`: DuckDB is missing; `Some(None)`: some samples have no
/// `stack_id` (a file whose chains are a stream of frames: Parquet has its
/// samples' own functions only, by symbol).
fn parquet_leaves(ds: &Path) -> Option<Option<BTreeMap<String, f64>>> {
    let table = |t: &str| format!("read_parquet('DS/**/{t}.parquet', hive_partitioning = true, union_by_name = true)");
    let unstacked =
        duckdb(ds, &format!("SELECT count(*) - count(stack_id) FROM {} WHERE stream = 0", table("samples")))?;
    if unstacked[0][0].as_u64() != Some(0) {
        return Some(None);
    }
    let unknown =
        "CASE WHEN m.name IS NULL THEN '[unknown]' WHEN m.name LIKE '[%]' THEN m.name ELSE '[' || m.name || ']' END";
    let q = format!(
        "SELECT coalesce(fn.name, {unknown}), count(*) FROM {} s \
         LEFT JOIN {} st ON s.stack_id = st.stack_id AND s.run = st.run \
         LEFT JOIN {} m ON s.module_id = m.module_id AND s.run = m.run \
         LEFT JOIN {} fn ON fn.function_id = (CASE WHEN s.stack_id IS NULL THEN s.function_id ELSE st.function_id END) \
         AND s.run = fn.run WHERE s.stream = 0 GROUP BY 1",
        table("samples"),
        table("stacks"),
        table("modules"),
        table("functions")
    );
    Some(Some(
        duckdb(ds, &q)?.into_iter().map(|r| (r[0].as_str().unwrap().to_owned(), r[1].as_f64().unwrap())).collect(),
    ))
}

/// `report --children --json`: function → children samples.
fn children(file: &Path) -> BTreeMap<String, u64> {
    let v: Value = serde_json::from_slice(&ok(&["report", file.to_str().unwrap(), "--children", "--json"])).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let name = |k: &Value| k["name"].as_str().or(k["unknown"].as_str()).unwrap().to_owned();
    rows.iter().map(|r| (name(&r["key"]), r["children"]["samples"].as_u64().unwrap())).collect()
}

/// With inline frames (the default), every stack output's leaf is the
/// innermost inlined function at the sampled address: the folded stacks,
/// pprof's first line of its first location, the Firefox sample's frame and
/// Parquet's innermost `stacks` row agree on it; and `report --children`
/// gives every function (inlined ones included) the samples of the folded
/// stacks it is in.
fn inline_leaves_agree(
    label: &str,
    file: &Path,
    work: &Path,
    ds: &Path,
    names: &BTreeMap<String, String>,
    duckdb_missing: &mut bool,
) {
    let label = format!("{label} (inline frames)");
    // glibc's libm has `do_sin` and `do_cos` inlined into `__sincos_fma`,
    // which its debug files (libc6-dbg, /usr/lib/debug) say. (Folded
    // without them first: `function.folded` is read below with them.)
    let plain = folded(file, work, "samples", &[], false).functions;
    let fo = folded(file, work, "samples", &[], true).functions;
    // (Recorded here: the shipped sample's libm is another machine's.)
    let here = label.starts_with("collector") || label.starts_with("perf");
    if here && plain.contains_key("__sincos_fma") && Path::new("/usr/lib/debug/.build-id").is_dir() {
        assert!(fo.contains_key("do_sin") && fo.contains_key("do_cos"), "{label}: inlined leaves in {fo:?}");
    }
    let pp = pprof(file, work, "samples", &[], names, true).functions;
    assert_same(&format!("{label}, pprof leaves"), &fo, &pp, "samples");
    let ff = firefox(file, work, "samples", &[], true, true).functions;
    assert_same(&format!("{label}, Firefox leaves"), &fo, &ff, "samples");
    match parquet_leaves(ds) {
        Some(Some(pq)) => assert_same(&format!("{label}, Parquet leaves"), &fo, &pq, "samples"),
        Some(None) => {}
        None => *duckdb_missing = true,
    }
    let lines = std::fs::read_to_string(work.join("function.folded")).unwrap();
    let mut inclusive: BTreeMap<String, u64> = BTreeMap::new();
    for line in lines.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let frames: BTreeSet<&str> = stack.split(';').collect();
        for f in frames {
            *inclusive.entry(f.to_owned()).or_default() += n.parse::<u64>().unwrap();
        }
    }
    // `--children` needs call stacks (the collector's recording has none).
    let f = tbrw::Tb5File::open(file).unwrap();
    if tbrw_query::stacks::has_stacks(&f, 0).unwrap() {
        assert_eq!(children(file), inclusive, "{label}: report --children against the folded stacks");
    }
}

#[test]
fn every_output_gives_the_reports_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut duckdb_missing = false;
    for case in cases(dir.path()) {
        let work = dir.path().join(case.name.replace(' ', "_"));
        std::fs::create_dir_all(&work).unwrap();
        let names = module_names(&case.file);
        // One dataset per recording; its queries apply the filters.
        let ds = work.join("ds");
        ok(&["export", "parquet", case.file.to_str().unwrap(), "-o", ds.to_str().unwrap(), "--functions"]);
        let sets = if case.samples { filter_sets(&case.file) } else { vec![vec![]] };
        for weight in case.weights {
            for filters in &sets {
                let label = format!("{} --weight {weight} {}", case.name, filters.join(" "));
                let want = report(&case.file, weight, filters, case.samples);
                assert!(!want.threads.is_empty(), "{label}: the report has rows");
                if case.samples {
                    let fo = folded(&case.file, &work, weight, filters, false);
                    compare(&label, &want, &fo, "folded", weight, true);
                    let pp = pprof(&case.file, &work, weight, filters, &names, false);
                    compare(&label, &want, &pp, "pprof", weight, true);
                }
                // Firefox weighs by CPU time per thread only.
                let ff = firefox(&case.file, &work, weight, filters, case.samples, false);
                let ff_samples = case.samples && *weight == "samples";
                compare(&label, &want, &ff, "Firefox", weight, ff_samples || !case.samples);
                match parquet(&ds, weight, filters, case.samples) {
                    Some(pq) => compare(&label, &want, &pq, "Parquet", weight, case.samples),
                    None => duckdb_missing = true,
                }
                if filters.is_empty() && *weight == "samples" && case.samples {
                    inline_leaves_agree(&label, &case.file, &work, &ds, &names, &mut duckdb_missing);
                }
                if filters.is_empty() && *weight == "samples" {
                    // Sample recordings count their samples per module; the
                    // task and call imports have no address to count by.
                    match csv_modules(&case.file, &work, &want.modules) {
                        Some(csv) => assert_same(&format!("{label}, CSV, modules"), &want.modules, &csv, weight),
                        None => assert!(!case.samples, "{label}: a sample recording's CSV counts modules"),
                    }
                    if let Some(csv) = csv_threads(&case.file, &work) {
                        assert_same(
                            &format!("{label}, CSV, threads"),
                            &threads_as_strings(&want.threads),
                            &threads_as_strings(&csv),
                            weight,
                        );
                    }
                }
            }
        }
    }
    if duckdb_missing {
        eprintln!(
            "note: the Parquet column of the matrix was skipped: python3 cannot import duckdb (pip install duckdb)"
        );
    }
}
