//! A file with every section, several streams and a 1 GiB data section:
//! it reads back equal, verifies, and the writer stays under 64 MiB
//! resident while writing it.
//!
//! This binary holds only this test, so the process's peak resident size
//! is the writer's. Peak tracking is reset through /proc/self/clear_refs.

mod common;

use common::*;
use tbrw::*;

const RECORD: usize = 40;
const RECORDS: u64 = (1 << 30) / RECORD as u64 + 1; // just over 1 GiB

fn record(i: u64, out: &mut [u8]) {
    let mut pc = SampleRecordPc::default();
    pc.set_ia32(0x400000 + (i % 0x2000) as u32, 0x246, CodeDescriptor::default());
    pc.pid_rec_index = 0x1000;
    pc.set_pid_rec_index_raw(true);
    pc.set_event_index((i % 2) as u8);
    pc.tid = (i % 13) as u32;
    out[..32].copy_from_slice(&pc.to_bytes());
    out[32..40].copy_from_slice(&(i * 977).to_le_bytes());
}

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{field} not in /proc/self/status"))
}

#[test]
fn one_gib_data_section_round_trips_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.tb5");
    let c = guide_content(10);

    // Reset the peak-RSS counter so that it measures the writer only.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let base = status_kib("VmRSS:");

    let mut w = Tb5Writer::create(&path).unwrap();
    write_globals(&mut w, &c).unwrap();
    // Stream 0: the big one. Streams 1 and 2 are written while stream 0's
    // data section is open, so they go through the bounded spill buffers.
    let mut s0 = w.stream(0).unwrap().info(&c.streams[0].info).unwrap().data_descriptor(&legacy_descriptor()).unwrap();
    s0.events(c.streams[0].events.as_ref().unwrap()).unwrap();
    let mut data = s0.data().unwrap();
    let mut buf = vec![0u8; 4096 * RECORD];
    let mut i = 0u64;
    while i < RECORDS {
        let n = (RECORDS - i).min(4096) as usize;
        for (k, r) in buf[..n * RECORD].chunks_exact_mut(RECORD).enumerate() {
            record(i + k as u64, r);
        }
        data.add(&buf[..n * RECORD]).unwrap();
        i += n as u64;
    }
    assert_eq!(data.done().unwrap(), RECORDS);
    s0.finish().unwrap();
    write_streams(&mut w, &c.streams[1..]).unwrap();
    write_streams(&mut w, &c.streams[1..]).unwrap();
    w.close().unwrap();

    let peak = status_kib("VmHWM:");
    eprintln!("writer: RSS before {base} KiB, peak {peak} KiB (peak reset: {reset})");
    if reset {
        assert!(peak < 64 * 1024, "writer peak resident {peak} KiB is over 64 MiB");
        assert!(peak - base < 32 * 1024, "writer grew by {} KiB", peak - base);
    }

    let f = Tb5File::open(&path).unwrap();
    f.verify().unwrap();
    let mut want = expected(&c);
    want.streams = vec![want.streams[1].clone(), want.streams[1].clone(), want.streams[1].clone()];
    let mut got = read_content(&f).unwrap();
    let big = got.streams[0].data.take().unwrap();
    assert_eq!(big.len() as u64, RECORDS * RECORD as u64);
    let mut r = [0u8; RECORD];
    for (i, rec) in big.chunks_exact(RECORD).enumerate() {
        record(i as u64, &mut r);
        assert_eq!(rec, r, "record {i}");
    }
    assert_eq!(got.streams[0].descs, normalized(&legacy_descriptor()));
    assert_eq!(got.streams[1..], want.streams[1..]);
    assert_eq!(
        (got.hardware, got.software, got.modules, got.processes, got.user),
        (want.hardware, want.software, want.modules, want.processes, want.user)
    );
}
