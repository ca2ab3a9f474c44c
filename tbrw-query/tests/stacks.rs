//! `stacks::stacks` against the walk it aggregates: samples without call
//! stacks are counted by sorting in parts (`stacks/flat.rs`), and every
//! (labels, frames) must have the samples that walking them one by one
//! gives (`stacks::walk`), for each detail a frame keeps (address; by
//! function, a module whose file is not here one frame; by module) and
//! each set of labels kept, with and without a cpu field, on modules of
//! several processes, one without a name and addresses in none; and a
//! perf import's old stream of call-chain frames read as the stack table;
//! and the walk in parts (`stacks/parts.rs`) hands out the samples the
//! walk in order does, with the same tree.

use std::collections::BTreeMap;

use proptest::prelude::*;
use tbrw::*;
use tbrw_query::file_symbols::SymbolOptions;
use tbrw_query::stacks::{self, Detail, Frame, Keep, Labels, Names, Resolution, StackTree, ViewOptions};

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

/// (pid, tid, cpu, pc) per sample.
type Rec = (u32, u32, u32, u64);

fn write(path: &std::path::Path, recs: &[Rec], cpu: bool) {
    let entry = |t: u16, size: u32| DescEntry { desc_type: t, data_size: size, ..Default::default() };
    let mut descs = vec![entry(desc_type::IP, 8), entry(desc_type::PID, 4), entry(desc_type::TID, 4)];
    if cpu {
        descs.push(entry(desc_type::PROCESSOR_NUMBER, 4));
    }
    let mut w = Tb5Writer::create(path).unwrap();
    w.write_modules(&[
        module(1, Some("/nowhere/app"), 0x1000_0000, true),
        module(1, Some("/nowhere/liba.so"), 0x2000_0000, false),
        module(2, Some("/nowhere/app"), 0x1000_0000, true),
        module(2, None, 0x3000_0000, false),
    ])
    .unwrap();
    let mut s = w
        .stream(0)
        .unwrap()
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })
        .unwrap()
        .data_descriptor(&descs)
        .unwrap();
    {
        let mut d = s.data().unwrap();
        for &(pid, tid, c, pc) in recs {
            let mut b = pc.to_le_bytes().to_vec();
            b.extend(pid.to_le_bytes());
            b.extend(tid.to_le_bytes());
            if cpu {
                b.extend(c.to_le_bytes());
            }
            d.add(&b).unwrap();
        }
        d.done().unwrap();
    }
    s.finish().unwrap();
    w.close().unwrap();
}

fn rec() -> impl Strategy<Value = Rec> {
    let base = prop_oneof![Just(0x1000_0000u64), Just(0x2000_0000), Just(0x3000_0000), Just(0x5000_0000)];
    (1u32..3, 0u32..2, 0u32..3, base, 0u64..16).prop_map(|(pid, t, cpu, b, off)| (pid, pid * 10 + t, cpu, b + off * 8))
}

type Counted = BTreeMap<(Labels, Vec<Frame>), u64>;

/// What a walk of `detail` keeps, over `names` (by module, the module
/// table's load addresses).
fn resolution<'n>(names: &'n mut Names, modules: &[Module], detail: Detail) -> Resolution<'n> {
    match detail {
        Detail::Module => Resolution::modules(modules),
        d => names.resolution(d),
    }
}

/// What `stacks::stacks` aggregated.
fn aggregated(file: &Tb5File, keep: Keep, detail: Detail) -> Counted {
    let modules = tbrw_query::stream::modules(file).unwrap();
    let mut names = Names::new(file, &modules, Some(&SymbolOptions::default())).unwrap();
    let mut res = resolution(&mut names, &modules, detail);
    let st = stacks::stacks(file, &ViewOptions::default(), keep, &mut res, "a test", &mut |_| {}).unwrap();
    let mut out = Counted::new();
    for (key, t) in st.keys() {
        assert_eq!(t.weight, t.samples as f64);
        *out.entry((key.labels, st.frames(&key).collect())).or_default() += t.samples;
    }
    assert_eq!(out.values().sum::<u64>(), st.info.samples);
    out
}

/// The same from the samples walked one by one.
fn walked(file: &Tb5File, keep: Keep, detail: Detail) -> Counted {
    let modules = tbrw_query::stream::modules(file).unwrap();
    let mut names = Names::new(file, &modules, Some(&SymbolOptions::default())).unwrap();
    let mut res = resolution(&mut names, &modules, detail);
    let mut tree = StackTree::new();
    let mut out = Counted::new();
    stacks::walk(file, &ViewOptions::default(), "a test", &mut tree, &mut res, &mut |_| {}, &mut |s| {
        let labels = Labels {
            process: if keep.process { s.process } else { 0 },
            thread: if keep.thread { s.thread } else { 0 },
            cpu: if keep.cpu { s.cpu } else { None },
        };
        *out.entry((labels, s.frames().collect())).or_default() += 1;
        Ok(())
    })
    .unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn stacks_counted_apart_and_walked_in_parts_are_the_walks(recs in proptest::collection::vec(rec(), 1..200), cpu in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.tb5");
        write(&path, &recs, cpu);
        let file = Tb5File::open(&path).unwrap();
        for detail in [Detail::Address, Detail::Function, Detail::Module] {
            for (process, thread, cpu) in [(false, false, false), (true, false, false), (true, true, false), (true, true, true), (false, true, true)] {
                let keep = Keep { process, thread, cpu };
                prop_assert_eq!(aggregated(&file, keep, detail), walked(&file, keep, detail), "{:?} {:?}", detail, keep);
            }
            // And walked sample by sample in parts, as in order.
            let in_order = walked_in_order(&file, detail);
            for parts in [1, 2, 3, 5] {
                let in_parts = walked_in_parts(&file, detail, parts).expect("a stream without call stacks");
                prop_assert_eq!(&in_parts, &in_order, "{:?} in {} parts", detail, parts);
            }
        }
    }
}

#[test]
fn records_enough_for_several_parts_count_as_the_walk() {
    // 300,000 records: more than one part of 64 Ki records, so that the
    // parts (by module range, or, where every module is its one frame, by
    // record range with their counts added) meet the same keys.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let base = [0x1000_0000u64, 0x2000_0000, 0x3000_0000, 0x5000_0000];
    let recs: Vec<Rec> = (0..300_000)
        .map(|_| {
            let r = next();
            let pid = 1 + (r % 2) as u32;
            (
                pid,
                pid * 10 + (r >> 8) as u32 % 3,
                (r >> 16) as u32 % 3,
                base[(r >> 24) as usize % 4] + (r >> 32) % 16 * 8,
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.tb5");
    write(&path, &recs, true);
    let file = Tb5File::open(&path).unwrap();
    for detail in [Detail::Address, Detail::Function, Detail::Module] {
        for (process, thread, cpu) in [(false, false, false), (true, false, false), (true, true, true)] {
            let keep = Keep { process, thread, cpu };
            assert_eq!(aggregated(&file, keep, detail), walked(&file, keep, detail), "{detail:?} {keep:?}");
        }
    }
}

/// A sample as both walks hand it out: (index, process, thread, pid, tid,
/// time, its stack's node).
type Walked = (u64, u64, u64, u32, u32, Option<u64>, u32);

/// The samples walked in `parts` parts, in record order, and the walk's
/// tree as (node, frame) pairs; `None` if the walk in parts declined.
fn walked_in_parts(file: &Tb5File, detail: Detail, parts: usize) -> Option<(Vec<Walked>, Vec<Frame>, u64)> {
    let modules = tbrw_query::stream::modules(file).unwrap();
    let mut names = Names::new(file, &modules, Some(&SymbolOptions::default())).unwrap();
    let mut res = resolution(&mut names, &modules, detail);
    let mut tree = StackTree::new();
    let opts = ViewOptions::default();
    let stacks::PartsWalk { info, parts } = stacks::walk_in_parts(
        file,
        &opts,
        "a test",
        &mut tree,
        &mut res,
        Some(parts),
        &mut |_| {},
        |_| Vec::new(),
        |seen: &mut Vec<stacks::PartSample>, s| seen.push(*s),
    )
    .unwrap()?;
    let mut out = Vec::new();
    let mut previous_end = 0;
    for part in parts {
        assert_eq!(part.records.start, previous_end, "the parts follow one another");
        previous_end = part.records.end;
        for s in part.state {
            out.push((s.index, s.process, s.thread, s.pid, s.tid, s.time, part.nodes[s.frame as usize]));
        }
    }
    assert_eq!(info.samples, out.len() as u64);
    let frames = (0..tree.len() as u32).map(|n| tree.node_frame(n)).collect();
    Some((out, frames, info.samples))
}

/// The same walked in order.
fn walked_in_order(file: &Tb5File, detail: Detail) -> (Vec<Walked>, Vec<Frame>, u64) {
    let modules = tbrw_query::stream::modules(file).unwrap();
    let mut names = Names::new(file, &modules, Some(&SymbolOptions::default())).unwrap();
    let mut res = resolution(&mut names, &modules, detail);
    let mut tree = StackTree::new();
    let mut out = Vec::new();
    let info = stacks::walk(file, &ViewOptions::default(), "a test", &mut tree, &mut res, &mut |_| {}, &mut |s| {
        out.push((s.index, s.process, s.thread, s.pid, s.tid, s.time, s.stack));
        Ok(())
    })
    .unwrap();
    let frames = (0..tree.len() as u32).map(|n| tree.node_frame(n)).collect();
    (out, frames, info.samples)
}

/// (pid, tid, frames innermost first: the sampled pc, then its callers).
type Chained = (u32, u32, Vec<u64>);

fn chained() -> impl Strategy<Value = Chained> {
    let pc = (prop_oneof![Just(0x1000_0000u64), Just(0x2000_0000), Just(0x3000_0000), Just(0x5000_0000)], 0u64..16)
        .prop_map(|(b, off)| b + off * 8);
    (1u32..3, 0u32..2, proptest::collection::vec(pc, 1..5)).prop_map(|(pid, t, frames)| (pid, pid * 10 + t, frames))
}

/// Samples with call chains, as a perf import writes them now (a stack
/// table: `frames_as_table`) or wrote them before it (stream 1 of frames,
/// `tbrw_schema::descriptor::callchain_descriptor`).
fn write_chained(path: &std::path::Path, recs: &[Chained], frames_as_table: bool) {
    use tbrw_schema::descriptor::{callchain_descriptor, SampleDescriptor};
    let mut w = Tb5Writer::create(path).unwrap();
    w.write_modules(&[
        module(1, Some("/nowhere/app"), 0x1000_0000, true),
        module(1, Some("/nowhere/liba.so"), 0x2000_0000, false),
        module(2, Some("/nowhere/app"), 0x1000_0000, true),
        module(2, None, 0x3000_0000, false),
    ])
    .unwrap();
    let head = |pc: u64, pid: u32, tid: u32, time: u64| {
        let mut b = pc.to_le_bytes().to_vec();
        b.extend(pid.to_le_bytes());
        b.extend(tid.to_le_bytes());
        b.extend(time.to_le_bytes());
        b
    };
    let info = StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() };
    let mut s = w
        .stream(0)
        .unwrap()
        .info(&info)
        .unwrap()
        .data_descriptor(&SampleDescriptor::new("ip", "time_ns").finish(frames_as_table))
        .unwrap();
    let mut table = StackTable::new();
    {
        let mut d = s.data().unwrap();
        for (i, (pid, tid, frames)) in recs.iter().enumerate() {
            let mut b = head(frames[0], *pid, *tid, i as u64);
            if frames_as_table {
                b.extend(table.intern_innermost_first(frames).unwrap().to_le_bytes());
            }
            d.add(&b).unwrap();
        }
        d.done().unwrap();
    }
    if frames_as_table {
        s.stack_table(table).unwrap();
    }
    s.finish().unwrap();
    if !frames_as_table {
        let mut s =
            w.stream(1).unwrap().info(&info).unwrap().data_descriptor(&callchain_descriptor("time_ns")).unwrap();
        {
            let mut d = s.data().unwrap();
            for (i, (pid, tid, frames)) in recs.iter().enumerate() {
                for (depth, pc) in frames.iter().enumerate() {
                    let mut b = head(*pc, *pid, *tid, i as u64);
                    b.extend((i as u64).to_le_bytes());
                    b.extend((depth as u32).to_le_bytes());
                    d.add(&b).unwrap();
                }
            }
            d.done().unwrap();
        }
        s.finish().unwrap();
    }
    w.close().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// A perf import made before the stack table (its frames a stream of
    /// their own, in the vocabulary's call-chain layout) gives the stacks
    /// the stack table gives.
    #[test]
    fn a_stream_of_frames_reads_as_the_stack_table(recs in proptest::collection::vec(chained(), 1..100)) {
        let dir = tempfile::tempdir().unwrap();
        let (table, frames) = (dir.path().join("table.tb5"), dir.path().join("frames.tb5"));
        write_chained(&table, &recs, true);
        write_chained(&frames, &recs, false);
        let (table, frames) = (Tb5File::open(&table).unwrap(), Tb5File::open(&frames).unwrap());
        prop_assert!(stacks::has_stacks(&frames, 0).unwrap());
        for detail in [Detail::Address, Detail::Module] {
            let keep = Keep { process: true, thread: true, cpu: false };
            let want = aggregated(&table, keep, detail);
            prop_assert_eq!(want.values().sum::<u64>(), recs.len() as u64);
            prop_assert_eq!(aggregated(&frames, keep, detail), want, "{:?}", detail);
            // Stacks are walked in order, never in parts.
            prop_assert!(walked_in_parts(&table, detail, 2).is_none() && walked_in_parts(&frames, detail, 2).is_none());
        }
    }
}
