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
    // Without time stamps in the stream, TSC modules fall back to the sample index.
    let got = modules_of(&[a, b], &[s(1, 1, 0x5010), s(1, 1, 0x5010), s(1, 1, 0x5010)]);
    assert_eq!(got, [U, U, 1]);
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
        });
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
    (0u32..4, 0u64..16, 0u64..6, 0u64..40, prop_oneof![Just(NEVER), 0u64..60], any::<[bool; 3]>()).prop_map(
        |(pid, a, l, load, unload, f)| ModuleSpec {
            pid,
            load_address: a * 0x100,
            length: l * 0x80,
            load_time: if f[2] { load * 10 } else { load },
            unload_time: unload,
            global: f[0] && pid == 0,
            exe: f[1],
            tsc_time: f[2],
        },
    )
}

fn arb_sample() -> impl Strategy<Value = Sample> {
    (0u64..0x1100, 0u32..5, 0u32..3).prop_map(|(ip, pid, tid)| Sample { ip, pid, tid, tsc: None })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn engine_equals_reference(mods in proptest::collection::vec(arb_module(), 0..24),
                               samples in proptest::collection::vec(arb_sample(), 0..80),
                               with_tsc in any::<bool>(), threads in 1usize..4) {
        // With time stamps, sample k has TSC 10*k + jitter, so TSC and count bases disagree.
        let samples: Vec<Sample> = samples.into_iter().enumerate()
            .map(|(k, s)| Sample { tsc: with_tsc.then_some(k as u64 * 10 + (s.ip % 7)), ..s })
            .collect();
        let want = reference::bind(&mods, &samples);
        prop_assert_eq!(&bind(&mods, &samples), &want);
        let map = ModuleMap::new(&mods);
        let (data, tables) = bind_parallel(&map, &samples, threads);
        prop_assert_eq!(&BindResult { data, tables }, &want);
    }
}
