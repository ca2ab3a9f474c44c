//! `--time` on records in time order is a seek (docs/EXPORT.md "Memory"):
//! the walk reads only the cut's records ([`Walk::span`]), and every
//! answer is the one a full filtered scan gives, on streams in time order
//! and not, with every weight.

use proptest::prelude::*;
use tbrw::*;
use tbrw_query::time::{StreamTimes, TimeRange};
use tbrw_query::{Binding, Filters, Query, QueryError, Walk, Weight};
use tbrw_schema::fields::{CPUTIME, CPUTIME_DELTA};

/// A record: ip, time, tid, cumulative CPU time, CPU time delta.
#[derive(Clone, Copy, Debug)]
struct Rec {
    ip: u64,
    time: u64,
    tid: u32,
    cpu: u64,
    delta: u64,
}

fn write(path: &std::path::Path, recs: &[Rec], time_field: bool) {
    let mut descs = vec![DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() }];
    if time_field {
        descs.push(DescEntry {
            desc_type: desc_type::TIME_STAMP,
            subtype: desc_subtype::TS_NANOSECONDS,
            data_size: 8,
            ..Default::default()
        });
    }
    descs.push(DescEntry { desc_type: desc_type::TID, data_size: 4, ..Default::default() });
    descs.push(DescEntry { desc_type: CPUTIME, data_size: 8, ..Default::default() });
    descs.push(DescEntry { desc_type: CPUTIME_DELTA, data_size: 8, ..Default::default() });
    let mut w = Tb5Writer::create(path).unwrap();
    let mut s = w.stream(0).unwrap().info(&StreamInfo::default()).unwrap().data_descriptor(&descs).unwrap();
    {
        let mut d = s.data().unwrap();
        for r in recs {
            let mut b = r.ip.to_le_bytes().to_vec();
            if time_field {
                b.extend(r.time.to_le_bytes());
            }
            b.extend(r.tid.to_le_bytes());
            b.extend(r.cpu.to_le_bytes());
            b.extend(r.delta.to_le_bytes());
            d.add(&b).unwrap();
        }
        d.done().unwrap();
    }
    s.finish().unwrap();
    w.close().unwrap();
}

/// A sample that passed: index, ip, weight bits, cpu time.
type Passed = (u64, u64, u64, Option<u64>);

/// The samples that passed, and the records the walk reads.
fn walk(file: &Tb5File, query: &Query) -> Result<(Vec<Passed>, u64), QueryError> {
    let w = Walk::open(file, query, Binding::IfBindable { needed: false })?.with_cpu_time()?;
    let mut out = Vec::new();
    // In parts, as the reports count: the result may not depend on them.
    let parts = w.in_parts(
        3,
        &mut |_| {},
        |range, progress| {
            let mut v = Vec::new();
            w.pass(range, progress, |s| {
                v.push((s.index, u64::from_le_bytes(s.record[..8].try_into().unwrap()), s.weight.to_bits(), s.cpu_time))
            })
            .map(|_| v)
        },
        |a, b| match (a, b) {
            (Ok(mut a), Ok(b)) => {
                a.extend(b);
                Ok(a)
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        },
    )?;
    out.extend(parts);
    // A single pass over everything gives the same.
    let mut single = Vec::new();
    w.pass(0..w.records(), &mut |_| {}, |s| single.push(s.index))?;
    assert_eq!(single, out.iter().map(|x| x.0).collect::<Vec<_>>());
    Ok((out, w.span().end - w.span().start))
}

/// The reference: every record read, filtered by the plain rule.
fn reference(recs: &[Rec], time_field: bool, f: &Filters, weight: Weight) -> Vec<Passed> {
    let mut last = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (k, r) in recs.iter().enumerate() {
        let before = last.insert(r.tid, r.cpu).unwrap_or(r.cpu);
        let cum = r.cpu.saturating_sub(before);
        let t = if time_field { r.time } else { k as u64 };
        let (lo, hi) = f.time.unwrap_or((0, u64::MAX));
        if t < lo || t >= hi || f.tid.is_some_and(|x| x != r.tid) {
            continue;
        }
        let w = match weight {
            Weight::Samples => 1.0,
            _ => r.delta as f64,
        };
        // The CPU time a walk hands out is the delta field when there is one.
        out.push((k as u64, r.ip, w.to_bits(), Some(r.delta)));
        let _ = cum;
    }
    out
}

fn recs(times: &[u64], tids: &[u32]) -> Vec<Rec> {
    let mut cpu = [0u64; 4];
    times
        .iter()
        .zip(tids.iter().cycle())
        .enumerate()
        .map(|(k, (&time, &tid))| {
            cpu[tid as usize % 4] += 10 + k as u64 % 7;
            Rec { ip: 0x1000 + k as u64, time, tid, cpu: cpu[tid as usize % 4], delta: 3 + k as u64 % 5 }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_seek_answers_as_a_full_scan(
        mut times in prop::collection::vec(0u64..400, 1..300),
        sorted in any::<bool>(),
        time_field in any::<bool>(),
        tids in prop::collection::vec(1u32..4, 1..4),
        lo in 0u64..450,
        len in 0u64..300,
        tid in prop::option::of(1u32..4),
        weight in prop::sample::select(vec![Weight::Samples, Weight::Cputime]),
    ) {
        if sorted {
            times.sort_unstable();
        }
        let rs = recs(&times, &tids);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.tb5");
        write(&path, &rs, time_field);
        let file = Tb5File::open(&path).unwrap();
        let hi = if len == 299 { u64::MAX } else { lo + len };
        let filters = Filters { time: Some((lo, hi)), tid, ..Filters::default() };
        let query = Query { filters: filters.clone(), weight, ..Query::default() };
        let (got, read) = walk(&file, &query).unwrap();
        prop_assert_eq!(&got, &reference(&rs, time_field, &filters, weight));
        let ordered = !time_field || times.windows(2).all(|w| w[0] <= w[1]);
        let data = file.stream(0).unwrap().data().unwrap().unwrap();
        prop_assert_eq!(data.time_ordered(), time_field && ordered);
        if ordered {
            // Only the cut's records are read.
            let inside = rs.iter().enumerate().filter(|(k, r)| {
                let t = if time_field { r.time } else { *k as u64 };
                t >= lo && t < hi
            });
            prop_assert_eq!(read, inside.count() as u64);
        } else {
            prop_assert_eq!(read, rs.len() as u64);
        }
        // Percentages resolve on the first and last times alike.
        let times_of = StreamTimes::of(&file, 0).unwrap().unwrap();
        let ts: Vec<u64> = if time_field { times.clone() } else { (0..rs.len() as u64).collect() };
        prop_assert_eq!((times_of.first, times_of.last), (*ts.iter().min().unwrap(), *ts.iter().max().unwrap()));
        let r: TimeRange = "10%..40%".parse().unwrap();
        let cut = r.resolve("s.tb5", 0, Some(&times_of)).unwrap();
        let q = Query { filters: Filters { time: Some(cut), ..Filters::default() }, ..Query::default() };
        let (got, _) = walk(&file, &q).unwrap();
        prop_assert_eq!(got, reference(&rs, time_field, &q.filters, Weight::Samples));
    }
}

#[test]
fn a_cumulative_cpu_time_reads_every_record_and_weighs_as_a_full_scan() {
    // The first sample of a thread in the cut weighs the CPU time since
    // its previous sample, before the cut: the walk cannot seek.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.tb5");
    let descs = [
        DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() },
        DescEntry { desc_type: desc_type::TIME_STAMP, data_size: 8, ..Default::default() },
        DescEntry { desc_type: CPUTIME, data_size: 8, ..Default::default() },
    ];
    let mut w = Tb5Writer::create(&path).unwrap();
    let mut s = w.stream(0).unwrap().info(&StreamInfo::default()).unwrap().data_descriptor(&descs).unwrap();
    {
        let mut d = s.data().unwrap();
        for k in 0..100u64 {
            d.add(&[k.to_le_bytes(), (k * 10).to_le_bytes(), (k * k).to_le_bytes()].concat()).unwrap();
        }
        d.done().unwrap();
    }
    s.finish().unwrap();
    w.close().unwrap();
    let file = Tb5File::open(&path).unwrap();
    let q = |weight| Query {
        filters: Filters { time: Some((500, 600)), ..Filters::default() },
        weight,
        ..Query::default()
    };
    let cut = Walk::open(&file, &q(Weight::Samples), Binding::IfBindable { needed: false }).unwrap();
    assert_eq!(cut.span(), 50..60, "samples weigh 1: a seek");
    assert_eq!(cut.with_cpu_time().unwrap().span(), 0..100, "the CPU time each sample hands out is cumulative");
    let w = Walk::open(&file, &q(Weight::Cputime), Binding::IfBindable { needed: false }).unwrap();
    assert_eq!(w.span(), 0..100);
    let mut weights = Vec::new();
    w.pass(0..w.records(), &mut |_| {}, |s| weights.push(s.weight)).unwrap();
    assert_eq!(weights, (50..60u64).map(|k| (k * k - (k - 1) * (k - 1)) as f64).collect::<Vec<_>>());
}
