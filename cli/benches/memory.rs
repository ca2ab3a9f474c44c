//! Memory of each command against its rule (issue #31, docs/EXPORT.md
//! "Memory"): every command of the docs' table run as a child of this
//! bench on two sizes of the same kind of input, its peak anonymous memory
//! (`RssAnon`, polled every 2 ms: the heap) and peak resident memory
//! (`VmHWM`: the heap and the pages of the mapped TB5 file it touched), the slope in bytes per record between the two sizes, and
//! whether it fits the rule the docs give: heap ≤ X MiB (+ W MiB per part
//! of a report's pass) + Y B per record + Z B per <thing> at both sizes,
//! and the growth from the small size to the large one no more than the
//! rule allows plus 2 MiB (the slope check: it fails when memory grows with
//! the records where the rule says it should not; terms that fill, buffers
//! and per-pixel counts the code bounds, may grow by their whole size). Then the `--time` seek: `report --by address --time
//! 40%..55%` against `report --by address` of the whole file.
//!
//! ```sh
//! TBRW_BENCH_DIR=/dev/shm/membench cargo bench -p tbrw-cli --bench memory
//! ```
//!
//! The inputs, all made here (in `$TBRW_BENCH_DIR`, default
//! `target/memory-bench`; delete it after):
//!
//! - **sampler**: a sampler profile as `examples/make_view_bench.rs` writes
//!   it (4 threads a sample, 64 modules, 32,768 distinct addresses),
//!   `TBRW_MEMORY_SAMPLES=A,B` samples (default 1000000,2000000: 4 M and 8 M
//!   records: the reports' batches fill up at 4 M), imported and bound; the reports and sample exports read it.
//! - **perf**: `perf record -F 20000 -g` of `scripts/stacks-bench/busy.c`
//!   (one thread, 64 call-chain patterns) for `TBRW_MEMORY_SECONDS=A,B`
//!   seconds (default 8,16), imported, bound, and `annotate --function
//!   alpha` on it (the program is built with `-g`, so annotate
//!   disassembles it and reads its lines). Skipped with a note where `cc`
//!   or `perf record` fail.
//! - **record**: `tbrw record -F 5000 -g` of the same program for the same
//!   durations (the collector; skipped with a note where it cannot trace).
//! - **mtmc**: an MTMC task log of `TBRW_MEMORY_TASKS=A,B` tasks (default
//!   250000,1000000; 64 threads, 16 cores, 8 counters), imported; `export
//!   timeline` of the import.
//! - **remote**: a file from another machine
//!   (`support/scale_inputs.rs`: 10,000 modules of 100 processes, none of
//!   their files here) of `TBRW_MEMORY_REMOTE=A,B` samples (default
//!   1000000,4000000) at random addresses (so about as many distinct
//!   addresses as samples), bound; the reports and viewer exports on it.
//!   Its frames where functions are asked for are its modules (10,000).
//! - **deep**: `TBRW_MEMORY_DEEP=A,B` samples (default 160,640) on
//!   distinct stacks 65,535 frames deep sharing their callers, in a module
//!   whose file is not here (issue #38's file has 647); `report --children`,
//!   pprof, the default flame graph and the folded flame graph by address
//!   (its text is samples × depth: 100 and 420 MB).
//! - **winidea**: a winIDEA Text1 export of `TBRW_MEMORY_EVENTS=A,B`
//!   TIMELINE events (default 1000000,2000000; nested calls in 4 contexts,
//!   128 functions, 8 variables; its records here are the events) and the same events as a version 1.1
//!   `.BIN` beside a Text1 file without a TIMELINE, each imported; `export
//!   timeline` of the `.BIN` import.
//!
//! `TBRW_MEMORY_ONLY=sampler,perf,...` runs those inputs only.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use tbrw_elf_profile::{write_header, write_sample, Header, Magic, Sample, ThreadSample, VmMap};

mod support;
use support::inputs::{busy_program, mtmc_log, perf_record_busy, winidea_inputs};
use support::scale_inputs;
use support::{timed, Took};

/// A sampler profile of `samples` samples of 4 threads (make_view_bench's).
fn profile(path: &Path, samples: u64) {
    let maps: Vec<VmMap> = (0..64u64)
        .map(|i| VmMap { address: 0x7f00_0000_0000 + i * 0x10_0000, size: 0x8_0000, label: format!("lib{i}.so") })
        .collect();
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    write_header(&mut w, &Header { magic: Magic::Current, wall_time: 1, cpu_time: 1, samples, maps }).unwrap();
    let mut s = Sample { value: 0.0, threads: vec![ThreadSample { tid: 0, pc: 0, cputime: 0 }; 4] };
    for i in 0..samples {
        s.value = (i % 1000) as f64 * 0.001;
        for (t, th) in s.threads.iter_mut().enumerate() {
            th.tid = 100 + t as u32;
            let k = (i * 7919 + t as u64 * 104_729) % (64 * 512);
            th.pc = 0x7f00_0000_0000 + (k / 512) * 0x10_0000 + (k % 512) * 64;
            th.cputime = i * 1000;
        }
        write_sample(&mut w, &s).unwrap();
    }
    w.flush().unwrap();
}

/// `perf record -F 20000 -g` of one busy thread for `seconds`, or why not.
fn perf_data(dir: &Path, seconds: u64) -> Result<PathBuf, String> {
    let data = dir.join("busy.perf.data");
    if !data.exists() {
        let prog = busy_program(dir.parent().unwrap())?;
        perf_record_busy(&prog, seconds as f64, 1, &data)?;
    }
    Ok(data)
}

/// The kinds of input, each made at two sizes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Input {
    Sampler,
    Perf,
    Record,
    Mtmc,
    WinIdea,
    Remote,
    Deep,
}

impl Input {
    const ALL: [Input; 7] =
        [Input::Sampler, Input::Perf, Input::Record, Input::Mtmc, Input::WinIdea, Input::Remote, Input::Deep];

    fn name(self) -> &'static str {
        match self {
            Input::Sampler => "sampler",
            Input::Perf => "perf",
            Input::Record => "record",
            Input::Mtmc => "mtmc",
            Input::WinIdea => "winidea",
            Input::Remote => "remote",
            Input::Deep => "deep",
        }
    }

    /// What the rules' per-frame term counts for this input.
    fn thing(self) -> &'static str {
        match self {
            Input::Sampler => "distinct frame",
            Input::Perf | Input::Record | Input::Deep => "stack node",
            Input::Mtmc => "thread",
            Input::WinIdea => "context",
            Input::Remote => "module frame",
        }
    }

    /// The file whose stream 0 counts the records (and its stack table
    /// the stack nodes).
    fn counted(self) -> &'static str {
        match self {
            Input::Sampler => "bind.tb5",
            Input::Perf => "perf-bound.tb5",
            Input::Record => "record.tb5",
            Input::Mtmc => "mtmc.tb5",
            Input::WinIdea => "winidea-bin.tb5",
            Input::Remote => "remote.tb5",
            Input::Deep => "deep.tb5",
        }
    }

    fn sizes(self) -> [u64; 2] {
        let (var, default) = match self {
            Input::Sampler => ("TBRW_MEMORY_SAMPLES", [1_000_000, 2_000_000]),
            Input::Perf | Input::Record => ("TBRW_MEMORY_SECONDS", [8, 16]),
            Input::Mtmc => ("TBRW_MEMORY_TASKS", [250_000, 1_000_000]),
            Input::WinIdea => ("TBRW_MEMORY_EVENTS", [1_000_000, 2_000_000]),
            Input::Remote => ("TBRW_MEMORY_REMOTE", [1_000_000, 4_000_000]),
            Input::Deep => ("TBRW_MEMORY_DEEP", [160, 640]),
        };
        std::env::var(var)
            .ok()
            .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect::<Vec<u64>>())
            .and_then(|v| <[u64; 2]>::try_from(v).ok())
            .unwrap_or(default)
    }

    /// Makes this input of `size` in `dir`, or says why it cannot.
    fn make(self, dir: &Path, size: u64) -> Result<(), String> {
        match self {
            Input::Sampler if !dir.join("profile.bin").exists() => profile(&dir.join("profile.bin"), size),
            Input::Perf => {
                perf_data(dir, size)?;
            }
            Input::Record => {
                busy_program(dir.parent().unwrap())?;
            }
            Input::Mtmc if !dir.join("tasks.log").exists() => mtmc_log(&dir.join("tasks.log"), size),
            Input::WinIdea if !dir.join("header.txt.BIN").exists() => winidea_inputs(dir, size as usize),
            Input::Remote if !dir.join("remote.tb5").exists() => {
                scale_inputs::other_machine(&dir.join("remote.tb5"), size, None).map_err(|e| e.to_string())?;
                let bind = Command::new(env!("CARGO_BIN_EXE_tbrw")).arg("bind").arg(dir.join("remote.tb5")).status();
                if !bind.is_ok_and(|s| s.success()) {
                    return Err("tbrw bind of the file from another machine failed".into());
                }
            }
            Input::Deep if !dir.join("deep.tb5").exists() => {
                scale_inputs::deep_stacks(&dir.join("deep.tb5"), size, 65_535, "/opt/remote/deep")
                    .map_err(|e| e.to_string())?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// A command's rule: heap ≤ `mib` MiB + `per_part` MiB per part of the
/// pass (the report's threads: min(cores, 8)) + `per_record` B per
/// record + `per_thing` B per distinct frame ([`Input::thing`]: a stack
/// node, a module's one frame, a thread...) + `per_address` B per distinct
/// sampled address (docs/EXPORT.md "Memory").
///
/// `fills`: the per-part and per-thing terms are buffers and maps that fill
/// as the records come, up to a size the code bounds (the report's sort
/// batches, the timeline's name counts per pixel column), so the slope
/// check lets them grow by up to their whole size between the sizes.
struct Rule {
    name: &'static str,
    input: Input,
    mib: f64,
    per_part: f64,
    per_record: f64,
    per_thing: f64,
    per_address: f64,
    fills: bool,
}

const fn rule(name: &'static str, input: Input, mib: f64, per_record: f64, per_thing: f64) -> Rule {
    Rule { name, input, mib, per_part: 0.0, per_record, per_thing, per_address: 0.0, fills: false }
}

/// A rule with a term per distinct sampled address.
const fn per_address(name: &'static str, input: Input, mib: f64, per_thing: f64, per_address: f64) -> Rule {
    Rule { name, input, mib, per_part: 0.0, per_record: 0.0, per_thing, per_address, fills: false }
}

/// A rule whose per-part, per-thing and per-address terms fill with the records.
const fn filling(name: &'static str, input: Input, mib: f64, per_part: f64, per_thing: f64, per_address: f64) -> Rule {
    Rule { name, input, mib, per_part, per_record: 0.0, per_thing, per_address, fills: true }
}

/// The rules, in the order they run (an input's import first: the
/// commands after it read its output).
const RULES: &[Rule] = &[
    rule("import sampler", Input::Sampler, 16.0, 0.0, 0.0),
    rule("bind", Input::Sampler, 24.0, PACKED_BIND, 0.0),
    rule("report --by module", Input::Sampler, 16.0, 0.0, 0.0),
    filling("report --by address", Input::Sampler, 16.0, REPORT_PART, 0.0, ADDRESS),
    filling("report --time 40%..55%", Input::Sampler, 16.0, REPORT_PART, 0.0, ADDRESS),
    rule("export flamegraph", Input::Sampler, 32.0, 0.0, 256.0),
    rule("export pprof", Input::Sampler, 64.0, 0.0, 512.0),
    rule("export firefox", Input::Sampler, 64.0, 32.0, 256.0),
    rule("export parquet", Input::Sampler, 160.0, 0.0, 256.0),
    rule("export vtune-csv", Input::Sampler, 16.0, 0.0, 0.0),
    rule("export sampler", Input::Sampler, 16.0, 0.0, 0.0),
    rule("import perf", Input::Perf, 16.0, 0.0, 64.0),
    rule("annotate (perf)", Input::Perf, 64.0, 0.0, 64.0),
    rule("record", Input::Record, 16.0, 0.0, 64.0),
    rule("import mtmc", Input::Mtmc, 16.0, 0.0, 1024.0),
    rule("export timeline (mtmc)", Input::Mtmc, 16.0, 0.0, LANE),
    rule("import winidea (text)", Input::WinIdea, 16.0, 96.0, 0.0),
    rule("import winidea (.BIN)", Input::WinIdea, 16.0, 0.0, 0.0),
    filling("export timeline (winidea)", Input::WinIdea, 16.0, 0.0, LANE + NAMES_128, 0.0),
    rule("report --by module (remote)", Input::Remote, 16.0, 0.0, 0.0),
    rule("export flamegraph --by process,module (remote)", Input::Remote, 32.0, 0.0, 256.0),
    rule("export flamegraph (remote)", Input::Remote, 32.0, 0.0, MODULE_NAMED),
    rule("report --by function (remote)", Input::Remote, 16.0, 0.0, MODULE_NAMED),
    rule("export firefox (remote)", Input::Remote, 64.0, 24.0, MODULE_NAMED),
    per_address("export pprof (remote)", Input::Remote, 16.0, MODULE_NAMED, PPROF_ADDRESS),
    filling("report --by address (remote)", Input::Remote, 16.0, REPORT_PART, 0.0, ADDRESS),
    rule("report --children (deep)", Input::Deep, 16.0, 0.0, 64.0),
    filling("export pprof (deep)", Input::Deep, 16.0, GZIP_WORKER, 128.0, 0.0),
    rule("export flamegraph (deep)", Input::Deep, 32.0, 0.0, 256.0),
    rule("export flamegraph --by address --folded (deep)", Input::Deep, 32.0, 0.0, 256.0),
];

/// What `tbrw bind` holds per record: every record's bind packed as the
/// file stores it, 1 to 6 B (the widths the process, thread and module
/// tables need: 2 B on the bench's input), kept until the close writes
/// Intel's 32-byte bind entries from them (`tbrw/src/bind/compute.rs`).
const PACKED_BIND: f64 = 6.0;

/// The pipelined gzip of pprof and Firefox (`tbrw-export` `gzip.rs`), per
/// worker: two blocks in flight of 1 MiB and their deflated bytes, which
/// fill once the output passes a few MiB. Its workers are min(cores, 4),
/// the report's parts min(cores, 8): the same on the bench's machine, so
/// the per-part term of a [`filling`] rule stands for them.
const GZIP_WORKER: f64 = 4.0;

/// What a report by address holds per distinct address (`tbrw-query`
/// `report/raw.rs`, `report/addresses.rs`): its 24-byte count, twice while
/// the parts' sorted lists are merged, and the merged list and its run of
/// a batch: 72 B.
const ADDRESS: f64 = 72.0;

/// What pprof holds per distinct address: its frame in the walk's tree
/// (16 B, and 5 to 10 B of index), its outermost node (8 B, and 4 B to find
/// it from its frame), its totals with its label set's number (32 B per
/// node), each `Vec` up to twice its length as it grows: 65 to 130 B.
const PPROF_ADDRESS: f64 = 120.0;

/// What a module whose file is not here costs once it is named: the
/// symbolizer's result for it (its label, the paths tried), its warning's
/// text, its entries in the tables of modules and files: about 1.5 KiB.
const MODULE_NAMED: f64 = 1536.0;

/// A report part's sort buffers (`tbrw-query` `report/raw.rs`): a batch of
/// 2^18 keys (`RawKey`, 40 B: 10 MiB) and its packed copy (16 B a key:
/// 4 MiB). Its runs and merged counts are 48 B per distinct key, up to
/// three lists at once: the rule's 144 B per distinct address.
const REPORT_PART: f64 = 14.0;

/// A timeline lane's columns: 1,200 pixels (the default width) of 256 B
/// each (`Column`: two counts and a map of names, 64 B, the map's table
/// for a name or two, about 80 B, and its entry in the lane's `BTreeMap`).
const LANE: f64 = 1200.0 * 256.0;

/// What a lane's columns' maps of names grow to when every column meets
/// all 128 functions of the winIDEA input: a hash table of 256 buckets
/// (128 names are over 7/8 of 128) of 16 B and a control byte each, 4,368
/// B, in each of 1,200 columns.
const NAMES_128: f64 = 1200.0 * (256.0 * 17.0 + 16.0);

/// The parts a report's pass is split over (`tbrw::bind::bind_threads`).
fn parts() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8)) as f64
}

/// How much more than the rule's growth the slope check allows between the
/// two sizes: the 2 ms polling and the allocator's rounding.
const SLACK_MIB: f64 = 2.0;

fn run(tbrw: &str, d: &Path, r: &Rule, seconds: u64) -> Took {
    let out = |x: &str| d.join(x);
    let mut c = Command::new(tbrw);
    let bound = out("bind.tb5");
    match r.name {
        "import sampler" => {
            c.args(["import", "sampler", "-f"]).arg(out("profile.bin")).arg("-o").arg(out("import.tb5"))
        }
        "bind" => {
            std::fs::copy(out("import.tb5"), &bound).unwrap();
            c.arg("bind").arg(&bound)
        }
        "report --by module" => c.arg("report").arg(&bound).args(["--by", "module"]),
        "report --by address" => c.arg("report").arg(&bound).args(["--by", "address"]),
        "report --time 40%..55%" => c.arg("report").arg(&bound).args(["--by", "address", "--time", "40%..55%"]),
        "export flamegraph" => c.args(["export", "flamegraph", "-f"]).arg(&bound).arg("-o").arg(out("f.svg")),
        "export pprof" => c.args(["export", "pprof", "-f"]).arg(&bound).arg("-o").arg(out("p.pb.gz")),
        "export firefox" => c.args(["export", "firefox", "-f"]).arg(&bound).arg("-o").arg(out("ff.json.gz")),
        "export parquet" => c.args(["export", "parquet", "-f"]).arg(&bound).arg("-o").arg(out("ds")),
        "export vtune-csv" => c
            .args(["export", "vtune-csv", "-f", "--hostname", "bench", "--clock", "monotonic-raw"])
            .arg(&bound)
            .arg("-o")
            .arg(out("csv")),
        "export sampler" => c.args(["export", "sampler", "-f"]).arg(&bound).arg("-o").arg(out("back.bin")),
        "import perf" => c.args(["import", "perf", "-f"]).arg(out("busy.perf.data")).arg("-o").arg(out("perf.tb5")),
        "annotate (perf)" => {
            std::fs::copy(out("perf.tb5"), out("perf-bound.tb5")).unwrap();
            let bind = Command::new(tbrw).arg("bind").arg(out("perf-bound.tb5")).status().unwrap();
            assert!(bind.success(), "tbrw bind of the perf import");
            c.arg("annotate").arg(out("perf-bound.tb5")).args(["--function", "alpha", "--asm"])
        }
        "record" => c
            .args(["record", "-f", "-F", "5000", "-g", "-o"])
            .arg(out("record.tb5"))
            .arg("--")
            .arg(d.parent().unwrap().join("busy"))
            .arg(seconds.to_string())
            .arg("1"),
        "import mtmc" => c.args(["import", "mtmc", "-f"]).arg(out("tasks.log")).arg("-o").arg(out("mtmc.tb5")),
        "export timeline (mtmc)" => {
            c.args(["export", "timeline", "-f"]).arg(out("mtmc.tb5")).arg("-o").arg(out("mtmc.svg"))
        }
        "import winidea (text)" => {
            c.args(["import", "winidea", "-f"]).arg(out("export.txt")).arg("-o").arg(out("winidea-text.tb5"))
        }
        "import winidea (.BIN)" => {
            c.args(["import", "winidea", "-f"]).arg(out("header.txt")).arg("-o").arg(out("winidea-bin.tb5"))
        }
        "export timeline (winidea)" => {
            c.args(["export", "timeline", "-f"]).arg(out("winidea-bin.tb5")).arg("-o").arg(out("winidea.svg"))
        }
        "report --by module (remote)" => c.arg("report").arg(out("remote.tb5")).args(["--by", "module"]),
        "export flamegraph --by process,module (remote)" => c
            .args(["export", "flamegraph", "-f", "--folded", "--by", "process,module"])
            .arg(out("remote.tb5"))
            .arg("-o")
            .arg(out("remote-modules.folded")),
        "export flamegraph (remote)" => {
            c.args(["export", "flamegraph", "-f"]).arg(out("remote.tb5")).arg("-o").arg(out("remote.svg"))
        }
        "report --by function (remote)" => c.arg("report").arg(out("remote.tb5")).args(["--by", "function"]),
        "export firefox (remote)" => {
            c.args(["export", "firefox", "-f"]).arg(out("remote.tb5")).arg("-o").arg(out("remote.json.gz"))
        }
        "export pprof (remote)" => {
            c.args(["export", "pprof", "-f"]).arg(out("remote.tb5")).arg("-o").arg(out("remote.pb.gz"))
        }
        "report --by address (remote)" => c.arg("report").arg(out("remote.tb5")).args(["--by", "address"]),
        "report --children (deep)" => c.arg("report").arg(out("deep.tb5")).arg("--children"),
        "export pprof (deep)" => {
            c.args(["export", "pprof", "-f"]).arg(out("deep.tb5")).arg("-o").arg(out("deep.pb.gz"))
        }
        "export flamegraph (deep)" => {
            c.args(["export", "flamegraph", "-f"]).arg(out("deep.tb5")).arg("-o").arg(out("deep.svg"))
        }
        "export flamegraph --by address --folded (deep)" => c
            .args(["export", "flamegraph", "-f", "--folded", "--by", "address"])
            .arg(out("deep.tb5"))
            .arg("-o")
            .arg(out("deep.folded")),
        _ => unreachable!("{}", r.name),
    };
    timed(&mut c)
}

/// Stream 0's records and stack nodes in `path`.
fn count(path: &Path) -> (u64, u64) {
    let f = tbrw::Tb5File::open(path).unwrap();
    let s = f.stream(0).unwrap();
    let records = s.data().unwrap().map_or(0, |d| d.len());
    let nodes = s.stack_table().unwrap().map_or(0, |t| t.len());
    (records, nodes)
}

/// [`distinct_addresses`] of `path`, counted by a child (this bench run
/// again): the commands' peaks are their rusage's, which counts the pages
/// of the process that spawns them (this one) when it holds more.
fn distinct_addresses_apart(path: &Path) -> u64 {
    let out = Command::new(std::env::current_exe().unwrap()).env(DISTINCT, path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// The variable that runs this bench as [`distinct_addresses_apart`]'s child.
const DISTINCT: &str = "TBRW_MEMORY_DISTINCT_OF";

/// The distinct (pid, address) pairs of stream 0's records of `path`:
/// its distinct sampled addresses.
fn distinct_addresses(path: &Path) -> u64 {
    let f = tbrw::Tb5File::open(path).unwrap();
    let fields = tbrw_query::stream::SampleFields::of(&f, 0).unwrap();
    let Some(data) = f.stream(0).unwrap().data().unwrap() else { return 0 };
    let mut keys: Vec<(u32, u64)> = data.records().map(|r| (fields.pid(r).unwrap_or(0), fields.pc(r))).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len() as u64
}

/// Per input, per size: (records, things, distinct addresses), once its
/// commands ran.
fn measured(input: Input, d: &Path) -> (u64, u64, u64) {
    let (mut records, nodes) = count(&d.join(input.counted()));
    if input == Input::WinIdea {
        // The TIMELINE events, which the text import holds (the TB5
        // records are the calls).
        records = std::fs::read_to_string(d.join("events")).unwrap().parse().unwrap();
    }
    let things = match input {
        Input::Sampler => 64 * 512,
        Input::Perf | Input::Record | Input::Deep => nodes,
        Input::Mtmc => 64,
        Input::WinIdea => 4,
        Input::Remote => scale_inputs::PROCESSES * scale_inputs::LIBRARIES,
    };
    let addresses = match input {
        Input::Sampler => 64 * 512,
        Input::Remote | Input::Deep => distinct_addresses_apart(&d.join(input.counted())),
        _ => 0,
    };
    (records, things, addresses)
}

fn main() {
    if let Some(path) = std::env::var_os(DISTINCT) {
        println!("{}", distinct_addresses(Path::new(&path)));
        return;
    }
    let dir = std::env::var_os("TBRW_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/memory-bench"));
    let only: Option<Vec<String>> =
        std::env::var("TBRW_MEMORY_ONLY").ok().map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let tbrw = env!("CARGO_BIN_EXE_tbrw");
    let mut lines = Vec::new();
    let mut seek = Vec::new();
    println!(
        "{:<26} {:>8} {:>8} {:>10} {:>8} {:>8} {:>9} {:>8} {:>8}  rule (heap)                                 fits",
        "command", "records A", "B", "B/record", "heap A", "heap B", "thing", "RSS A", "RSS B"
    );
    for input in Input::ALL {
        if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == input.name())) {
            continue;
        }
        let sizes = input.sizes();
        let rules: Vec<&Rule> = RULES.iter().filter(|r| r.input == input).collect();
        let mut took: Vec<Vec<Took>> = Vec::new();
        let mut counts = Vec::new();
        let mut skipped = None;
        for &n in &sizes {
            let d = dir.join(input.name()).join(n.to_string());
            std::fs::create_dir_all(&d).unwrap();
            if let Err(why) = input.make(&d, n) {
                skipped = Some(why);
                break;
            }
            let row: Vec<Took> = rules.iter().map(|r| run(tbrw, &d, r, n)).collect();
            counts.push(measured(input, &d));
            took.push(row);
        }
        if let Some(why) = skipped {
            println!("note: {} rows skipped: {why}", input.name());
            continue;
        }
        let ((r0, t0, a0), (r1, t1, a1)) = (counts[0], counts[1]);
        println!(
            "# {}: {r0} and {r1} records, {t0} and {t1} {}s, {a0} and {a1} distinct addresses ({} {} and {})",
            input.name(),
            input.thing(),
            match input {
                Input::Sampler | Input::Remote | Input::Deep => "samples",
                Input::Perf | Input::Record => "seconds",
                Input::Mtmc => "tasks",
                Input::WinIdea => "events",
            },
            sizes[0],
            sizes[1]
        );
        for (i, r) in rules.iter().enumerate() {
            let (a, b) = (&took[0][i], &took[1][i]);
            let (ha, hb) = (a.anon_kib as f64 * 1024.0, b.anon_kib as f64 * 1024.0);
            let slope = (hb - ha) / (r1 as f64 - r0 as f64);
            let parts = parts();
            let limit = |recs: u64, things: u64, addresses: u64| {
                (r.mib + r.per_part * parts) * 1048576.0
                    + r.per_record * recs as f64
                    + r.per_thing * things as f64
                    + r.per_address * addresses as f64
            };
            // Buffers that fill may grow by their whole size; the rest by
            // the rule's terms for the records, things and addresses added.
            let filled = match r.fills {
                true => r.per_part * parts * 1048576.0 + r.per_thing * t1 as f64 + r.per_address * a1 as f64,
                false => 0.0,
            };
            let growth = r.per_record * (r1 as f64 - r0 as f64)
                + r.per_thing * (t1 as f64 - t0 as f64)
                + r.per_address * (a1 as f64 - a0 as f64)
                + filled;
            let grows_ok = hb - ha <= growth.max(0.0) + SLACK_MIB * 1048576.0;
            let fits = ha <= limit(r0, t0, a0) && hb <= limit(r1, t1, a1) && grows_ok;
            let line = format!(
                "{:<26} {:>9} {:>8} {:>10.2} {:>4} MiB {:>4} MiB {:>9} {:>4} MiB {:>4} MiB  ≤ {:>3} MiB + {:>3} B/record + {:>4} B/{:<16}{}{} {}",
                r.name,
                r0,
                r1,
                slope,
                a.anon_kib / 1024,
                b.anon_kib / 1024,
                t1,
                a.maxrss_kib / 1024,
                b.maxrss_kib / 1024,
                r.mib,
                r.per_record,
                r.per_thing,
                input.thing(),
                if r.per_address > 0.0 { format!(" + {} B/address", r.per_address) } else { String::new() },
                if r.per_part > 0.0 { format!(" + {} MiB x {parts} parts", r.per_part) } else { String::new() },
                if fits {
                    "yes"
                } else if grows_ok {
                    "NO (over the rule)"
                } else {
                    "NO (grows with the records)"
                }
            );
            println!("{line}");
            lines.push(line);
        }
        if input == Input::Sampler {
            let cut = rules.iter().position(|r| r.name == "report --time 40%..55%").unwrap();
            let whole = rules.iter().position(|r| r.name == "report --by address").unwrap();
            for (k, &(n, _, _)) in counts.iter().enumerate() {
                let (c, w) = (&took[k][cut], &took[k][whole]);
                seek.push(format!(
                    "seek, {n} records: report --by address --time 40%..55% {} MiB RSS, {:.3} s; the whole file {} MiB RSS, {:.3} s: {:.2}x the RSS, {:.2}x the time",
                    c.maxrss_kib / 1024,
                    c.wall.as_secs_f64(),
                    w.maxrss_kib / 1024,
                    w.wall.as_secs_f64(),
                    c.maxrss_kib as f64 / w.maxrss_kib.max(1) as f64,
                    c.wall.as_secs_f64() / w.wall.as_secs_f64().max(1e-6)
                ));
            }
        }
    }
    for s in seek {
        println!("{s}");
    }
}
