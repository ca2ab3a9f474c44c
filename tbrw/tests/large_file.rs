//! A file with every section, several streams and a 1 GiB data section:
//! it reads back equal, record by record, and the writer stays under 64
//! MiB resident while writing it (and while its commit writes Intel's
//! layout around the data section, which stays where it was written).
//!
//! This binary holds only this test, so the process's peak resident size
//! is the writer's. Peak tracking is reset through /proc/self/clear_refs.
//! The data section is read back in 4 MiB pieces through the file, never
//! whole into memory (the test process stays far below 1 GiB resident).

mod common;

use std::io::{Read, Seek};

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
    // Not `f.verify()`: it checksums through the mapping, and every page it
    // touches counts as resident (1 GiB). The data checksum is checked in
    // pieces below; verify's other checks run on small files elsewhere.
    let mut want = expected(&c);
    want.streams = vec![want.streams[1].clone(), want.streams[1].clone(), want.streams[1].clone()];
    let got = content_but_data_of_stream_0(&f);
    assert_eq!(f.stream(0).unwrap().data().unwrap().unwrap().len(), RECORDS);
    let (at, len) = data_section_of_stream_0(&path);
    assert_eq!(len, RECORDS * RECORD as u64);
    let mut file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
    file.seek(std::io::SeekFrom::Start(at)).unwrap();
    let mut piece = vec![0u8; (4 << 20) / RECORD * RECORD];
    let (mut i, mut r) = (0u64, [0u8; RECORD]);
    while i < RECORDS {
        let n = (RECORDS - i).min((piece.len() / RECORD) as u64) as usize;
        file.read_exact(&mut piece[..n * RECORD]).unwrap();
        for rec in piece[..n * RECORD].chunks_exact(RECORD) {
            record(i, &mut r);
            assert_eq!(rec, r, "record {i}");
            i += 1;
        }
    }
    assert_eq!(got.streams[0].descs, normalized(&legacy_descriptor()));
    assert_eq!(got.streams[1..], want.streams[1..]);
    assert_eq!(
        (got.hardware, got.software, got.modules, got.processes, got.user),
        (want.hardware, want.software, want.modules, want.processes, want.user)
    );
}

fn rd(b: &[u8], at: usize, n: usize) -> u64 {
    b[at..at + n].iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x))
}

/// Where stream 0's data section lies in the file (offset, length), from
/// Intel's tables (docs/FORMAT.md, "Intel's layout": the file header's
/// global table, its first stream table), read through the file rather
/// than the mapping.
fn data_section_of_stream_0(path: &std::path::Path) -> (u64, u64) {
    let mut f = std::fs::File::open(path).unwrap();
    let mut read = |at: u64, len: usize| {
        let mut b = vec![0u8; len];
        f.seek(std::io::SeekFrom::Start(at)).unwrap();
        f.read_exact(&mut b).unwrap();
        b
    };
    let find = |table: &[u8], t: u64| {
        let e = table.chunks_exact(40).find(|e| rd(e, 28, 4) == t).expect("an entry of the type");
        (rd(e, 8, 8), rd(e, 0, 8))
    };
    let head = read(0, 816);
    assert_eq!(&head[..8], b"Sample6 ");
    let (g, glen) = find(&head[16..], 0x22);
    let global = read(g, glen as usize);
    let (s0, slen) = find(&global, 0x29);
    let stream0 = read(s0, slen as usize);
    find(&stream0, 0x26)
}

/// [`read_content`] without stream 0's data (checked in pieces instead).
fn content_but_data_of_stream_0(f: &Tb5File) -> Content {
    let mut streams = Vec::new();
    for n in 0..f.stream_count() {
        let s = f.stream(n).unwrap();
        let resolve = |d| f.resolve(d).unwrap();
        streams.push(StreamContent {
            info: f.resolve(s.info().unwrap().expect("stream info")).unwrap(),
            events: s.events().unwrap().map(|v| v.into_iter().map(|e| f.resolve(e).unwrap()).collect()),
            descs: s.descriptor().unwrap().expect("descriptor").into_iter().map(resolve).collect(),
            data: if n == 0 { None } else { s.data().unwrap().map(|d| d.as_bytes().to_vec()) },
            user: s.user_defined().unwrap().map(<[u8]>::to_vec),
        });
    }
    Content {
        hardware: f.hardware().unwrap(),
        software: f.software().unwrap().map(|s| f.resolve(s).unwrap()),
        version: f.version_info().unwrap(),
        processes: f.processes().unwrap().map(|pt| {
            (pt.pids().map(|p| f.resolve(p).unwrap()).collect(), pt.tids().map(|t| f.resolve(t).unwrap()).collect())
        }),
        modules: f.modules().unwrap().map(|mt| mt.iter().map(|m| f.resolve(m.unwrap()).unwrap()).collect()),
        user: f.user_defined_global().unwrap().map(<[u8]>::to_vec),
        streams,
    }
}
