//! Importing sampler profiles: plain, bzip2, cut short; binding and
//! reporting them; exporting them back; and every kind of bad input.

mod common;

use common::*;
use tbrw::*;
use tbrw_elf_profile::Magic;
use tbrw_import::elf_profile::{ImportOptions, ProfileOptions};
use tbrw_query::report::{self, Key, ReportOptions};
use tbrw_query::By;

fn import(bytes: &[u8], dir: &std::path::Path) -> (std::path::PathBuf, tbrw_import::elf_profile::ImportStats) {
    let input = dir.join("prof.bin");
    std::fs::write(&input, bytes).unwrap();
    let out = dir.join("prof.tb5");
    let stats = import_profile_file(&input, &out, &ImportOptions::default(), &ProfileOptions::default()).unwrap();
    (out, stats)
}

/// Per-module counts from a report, by module index.
fn by_module(path: &std::path::Path) -> (Vec<u64>, u64) {
    let f = Tb5File::open(path).unwrap();
    let r =
        report::run(&f, &ReportOptions::new(Default::default(), &[By::Module]), &mut Vec::new(), &mut |_| {}).unwrap();
    let n = f.modules().unwrap().unwrap().len() as usize;
    let mut counts = vec![0; n];
    let mut unknown = 0;
    for row in r.rows {
        match row.key {
            Key::Module { index, .. } => counts[index as usize] = row.samples,
            Key::UnknownModule => unknown = row.samples,
            other => panic!("a module report has a row for {other:?}"),
        }
    }
    (counts, unknown)
}

#[test]
fn plain_and_bzip2_profiles_import_bind_and_report_what_the_pcs_say() {
    let (bytes, per_map, none) = profile(Magic::Current, 3000, 7);
    for compressed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let input = if compressed { bzip2(&bytes) } else { bytes.clone() };
        let (out, stats) = import(&input, dir.path());
        assert_eq!(stats.compressed, compressed);
        assert_eq!((stats.samples, stats.dropped, stats.announced), (3000, 0, 3000));
        let f = Tb5File::open(&out).unwrap();
        f.verify().unwrap();
        // The modules are the VM maps; the executable's maps are marked IS_EXE.
        let mods: Vec<_> = f.modules().unwrap().unwrap().iter().map(|m| f.resolve(m.unwrap()).unwrap()).collect();
        assert_eq!(mods.len(), maps().len());
        assert!(mods[..3].iter().all(|m| m.flags.contains(ModuleFlags::IS_EXE) && m.name.as_deref() == Some("prog")));
        assert!(!mods[4].flags.contains(ModuleFlags::IS_EXE));
        assert_eq!((mods[3].name.as_deref(), mods[9].name.as_deref()), (Some("[heap]"), None));
        assert!(mods.iter().all(|m| m.associated_pid == 1));
        let (counts, unknown) = by_module(&out);
        assert_eq!(counts, per_map);
        assert_eq!(unknown, none);
        assert_eq!(stats.records, per_map.iter().sum::<u64>() + none);
        // Stored binds give the same counts.
        bind::dobind(&out, 0).unwrap();
        assert_eq!(by_module(&out), (per_map.clone(), none));
        // The process is named after the executable.
        let opts = ReportOptions::new(Default::default(), &[By::Process]);
        let r = report::run(&Tb5File::open(&out).unwrap(), &opts, &mut Vec::new(), &mut |_| {}).unwrap();
        assert!(matches!(&r.rows[0].key, Key::Process { pid: 1, name: Some(n), .. } if n == "prog"), "{:?}", r.rows[0]);
        assert_eq!(r.rows[0].key.to_string(), "prog (pid 1)");
    }
}

#[test]
fn a_profile_cut_short_keeps_every_whole_sample() {
    let (bytes, _, _) = profile(Magic::Power, 500, 3);
    let dir = tempfile::tempdir().unwrap();
    let full = Tb5File::open(import(&bytes, dir.path()).0).unwrap();
    let full_records: Vec<Vec<u8>> =
        full.stream(0).unwrap().data().unwrap().unwrap().records().map(<[u8]>::to_vec).collect();
    // Cut in the middle of the last samples, and exactly between samples.
    for cut in [bytes.len() - 1, bytes.len() - 13, bytes.len() - 200] {
        let d = tempfile::tempdir().unwrap();
        let (out, stats) = import(&bytes[..cut], d.path());
        assert!(stats.samples < 500 && stats.dropped == 500 - stats.samples, "{stats:?}");
        let f = Tb5File::open(&out).unwrap();
        f.verify().unwrap();
        let recs: Vec<Vec<u8>> = f.stream(0).unwrap().data().unwrap().unwrap().records().map(<[u8]>::to_vec).collect();
        assert_eq!(recs, full_records[..recs.len()], "cut at {cut}");
        assert!(stats.samples >= 500 - 7, "{stats:?}");
    }
    // A header announcing more samples than there are, ending cleanly.
    let mut b = bytes.clone();
    b[20..28].copy_from_slice(&900u64.to_le_bytes());
    let d = tempfile::tempdir().unwrap();
    let (_, stats) = import(&b, d.path());
    assert_eq!((stats.samples, stats.dropped, stats.partial_bytes), (500, 400, 0));
}

#[test]
fn every_magic_types_the_value_and_export_gives_the_profile_back() {
    for (magic, t) in [
        (Magic::Custom, 0x4003u16),
        (Magic::Current, 0x4001),
        (Magic::Voltage, 0x4002),
        (Magic::Power, desc_type::POWER),
    ] {
        let (bytes, _, _) = profile(magic, 200, 11);
        let dir = tempfile::tempdir().unwrap();
        let (out, _) = import(&bytes, dir.path());
        let f = Tb5File::open(&out).unwrap();
        let layout = f.stream(0).unwrap().layout().unwrap().unwrap();
        assert_eq!(layout.record_size(), 56, "interpolated time, sample, pc, pid, tid, cputime, its delta, value");
        assert!(layout.find(t, None).is_some(), "{magic:?}");
        let back = dir.path().join("back.bin");
        assert_eq!(export_profile(&out, 0, &back, None).unwrap(), 200);
        assert!(std::fs::read(&back).unwrap() == bytes, "{magic:?}: the round trip changed the profile");
    }
}

fn expect_error(bytes: &[u8], what: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.bin");
    std::fs::write(&input, bytes).unwrap();
    let out = dir.path().join("out.tb5");
    let e = import_profile_file(&input, &out, &ImportOptions::default(), &ProfileOptions::default())
        .expect_err(what)
        .to_string();
    assert!(e.contains("bad.bin") && e.contains("byte"), "{what}: {e}");
    assert!(!out.exists(), "{what}: output written");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "{what}: temporary files left");
    e
}

#[test]
fn bad_profiles_give_one_clear_error_and_no_output() {
    let (good, _, _) = profile(Magic::Current, 10, 5);
    let mut b = good.clone();
    b[0] = 7;
    assert!(expect_error(&b, "magic").contains("magic number 0x7"));
    let mut b = good.clone();
    b[28..32].copy_from_slice(&1_000_000u32.to_le_bytes());
    assert!(expect_error(&b, "map count").contains("cannot fit"));
    let mut b = good.clone();
    b[32 + 16..32 + 272].fill(b'x'); // the first label: 256 bytes, no NUL
    assert!(expect_error(&b, "label terminator").contains("no NUL"));
    let mut b = good.clone();
    b[32 + 16] = 0xFF;
    b[32 + 17] = 0xFE;
    assert!(expect_error(&b, "label utf-8").contains("not UTF-8"));
    assert!(expect_error(&[], "empty").contains("empty"));
    assert!(expect_error(&good[..20], "short header").contains("header"));
    assert!(expect_error(&good[..32 + 100], "short maps").contains("VM maps of 272 bytes cannot fit"));
    // Compressed, the map count cannot be checked against the size: the data runs out instead.
    let mut b = good.clone();
    b[28..32].copy_from_slice(&1_000_000u32.to_le_bytes());
    assert!(expect_error(&bzip2(&b), "compressed map count").contains("VM map"));
    // Garbage after a valid bzip2 magic.
    assert!(!expect_error(b"BZh9garbage that is not bzip2 data", "bad bzip2").is_empty());
    // A directory.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.tb5");
    let e = import_profile_file(dir.path(), &out, &ImportOptions::default(), &ProfileOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("directory"), "{e}");
    assert!(!out.exists());
}
