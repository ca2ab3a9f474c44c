//! Every sampler writer's layout (seed-era, current, oldest, the README's),
//! both byte orders and killed runs: written here by a small writer of
//! their own (not the library's), imported, counted against a naive
//! reader with inclusive map ends, exported back byte for byte; and
//! inputs whose counts would make a reader allocate without bound.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::export_vtune_csv;
use common::{bzip2, check_vtune_csv, export_profile, import_profile_file, Rng};
use proptest::prelude::*;
use tbrw::*;
use tbrw_export::vtune_csv::{Clock, CsvOptions};
use tbrw_import::elf_profile::{ImportOptions, ImportStats, Layout, ProfileOptions, TimeSource};
use tbrw_query::report::{self, Key, ReportOptions};
use tbrw_query::Query;
use tbrw_query::{By, Weight};

#[derive(Clone, Debug)]
struct Thread {
    tid: u32,
    pc: u64,
    cputime: u64,
}

#[derive(Clone, Debug)]
struct S {
    time_us: u64,
    value: f64,
    threads: Vec<Thread>,
}

#[derive(Clone, Debug)]
struct Spec {
    layout: Layout,
    be: bool,
    magic: u32,
    wall: u64,
    latency: u64,
    maps: Vec<(u64, u64, String)>,
    samples: Vec<S>,
    killed: bool,
}

/// The profile's bytes, as each writer lays them out (written field by
/// field here, independently of the library's writer).
fn bytes(s: &Spec) -> Vec<u8> {
    let mut o = Vec::new();
    let be = s.be;
    let u32b = |o: &mut Vec<u8>, v: u32| o.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
    let u64b = |o: &mut Vec<u8>, v: u64| o.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
    let head = s.layout == Layout::Head;
    let maps_first = matches!(s.layout, Layout::Old | Layout::Readme);
    if s.killed {
        o.resize(if head { 36 } else { 32 }, 0);
    } else {
        u32b(&mut o, s.magic);
        u64b(&mut o, s.wall);
        u64b(&mut o, s.latency);
        u64b(&mut o, s.samples.len() as u64);
        if head {
            u32b(&mut o, 8);
        }
        u32b(&mut o, s.maps.len() as u32);
    }
    let maps = |o: &mut Vec<u8>| {
        for (a, size, label) in &s.maps {
            u64b(o, *a);
            u64b(o, *size);
            let mut l = [0u8; 256];
            l[..label.len()].copy_from_slice(label.as_bytes());
            o.extend_from_slice(&l);
        }
    };
    if maps_first {
        maps(&mut o);
    }
    for x in &s.samples {
        if head {
            u64b(&mut o, x.time_us);
        }
        u64b(&mut o, x.value.to_bits());
        u32b(&mut o, x.threads.len() as u32);
        for t in &x.threads {
            u32b(&mut o, t.tid);
            u64b(&mut o, t.pc);
            if s.layout != Layout::Old {
                u64b(&mut o, t.cputime);
            }
        }
    }
    if !maps_first && !s.killed {
        maps(&mut o);
    }
    o
}

/// Executable file-backed maps as the current writer keeps them: basenames, the target first.
fn maps() -> Vec<(u64, u64, String)> {
    vec![
        (0x55d0_0000_1000, 0x6000, "prog".into()),
        (0x7f3a_0002_8000, 0x195000, "libc.so.6".into()),
        (0x7f3a_0040_1000, 0xff, "libm.so.6".into()),
        (0x7f3a_0090_0000, 0x2_0000, "ld-linux-x86-64.so.2".into()),
    ]
}

/// A realistic run: 3 threads, one of them blocked (its cputime stands
/// still), pcs in the maps (their last byte included) or in none.
fn spec(layout: Layout, be: bool, killed: bool, samples: usize, seed: u64) -> Spec {
    let maps = maps();
    let mut rng = Rng(seed | 1);
    let mut cpu = [0u64, 0, 5_000];
    let mut v = Vec::new();
    let t0 = 1_700_000_000_000_000u64;
    for i in 0..samples {
        let mut threads = Vec::new();
        // The current writer's first sample has no threads.
        let n = if layout == Layout::Head && i == 0 { 0 } else { 1 + rng.below(3) as usize };
        for (k, c) in cpu.iter_mut().enumerate().take(n) {
            let pc = match rng.below(12) {
                0 => 0x1000 + rng.below(0x100),
                1 => {
                    let m = &maps[rng.below(maps.len() as u64) as usize];
                    m.0 + m.1 // the inclusive end
                }
                _ => {
                    let m = &maps[rng.below(maps.len() as u64) as usize];
                    m.0 + rng.below(m.1)
                }
            };
            if k != 2 {
                *c += 900_000 + rng.below(200_000);
            }
            threads.push(Thread { tid: 4000 + k as u32, pc, cputime: *c });
        }
        v.push(S { time_us: t0 + i as u64 * 1000 + rng.below(10), value: 0.5 + (i % 7) as f64 / 8.0, threads });
    }
    Spec { layout, be, magic: 1, wall: samples as u64 * 1000, latency: 1234, maps, samples: v, killed }
}

/// Per map label, the pcs a naive reader puts there (first map with
/// `address <= pc <= address + size`), and those in none.
fn naive(s: &Spec) -> (HashMap<String, u64>, u64) {
    let mut per = HashMap::new();
    let mut none = 0;
    for x in &s.samples {
        for t in &x.threads {
            match s.maps.iter().find(|(a, size, _)| *a <= t.pc && t.pc <= a + size) {
                Some((_, _, l)) if !s.killed => *per.entry(l.clone()).or_insert(0) += 1,
                _ => none += 1,
            }
        }
    }
    (per, none)
}

fn import_bytes(b: &[u8], dir: &Path, popts: ProfileOptions) -> Result<(PathBuf, ImportStats), String> {
    let input = dir.join("p.prof");
    std::fs::write(&input, b).unwrap();
    let out = dir.join("p.tb5");
    import_profile_file(&input, &out, &ImportOptions::default(), &popts).map(|s| (out, s)).map_err(|e| e.to_string())
}

fn per_module(path: &Path, weight: Weight) -> (HashMap<String, f64>, f64, u64) {
    let f = Tb5File::open(path).unwrap();
    let opts = ReportOptions::new(Query { weight, ..Query::default() }, &[By::Module]);
    let r = report::run(&f, &opts, &mut Vec::new(), &mut |_| {}).unwrap();
    let mut per = HashMap::new();
    let mut unknown = 0.0;
    for row in &r.rows {
        let x = row.weight.unwrap_or(row.samples as f64);
        match &row.key {
            Key::Module { name, .. } => *per.entry(name.clone().unwrap()).or_insert(0.0) += x,
            Key::UnknownModule => unknown += x,
            other => panic!("{other:?}"),
        }
    }
    (per, unknown, r.samples)
}

/// (sample index, tid, pc, cputime) of every record.
fn records(path: &Path) -> Vec<(u64, u32, u64, u64)> {
    let f = Tb5File::open(path).unwrap();
    let s = f.stream(0).unwrap();
    let l = s.layout().unwrap().unwrap();
    let at = |t: u16, st: Option<u16>| l.find(t, st).map(|x| (x.offset as usize, x.size as usize));
    let idx = at(desc_type::TIME_STAMP, Some(desc_subtype::TS_SAMPLE_COUNT)).unwrap();
    let tid = at(desc_type::TID, None).unwrap();
    let pc = at(desc_type::IP, None).unwrap();
    let cpu = at(0x4000, None);
    let rd = |r: &[u8], (o, n): (usize, usize)| tbrw_schema::fields::read_le(r, o, n);
    s.data()
        .unwrap()
        .map(|d| d.records().map(|r| (rd(r, idx), rd(r, tid) as u32, rd(r, pc), cpu.map_or(0, |c| rd(r, c)))).collect())
        .unwrap_or_default()
}

fn expected(s: &Spec) -> Vec<(u64, u32, u64, u64)> {
    let mut v = Vec::new();
    for (i, x) in s.samples.iter().enumerate() {
        for t in &x.threads {
            v.push((i as u64, t.tid, t.pc, if s.layout == Layout::Old { 0 } else { t.cputime }));
        }
    }
    v
}

#[test]
fn every_layout_byte_order_and_killed_run_imports_and_counts_like_a_naive_reader() {
    for layout in Layout::ALL {
        for be in [false, true] {
            for killed in [false, true] {
                if killed && !matches!(layout, Layout::Seed | Layout::Head) {
                    continue;
                }
                let what = format!("{layout:?} be={be} killed={killed}");
                let s = spec(layout, be, killed, 300, 7 + be as u64);
                let dir = tempfile::tempdir().unwrap();
                let (out, st) = import_bytes(&bytes(&s), dir.path(), ProfileOptions::default())
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                Tb5File::open(&out).unwrap().verify().unwrap();
                let f = st.format.unwrap();
                assert_eq!(
                    (f.layout, f.endian == tbrw_elf_profile::Endian::Big, st.killed),
                    (layout, be, killed),
                    "{what}"
                );
                assert_eq!(st.samples, 300, "{what}");
                assert_eq!(records(&out), expected(&s), "{what}");
                let (want, none) = naive(&s);
                let (per, unknown, total) = per_module(&out, Weight::Samples);
                assert_eq!(total, st.records, "{what}");
                assert_eq!(unknown, none as f64, "{what}");
                for (label, n) in &want {
                    assert_eq!(per.get(label).copied().unwrap_or(0.0), *n as f64, "{what}: {label}");
                }
                let time = match (layout, killed) {
                    (Layout::Head, _) => TimeSource::Realtime,
                    (_, true) => TimeSource::None,
                    _ => TimeSource::Interpolated,
                };
                assert_eq!(st.time, Some(time), "{what}");
                let file = Tb5File::open(&out).unwrap();
                let mods: Vec<_> =
                    file.modules().unwrap().unwrap().iter().map(|m| file.resolve(m.unwrap()).unwrap()).collect();
                if killed {
                    assert!(mods.is_empty(), "{what}: a killed run has no maps");
                    continue;
                }
                // The first map is the target: IS_EXE, and the process is named after it.
                assert!(mods[0].flags.contains(ModuleFlags::IS_EXE) && mods[0].name.as_deref() == Some("prog"));
                assert!(mods[1..].iter().all(|m| !m.flags.contains(ModuleFlags::IS_EXE)), "{what}");
                assert!(mods.iter().all(|m| m.segment_name.as_deref() == Some("PT_LOAD r-x")), "{what}");
                assert_eq!((mods[2].load_address, mods[2].length), (0x7f3a_0040_1000, 0x100), "{what}");
                let r = report::run(
                    &file,
                    &ReportOptions::new(Default::default(), &[By::Process]),
                    &mut Vec::new(),
                    &mut |_| {},
                )
                .unwrap();
                assert!(matches!(&r.rows[0].key, Key::Process { name: Some(n), .. } if n == "prog"), "{what}");
            }
        }
    }
}

#[test]
fn import_then_export_in_the_same_layout_gives_the_same_bytes() {
    for layout in Layout::ALL {
        for be in [false, true] {
            for killed in [false, true] {
                if killed && !matches!(layout, Layout::Seed | Layout::Head) {
                    continue;
                }
                let s = spec(layout, be, killed, 120, 3);
                let b = bytes(&s);
                let dir = tempfile::tempdir().unwrap();
                let (out, _) = import_bytes(&b, dir.path(), ProfileOptions::default()).unwrap();
                let back = dir.path().join("back.prof");
                assert_eq!(export_profile(&out, 0, &back, None).unwrap(), 120);
                assert!(std::fs::read(&back).unwrap() == b, "{layout:?} be={be} killed={killed}: changed");
            }
        }
    }
}

#[test]
fn exports_to_another_layout_keep_the_samples() {
    let s = spec(Layout::Head, false, false, 80, 5);
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = import_bytes(&bytes(&s), dir.path(), ProfileOptions::default()).unwrap();
    for to in [Layout::Seed, Layout::Readme, Layout::Old] {
        let p = dir.path().join(format!("{to:?}.prof"));
        export_profile(&out, 0, &p, Some(to)).unwrap();
        let d = tempfile::tempdir().unwrap();
        let (again, st) = import_bytes(&std::fs::read(&p).unwrap(), d.path(), ProfileOptions::default()).unwrap();
        assert_eq!(st.format.unwrap().layout, to);
        let mut want = expected(&s);
        if to == Layout::Old {
            want.iter_mut().for_each(|r| r.3 = 0);
        }
        assert_eq!(records(&again), want, "{to:?}");
        // The seed-era layout's header is what the real tools expect: a sample count that
        // includes the sample without threads.
        assert_eq!(st.announced, 80);
    }
}

#[test]
fn current_profiles_export_to_vtune_csv_in_utc_and_interpolated_ones_say_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) =
        import_bytes(&bytes(&spec(Layout::Head, false, false, 50, 9)), dir.path(), Default::default()).unwrap();
    let csv = dir.path().join("csv");
    let opts = CsvOptions { hostname: Some("box".into()), ..Default::default() };
    let r = export_vtune_csv(&out, &csv, &opts).unwrap();
    assert_eq!(check_vtune_csv(&r.files[0]), expected(&spec(Layout::Head, false, false, 50, 9)).len());
    let text = std::fs::read_to_string(&r.files[0]).unwrap();
    assert!(text.starts_with("tsc.UTC,"), "{text}");
    // The first record is sample 1 (sample 0 has no threads), at its CLOCK_REALTIME microseconds.
    let first = text.lines().nth(1).unwrap().split(',').next().unwrap();
    let t1 = spec(Layout::Head, false, false, 50, 9).samples[1].time_us;
    assert_eq!(first, tbrw_export::vtune_csv::utc_text(t1 * 1000));

    let d = tempfile::tempdir().unwrap();
    let (seed, _) =
        import_bytes(&bytes(&spec(Layout::Seed, false, false, 50, 9)), d.path(), Default::default()).unwrap();
    let e = export_vtune_csv(&seed, &d.path().join("csv"), &opts).unwrap_err();
    // The clock is missing: a variant the command line names `--clock` for.
    let tbrw_export::ExportError::MissingOptions { clock, .. } = &e else { panic!("{e:?}") };
    assert!(clock.iter().any(|(_, why)| why.contains("time_since_run_start_interpolated")), "{e}");
    // Said explicitly, the interpolated times are accepted on that clock.
    let r = export_vtune_csv(&seed, &d.path().join("csv2"), &CsvOptions { clock: Some(Clock::Utc), ..opts }).unwrap();
    check_vtune_csv(&r.files[0]);
}

#[test]
fn weights_follow_cputime_and_energy() {
    let s = spec(Layout::Head, false, false, 200, 11);
    let dir = tempfile::tempdir().unwrap();
    let (out, _) =
        import_bytes(&bytes(&s), dir.path(), ProfileOptions { volts: Some(5.0), ..Default::default() }).unwrap();
    // Naive: each thread sample weighs its cputime delta (0 for its first), energy is
    // current x volts x that delta.
    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut cpu: HashMap<String, f64> = HashMap::new();
    let mut energy: HashMap<String, f64> = HashMap::new();
    for x in &s.samples {
        for t in &x.threads {
            let d = t.cputime - last.insert(t.tid, t.cputime).unwrap_or(t.cputime);
            let label = s
                .maps
                .iter()
                .find(|(a, size, _)| *a <= t.pc && t.pc <= a + size)
                .map_or("?".to_owned(), |m| m.2.clone());
            *cpu.entry(label.clone()).or_default() += d as f64;
            *energy.entry(label).or_default() += x.value * 5.0 * d as f64 * 1e-9;
        }
    }
    let (per, unknown, _) = per_module(&out, Weight::Cputime);
    for (l, v) in &cpu {
        let got = if l == "?" { unknown } else { per.get(l).copied().unwrap_or(0.0) };
        assert_eq!(got, *v, "{l}");
    }
    let (per, _, _) = per_module(&out, Weight::Energy);
    for (l, v) in energy.iter().filter(|(l, _)| *l != "?") {
        assert!((per[l] - v).abs() <= 1e-9 * v.abs().max(1.0), "{l}: {} vs {v}", per[l]);
    }
    // The blocked thread is sampled but weighs nothing.
    let f = Tb5File::open(&out).unwrap();
    let query = Query { weight: Weight::Cputime, ..Query::default() };
    let r = report::run(&f, &ReportOptions::new(query, &[By::Thread]), &mut Vec::new(), &mut |_| {}).unwrap();
    let blocked = r.rows.iter().position(|row| matches!(row.key, Key::Thread { tid: 4002, .. })).unwrap();
    assert_eq!((r.rows[blocked].weight, r.rows[blocked].percent), (Some(0.0), 0.0));
    assert!(r.rows[blocked].samples > 0);
    let sum: f64 = r.rows.iter().map(|x| x.percent).sum();
    assert!((sum - 100.0).abs() < 1e-9);
    // Energy needs a power: a voltage profile has none.
    let mut v = spec(Layout::Seed, false, false, 20, 2);
    v.magic = 2;
    let d = tempfile::tempdir().unwrap();
    let (vo, _) = import_bytes(&bytes(&v), d.path(), Default::default()).unwrap();
    let f = Tb5File::open(&vo).unwrap();
    let query = Query { weight: Weight::Energy, ..Query::default() };
    let e = report::run(&f, &ReportOptions::new(query, &[]), &mut Vec::new(), &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("power"), "{e}");
    let e = import_bytes(&bytes(&v), d.path(), ProfileOptions { volts: Some(3.3), ..Default::default() }).unwrap_err();
    // The library's words; the command adds its option.
    assert!(e.contains("a supply voltage is for current profiles") && !e.contains("--"), "{e}");
    let e = cli_error(&d.path().join("p.prof"), &["--volts", "3.3"]);
    assert!(e.contains("p.prof: --volts is for current profiles (magic 1); this one's PMU values are "), "{e}");
}

/// What `tbrw import sampler` says on standard error for `profile` with `options`, failing.
fn cli_error(profile: &Path, options: &[&str]) -> String {
    let out = profile.with_extension("cli.tb5");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tbrw"))
        .args(["import", "sampler", profile.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(options)
        .output()
        .unwrap();
    assert!(!o.status.success());
    String::from_utf8(o.stderr).unwrap()
}

#[test]
fn when_two_layouts_fit_the_error_says_so_and_layout_decides() {
    // A header and nothing else fits every 32-byte-header layout.
    let mut s = spec(Layout::Seed, false, false, 0, 1);
    s.maps.clear();
    let b = bytes(&s);
    let dir = tempfile::tempdir().unwrap();
    let e = import_bytes(&b, dir.path(), Default::default()).unwrap_err();
    assert!(e.contains("more than one layout") && e.ends_with("say which layout it is") && !e.contains("--"), "{e}");
    let e = cli_error(&dir.path().join("p.prof"), &[]);
    assert!(e.contains("more than one layout") && e.trim_end().ends_with("; say which with --layout"), "{e}");
    let (_, st) =
        import_bytes(&b, dir.path(), ProfileOptions { layout: Some(Layout::Old), ..Default::default() }).unwrap();
    assert_eq!(st.format.unwrap().layout, Layout::Old);
    assert!(st.also.contains(&Layout::Seed), "{:?}", st.also);
    // A layout the bytes do not fit is refused with the reason.
    let b = bytes(&spec(Layout::Head, false, false, 30, 1));
    let e =
        import_bytes(&b, dir.path(), ProfileOptions { layout: Some(Layout::Seed), ..Default::default() }).unwrap_err();
    assert!(e.contains("do not fit the seed layout") && e.contains("they fit head"), "{e}");
}

#[test]
fn counts_read_from_the_input_never_size_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    // One whole sample, then one claiming 10^8 threads with a few behind it: a killed run.
    let mut s = spec(Layout::Seed, false, true, 2, 4);
    s.samples[1].threads = vec![Thread { tid: 9, pc: 1, cputime: 1 }; 3];
    let mut b = bytes(&s);
    let at = 32 + 12 + 20 * s.samples[0].threads.len() + 8;
    b[at..at + 4].copy_from_slice(&100_000_000u32.to_le_bytes());
    let (_, st) = import_bytes(&b, dir.path(), Default::default()).unwrap();
    assert_eq!((st.samples, st.killed, st.partial_bytes), (1, true, 12 + 60));
    std::fs::remove_file(dir.path().join("p.tb5")).unwrap();
    // The same behind a complete header: an error, before reading the threads.
    let mut s = spec(Layout::Seed, false, false, 2, 4);
    s.samples[1].threads.truncate(1);
    let mut b = bytes(&s);
    let at = 32 + 12 + 20 * s.samples[0].threads.len() + 8;
    b[at..at + 4].copy_from_slice(&100_000_000u32.to_le_bytes());
    assert!(import_bytes(&b, dir.path(), Default::default()).is_err());
    // Compressed (size unknown): a sample claiming 10^8 threads, 2 MiB of plausible ones
    // behind it, then the end. The threads stream through; the cut sample is not kept, and
    // a profile with no whole sample is an error, not an empty file.
    let mut s = spec(Layout::Readme, false, false, 1, 4);
    s.maps.truncate(1);
    s.samples[0].threads = vec![Thread { tid: 77, pc: 0x55d0_0000_1010, cputime: 5 }; 100_000];
    let mut b = bytes(&s);
    let at = 32 + 272 + 8;
    b[at..at + 4].copy_from_slice(&100_000_000u32.to_le_bytes());
    let e = import_bytes(&bzip2(&b), dir.path(), Default::default()).unwrap_err();
    assert!(e.contains("no whole sample"), "{e}");
    // 7 million maps announced by a small bzip2 file: refused from the header.
    let mut b = vec![0u8; 32];
    b[0] = 1;
    b[28..32].copy_from_slice(&7_000_000u32.to_le_bytes());
    b.resize(4 << 20, 0);
    let e = import_bytes(&bzip2(&b), dir.path(), Default::default()).unwrap_err();
    assert!(e.contains("7000000 VM maps"), "{e}");
    assert!(!dir.path().join("p.tb5").exists(), "no output from a failed import");
}

fn arb_spec() -> impl Strategy<Value = Spec> {
    (0usize..4, any::<bool>(), 1usize..40, any::<u64>()).prop_map(|(l, be, n, seed)| {
        let layout = Layout::ALL[l];
        let mut s = spec(layout, be, false, n, seed);
        let mut rng = Rng(seed | 1);
        // Any thread ids Linux can give, any pcs, any cputimes.
        for x in &mut s.samples {
            for t in &mut x.threads {
                t.tid = 1 + rng.below(u64::from(tbrw_elf_profile::MAX_TID)) as u32;
                t.pc = rng.next();
                t.cputime = rng.next() >> 4;
            }
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn any_profile_of_any_layout_imports_to_its_samples(s in arb_spec()) {
        let dir = tempfile::tempdir().unwrap();
        let b = bytes(&s);
        let (out, st) = match import_bytes(&b, dir.path(), Default::default()) {
            Ok(x) => x,
            // Bytes that fit two layouts are named as such; --layout takes them.
            Err(e) => {
                prop_assert!(e.contains("--layout") && e.contains(s.layout.name()), "{}", e);
                import_bytes(&b, dir.path(), ProfileOptions { layout: Some(s.layout), ..Default::default() }).unwrap()
            }
        };
        prop_assert_eq!(st.format.unwrap().layout, s.layout);
        prop_assert_eq!(records(&out), expected(&s));
    }

    #[test]
    fn a_killed_run_of_any_length_keeps_every_whole_sample(head in any::<bool>(), cut in 0usize..4000, seed in any::<u64>()) {
        let layout = if head { Layout::Head } else { Layout::Seed };
        let s = spec(layout, false, true, 60, seed);
        let full = bytes(&s);
        let cut = cut.min(full.len());
        let b = &full[..cut];
        // The whole samples in the first `cut` bytes.
        let hs = if head { 36 } else { 32 };
        let mut at = hs;
        let mut whole = 0;
        let mut with_threads = 0;
        for x in &s.samples {
            let n = (if head { 8 } else { 0 }) + 12 + 20 * x.threads.len();
            if at + n > cut { break; }
            at += n;
            whole += 1;
            with_threads += usize::from(!x.threads.is_empty());
        }
        let dir = tempfile::tempdir().unwrap();
        match import_bytes(b, dir.path(), Default::default()) {
            Ok((out, st)) => {
                prop_assert!(st.killed);
                prop_assert_eq!(st.samples, whole as u64);
                let mut want = expected(&s);
                want.retain(|r| (r.0 as usize) < whole);
                prop_assert_eq!(records(&out), want);
            }
            // Too little to know the layout (no sample with threads, or no second time
            // stamp to find the PMU-data size): never an empty success.
            Err(e) => prop_assert!(with_threads == 0, "{}: {} whole samples", e, whole),
        }
    }
}

/// Found by the `import_bin` fuzz target: with the maps at the end, a
/// sample head that itself runs past the start of the maps made the
/// message's "bytes left" subtract past zero (a panic in a checked build).
#[test]
fn a_sample_head_running_into_the_maps_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // The second was found in the reader after detection accepted the layout.
    for b in [
        &include_bytes!("../../fuzz/corpus/profiles/regression-head-into-maps.prof")[..],
        &include_bytes!("../../fuzz/corpus/profiles/regression-reader-head-into-maps.prof")[..],
    ] {
        match import_bytes(b, dir.path(), Default::default()) {
            Ok((out, st)) => {
                assert!(st.samples > 0, "an import without samples must be an error");
                std::fs::remove_file(out).unwrap();
            }
            Err(e) => assert!(e.contains("p.prof"), "the error names the file: {e}"),
        }
    }
}

/// Found by the `import_bin` fuzz target in the reader itself (after a
/// layout is detected, the samples walked): a head past the maps' start.
#[test]
fn the_reader_reports_a_sample_head_running_into_the_maps() {
    use tbrw_elf_profile::Opened;
    use tbrw_elf_profile::{detect, Next, ProfileReader, SampleHead};
    let b = include_bytes!("../../fuzz/corpus/profiles/regression-reader-head-into-maps.prof");
    let path = "r.prof";
    let size = Some(b.len() as u64);
    let opened = Opened { prefix: b.to_vec(), rest: Box::new(std::io::empty()), compressed: false, size };
    let found = detect(&opened, path, None).expect("a layout fits these bytes");
    let mut r = ProfileReader::new(&b[..], path, size, &found);
    let mut s = SampleHead::default();
    let mut samples = 0;
    let end = loop {
        match r.next_sample(&mut s) {
            Ok(Next::Sample) => samples += 1,
            other => break other,
        }
    };
    assert!(samples < 10, "{samples}");
    if let Err(e) = end {
        assert!(e.to_string().contains("r.prof"), "{e}");
    }
}
