//! The report by address made from its counts alone (`report/addresses.rs`)
//! against the grouping every other report goes through (a key per
//! distinct address, merged by name: `--by address,address` takes it): the
//! same rows with the same samples, on random samples of module records
//! that share file names and load addresses (a library in several
//! processes), a record without a name, and addresses in no module; its
//! rows in the report's order; and its warnings one line per kind.

use std::collections::BTreeMap;

use proptest::prelude::*;
use tbrw::*;
use tbrw_query::file_symbols::{FileSymbols, SymbolOptions};
use tbrw_query::report::{self, Key, ReportOptions};
use tbrw_query::By;
use tbrw_query::{Unknown, Warning};

fn module(pid: u32, path: Option<&str>, load_address: u64, first: bool) -> Module {
    let mut flags = ModuleFlags::LOADED;
    if first {
        flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
    }
    Module {
        associated_pid: pid,
        flags,
        segment_type: processor_mode::BIT64,
        load_address,
        length: 0x1000,
        unload_tsc: NEVER_UNLOADED,
        name: path.map(|p| p.rsplit('/').next().unwrap().to_owned()),
        path: path.map(str::to_owned),
        ..Default::default()
    }
}

/// Three processes: `libshared.so` in each (two at one address), a
/// library of its own in the first, a record without a name in the second.
fn modules() -> Vec<Module> {
    vec![
        module(1, Some("/nowhere/app"), 0x1000_0000, true),
        module(1, Some("/nowhere/libshared.so"), 0x2000_0000, false),
        module(1, Some("/nowhere/libown.so"), 0x3000_0000, false),
        module(2, Some("/nowhere/app"), 0x1000_0000, true),
        module(2, Some("/elsewhere/libshared.so"), 0x2000_0000, false),
        module(2, None, 0x4000_0000, false),
        module(3, Some("/nowhere/app"), 0x1000_0000, true),
        module(3, Some("/nowhere/libshared.so"), 0x2800_0000, false),
    ]
}

fn write(path: &std::path::Path, samples: &[(u32, u64)]) {
    let entry = |t: u16, size: u32| DescEntry { desc_type: t, data_size: size, ..Default::default() };
    let mut w = Tb5Writer::create(path).unwrap();
    w.write_modules(&modules()).unwrap();
    let mut s = w
        .stream(0)
        .unwrap()
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
        .unwrap()
        .data_descriptor(&[entry(desc_type::IP, 8), entry(desc_type::PID, 4), entry(desc_type::TID, 4)])
        .unwrap();
    {
        let mut d = s.data().unwrap();
        for &(pid, pc) in samples {
            let mut b = pc.to_le_bytes().to_vec();
            b.extend(pid.to_le_bytes());
            b.extend(pid.to_le_bytes());
            d.add(&b).unwrap();
        }
        d.done().unwrap();
    }
    s.finish().unwrap();
    w.close().unwrap();
}

/// A sample: a process and an address in one of its modules' first
/// bytes (few distinct, so that counts repeat), or in none.
fn sample() -> impl Strategy<Value = (u32, u64)> {
    let base = prop_oneof![
        Just(0x1000_0000u64),
        Just(0x2000_0000),
        Just(0x2800_0000),
        Just(0x3000_0000),
        Just(0x4000_0000),
        Just(0x5000_0000)
    ];
    (1u32..4, base, 0u64..24).prop_map(|(pid, b, off)| (pid, b + off * 0x10))
}

fn rows(by: &[By], file: &Tb5File) -> report::Report {
    report::run(file, &ReportOptions::new(Default::default(), by), &mut Vec::new(), &mut |_| {}).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_rows_made_from_counts_are_the_grouping_by_address(samples in proptest::collection::vec(sample(), 1..300)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tb5");
        write(&path, &samples);
        let file = Tb5File::open(&path).unwrap();
        let compact = rows(&[By::Address], &file);
        let keyed = rows(&[By::Address, By::Address], &file);
        prop_assert_eq!(compact.samples, samples.len() as u64);
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        for r in &keyed.rows {
            let Key::Combined { parts } = &r.key else { panic!("{:?}", r.key) };
            prop_assert_eq!(&parts[0], &parts[1]);
            *want.entry(serde_json::to_string(&parts[0]).unwrap()).or_default() += r.samples;
        }
        let got: BTreeMap<String, u64> =
            compact.rows.iter().map(|r| (serde_json::to_string(&r.key).unwrap(), r.samples)).collect();
        prop_assert_eq!(got.len(), compact.rows.len(), "each key once");
        prop_assert_eq!(got, want);
        // Most samples first, then by the label as printed.
        for w in compact.rows.windows(2) {
            let order = w[1].samples.cmp(&w[0].samples).then_with(|| w[0].key.to_string().cmp(&w[1].key.to_string()));
            prop_assert_eq!(order, std::cmp::Ordering::Less, "{} then {}", w[0].key, w[1].key);
        }
    }
}

#[test]
fn warnings_are_one_value_per_kind_or_one_per_file_when_verbose() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.tb5");
    write(&path, &[(1, 0x1000_0010), (1, 0x2000_0010), (1, 0x3000_0010), (2, 0x2000_0010)]);
    let file = Tb5File::open(&path).unwrap();
    let modules = tbrw_query::stream::modules(&file).unwrap();
    for verbose in [false, true] {
        let mut syms = FileSymbols::new(&file, &modules, &SymbolOptions::default()).unwrap().verbose(verbose);
        let mut warn = Vec::new();
        for m in [0, 1, 2, 4, 1] {
            syms.symbolize(Some(m), modules[m as usize].load_address);
        }
        assert!(warn.is_empty(), "nothing before take_warnings");
        syms.take_warnings(&mut warn);
        if verbose {
            // The list asked for: a value per module file.
            assert_eq!(warn.len(), 4, "{warn:?}");
            for w in &warn {
                let Warning::ModuleUnusable(m) = w else { panic!("{w:?}") };
                assert!(matches!(m.why, Unknown::NotFound { .. }), "{m:?}");
                assert!(w.to_string().ends_with("its samples are reported unresolved"), "{w}");
            }
            assert!(warn[0].to_string().starts_with("/elsewhere/libshared.so: file not found (tried "), "{warn:?}");
        } else {
            // One value for the kind: the count, the examples and the whole list.
            let [Warning::ModulesUnusable(s)] = warn.as_slice() else { panic!("{warn:?}") };
            assert_eq!((s.count(), s.not_found()), (4, true));
            assert_eq!(s.modules[0].module, "/elsewhere/libshared.so");
            assert_eq!(warn[0].to_string(), "4 modules' files not found, e.g. libshared.so, app, libown.so, ...");
        }
        // Handed over once.
        let mut again = Vec::new();
        syms.take_warnings(&mut again);
        assert!(again.is_empty());
    }
}
