//! Each rule of docs/BIND.md on its own, checked against both the engine
//! and the reference, plus a proptest comparing the two on random input.

use proptest::prelude::*;
use tbrw_bind::*;

fn m(pid: u32, addr: u64, len: u64) -> ModuleSpec {
    ModuleSpec { pid, load_address: addr, length: len, load_time: 0, unload_time: NEVER, ..Default::default() }
}

fn s(pid: u32, tid: u32, ip: u64) -> Sample {
    Sample { ip, pid, tid, tsc: None }
}

/// Binds with the engine, checks the reference agrees, returns module indices.
fn modules_of(modules: &[ModuleSpec], samples: &[Sample]) -> Vec<u64> {
    let r = bind(modules, samples);
    assert_eq!(r, reference::bind(modules, samples), "engine and reference differ");
    r.data.iter().map(|d| d.module_index).collect()
}

const U: u64 = UNKNOWN_MODULE;

#[test]
fn guide_example_3_3() {
    let mods = [m(428, 0x630E0000, 0x27000)];
    let got = modules_of(
        &mods,
        &[s(428, 1, 0x630E5907), s(428, 1, 0x63107000), s(428, 1, 0x630E0000), s(428, 1, 0x630DFFFF)],
    );
    assert_eq!(got, [0, U, 0, U]);
}

#[test]
fn zero_length_module_covers_nothing() {
    let mods = [m(1, 0x1000, 0), m(1, 0x1000, 0x10)];
    assert_eq!(modules_of(&mods, &[s(1, 1, 0x1000), s(1, 1, 0x100F), s(1, 1, 0x1010)]), [1, 1, U]);
    assert_eq!(modules_of(&[m(1, 0x1000, 0)], &[s(1, 1, 0x1000)]), [U]);
}

#[test]
fn a_replaced_mapping_loses_all_its_addresses() {
    let mut newer = m(1, 0x1000, 0x1000);
    newer.load_time = 5;
    let mods = [m(1, 0x1000, 0x1000), newer];
    // Sample index is the time: before 5 the old one, from 5 on the new one.
    let samples: Vec<_> = (0..8).map(|_| s(1, 1, 0x1800)).collect();
    assert_eq!(modules_of(&mods, &samples), [0, 0, 0, 0, 0, 1, 1, 1]);
}

#[test]
fn overlap_at_start_end_and_split_in_the_middle() {
    let old = m(1, 0x1000, 0x3000); // 0x1000..0x4000
    let mut start = m(1, 0x0800, 0x1000); // covers 0x0800..0x1800: the old one's start
    start.load_time = 1;
    let mut end = m(1, 0x3800, 0x1000); // 0x3800..0x4800: the old one's end
    end.load_time = 1;
    let mut mid = m(1, 0x2000, 0x800); // 0x2000..0x2800: splits the old one
    mid.load_time = 1;
    let mods = [old, start, end, mid];
    let ips = [0x0900, 0x17FF, 0x1800, 0x1FFF, 0x2000, 0x27FF, 0x2800, 0x37FF, 0x3800, 0x3FFF, 0x4000, 0x47FF, 0x4800];
    // At time 0 only the old one is loaded; from time 1 the newer ones win where they lie.
    let t0: Vec<_> = ips.iter().map(|&ip| s(1, 1, ip)).take(1).collect();
    assert_eq!(modules_of(&mods, &t0), [U]);
    let mut samples = vec![s(1, 1, 0)]; // index 0, then everything at index >= 1
    samples.extend(ips.iter().map(|&ip| s(1, 1, ip)));
    let got = modules_of(&mods, &samples);
    assert_eq!(&got[1..], [1, 1, 0, 0, 3, 3, 0, 0, 2, 2, 2, 2, U]);
}

#[test]
fn a_process_module_beats_a_global_one() {
    let mut kernel = m(0, 0x1000, 0x10000);
    kernel.global = true;
    let mut newer_kernel = m(0, 0x1000, 0x10000);
    newer_kernel.global = true;
    newer_kernel.load_time = 100; // a later load, but global: still loses to the own module
    let own = m(7, 0x2000, 0x1000);
    let mods = [kernel, own, newer_kernel];
    let got = modules_of(&mods, &[s(7, 1, 0x2500), s(7, 1, 0x1500), s(8, 1, 0x2500), s(7, 1, 0x20000)]);
    assert_eq!(got, [1, 0, 0, U]);
}

#[test]
fn unloaded_then_another_loaded_at_the_same_address() {
    let mut a = m(1, 0x5000, 0x100);
    a.unload_time = 3;
    let mut b = m(1, 0x5000, 0x100);
    b.load_time = 5;
    b.unload_time = 7;
    let samples: Vec<_> = (0..9).map(|_| s(1, 1, 0x5010)).collect();
    assert_eq!(modules_of(&[a, b], &samples), [0, 0, 0, U, U, 1, 1, U, U]);
}

#[test]
fn tsc_time_when_the_module_and_the_stream_have_it() {
    let mut a = m(1, 0x5000, 0x100);
    a.tsc_time = true;
    a.load_time = 1000;
    a.unload_time = 2000;
    let mut b = m(1, 0x5000, 0x100); // counts samples
    b.load_time = 2;
    let ts = |tsc| Sample { ip: 0x5010, pid: 1, tid: 1, tsc: Some(tsc) };
    // index 0: a not loaded (tsc 500), b not yet (index 0 < 2); index 1: a loaded; index 2: b (newer by value? no: a's load 1000 > b's 2) ...
    let got = modules_of(&[a, b], &[ts(500), ts(1500), ts(1600), ts(2500)]);
    assert_eq!(got, [U, 0, 0, 1]);
    // Without time stamps in the stream, time cannot exclude the TSC module
    // a (its load time 1000 also beats b's 2), while b, timed in sample
    // counts, is still compared with the index.
    let got = modules_of(&[a, b], &[s(1, 1, 0x5010), s(1, 1, 0x5010), s(1, 1, 0x5010)]);
    assert_eq!(got, [0, 0, 0]);
    let got = modules_of(&[b], &[s(1, 1, 0x5010), s(1, 1, 0x5010), s(1, 1, 0x5010)]);
    assert_eq!(got, [U, U, 0]);
}

/// A TSC-timed module (load and unload times in TSC) with a stream that has
/// no time stamps: every sample in its range binds to it.
#[test]
fn a_stream_without_time_stamps_binds_by_address_alone() {
    let tsc = |mut x: ModuleSpec, load, unload| {
        x.tsc_time = true;
        x.load_time = load;
        x.unload_time = unload;
        x
    };
    let exe = ModuleSpec { exe: true, first_in_process: true, ..tsc(m(7, 0x40_0000, 0x1000), 5_000_000, NEVER) };
    let lib = tsc(m(7, 0x7000_0000, 0x1000), 5_000_100, 9_000_000);
    // Two mappings of one address over time: without time the latest load wins.
    let old = tsc(m(7, 0x9000_0000, 0x1000), 5_000_200, 6_000_000);
    let new = tsc(m(7, 0x9000_0000, 0x1000), 6_000_000, NEVER);
    let mods = [exe, lib, new, old];
    let samples = [s(7, 1, 0x40_0010), s(7, 1, 0x7000_0010), s(7, 1, 0x9000_0010), s(7, 1, 0x1234)];
    assert_eq!(modules_of(&mods, &samples), [0, 1, 2, U]);
    // The samples belong to the instance the exe began (there is no other).
    let r = bind(&mods, &samples);
    assert!(r.data.iter().all(|d| d.pid_index == 0));
    assert_eq!(r.tables.processes.len(), 1);
}

#[test]
fn an_unload_record_ends_the_load_it_pairs_with() {
    let load = ModuleSpec { load_time: 2, ..m(1, 0x5000, 0x100) };
    // Address and pid as the load; the length of an unload record is not consulted.
    let unload = ModuleSpec { kind: ModuleKind::Unload, load_time: 5, ..m(1, 0x5000, 0) };
    let samples: Vec<_> = (0..8).map(|_| s(1, 1, 0x5010)).collect();
    assert_eq!(modules_of(&[load, unload], &samples), [U, U, 0, 0, 0, U, U, U]);
    assert_eq!(ModuleMap::new(&[load, unload]).unmatched_unloads(), 0);
    // The unload record is never a bind target, even with a length.
    let long_unload = ModuleSpec { length: 0x100, ..unload };
    assert_eq!(modules_of(&[long_unload], &samples), [U; 8]);
    // It still has a module bind entry: its process.
    let r = bind(&[load, unload], &samples);
    assert_eq!(r.tables.module_binds.iter().map(|b| b.pid_index).collect::<Vec<_>>(), [0, 0]);
}

#[test]
fn unload_records_pair_with_the_latest_open_load_of_pid_and_address() {
    // Two loads of one address (say a library loaded twice), all loads
    // written before all unloads: the unload at 4 ends the load at 3 (the
    // latest before it), the one at 6 the load at 1.
    let a = ModuleSpec { load_time: 1, ..m(1, 0x5000, 0x100) };
    let b = ModuleSpec { load_time: 3, ..m(1, 0x5000, 0x80) };
    let un = |t| ModuleSpec { kind: ModuleKind::Unload, load_time: t, ..m(1, 0x5000, 0) };
    let samples: Vec<_> = (0..8).map(|_| s(1, 1, 0x5010)).collect();
    let mods = [a, b, un(6), un(4)];
    assert_eq!(modules_of(&mods, &samples), [U, 0, 0, 1, 0, 0, U, U]);
    // An unload of another pid, another address, or before any load matches nothing.
    let strays = [
        ModuleSpec { pid: 2, ..un(2) },
        ModuleSpec { load_address: 0x5001, ..un(2) },
        un(0),
        ModuleSpec { tsc_time: true, ..un(7) },
    ];
    let mut with_strays = mods.to_vec();
    with_strays.extend(strays);
    assert_eq!(modules_of(&with_strays, &samples), [U, 0, 0, 1, 0, 0, U, U]);
    assert_eq!(ModuleMap::new(&with_strays).unmatched_unloads(), 4);
    assert_eq!(reference::unmatched_unloads(&with_strays), 4);
    // A third unload of the same address has no open load left.
    let mut three = mods.to_vec();
    three.push(un(7));
    assert_eq!(ModuleMap::new(&three).unmatched_unloads(), 1);
    // A load's own unload time still counts when it is the earlier one.
    let a_own = ModuleSpec { unload_time: 2, ..a };
    assert_eq!(modules_of(&[a_own, b, un(6), un(4)], &samples), [U, 0, U, 1, U, U, U, U]);
}

/// plugin.dll, path id 1 and name id 2, in pid 1.
fn plugin(addr: u64, load_time: u64) -> ModuleSpec {
    ModuleSpec { load_time, path: Some(1), name: Some(2), ..m(1, addr, 0x100) }
}

/// An unload notification without an address (guide 8.6 fills address and
/// length only for loads): it names its module.
fn plugin_unloaded(t: u64) -> ModuleSpec {
    ModuleSpec { kind: ModuleKind::Unload, load_time: t, path: Some(1), name: Some(2), ..m(1, 0, 0) }
}

#[test]
fn an_unload_without_an_address_ends_the_open_load_of_its_module() {
    let samples: Vec<_> = (0..8).map(|_| s(1, 1, 0x5010)).collect();
    let load = plugin(0x5000, 2);
    assert_eq!(modules_of(&[load, plugin_unloaded(5)], &samples), [U, U, 0, 0, 0, U, U, U]);
    assert_eq!(ModuleMap::new(&[load, plugin_unloaded(5)]).unmatched_unloads(), 0);
    // By path; without a path, by name; the other text is not consulted.
    let by_path = ModuleSpec { name: Some(9), ..plugin_unloaded(5) };
    let by_name = ModuleSpec { path: None, ..plugin_unloaded(5) };
    assert_eq!(modules_of(&[load, by_path], &samples), [U, U, 0, 0, 0, U, U, U]);
    assert_eq!(modules_of(&[load, by_name], &samples), [U, U, 0, 0, 0, U, U, U]);
    // Another module, another pid, another time base, an unload before the load: nothing.
    let strays = [
        ModuleSpec { path: Some(7), ..plugin_unloaded(5) },
        ModuleSpec { path: None, name: Some(8), ..plugin_unloaded(5) },
        ModuleSpec { pid: 2, ..plugin_unloaded(5) },
        ModuleSpec { tsc_time: true, ..plugin_unloaded(5) },
        plugin_unloaded(1),
    ];
    let mut with_strays = vec![load];
    with_strays.extend(strays);
    assert_eq!(modules_of(&with_strays, &samples), [U, U, 0, 0, 0, 0, 0, 0]);
    assert_eq!(ModuleMap::new(&with_strays).unmatched_unloads(), 5);
    assert_eq!(reference::unmatched_unloads(&with_strays), 5);
    // Address 0 with neither path nor name: the address rule, the load at 0.
    let at_zero = ModuleSpec { path: None, name: None, ..plugin(0, 1) };
    let anonymous = ModuleSpec { path: None, name: None, ..plugin_unloaded(3) };
    let zero_samples: Vec<_> = (0..5).map(|_| s(1, 1, 0x10)).collect();
    assert_eq!(modules_of(&[at_zero, anonymous], &zero_samples), [U, 0, 0, U, U]);
    // An unload with an address keeps the address rule, whatever it names.
    let elsewhere = ModuleSpec { load_address: 0x9000, ..plugin_unloaded(5) };
    assert_eq!(modules_of(&[load, elsewhere], &samples), [U, U, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn two_loads_of_one_module_pair_with_their_unloads_in_time() {
    let at = |ip, n| -> Vec<Sample> { (0..n).map(|_| s(1, 1, ip)).collect() };
    // Loaded at A, unloaded, loaded again at B, unloaded: each unload ends its own load.
    let mods = [plugin(0x5000, 1), plugin_unloaded(3), plugin(0x9000, 4), plugin_unloaded(6)];
    assert_eq!(modules_of(&mods, &at(0x5010, 8)), [U, 0, 0, U, U, U, U, U]);
    assert_eq!(modules_of(&mods, &at(0x9010, 8)), [U, U, U, U, 2, 2, U, U]);
    // Both loads written before both unloads: the unload at 5 ends the latest
    // open load at or before it (B, from 3), the one at 7 the other.
    let nested = [plugin(0x5000, 1), plugin(0x9000, 3), plugin_unloaded(7), plugin_unloaded(5)];
    assert_eq!(modules_of(&nested, &at(0x5010, 9)), [U, 0, 0, 0, 0, 0, 0, U, U]);
    assert_eq!(modules_of(&nested, &at(0x9010, 9)), [U, U, U, 1, 1, U, U, U, U]);
    // An unload by address and one by name end different loads, each once.
    let mixed = [
        plugin(0x5000, 1),
        plugin(0x9000, 2),
        ModuleSpec { load_address: 0x9000, ..plugin_unloaded(4) },
        plugin_unloaded(6),
    ];
    assert_eq!(modules_of(&mixed, &at(0x9010, 8)), [U, U, 1, 1, U, U, U, U]);
    assert_eq!(modules_of(&mixed, &at(0x5010, 8)), [U, 0, 0, 0, 0, 0, U, U]);
    assert_eq!(ModuleMap::new(&mixed).unmatched_unloads(), 0);
    // A third unload finds no open load of the module.
    let mut three = mods.to_vec();
    three.push(plugin_unloaded(7));
    assert_eq!(ModuleMap::new(&three).unmatched_unloads(), 1);
}

#[test]
fn the_first_record_of_a_process_starts_its_instance() {
    // pid 9 ran before (exe loaded before collection), then the pid is reused:
    // ntdll at TSC 1000 is the first notification of the new process, its exe follows at 1001.
    let tsc = |x: ModuleSpec, load| ModuleSpec { tsc_time: true, load_time: load, ..x };
    let old_exe = ModuleSpec { exe: true, ..tsc(m(9, 0x40_0000, 0x1000), 0) };
    let ntdll = ModuleSpec { first_in_process: true, ..tsc(m(9, 0x7700_0000, 0x1000), 1000) };
    let new_exe = ModuleSpec { exe: true, ..tsc(m(9, 0x50_0000, 0x1000), 1001) };
    let mods = [old_exe, ntdll, new_exe];
    let at = |tsc, ip| Sample { ip, pid: 9, tid: 1, tsc: Some(tsc) };
    let samples = [at(900, 0x40_0010), at(1000, 0x7700_0010), at(1002, 0x50_0010), at(1003, 0x7700_0010)];
    let r = bind(&mods, &samples);
    assert_eq!(r, reference::bind(&mods, &samples));
    let got: Vec<_> = r.data.iter().map(|d| (d.module_index, d.pid_index)).collect();
    assert_eq!(got, [(0, 0), (1, 1), (2, 1), (1, 1)]);
    // Two processes, not three: the exe at 1001 does not begin another one, and is the new one's exe.
    let p: Vec<_> = r.tables.processes.iter().map(|p| (p.pid, p.instance, p.start, p.exe_module)).collect();
    assert_eq!(p, [(9, 0, 0, Some(0)), (9, 1, 1000, Some(2))]);
    assert_eq!(r.tables.module_binds.iter().map(|b| b.pid_index).collect::<Vec<_>>(), [0, 1, 1]);

    // A pid seen only from its first record on: one process, samples from 1000 on bind.
    let mods = [ntdll, new_exe];
    let r = bind(&mods, &samples[1..]);
    assert_eq!(r, reference::bind(&mods, &samples[1..]));
    assert_eq!(r.data.iter().map(|d| d.module_index).collect::<Vec<_>>(), [0, 1, 0]);
    assert_eq!(r.tables.processes.len(), 1);

    // A later exe load in the same process (an exec) still begins a new instance.
    let exec = ModuleSpec { exe: true, ..tsc(m(9, 0x60_0000, 0x1000), 2000) };
    let mods = [ntdll, new_exe, exec];
    let r = bind(&mods, &[at(1500, 0x7700_0010), at(2500, 0x7700_0010), at(2500, 0x60_0010)]);
    assert_eq!(r.data.iter().map(|d| (d.module_index, d.pid_index)).collect::<Vec<_>>(), [(0, 0), (U, 1), (2, 1)]);
    assert_eq!(r.tables.processes.len(), 2);
}

#[test]
fn pid_reuse_starts_a_new_process() {
    let mut exe_a = m(50, 0x400000, 0x1000);
    exe_a.exe = true;
    let lib_a = m(50, 0x7000000, 0x1000); // never unloaded: must not leak into the next process
    let mut exe_b = m(50, 0x500000, 0x1000);
    exe_b.exe = true;
    exe_b.load_time = 4;
    let mods = [exe_a, lib_a, exe_b];
    let samples = [
        s(50, 1, 0x400010),
        s(50, 1, 0x7000010),
        s(50, 2, 0x400010),
        s(50, 1, 0x7000010),
        s(50, 1, 0x500010),
        s(50, 1, 0x7000010),
    ];
    let r = bind(&mods, &samples);
    assert_eq!(r, reference::bind(&mods, &samples));
    let got: Vec<_> = r.data.iter().map(|d| (d.module_index, d.pid_index, d.tid_index)).collect();
    assert_eq!(got, [(0, 0, 0), (1, 0, 0), (0, 0, 1), (1, 0, 0), (2, 1, 2), (U, 1, 2)]);
    let p = &r.tables.processes;
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].pid, p[0].instance, p[0].start, p[0].exe_module), (50, 0, 0, Some(0)));
    assert_eq!((p[1].pid, p[1].instance, p[1].start, p[1].exe_module), (50, 1, 4, Some(2)));
    assert_eq!(r.tables.module_binds.iter().map(|b| b.pid_index).collect::<Vec<_>>(), [0, 0, 1]);
    assert_eq!(
        r.tables.threads,
        [Thread { pid_index: 0, tid: 1 }, Thread { pid_index: 0, tid: 2 }, Thread { pid_index: 1, tid: 1 }]
    );
    assert_eq!(r.tables.tid_binds().iter().map(|t| t.pid_index).collect::<Vec<_>>(), [0, 0, 1]);
}

#[test]
fn samples_of_a_pid_without_modules_still_get_pid_and_tid() {
    let mods = [m(1, 0x1000, 0x1000)];
    let r = bind(&mods, &[s(9, 3, 0x1500), s(9, 4, 0x1500), s(1, 3, 0x1500)]);
    assert_eq!(r, reference::bind(&mods, &[s(9, 3, 0x1500), s(9, 4, 0x1500), s(1, 3, 0x1500)]));
    let got: Vec<_> = r.data.iter().map(|d| (d.module_index, d.pid_index, d.tid_index)).collect();
    assert_eq!(got, [(U, 1, 0), (U, 1, 1), (0, 0, 2)]);
    assert_eq!(r.tables.processes.iter().map(|p| (p.pid, p.exe_module)).collect::<Vec<_>>(), [(1, None), (9, None)]);
}

#[test]
fn sixty_four_bit_addresses() {
    let k = ModuleSpec { global: true, ..m(0, 0xFFFF_FFFF_8100_0000, 0x0100_0000) };
    let top = m(1, 0xFFFF_FFFF_FFFF_F000, 0x1000); // ends at 2^64: saturates, last byte uncovered
    let high = m(1, 0x7FFF_F000_0000, 0x2_0000_0000);
    let got = modules_of(
        &[k, top, high],
        &[s(1, 1, 0xFFFF_FFFF_8123_4567), s(1, 1, 0xFFFF_FFFF_FFFF_F123), s(1, 1, 0x8000_0000_0000), s(1, 1, u64::MAX)],
    );
    assert_eq!(got, [0, 1, 2, U]);
}

#[test]
fn same_result_for_any_chunking_and_thread_count() {
    let (mods, samples) = workload(7, 200, 20, 5000);
    let whole = bind(&mods, &samples);
    let map = ModuleMap::new(&mods);
    for chunk in [1, 7, 64, 4999] {
        let mut b = Binder::new(&map);
        let mut out = Vec::new();
        for c in samples.chunks(chunk) {
            b.bind(c, &mut out);
        }
        assert_eq!(BindResult { data: out, tables: b.finish() }, whole, "chunk {chunk}");
    }
    for threads in [1, 2, 3, 8] {
        let (data, tables) = bind_parallel(&map, &samples, threads);
        assert_eq!(BindResult { data, tables }, whole, "{threads} threads");
    }
    assert_eq!(whole, reference::bind(&mods, &samples));
}

/// Thousands of threads whose samples interleave one by one (the binder
/// finds a thread met before in its table of threads, which grows as they
/// come), over pids reused by new process instances: the same binds as the
/// reference, on one thread and on several.
#[test]
fn thousands_of_interleaved_threads_bind_as_the_reference_does() {
    let (mods, mut samples) = workload(11, 400, 300, 40_000);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for s in &mut samples {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.tid = (x % 40) as u32;
    }
    let want = reference::bind(&mods, &samples);
    assert!(want.tables.threads.len() > 5_000, "{} threads", want.tables.threads.len());
    assert!(
        want.tables.processes.len()
            > want.tables.processes.iter().map(|p| p.pid).collect::<std::collections::HashSet<_>>().len(),
        "no pid is reused"
    );
    let map = ModuleMap::new(&mods);
    for threads in [1, 2, 3] {
        let (data, tables) = bind_parallel(&map, &samples, threads);
        assert_eq!(BindResult { data, tables }, want, "{threads} threads");
    }
}

/// A part absorbed through `absorb_tables` and its renumbering gives what
/// `absorb` gives, and a part that met no new thread needs none.
#[test]
fn absorbing_tables_then_renumbering_is_absorbing() {
    let (mods, samples) = workload(5, 200, 20, 6000);
    let map = ModuleMap::new(&mods);
    let (head, tail) = samples.split_at(2000);
    let run = |split_tables: bool| {
        let mut b = Binder::new(&map);
        let mut out = vec![DataBind::default(); head.len()];
        b.bind_into(head, &mut out);
        let mut part = b.fork_at(head.len() as u64);
        let mut rest = vec![DataBind::default(); tail.len()];
        part.bind_into(tail, &mut rest);
        if split_tables {
            if let Some(r) = b.absorb_tables(part, tail.len() as u64) {
                r.apply(&mut rest);
            }
        } else {
            b.absorb(part, &mut rest);
        }
        out.extend(rest);
        BindResult { data: out, tables: b.finish() }
    };
    assert_eq!(run(true), run(false));
    assert_eq!(run(true), reference::bind(&mods, &samples));
    // The second half of a stream of one thread meets nothing new.
    let one: Vec<Sample> = head.iter().map(|s| Sample { pid: 3, tid: 4, ..*s }).collect();
    let mut b = Binder::new(&map);
    let mut out = vec![DataBind::default(); 1000];
    b.bind_into(&one[..1000], &mut out);
    let mut part = b.fork_at(1000);
    part.bind_into(&one[1000..], &mut out);
    assert_eq!(b.absorb_tables(part, 1000), None);
}

/// A deterministic messy workload: loads, unloads, overlaps, pid reuse, globals.
fn workload(seed: u64, modules: usize, pids: u32, samples: usize) -> (Vec<ModuleSpec>, Vec<Sample>) {
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut mods = Vec::new();
    for _ in 0..modules {
        let r = rnd();
        let pid = (r % u64::from(pids)) as u32;
        let load = if r % 3 == 0 { 0 } else { rnd() % samples as u64 };
        let unload = if r % 5 == 0 { load + rnd() % 1000 } else { NEVER };
        mods.push(ModuleSpec {
            pid,
            load_address: (rnd() % 64) * 0x1000,
            length: (rnd() % 8) * 0x800,
            load_time: load,
            unload_time: unload,
            global: r % 17 == 0,
            exe: r % 11 == 0,
            tsc_time: false,
            kind: ModuleKind::Load,
            first_in_process: r % 13 == 0,
            // A few module files, each loaded at several addresses.
            path: Some(rnd() % 8),
            name: None,
        });
        if r % 7 == 0 {
            // A separate unload notification for this mapping, sometimes one
            // that matches nothing, sometimes one without an address (it
            // names the module instead).
            let m = *mods.last().expect("just pushed");
            let shift = if r % 49 == 0 { 0x10 } else { 0 };
            let by_name = r % 3 == 1;
            mods.push(ModuleSpec {
                kind: ModuleKind::Unload,
                load_time: load + rnd() % 2000,
                load_address: if by_name { 0 } else { m.load_address + shift },
                length: 0,
                unload_time: NEVER,
                exe: false,
                first_in_process: false,
                ..m
            });
        }
    }
    let samples = (0..samples)
        .map(|_| {
            let r = rnd();
            Sample { ip: r % (66 * 0x1000), pid: (rnd() % u64::from(pids + 2)) as u32, tid: (r % 5) as u32, tsc: None }
        })
        .collect();
    (mods, samples)
}

fn arb_module() -> impl Strategy<Value = ModuleSpec> {
    // Few distinct paths and names, so that unloads without an address find loads.
    let text = || prop_oneof![1 => Just(None), 3 => (0u64..3).prop_map(Some)];
    (
        0u32..4,
        0u64..16,
        0u64..6,
        0u64..40,
        prop_oneof![Just(NEVER), 0u64..60],
        any::<[bool; 3]>(),
        prop_oneof![4 => Just(ModuleKind::Load), 1 => Just(ModuleKind::Unload)],
        prop::bool::weighted(0.15),
        (text(), text(), prop::bool::weighted(0.5)),
    )
        .prop_map(|(pid, a, l, load, unload, f, kind, first_in_process, (path, name, no_address))| ModuleSpec {
            pid,
            // Few distinct addresses, so that unload records find loads to pair with;
            // half the unloads have none (address 0) and pair by path or name.
            load_address: if kind == ModuleKind::Unload && no_address { 0 } else { a * 0x100 },
            length: l * 0x80,
            load_time: if f[2] { load * 10 } else { load },
            unload_time: unload,
            global: f[0] && pid == 0,
            exe: f[1],
            tsc_time: f[2],
            kind,
            first_in_process,
            path,
            name,
        })
}

fn arb_sample() -> impl Strategy<Value = Sample> {
    (0u64..0x1100, 0u32..5, 0u32..3).prop_map(|(ip, pid, tid)| Sample { ip, pid, tid, tsc: None })
}

/// Loads and unloads of a few modules at a few addresses in one pid: the
/// pairing (by address, by path, by name) meets every case often.
fn arb_pairing_module() -> impl Strategy<Value = ModuleSpec> {
    (0u64..3, 0u64..3, prop::option::of(0u64..2), prop::option::of(0u64..2), 0u64..20, any::<bool>()).prop_map(
        |(a, how, path, name, t, unload)| ModuleSpec {
            pid: 1,
            load_address: if unload && how == 0 { 0 } else { a * 0x100 },
            length: 0x100,
            load_time: t,
            unload_time: NEVER,
            kind: if unload { ModuleKind::Unload } else { ModuleKind::Load },
            path,
            name,
            ..Default::default()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn unload_pairing_equals_reference(mods in proptest::collection::vec(arb_pairing_module(), 0..16),
                                       ips in proptest::collection::vec(0u64..0x300, 1..4)) {
        let samples: Vec<Sample> = (0..24).flat_map(|_| ips.iter().map(|&ip| s(1, 1, ip))).collect();
        prop_assert_eq!(&bind(&mods, &samples), &reference::bind(&mods, &samples));
        prop_assert_eq!(ModuleMap::new(&mods).unmatched_unloads(), reference::unmatched_unloads(&mods));
    }

    #[test]
    fn engine_equals_reference(mods in proptest::collection::vec(arb_module(), 0..24),
                               samples in proptest::collection::vec(arb_sample(), 0..80),
                               with_tsc in any::<bool>(), threads in 1usize..4, step in 1usize..30) {
        // With time stamps, sample k has TSC 10*k + jitter, so TSC and count bases disagree.
        let samples: Vec<Sample> = samples.into_iter().enumerate()
            .map(|(k, s)| Sample { tsc: with_tsc.then_some(k as u64 * 10 + (s.ip % 7)), ..s })
            .collect();
        let want = reference::bind(&mods, &samples);
        prop_assert_eq!(&bind(&mods, &samples), &want);
        let map = ModuleMap::new(&mods);
        let (data, tables) = bind_parallel(&map, &samples, threads);
        prop_assert_eq!(&BindResult { data, tables }, &want);
        // Chunk by chunk, each chunk in parallel on one continuing binder.
        let mut b = Binder::new(&map);
        let mut data = vec![DataBind::default(); samples.len()];
        for (part, out) in samples.chunks(step).zip(data.chunks_mut(step)) {
            b.bind_parallel_into(part, out, threads);
        }
        prop_assert_eq!(&BindResult { data, tables: b.finish() }, &want);
        prop_assert_eq!(map.unmatched_unloads(), reference::unmatched_unloads(&mods));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// `ModuleMap::module_at` gives every sample the bind's module, and its
    /// span is honest: the same pid and ip at any time inside it gets the
    /// same module (what a reader caching a stack's frames relies on).
    #[test]
    fn module_at_equals_the_bind_and_holds_over_its_span(
        mods in proptest::collection::vec(arb_module(), 0..24),
        samples in proptest::collection::vec(arb_sample(), 1..40),
        with_tsc in any::<bool>()) {
        let samples: Vec<Sample> = samples.into_iter().enumerate()
            .map(|(k, s)| Sample { tsc: with_tsc.then_some(k as u64 * 10 + (s.ip % 7)), ..s })
            .collect();
        let want = reference::bind(&mods, &samples);
        let map = ModuleMap::new(&mods);
        for (k, s) in samples.iter().enumerate() {
            let (m, span) = map.module_at(s, k as u64);
            let expect = want.data[k].module_index;
            prop_assert_eq!(m.map_or(UNKNOWN_MODULE, u64::from), expect, "sample {}", k);
            let Some(span) = span else { continue };
            let Some(t) = s.tsc else {
                // Without a TSC: the same answer at every index.
                prop_assert_eq!(span, Span::ALWAYS);
                for k2 in 0..samples.len() {
                    let mut moved = samples.clone();
                    moved[k2] = *s;
                    let one = reference::bind(&mods, &moved).data[k2].module_index;
                    prop_assert_eq!(one, expect, "sample {} at index {}", k, k2);
                }
                continue;
            };
            prop_assert!(span.holds(t), "{:?} does not hold at its own time {}", span, t);
            // Every time inside the span, and a few past each end.
            let hi = span.until.min(t + 500);
            for t2 in span.from.saturating_sub(3)..hi.saturating_add(3) {
                let other = Sample { tsc: Some(t2), ..*s };
                let one = reference::bind(&mods, &[other]).data[0].module_index;
                if span.holds(t2) {
                    prop_assert_eq!(one, expect, "time {} inside {:?}", t2, span);
                }
            }
        }
    }
}
