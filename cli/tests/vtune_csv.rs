//! VTune CSV export: every file written passes the strict checker, values
//! are right, and streams without a usable clock are refused clearly.

mod common;

use std::path::{Path, PathBuf};

use common::export_vtune_csv;
use common::*;
use tbrw::*;
use tbrw_elf_profile::Magic;
use tbrw_export::vtune_csv::CsvOptions;
use tbrw_import::elf_profile::ImportOptions;

fn sample() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/data/sample.tb5"))
}

fn base_file(path: &Path, streams: &[(StreamInfo, Vec<DescEntry>, Vec<u8>)]) {
    let mut w = Tb5Writer::create(path).unwrap();
    w.write_hardware(&System::default()).unwrap();
    w.write_software(&Software {
        host: Some(Host { name: Some("octagon53".into()), ..Default::default() }),
        ..Default::default()
    })
    .unwrap();
    w.write_version_info(&VersionInfo { sample_file_version: 16, ..Default::default() }).unwrap();
    w.write_modules(&[]).unwrap();
    for (info, descs, data) in streams {
        let mut s = w.next_stream().unwrap().info(info).unwrap().data_descriptor(descs).unwrap();
        s.events(&[]).unwrap();
        let mut d = s.data().unwrap();
        d.add(data).unwrap();
        d.done().unwrap();
        s.finish().unwrap();
    }
    w.close().unwrap();
}

use tbrw_schema::descriptor::field as e;

#[test]
fn legacy_samples_become_cumulative_event_counts() {
    let dir = tempfile::tempdir().unwrap();
    let r = export_vtune_csv(&sample(), dir.path(), &CsvOptions::default()).unwrap();
    assert_eq!(r.files.len(), 2, "{:?}", r.files);
    assert_eq!(r.files[0].file_name().unwrap(), "sample_run-s0-hostname-perfbox.csv");
    // Its samples per module, as cumulative counts per time bucket.
    assert_eq!(r.files[1].file_name().unwrap(), "sample_run-s0-modules-hostname-perfbox.csv");
    assert!(check_vtune_csv(&r.files[1]) > 1);
    assert_eq!(check_vtune_csv(&r.files[0]), 3000);
    // Stream 1's nanosecond time stamp names no clock: left out, and why.
    assert_eq!(r.skipped.len(), 1);
    assert!(r.skipped[0].1.contains("does not say which clock"), "{:?}", r.skipped);
    let text = std::fs::read_to_string(&r.files[0]).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), "tsc.RDTSC,CPU_CLK_UNHALTED.THREAD.COUNT,INST_RETIRED.ANY.COUNT,pid,tid");
    let rows: Vec<Vec<u64>> = lines.map(|l| l.split(',').map(|c| c.parse().unwrap()).collect()).collect();
    // Samples alternate between the two events, each worth sav = 2000003.
    assert_eq!(&rows[0][1..3], &[2000003, 0]);
    assert_eq!(&rows[1][1..3], &[2000003, 2000003]);
    assert_eq!(&rows[2999][1..3], &[1500 * 2000003, 1500 * 2000003]);
    assert!(rows.windows(2).all(|w| w[0][0] < w[1][0]), "tsc increases");
    // --hostname wins over the file's.
    let d2 = tempfile::tempdir().unwrap();
    let r = export_vtune_csv(
        &sample(),
        d2.path(),
        &CsvOptions { hostname: Some("lab-7".into()), stream: Some(0), clock: None },
    )
    .unwrap();
    assert!(r.files[0].ends_with("sample_run-s0-hostname-lab-7.csv"));
    // Asking for the stream that cannot be exported is an error that says why.
    let e = export_vtune_csv(&sample(), d2.path(), &CsvOptions { hostname: None, stream: Some(1), clock: None })
        .unwrap_err()
        .to_string();
    assert!(e.contains("stream 1") && e.contains("clock"), "{e}");
}

#[test]
fn instantaneous_and_cumulative_values_with_pid_and_tid() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("power.tb5");
    let mut data = Vec::new();
    for i in 0..100u64 {
        data.extend_from_slice(&(1_000_000 + i * 2900).to_le_bytes()); // tsc
        data.extend_from_slice(&(1.5 + i as f64 / 8.0).to_bits().to_le_bytes()); // current (A)
        data.extend_from_slice(&(i * 1000).to_le_bytes()); // cputime
        data.extend_from_slice(&42u32.to_le_bytes());
        data.extend_from_slice(&(43 + (i % 2) as u32).to_le_bytes());
    }
    base_file(
        &f,
        &[(
            StreamInfo {
                stream_type: stream_type::SAMPLING,
                comment: Some("board power".into()),
                ..Default::default()
            },
            vec![
                e(desc_type::TIME_STAMP, desc_subtype::TSC, 8, "tsc"),
                e(0x4001, 0, 8, "current"),
                e(0x4000, 0, 8, "cputime"),
                e(desc_type::PID, 0, 4, "pid"),
                e(desc_type::TID, 0, 4, "tid"),
            ],
            data,
        )],
    );
    let r = export_vtune_csv(&f, &dir.path().join("out"), &CsvOptions::default()).unwrap();
    let p = &r.files[0];
    assert_eq!(p.file_name().unwrap(), "board_power-s0-hostname-octagon53.csv");
    assert_eq!(check_vtune_csv(p), 100);
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), "tsc.RDTSC,current.INST,cputime.COUNT,pid,tid");
    assert_eq!(lines.next().unwrap(), "1000000,1.5,0,42,43");
    assert_eq!(lines.next().unwrap(), "1002900,1.625,1000,42,44");
}

#[test]
fn streams_with_a_start_and_an_end_become_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("tasks.tb5");
    let mut data = Vec::new();
    for i in 0..20u64 {
        let start = 1_700_000_000_000_000_000 + i * 1_000_000;
        data.extend_from_slice(&start.to_le_bytes());
        data.extend_from_slice(&(start + 500_000 + i).to_le_bytes());
        data.extend_from_slice(&9u32.to_le_bytes());
        data.extend_from_slice(&(100 + i as u32).to_le_bytes());
    }
    base_file(
        &f,
        &[(
            StreamInfo { stream_type: stream_type::CUSTOM, comment: Some("tasks".into()), ..Default::default() },
            vec![
                e(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, "start_realtime_ns"),
                e(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, "end_realtime_ns"),
                e(desc_type::PID, 0, 4, "pid"),
                e(desc_type::TID, 0, 4, "tid"),
            ],
            data,
        )],
    );
    let r = export_vtune_csv(&f, dir.path(), &CsvOptions::default()).unwrap();
    assert_eq!(check_vtune_csv(&r.files[0]), 20);
    let text = std::fs::read_to_string(&r.files[0]).unwrap();
    assert!(
        text.starts_with(
            "name,start_tsc.UTC,end_tsc,pid,tid\ntasks,2023-11-14 22:13:20.000000000,2023-11-14 22:13:20.000500000,9,100\n"
        ),
        "{text}"
    );
}

#[test]
fn interpolated_sampler_times_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _, _) = profile(Magic::Current, 50, 9);
    let input = dir.path().join("p.bin");
    std::fs::write(&input, bytes).unwrap();
    let tb5 = dir.path().join("p.tb5");
    let opts = ImportOptions { pid: None, hostname: Some("box".into()) };
    import_profile_file(&input, &tb5, &opts, &Default::default()).unwrap();
    let out = dir.path().join("csv");
    let e = export_vtune_csv(&tb5, &out, &CsvOptions::default()).unwrap_err();
    // Profiles without per-sample times get interpolated times, which name
    // no clock VTune knows: refused with the reason, as a variant the
    // command line names its `--clock` for (the library names no option).
    match &e {
        tbrw_export::ExportError::MissingOptions { hostname: false, clock, .. } => {
            assert!(clock.len() == 1 && clock[0].1.contains("time_since_run_start_interpolated"), "{clock:?}")
        }
        other => panic!("{other:?}"),
    }
    assert!(!e.to_string().contains("--"), "{e}");
    assert_eq!(std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0), 0, "nothing written");
}

#[test]
fn a_missing_host_name_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("nohost.tb5");
    let mut w = Tb5Writer::create(&f).unwrap();
    w.write_hardware(&System::default()).unwrap();
    w.write_software(&Software { application: Some(Application::default()), ..Default::default() }).unwrap();
    w.write_version_info(&VersionInfo { sample_file_version: 16, ..Default::default() }).unwrap();
    w.write_modules(&[]).unwrap();
    w.close().unwrap();
    let e = export_vtune_csv(&f, dir.path(), &CsvOptions::default()).unwrap_err();
    assert!(matches!(&e, tbrw_export::ExportError::MissingOptions { hostname: true, .. }), "{e:?}");
    assert!(e.to_string().contains("a host name (the file records none)"), "{e}");
}

#[test]
fn utc_is_date_and_time_text_with_every_nanosecond() {
    use tbrw_export::vtune_csv::utc_text;
    assert_eq!(utc_text(0), "1970-01-01 00:00:00.000000000");
    assert_eq!(utc_text(1_662_113_994_732_217_088), "2022-09-02 10:19:54.732217088");
    assert_eq!(utc_text(951_782_400_000_000_001), "2000-02-29 00:00:00.000000001", "a leap day of a 400-year");
    assert_eq!(utc_text(4_107_542_400_000_000_000), "2100-03-01 00:00:00.000000000", "2100 is no leap year");
    assert_eq!(utc_text(u64::MAX), "2554-07-21 23:34:33.709551615");
    // Intel's own example parses, and the checker reads back what the exporter writes.
    assert_eq!(parse_utc("2013-08-28 01:02:03.0004"), Some(1_377_651_723_000_400_000));
    let mut rng = Rng(0x5eed);
    for _ in 0..20_000 {
        let ns = rng.next();
        assert_eq!(parse_utc(&utc_text(ns)), Some(ns), "{ns}");
    }
    for bad in [
        "1662113994732217088",
        "2022-09-02T10:19:54",
        "2022-02-29 00:00:00",
        "2022-09-02 10:19:54.",
        "2022-09-02 24:00:00",
    ] {
        assert_eq!(parse_utc(bad), None, "{bad}");
    }
}

fn write_csv(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn the_checker_refuses_integer_utc_and_counts_that_decrease() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write_csv(
        dir.path(),
        "a-hostname-h.csv",
        "tsc.UTC,x.COUNT,tid\n2022-09-02 10:19:54.5,1,7\n2022-09-02 10:19:55,0,8\n2022-09-02 10:19:56,2,7\n",
    );
    assert_eq!(check_vtune_csv(&ok), 3, "cumulative per thread");
    let cases = [
        ("tsc.UTC,x.INST\n1662113994732217088,1\n", "no UTC time stamp"),
        ("tsc.RDTSC,x.COUNT\n5,3\n6,2\n", "not cumulative"),
        ("tsc.RDTSC,x.COUNT\n6,3\n5,4\n", "time goes back"),
        ("name,start_tsc.UTC,end_tsc\nt,2022-09-02 10:19:55,2022-09-02 10:19:54\n", "ends before it starts"),
    ];
    for (text, what) in cases {
        let p = write_csv(dir.path(), "b-hostname-h.csv", text);
        let e = std::panic::catch_unwind(|| check_vtune_csv(&p)).expect_err(text);
        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains(what), "{msg}");
    }
}

#[test]
fn a_winidea_import_with_clock_utc_passes_the_checker() {
    use tbrw_export::vtune_csv::Clock;
    let dir = tempfile::tempdir().unwrap();
    let txt = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/winidea/doc_completed.txt"));
    let out = dir.path().join("w.tb5");
    import_winidea_file(&txt, None, None, &out, false).unwrap();
    let r = export_vtune_csv(
        &out,
        &dir.path().join("csv"),
        &CsvOptions { hostname: Some("target".into()), clock: Some(Clock::Utc), ..Default::default() },
    )
    .unwrap();
    let mut rows = 0;
    for f in &r.files {
        rows += check_vtune_csv(f);
        // Session time from 0, labelled UTC: early 1970, as text.
        for row in std::fs::read_to_string(f).unwrap().lines().skip(1) {
            assert!(row.contains(",1970-01-01 00:") || row.starts_with("1970-01-01 00:"), "{row}");
        }
    }
    assert!(rows > 0);
}

#[test]
fn errors_quote_a_long_name_briefly() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("long.tb5");
    let long = "t".repeat(10_000);
    base_file(
        &f,
        &[(
            StreamInfo { stream_type: stream_type::CUSTOM, comment: Some("x".into()), ..Default::default() },
            vec![e(desc_type::TIME_STAMP, desc_subtype::TS_NANOSECONDS, 8, long.as_str()), e(0x4001, 0, 8, "v")],
            vec![0; 16],
        )],
    );
    let err = export_vtune_csv(&f, dir.path(), &CsvOptions::default()).unwrap_err().to_string();
    assert!(err.contains("does not say which clock") && err.contains("(10000 bytes)"), "{err}");
    assert!(err.len() < 400, "{} bytes", err.len());
    let err = export_vtune_csv(
        &sample(),
        dir.path(),
        &CsvOptions { hostname: Some(format!("a b{long}")), ..Default::default() },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("cannot be part of a file name") && err.len() < 400, "{err}");
}

/// A perf import's samples counted per module and time bucket: the last
/// row holds `tbrw report --by module`'s counts, every row is cumulative,
/// and the call-chain stream is refused with the reason, before any work.
#[test]
fn a_perf_import_counts_its_samples_per_module() {
    let dir = tempfile::tempdir().unwrap();
    let perf = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/matrix/perf.tb5"));
    let r = export_vtune_csv(&perf, dir.path(), &CsvOptions { stream: Some(0), ..Default::default() }).unwrap();
    assert_eq!(r.files.len(), 1, "{:?}", r.files);
    let name = r.files[0].file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.ends_with("-s0-modules-hostname-vm.csv"), "{name}");
    let rows = check_vtune_csv(&r.files[0]);
    let text = std::fs::read_to_string(&r.files[0]).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), "tsc.CLOCK_MONOTONIC_RAW,named.COUNT,libm.so.6.COUNT,_kernel.kallsyms_.COUNT");
    let table: Vec<Vec<u64>> = lines.map(|l| l.split(',').map(|c| c.parse().unwrap()).collect()).collect();
    assert_eq!(table.len(), rows);
    assert_eq!(&table[0][1..], &[0, 0, 0], "a first row of zeros");
    assert_eq!(&table[rows - 1][1..], &[539, 438, 10], "the report's counts per module");
    // Buckets of one millisecond of the 2 s recording.
    assert!(table.windows(2).all(|w| w[1][0] > w[0][0] && w[1][0] - w[0][0] <= 1_000_000));
    assert!((1900..2100).contains(&rows), "{rows} rows");
    let e = export_vtune_csv(&perf, &dir.path().join("s1"), &CsvOptions { stream: Some(1), ..Default::default() })
        .unwrap_err()
        .to_string();
    assert!(e.contains("stream 1") && e.contains("call-chain frames"), "{e}");
    assert!(!dir.path().join("s1").exists(), "refused before anything is written");
}

/// Time stamps at the top of the clock (a damaged or hostile file) give the
/// per-module counts without wrapping; the fuzzer found the overflow.
#[test]
fn module_counts_at_the_top_of_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("top.tb5");
    let mut data = Vec::new();
    for i in 0..50u64 {
        let t = if i == 49 { u64::MAX } else { u64::MAX - 1_000_000_007 + i * 20_000_000 };
        data.extend_from_slice(&t.to_le_bytes());
        data.extend_from_slice(&(0x1000 + i).to_le_bytes());
        data.extend_from_slice(&7u32.to_le_bytes());
    }
    base_file(
        &f,
        &[(
            StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() },
            vec![
                e(desc_type::TIME_STAMP, desc_subtype::TSC, 8, "tsc"),
                e(desc_type::IP, 0, 8, "ip"),
                e(desc_type::PID, 0, 4, "pid"),
            ],
            data,
        )],
    );
    let r = export_vtune_csv(&f, &dir.path().join("out"), &CsvOptions::default()).unwrap();
    let text = std::fs::read_to_string(&r.files[0]).unwrap();
    let last = text.lines().last().unwrap();
    assert!(last.ends_with(",50"), "every sample counted once: {last}");
    check_vtune_csv(&r.files[0]);
}
