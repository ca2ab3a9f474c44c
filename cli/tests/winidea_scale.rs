//! The winIDEA import is linear: thousands of STATISTICS columns, and
//! thousands of contexts with a row each under `--check`, import in well
//! under the time the quadratic searches took (tens of seconds); and a
//! `.BIN` whose size is a lie is not trusted for a reservation.

mod common;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use common::import_winidea_file;

/// A loose bound: the quadratic versions took 40+ s on these inputs.
const LIMIT: Duration = Duration::from_secs(20);

fn header() -> String {
    "* INFO %TOTAL_TIME%\n100\n\n* HANDLE(Functions) %HANDLE%,%NAME%,%VALUE%\n00000000,main,\n\n".to_owned()
}

#[test]
fn many_statistics_columns_are_found_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let cols = 10_000;
    let mut t = header();
    t.push_str("* STATISTICS(Functions) %HANDLE%,%VALUE%,%COUNT%");
    for i in 0..cols {
        write!(t, ",%T.X{i}%").unwrap();
    }
    t.push('\n');
    for _ in 0..100 {
        t.push_str("00000000,,0");
        t.push_str(&",1".repeat(cols));
        t.push('\n');
    }
    let p = dir.path().join("cols.txt");
    std::fs::write(&p, t).unwrap();
    let start = Instant::now();
    let stats = import_winidea_file(&p, None, None, &dir.path().join("o.tb5"), true).unwrap();
    assert!(start.elapsed() < LIMIT, "{:?}", start.elapsed());
    // COUNT agrees (no call); the T.X columns are not figures a timeline gives.
    assert_eq!(stats.agree, 100);
    // One entry per column name, each with its 100 rows.
    assert_eq!(stats.unchecked.len(), cols);
    assert!(stats.unchecked.iter().all(|u| u.count == 100), "{:?}", &stats.unchecked[..3]);
}

#[test]
fn many_contexts_are_found_by_name_and_checked_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000;
    let mut t = header();
    t.push_str("* CONTEXTS %HANDLE%,%NAME%\n");
    for i in 0..n {
        writeln!(t, "{i:08X},ctx{i}").unwrap();
    }
    for i in 0..n {
        writeln!(t, "\n* STATISTICS(Functions) CONTEXT(ctx{i}) %HANDLE%,%VALUE%,%COUNT%\n00000000,,0").unwrap();
    }
    let p = dir.path().join("ctx.txt");
    std::fs::write(&p, t).unwrap();
    let start = Instant::now();
    let checked = import_winidea_file(&p, None, None, &dir.path().join("a.tb5"), true).unwrap();
    assert!(start.elapsed() < LIMIT, "{:?}", start.elapsed());
    assert_eq!(checked.agree, n as u64);
    let unchecked = import_winidea_file(&p, None, None, &dir.path().join("b.tb5"), false).unwrap();
    assert_eq!((unchecked.agree, unchecked.differences.len()), (0, 0), "no check without --check");
}

#[test]
fn a_sparse_bin_claiming_gigabytes_reserves_only_what_was_read() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.txt");
    std::fs::write(&p, header()).unwrap();
    let bin = dir.path().join("x.BIN");
    // 24 GiB, all holes but the first entry, whose event type (9) is no
    // type: the import stops there. A reservation by the file's size (1 G
    // entries) would have aborted the process before reading a byte.
    let mut f = std::fs::File::create(&bin).unwrap();
    let mut first = [0u8; 24];
    first[4..8].copy_from_slice(&9u32.to_le_bytes());
    f.write_all(&first).unwrap();
    f.set_len(24 << 30).unwrap();
    drop(f);
    let version = Some(tbrw_import::winidea::BinVersion::V1_1);
    let e = import_winidea_file(&p, Some(&bin), version, &dir.path().join("o.tb5"), false).unwrap_err().to_string();
    assert!(e.contains("byte 4: event type 9"), "{e}");
}

#[test]
fn a_line_longer_than_any_export_line_is_refused_without_being_held() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("long.txt");
    let mut t = String::from("* INFO %");
    t.push_str(&"T".repeat(tbrw_import::winidea::MAX_LINE + 10));
    t.push_str("%\n100\n");
    std::fs::write(&p, t).unwrap();
    let e = import_winidea_file(&p, None, None, &dir.path().join("o.tb5"), false).unwrap_err().to_string();
    assert!(e.contains("line 1 (byte 0) is longer than") && e.contains("long.txt"), "{}", &e[..e.len().min(500)]);
    assert!(e.len() < 400, "the message quotes the line briefly: {} bytes", e.len());
    assert!(!dir.path().join("o.tb5").exists());
}
