//! `tbrw report --by function|line|address` and `tbrw annotate` on programs
//! built here with `cc -g -O1`: samples placed at addresses read from the
//! ELF symbol table (exact answers), bad module files, and a comparison with
//! perf on the same samples.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod program;

use program::{build_prog, elf_symbol as symbol, exec_vaddr, have};
use tbrw::*;
use tbrw_elf_profile::{write_header, write_sample, Header, Magic, Sample, ThreadSample, VmMap};
use tbrw_import::elf_profile::{import_profile, ImportOptions};
use tbrw_import::globals::write_globals;
use tbrw_schema::descriptor::field;

/// Two functions; `spin_a` on lines 3-8, `spin_b` on lines 9-14.
const SOURCE: &str = "volatile double sink;
#define N 1
__attribute__((noinline)) void spin_a(long n) {
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)(i ^ (i >> 3));
    sink = s;
}
__attribute__((noinline)) void spin_b(long n) {
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)(i * 7 + (i >> 5));
    sink = s;
}
int main(void) {
    for (int r = 0; r < 40; r++) { spin_a(3000000); spin_b(1000000); }
    return 0;
}
";

/// `dir/prog` built with `cc -g -O1` (a PIE) from `dir/prog.c`; `None` without cc.
fn build(dir: &Path) -> Option<PathBuf> {
    build_prog(dir, "prog.c", SOURCE, &["-g", "-O1", "-Wl,--build-id"])
}
const A_LINES: std::ops::RangeInclusive<u32> = 3..=8;
const B_LINES: std::ops::RangeInclusive<u32> = 9..=14;

/// 1000 ELF virtual addresses: 750 spread over `spin_a`, 250 over `spin_b`.
fn designed(prog: &Path) -> Vec<u64> {
    let (a, asz) = symbol(prog, "spin_a");
    let (b, bsz) = symbol(prog, "spin_b");
    (0..750u64).map(|i| a + i % asz).chain((0..250u64).map(|i| b + i % bsz)).collect()
}

fn tbrw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> (String, String) {
    let o = tbrw(args);
    let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "tbrw {args:?} failed: {err}");
    (out, err)
}

fn json(args: &[&str]) -> (serde_json::Value, String) {
    let (out, err) = ok(args);
    (serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}")), err)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A TB5 file with `modules` and one sampling stream of (pid, pc) records
/// (ST_IP, ST_PID, ST_TID = pid), plus `global` as the user-defined global section.
fn write_tb5(path: &Path, modules: &[Module], samples: &[(u32, u64)], global: Option<&str>) {
    let mut w = Tb5Writer::create(path).unwrap();
    let os = Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() };
    write_globals(&mut w, &Software { host: None, os: Some(os), application: None }).unwrap();
    w.write_modules(modules).unwrap();
    let mut st = w
        .stream(0)
        .unwrap()
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
        .unwrap()
        .data_descriptor(&[
            field(desc_type::IP, desc_subtype::NONE, 8, "pc"),
            field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
            field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
        ])
        .unwrap();
    st.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some("cpu-clock".into()), ..Default::default() }])
        .unwrap();
    let mut data = st.data().unwrap();
    let mut bytes = Vec::new();
    for &(pid, pc) in samples {
        bytes.extend_from_slice(&pc.to_le_bytes());
        bytes.extend_from_slice(&pid.to_le_bytes());
        bytes.extend_from_slice(&pid.to_le_bytes());
    }
    data.add(&bytes).unwrap();
    data.done().unwrap();
    st.finish().unwrap();
    if let Some(g) = global {
        w.write_user_defined_global(g.as_bytes()).unwrap();
    }
    w.close().unwrap();
}

fn module(pid: u32, path: &str, load_address: u64, length: u64, first: bool) -> Module {
    let mut flags = ModuleFlags::LOADED;
    if first {
        flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
    }
    Module {
        associated_pid: pid,
        flags,
        segment_type: processor_mode::BIT64,
        load_address,
        length,
        unload_tsc: NEVER_UNLOADED,
        name: Some(path.rsplit('/').next().unwrap().to_owned()),
        path: Some(path.to_owned()),
        ..Default::default()
    }
}

/// Rows of a JSON report as (label fields, samples).
fn rows(v: &serde_json::Value) -> Vec<(serde_json::Value, u64)> {
    v["rows"].as_array().unwrap().iter().map(|r| (r["key"].clone(), r["samples"].as_u64().unwrap())).collect()
}

/// The exact-answer fixture imported as an ELF sampler profile, whose map
/// label is a base name (found through `--search-path`) and whose map
/// starts at the executable segment.
#[test]
fn sampler_import_by_function_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build(dir.path()) else { return };
    let map_start = 0x5555_5555_5000u64;
    let exec = exec_vaddr(&prog);
    let mut profile = Vec::new();
    let vaddrs = designed(&prog);
    let header = Header {
        magic: Magic::Custom,
        wall_time: 1,
        cpu_time: 1,
        samples: vaddrs.len() as u64,
        maps: vec![VmMap { address: map_start, size: 0x1000, label: "prog".into() }],
    };
    write_header(&mut profile, &header).unwrap();
    for (i, v) in vaddrs.iter().enumerate() {
        let t = ThreadSample { tid: 7, pc: map_start + v - exec, cputime: i as u64 };
        write_sample(&mut profile, &Sample { value: 0.0, threads: vec![t] }).unwrap();
    }
    let pf = dir.path().join("prog.profile");
    std::fs::write(&pf, &profile).unwrap();
    let tb5 = dir.path().join("prog.tb5");
    let mut w = tbrw::Tb5Writer::create(&tb5).unwrap();
    let input = std::fs::File::open(&pf).unwrap();
    let input_name = pf.display().to_string();
    import_profile(input, &input_name, &mut w, &ImportOptions::default(), &Default::default(), ()).unwrap();
    w.close().unwrap();

    let search = ["--search-path", s(dir.path())];
    let (v, err) = json(&[&["report", s(&tb5), "--by", "function", "--json"][..], &search].concat());
    assert_eq!(err, "", "no warning when every module is found");
    let got: Vec<(String, u64)> =
        rows(&v).into_iter().map(|(k, n)| (k["name"].as_str().unwrap().to_owned(), n)).collect();
    assert_eq!(got, [("spin_a".to_owned(), 750), ("spin_b".to_owned(), 250)]);
    assert_eq!(v["rows"][0]["percent"], 75.0);
    assert_eq!(v["rows"][0]["key"]["module"], "prog");

    let (v, _) = json(&[&["report", s(&tb5), "--by", "line", "--json"][..], &search].concat());
    let mut per_function: HashMap<String, u64> = HashMap::new();
    let mut per_line: HashMap<u32, u64> = HashMap::new();
    for (k, n) in rows(&v) {
        let (function, line) = (k["function"].as_str().unwrap(), k["line"].as_u64().unwrap() as u32);
        assert!(k["file"].as_str().unwrap().ends_with("prog.c"), "{k}");
        let range = if function == "spin_a" { A_LINES } else { B_LINES };
        assert!(range.contains(&line), "{function} at line {line}");
        *per_function.entry(function.to_owned()).or_default() += n;
        *per_line.entry(line).or_default() += n;
    }
    assert_eq!(per_function["spin_a"], 750);
    assert_eq!(per_function["spin_b"], 250);
    // An independent answer per address, when binutils are here.
    if have("addr2line") {
        let mut expected: HashMap<u32, u64> = HashMap::new();
        let args: Vec<String> = vaddrs.iter().map(|v| format!("{v:#x}")).collect();
        let o = Command::new("addr2line").arg("-e").arg(&prog).args(&args).output().unwrap();
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            let line = l.rsplit(':').next().unwrap().split_whitespace().next().unwrap();
            *expected.entry(line.parse().unwrap_or(0)).or_default() += 1;
        }
        assert_eq!(per_line, expected, "lines as addr2line gives them");
    }

    // The table form, and combinations.
    let (table, _) = ok(&[&["report", s(&tb5), "--by", "function", "--top", "1"][..], &search].concat());
    assert!(table.contains("by function") && table.contains("75.00%  spin_a"), "{table}");
    assert!(!table.contains("spin_b"), "--top 1: {table}");
    let (v, _) = json(&[&["report", s(&tb5), "--by", "module,function", "--json"][..], &search].concat());
    assert_eq!(v["by"], "combined");
    assert_eq!(v["rows"][0]["key"]["parts"][0]["kind"], "module");
    assert_eq!(v["rows"][0]["key"]["parts"][1]["name"], "spin_a");
    let (table, _) = ok(&[&["report", s(&tb5), "--by", "thread,function"][..], &search].concat());
    assert!(table.contains("by thread,function") && table.contains("tid 7"), "{table}");
    // Filters apply: the first 100 samples (sample index) are all in spin_a.
    let (v, _) = json(&[&["report", s(&tb5), "--by", "function", "--time", "..100", "--json"][..], &search].concat());
    assert_eq!(v["samples"], 100);
    assert_eq!(rows(&v).len(), 1);

    let (v, _) = json(&[&["report", s(&tb5), "--by", "address", "--json"][..], &search].concat());
    let (a, _) = symbol(&prog, "spin_a");
    let first = rows(&v).into_iter().find(|(k, _)| k["vaddr"].as_u64() == Some(a)).unwrap();
    assert_eq!(first.0["function"], "spin_a+0x0");
    assert_eq!(first.0["address"].as_u64(), Some(map_start + a - exec));

    // annotate: the function's lines with the source text.
    let (text, _) = ok(&[&["annotate", s(&tb5), "--function", "spin_b"][..], &search].concat());
    assert!(text.starts_with("spin_b in prog: 250 of 1000 samples (25.00%)"), "{text}");
    assert!(text.contains("s += (double)(i * 7 + (i >> 5));"), "{text}");
    let (v, _) = json(&[&["annotate", s(&tb5), "--function", "spin_a", "--json"][..], &search].concat());
    let lines = v[0]["lines"].as_array().unwrap();
    assert_eq!(lines.iter().map(|l| l["samples"].as_u64().unwrap()).sum::<u64>(), 750);
    assert!(lines.iter().all(|l| A_LINES.contains(&(l["line"].as_u64().unwrap() as u32))));
    let o = tbrw(&[&["annotate", s(&tb5), "--function", "nothere"][..], &search].concat());
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("\"nothere\""));

    // Without the search path the file is not found: a warning, the report prints.
    let (table, err) = ok(&["report", s(&tb5), "--by", "function"]);
    assert!(err.contains("prog: file not found"), "{err}");
    assert!(table.contains("100.00%  [prog]"), "{table}");
}

/// A module written through the C API (load base) and one with a recorded
/// file offset, in two processes of one file.
#[test]
fn load_base_and_file_offset_modules() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build(dir.path()) else { return };
    let p = s(&prog);
    let (base, map) = (0x5600_0000_0000u64, 0x5700_0000_1000u64);
    let exec = exec_vaddr(&prog);
    let vaddrs = designed(&prog);
    let mut samples: Vec<(u32, u64)> = vaddrs.iter().map(|v| (1, base + v)).collect();
    // The second process's map starts at the code, file offset `exec`
    // (the code segment's p_offset equals its p_vaddr in a cc-built PIE).
    samples.extend(vaddrs.iter().map(|v| (2, map + v - exec)));
    samples.push((2, 0x10));
    let tb5 = dir.path().join("two.tb5");
    write_tb5(
        &tb5,
        &[module(1, p, base, 0x5000, true), module(2, p, map, 0x1000, true)],
        &samples,
        Some(&format!("perf module file offsets\nmodule 1 offset={exec:#x}\n")),
    );
    let (v, err) = json(&["report", s(&tb5), "--by", "process,function", "--json"]);
    assert_eq!(err, "");
    let got: Vec<(u64, String, u64)> = rows(&v)
        .into_iter()
        .map(|(k, n)| {
            let f = &k["parts"][1];
            (
                k["parts"][0]["pid"].as_u64().unwrap_or(0),
                f["name"].as_str().or(f["unknown"].as_str()).unwrap().to_owned(),
                n,
            )
        })
        .collect();
    for pid in [1, 2] {
        assert!(got.contains(&(pid, "spin_a".into(), 750)), "{got:?}");
        assert!(got.contains(&(pid, "spin_b".into(), 250)), "{got:?}");
    }
    assert!(got.iter().any(|(_, f, n)| f == "[unknown]" && *n == 1), "{got:?}");
}

/// Bad module files: each gets one warning, the report still prints with
/// their samples unresolved and the good module resolved.
#[test]
fn bad_module_files_warn_and_the_report_prints() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build(dir.path()) else { return };
    let truncated = dir.path().join("libtrunc.so");
    std::fs::write(&truncated, &std::fs::read(&prog).unwrap()[..200]).unwrap();
    let wrong_id = dir.path().join("libwrongid.so");
    std::fs::copy(&prog, &wrong_id).unwrap();
    let folder = dir.path().join("libdir.so");
    std::fs::create_dir(&folder).unwrap();
    let missing = dir.path().join("libgone.so");
    let (a, _) = symbol(&prog, "spin_a");
    let paths = [s(&prog), s(&truncated), s(&missing), s(&wrong_id), s(&folder)];
    let base = |i: u64| 0x7f00_0000_0000 + i * 0x100_0000;
    let modules: Vec<Module> =
        paths.iter().enumerate().map(|(i, p)| module(1, p, base(i as u64), 0x5000, i == 0)).collect();
    let samples: Vec<(u32, u64)> = (0..5u64).flat_map(|i| std::iter::repeat_n((1, base(i) + a), 10)).collect();
    let tb5 = dir.path().join("bad.tb5");
    write_tb5(
        &tb5,
        &modules,
        &samples,
        Some("module 3 offset=0x0 build_id=00112233445566778899aabbccddeeff00112233\n"),
    );
    let (table, err) = ok(&["report", s(&tb5), "--by", "function"]);
    assert_eq!(err.lines().count(), 4, "one warning per bad module: {err}");
    for (name, why) in [
        ("libtrunc.so", "not a valid ELF file"),
        ("libgone.so", "file not found"),
        ("libwrongid.so", "build id mismatch"),
        ("libdir.so", "a directory, not a file"),
    ] {
        assert!(table.contains(&format!("20.00%  [{name}]")), "{name}: {table}");
        assert!(
            err.lines().any(|l| l.starts_with("tbrw: warning: ") && l.contains(name) && l.contains(why)),
            "{name}: {err}"
        );
    }
    assert!(table.contains("20.00%  spin_a"), "{table}");
    assert!(err.contains("00112233445566778899aabbccddeeff00112233"), "the build ids are named: {err}");
}

/// perf's samples of the fixture, converted with their MMAP2 maps (pgoff
/// recorded, so FileOffset), against `perf report --sort dso,sym`.
#[test]
fn checked_against_perf() {
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build(dir.path()) else { return };
    let data = dir.path().join("perf.data");
    let rec = Command::new("perf").args(["record", "-N", "-F", "2000", "-o"]).arg(&data).arg(&prog).output();
    match rec {
        Ok(o) if o.status.success() => {}
        Ok(o) => return eprintln!("note: perf record failed, test skipped: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => return eprintln!("note: no perf ({e}), test skipped"),
    }
    let script = Command::new("perf")
        .args(["script", "-F", "ip,sym,dso,pid,tid", "--show-mmap-events", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&script.stdout);
    let mut modules: Vec<Module> = Vec::new();
    let mut note = String::from("perf module file offsets\n");
    let mut samples: Vec<(u32, u64, String)> = Vec::new();
    let mut first_pid: Vec<u32> = Vec::new();
    for line in text.lines() {
        let Some(ev) = line.find("PERF_RECORD_MMAP") else {
            // `pid/tid ip sym (dso)`
            let mut w = line.split_whitespace();
            let (Some(pt), Some(ip)) = (w.next(), w.next()) else { continue };
            let pid = pt.split('/').next().unwrap().parse().unwrap_or(0);
            let Ok(ip) = u64::from_str_radix(ip, 16) else { continue };
            let rest: Vec<&str> = w.collect();
            let sym = rest[..rest.len().saturating_sub(1)].join(" ");
            samples.push((pid, ip, sym));
            continue;
        };
        // `PERF_RECORD_MMAP2 pid/tid: [0xSTART(0xLEN) @ 0xPGOFF ...]: prot path`
        let ev = &line[ev..];
        let (Some(open), Some(close)) = (ev.find('['), ev.find("]:")) else { continue };
        let inside = &ev[open + 1..close];
        let pid: i64 = ev.split_whitespace().nth(1).unwrap().split('/').next().unwrap().parse().unwrap_or(-1);
        let (start, rest) = inside.split_once('(').unwrap();
        let (len, rest) = rest.split_once(')').unwrap();
        let pgoff = rest.split_whitespace().nth(1).unwrap();
        let hex = |x: &str| u64::from_str_radix(x.trim().trim_start_matches("0x"), 16).unwrap_or(0);
        let path = ev[close + 2..].split_whitespace().last().unwrap_or("");
        let kernel = pid < 0;
        let pid = pid.max(0) as u32;
        let first = !first_pid.contains(&pid);
        first_pid.push(pid);
        let mut m = module(pid, path, hex(start), hex(len), first);
        if kernel {
            m.flags |= ModuleFlags::GLOBAL_LOAD;
        } else {
            writeln_note(&mut note, modules.len(), hex(pgoff));
        }
        modules.push(m);
    }
    assert!(!samples.is_empty(), "perf script gave no samples: {}", String::from_utf8_lossy(&script.stderr));
    let tb5 = dir.path().join("perf.tb5");
    let records: Vec<(u32, u64)> = samples.iter().map(|(p, ip, _)| (*p, *ip)).collect();
    write_tb5(&tb5, &modules, &records, Some(&note));

    let (v, _) = json(&["report", s(&tb5), "--by", "address", "--json", "--kallsyms", "/proc/kallsyms"]);
    let by_address: HashMap<u64, String> = rows(&v)
        .into_iter()
        .map(|(k, _)| {
            let f = k["function"].as_str().unwrap();
            (k["address"].as_u64().unwrap(), f.split("+0x").next().unwrap().to_owned())
        })
        .collect();
    let named: Vec<&(u32, u64, String)> = samples.iter().filter(|(_, _, sym)| sym != "[unknown]").collect();
    let same = named.iter().filter(|(_, ip, sym)| by_address.get(ip) == Some(sym)).count();
    let share = same as f64 * 100.0 / named.len() as f64;
    println!(
        "perf record -F 2000 ./prog; perf named {} of {} samples, tbrw names the same function for {same} ({share:.2}%)",
        named.len(),
        samples.len()
    );
    assert!(share >= 99.0, "only {share:.2}% agree");

    let (ours, _) = ok(&["report", s(&tb5), "--by", "function", "--kallsyms", "/proc/kallsyms"]);
    let theirs =
        Command::new("perf").args(["report", "--sort", "dso,sym", "--stdio", "-i"]).arg(&data).output().unwrap();
    println!("tbrw report --by function:\n{ours}");
    println!("perf report --sort dso,sym --stdio:\n{}", String::from_utf8_lossy(&theirs.stdout));
    assert!(ours.contains("spin_a") && ours.contains("spin_b"), "{ours}");
}

fn writeln_note(note: &mut String, index: usize, pgoff: u64) {
    note.push_str(&format!("module {index} offset={pgoff:#x}\n"));
}

/// A report by function counted in 1 to 7 parts (threads) equals the
/// one-part count, for each grouping a part's counts are merged by:
/// processes, threads and modules interleaved sample by sample, samples of
/// no module and of a module without symbols among them.
#[test]
fn function_counts_in_parts_equal_one_pass() {
    use tbrw_query::file_symbols::SymbolOptions;
    use tbrw_query::report::{functions, ReportOptions};
    use tbrw_query::By;
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build(dir.path()) else { return };
    let p = s(&prog);
    let junk = dir.path().join("junk.so");
    std::fs::write(&junk, b"not an ELF").unwrap();
    let bases = [0x5600_0000_0000u64, 0x5700_0000_0000, 0x5800_0000_0000];
    let vaddrs = designed(&prog);
    let mut samples = Vec::new();
    for (i, v) in vaddrs.iter().enumerate() {
        for (pid, base) in (1u32..).zip(bases) {
            samples.push((pid, if i % 97 == 0 { 0x10 } else { base + v }));
        }
        if i % 5 == 0 {
            samples.push((1, 0x6000_0000_0000 + *v));
        }
    }
    let tb5 = dir.path().join("parts.tb5");
    let mut modules: Vec<Module> = (1u32..).zip(bases).map(|(pid, b)| module(pid, p, b, 0x5000, true)).collect();
    modules.push(module(1, s(&junk), 0x6000_0000_0000, 0x5000, false));
    write_tb5(&tb5, &modules, &samples, None);
    let file = Tb5File::open(&tb5).unwrap();
    let opts = SymbolOptions { debug_dirs: Vec::new(), ..Default::default() };
    let groupings: [&[By]; 5] = [
        &[By::Function],
        &[By::Process, By::Function],
        &[By::Thread, By::Function],
        &[By::Module, By::Function],
        &[By::Function, By::Process],
    ];
    for by in groupings {
        let report_top = |parts, top| {
            let mut warn = Vec::new();
            let r = functions::report_in_parts(
                &file,
                &ReportOptions::new(Default::default(), by).top(top).symbols(opts.clone()),
                &mut warn,
                &mut |_| {},
                Some(parts),
            )
            .unwrap();
            let rows: Vec<(String, u64)> = r.rows.iter().map(|r| (format!("{:?}", r.key), r.samples)).collect();
            (rows, r.samples, warn.iter().map(|w| format!("{w}\n")).collect::<String>())
        };
        let report = |parts| report_top(parts, None);
        let one = report(1);
        assert_eq!(one.1, samples.len() as u64);
        assert_eq!(one.2.lines().filter(|l| l.contains("junk.so")).count(), 1, "{}", one.2);
        assert!(one.0.iter().any(|(k, _)| k.contains("spin_a")), "{:?}", one.0);
        for parts in [2, 3, 7] {
            assert_eq!(report(parts), one, "{by:?} in {parts} parts");
        }
        // The first rows, whether all rows are made or only those.
        for top in [1, 3, one.0.len() + 1] {
            let first = report_top(2, Some(top));
            assert_eq!(first.0, one.0[..top.min(one.0.len())], "{by:?} top {top}");
            assert_eq!(first.1, one.1);
        }
    }
}

/// `tbrw symbolize` stores the functions the samples hit: with the program
/// gone, reports by function still name them (and say lines are unknown);
/// stored symbols that cannot be read are a warning, not a failure.
#[test]
fn symbolize_stores_names_that_outlive_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let Some(built) = build(dir.path()) else { return };
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let prog = bin.join("prog");
    std::fs::copy(&built, &prog).unwrap();
    let base = 0x5600_0000_0000u64;
    let mut samples: Vec<(u32, u64)> = designed(&prog).iter().map(|v| (1, base + v)).collect();
    samples.push((1, 0x10));
    let tb5 = dir.path().join("s.tb5");
    write_tb5(&tb5, &[module(1, s(&prog), base, 0x5000, true)], &samples, None);
    let before = json(&["report", s(&tb5), "--by", "function", "--json"]).0;

    let (out, err) = ok(&["symbolize", s(&tb5)]);
    assert_eq!(err, "");
    assert!(out.contains("stored 2 functions of 1 files, naming 1000 of 1001 samples"), "{out}");
    ok(&["verify", s(&tb5)]);
    std::fs::remove_file(&prog).unwrap();
    let (after, err) = json(&["report", s(&tb5), "--by", "function", "--json"]);
    assert_eq!(err, "", "no warning: the stored symbols stand in for the program");
    assert_eq!(rows(&after), rows(&before));
    let (lines, _) = json(&["report", s(&tb5), "--by", "line", "--json"]);
    let spin_a = rows(&lines).into_iter().find(|(k, _)| k["function"] == "spin_a").expect("spin_a by line");
    assert_eq!(spin_a.1, 750);
    assert!(spin_a.0["file"].is_null(), "{:?}", spin_a.0);
    // Symbolized again without the program: the stored names are kept.
    ok(&["symbolize", s(&tb5)]);
    assert_eq!(rows(&json(&["report", s(&tb5), "--by", "function", "--json"]).0), rows(&before));

    // Unreadable stored symbols: one warning, the report still prints.
    let mut w = Tb5Writer::append(&tb5).unwrap();
    w.store_symbols(b"not stored symbols").unwrap();
    w.close().unwrap();
    let (v, err) = json(&["report", s(&tb5), "--by", "function", "--json"]);
    assert!(err.contains("stored symbols: line 1") && err.contains("file not found"), "{err}");
    assert!(rows(&v).iter().all(|(k, _)| k["name"].is_null()), "{v}");
}
