//! Memory of each command against its rule (issue #31, docs/EXPORT.md
//! "Memory"): every command run as a child of this bench on two sizes of
//! the same recording, its peak anonymous memory (`RssAnon`, polled every
//! 20 ms: the heap) and peak resident memory (`ru_maxrss`: the heap and the
//! pages of the mapped TB5 file it touched), the slope in bytes per record
//! between the two sizes, and whether both sizes fit the rule the docs
//! give. Then the `--time` seek: `report --by address --time 40%..55%`
//! (15 % of the recording) against `report --by address` of the whole
//! file (both read every record's address), resident memory and wall time.
//!
//! ```sh
//! TBRW_BENCH_DIR=/dev/shm/memory cargo bench -p tbrw-cli --bench memory
//! ```
//!
//! The recording is a sampler profile as `examples/make_view_bench.rs`
//! writes it (4 threads a sample, 64 modules, 32,768 distinct addresses,
//! nanosecond time stamps in order), `TBRW_MEMORY_SAMPLES=A,B` samples
//! (default 500000,2000000: 2 M and 8 M records), imported and bound.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use tbrw_import::elf_profile::{write_header, write_sample, Header, Magic, Sample, ThreadSample, VmMap};

mod support;
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

/// A command's rule: heap ≤ `mib` MiB + `per_record` bytes per record
/// (the docs' table; distinct stacks, functions and modules are fixed
/// here: 32,768 addresses in 64 modules).
struct Rule {
    name: &'static str,
    mib: f64,
    per_record: f64,
}

const RULES: &[Rule] = &[
    Rule { name: "import sampler", mib: 16.0, per_record: 0.0 },
    Rule { name: "bind", mib: 24.0, per_record: 0.0 },
    Rule { name: "report --by module", mib: 16.0, per_record: 0.0 },
    Rule { name: "report --by address", mib: 64.0, per_record: 0.0 },
    Rule { name: "report --time 40%..55%", mib: 64.0, per_record: 0.0 },
    Rule { name: "export flamegraph", mib: 32.0, per_record: 0.0 },
    Rule { name: "export pprof", mib: 64.0, per_record: 0.0 },
    Rule { name: "export firefox", mib: 64.0, per_record: 48.0 },
    Rule { name: "export parquet", mib: 160.0, per_record: 0.0 },
    Rule { name: "export vtune-csv", mib: 16.0, per_record: 0.0 },
    Rule { name: "export sampler", mib: 16.0, per_record: 0.0 },
];

fn run(tbrw: &str, dir: &Path, name: &str, bound: &Path, prof: &Path) -> Took {
    let out = |x: &str| dir.join(x);
    let mut c = Command::new(tbrw);
    match name {
        "import sampler" => c.args(["import", "sampler", "-f"]).arg(prof).arg("-o").arg(out("import.tb5")),
        "bind" => {
            std::fs::copy(out("import.tb5"), out("bind.tb5")).unwrap();
            c.arg("bind").arg(out("bind.tb5"))
        }
        "report --by module" => c.arg("report").arg(bound).args(["--by", "module"]),
        "report --by address" => c.arg("report").arg(bound).args(["--by", "address"]),
        "report --time 40%..55%" => c.arg("report").arg(bound).args(["--by", "address", "--time", "40%..55%"]),
        "export flamegraph" => c.args(["export", "flamegraph", "-f"]).arg(bound).arg("-o").arg(out("f.svg")),
        "export pprof" => c.args(["export", "pprof", "-f"]).arg(bound).arg("-o").arg(out("p.pb.gz")),
        "export firefox" => c.args(["export", "firefox", "-f"]).arg(bound).arg("-o").arg(out("ff.json.gz")),
        "export parquet" => c.args(["export", "parquet", "-f"]).arg(bound).arg("-o").arg(out("ds")),
        "export vtune-csv" => c
            .args(["export", "vtune-csv", "-f", "--hostname", "bench", "--clock", "monotonic-raw"])
            .arg(bound)
            .arg("-o")
            .arg(out("csv")),
        "export sampler" => c.args(["export", "sampler", "-f"]).arg(bound).arg("-o").arg(out("back.bin")),
        _ => unreachable!("{name}"),
    };
    timed(&mut c)
}

fn row_took(t: &Took) -> Took {
    Took { wall: t.wall, cpu: t.cpu, anon_kib: t.anon_kib, maxrss_kib: t.maxrss_kib }
}

fn main() {
    let sizes: Vec<u64> = std::env::var("TBRW_MEMORY_SAMPLES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .filter(|v: &Vec<u64>| v.len() == 2)
        .unwrap_or_else(|| vec![500_000, 2_000_000]);
    let dir = std::env::var_os("TBRW_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/memory-bench"));
    let only: Option<Vec<String>> =
        std::env::var("TBRW_MEMORY_ONLY").ok().map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let tbrw = env!("CARGO_BIN_EXE_tbrw");
    let mut took: Vec<Vec<Took>> = Vec::new();
    let mut records = Vec::new();
    let mut whole = Vec::new();
    for &n in &sizes {
        let d = dir.join(n.to_string());
        std::fs::create_dir_all(&d).unwrap();
        let prof = d.join("profile.bin");
        if !prof.exists() {
            profile(&prof, n);
        }
        let bound = d.join("bind.tb5");
        let mut row = Vec::new();
        for r in RULES {
            if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == r.name))
                && !matches!(r.name, "import sampler" | "bind")
            {
                row.push(Took { wall: Default::default(), cpu: Default::default(), anon_kib: 0, maxrss_kib: 0 });
                continue;
            }
            row.push(run(tbrw, &d, r.name, &bound, &prof));
        }
        records.push(
            tbrw::Tb5File::open(&bound).and_then(|f| f.stream(0)?.data().map(|d| d.map_or(0, |d| d.len()))).unwrap(),
        );
        took.push(row);
        let k = RULES.iter().position(|r| r.name == "report --by address").unwrap();
        whole.push(Took { ..row_took(&took.last().unwrap()[k]) });
    }
    let (r0, r1) = (records[0] as f64, records[1] as f64);
    println!(
        "records: {} and {} (sampler profiles of {} and {} samples, 4 threads)",
        records[0], records[1], sizes[0], sizes[1]
    );
    println!(
        "{:<24} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9}  rule (heap)                fits",
        "command", "heap A", "heap B", "B/record", "RSS A", "RSS B", "wall B s"
    );
    for (i, r) in RULES.iter().enumerate() {
        let (a, b) = (&took[0][i], &took[1][i]);
        if b.anon_kib == 0 {
            continue;
        }
        let slope = (b.anon_kib as f64 - a.anon_kib as f64) * 1024.0 / (r1 - r0);
        let limit = |recs: f64| r.mib * 1048576.0 + r.per_record * recs;
        let fits = (a.anon_kib as f64 * 1024.0) <= limit(r0) && (b.anon_kib as f64 * 1024.0) <= limit(r1);
        println!(
            "{:<24} {:>6} MiB {:>6} MiB {:>9.1} {:>6} MiB {:>6} MiB {:>9.2}  ≤ {:>4} MiB + {:>3} B/record  {}",
            r.name,
            a.anon_kib / 1024,
            b.anon_kib / 1024,
            slope,
            a.maxrss_kib / 1024,
            b.maxrss_kib / 1024,
            b.wall.as_secs_f64(),
            r.mib,
            r.per_record,
            if fits { "yes" } else { "NO" }
        );
    }
    let cut = RULES.iter().position(|r| r.name == "report --time 40%..55%").unwrap();
    for (k, n) in records.iter().enumerate() {
        let (c, w) = (&took[k][cut], &whole[k]);
        println!(
            "seek, {n} records: report --by address --time 40%..55% {} MiB RSS, {:.3} s; the whole file {} MiB RSS, {:.3} s: {:.2}x the RSS, {:.2}x the time",
            c.maxrss_kib / 1024,
            c.wall.as_secs_f64(),
            w.maxrss_kib / 1024,
            w.wall.as_secs_f64(),
            c.maxrss_kib as f64 / w.maxrss_kib.max(1) as f64,
            c.wall.as_secs_f64() / w.wall.as_secs_f64().max(1e-6)
        );
    }
}
