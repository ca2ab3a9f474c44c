//! Reading Intel's layout (docs/FORMAT.md, "Intel's layout"): what the
//! Intel-written fixtures of `tests/data/intel` hold, read back as Intel's
//! library wrote it; and damaged or hostile bytes giving an error that names
//! the file, the section and the byte, never a panic, an out-of-bounds read
//! or an allocation the file does not justify (Intel's layout has no
//! checksums: every offset, count and length is checked against the file).

use tbrw::FileLayout;
use tbrw::*;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/intel/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn open(name: &str) -> Tb5File {
    Tb5File::from_bytes(name, fixture(name)).unwrap()
}

/// Reads everything the API gives, every string resolved; the number of
/// values read. `verify`'s verdict is returned last, after the rest read.
fn read_all(f: &Tb5File) -> Result<usize> {
    let mut n = 0;
    f.hardware()?;
    f.version_info()?;
    f.user_defined_global()?;
    if let Some(sw) = f.software()? {
        f.resolve(sw)?;
    }
    if let Some(pt) = f.processes()? {
        for p in pt.pids() {
            f.resolve(p)?;
            n += 1;
        }
        for t in pt.tids() {
            f.resolve(t)?;
            n += 1;
        }
    }
    if let Some(m) = f.modules()? {
        for i in 0..m.len() {
            f.resolve(m.get(i)?)?;
            n += 1;
        }
    }
    for k in 0..f.stream_count() {
        let s = f.stream(k)?;
        if let Some(i) = s.info()? {
            f.resolve(i)?;
        }
        for e in s.events()?.unwrap_or_default() {
            f.resolve(e)?;
            n += 1;
        }
        for d in s.descriptor()?.unwrap_or_default() {
            f.resolve(d)?;
        }
        s.user_defined()?;
        if let Some(d) = s.data()? {
            n += d.records().count();
            if s.layout()?.and_then(|l| l.legacy_pc_offset()).is_some() {
                s.legacy_samples()?.for_each(drop);
            }
        }
        if let Some(b) = s.bind_view()? {
            let mut v = Vec::new();
            b.data_binds(0, usize::MAX, &mut v);
            n += v.len();
            n += (0..b.process_count()).filter_map(|i| b.process(i)).count();
            n += (0..b.thread_count()).filter_map(|i| b.thread(i)).count();
            n += (0..b.module_bind_count()).filter_map(|i| b.module_bind(i)).count();
        }
    }
    f.verify()?;
    Ok(n)
}

const FIXTURES: [&str; 5] = ["guide.tb7", "streams.tb7", "strings.tb7", "lifetimes.tb7", "bound.tb7"];

#[test]
fn the_guide_fixture_reads_as_intels_library_wrote_it() {
    let f = open("guide.tb7");
    assert_eq!(f.layout(), FileLayout::IntelTb7);
    assert_eq!(f.intel_version(), Some(27));
    f.verify().unwrap();
    let sys = f.hardware().unwrap().unwrap();
    assert_eq!(sys.nodes.len(), 1);
    let cpus = &sys.nodes[0].cpus;
    assert_eq!(cpus.len(), 4);
    assert_eq!((cpus[3].number, cpus[3].tsc_offset, cpus[3].core_num, cpus[3].hardware_thread_num), (3, 51, 1, 1));
    let Cpuids::Ia32(ids) = &cpus[1].archs[0].cpuids else { panic!("IA-32 cpuids") };
    assert_eq!((ids.len(), ids[1].eax_input, ids[1].ebx), (3, 1, 0x0110_0800));
    let sw = f.resolve(f.software().unwrap().unwrap()).unwrap();
    assert_eq!(sw.host.unwrap().name.as_deref(), Some("perfbox"));
    assert_eq!(sw.os.as_ref().unwrap().name_extra.as_deref(), Some("6.1.0-18-amd64"));
    assert_eq!(sw.application.unwrap().max_app_addr, 0x7fff_ffff_ffff);
    let v = f.version_info().unwrap().unwrap();
    assert_eq!((v.sampling_driver_version, v.sample_file_version), (0x50000, 27));
    assert_eq!(&f.user_defined_global().unwrap().unwrap()[..25], b"user-defined global bytes");
    let pt = f.processes().unwrap().unwrap();
    assert_eq!((pt.pid_count(), pt.tid_count()), (3, 6));
    let worker = f.resolve(pt.pid(2).unwrap()).unwrap();
    assert_eq!((worker.id, worker.path.as_deref(), worker.event_when), (1002, Some("/usr/bin/worker"), 0x1972178d8f5e));
    let m = f.modules().unwrap().unwrap();
    assert_eq!(m.len(), 7);
    let kernel = f.resolve(m.get(0).unwrap()).unwrap();
    assert_eq!(kernel.name.as_deref(), Some("vmlinux-6.1.0-18-amd64"));
    assert_eq!((kernel.load_address, kernel.flags.bits()), (0xffff_ffff_8100_0000, 0x18800));

    assert_eq!(f.stream_count(), 2);
    let s0 = f.stream(0).unwrap();
    let events = s0.events().unwrap().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!((events[1].id, events[1].details.len(), events[1].details[1].value), (1, 2, 2_000_000));
    assert_eq!(f.resolve(events[0].clone()).unwrap().name.as_deref(), Some("CPU_CLK_UNHALTED.THREAD"));
    let layout = s0.layout().unwrap().unwrap();
    assert_eq!((layout.record_size(), layout.legacy_pc_offset(), layout.tsc_offset()), (40, Some(0), Some(32)));
    let samples: Vec<LegacySample> = s0.legacy_samples().unwrap().collect();
    assert_eq!(samples.len(), 300);
    assert_eq!(
        (samples[1].pc.ip(), samples[1].pc.pid_rec_index, samples[1].tsc),
        (0x400010, 1001, Some(0x1972178d8f5e + 2_900_000))
    );
    assert_eq!(samples[1].pc.event_index(), 1);

    let s1 = f.stream(1).unwrap();
    assert_eq!(f.resolve(s1.info().unwrap().unwrap()).unwrap().comment.as_deref(), Some("custom records"));
    assert_eq!(s1.user_defined().unwrap().unwrap(), b"custom\0data");
    let d = s1.data().unwrap().unwrap();
    // Intel's writer stored 300 (stream 0's count) as this section's count;
    // its 320 bytes hold the 20 records written.
    assert_eq!((d.len(), d.record_size()), (20, 16));
    assert_eq!(&d.record(19).unwrap()[8..12], &361u32.to_le_bytes());
    assert!(!s0.is_bound() && !s1.is_bound());
}

#[test]
fn strings_come_back_as_written() {
    let f = open("strings.tb7");
    let sw = f.resolve(f.software().unwrap().unwrap()).unwrap();
    assert_eq!(sw.host.unwrap().name.as_deref(), Some("hôte-日本"));
    assert_eq!(sw.os.unwrap().name.as_deref(), Some("Linux été 😀"));
    let pt = f.processes().unwrap().unwrap();
    let p = f.resolve(pt.pid(0).unwrap()).unwrap();
    let path = p.path.unwrap();
    assert_eq!(path.len(), 5000);
    assert!(path.starts_with("/bcdefghij") && path.ends_with('/'));
    assert_eq!(path.matches('/').count(), 101);
    assert_eq!(p.name.as_deref(), Some("procéssüß"));
    let t = f.resolve(pt.tid(1).unwrap()).unwrap();
    assert_eq!(t.name.as_deref(), Some("tab\there \"quoted\" back\\slash"));
    let s = f.stream(0).unwrap();
    assert_eq!(f.resolve(s.info().unwrap().unwrap()).unwrap().comment.as_deref(), Some("comment à la 🚀 fusée"));
    let d = f.resolve(s.descriptor().unwrap().unwrap()[1].clone()).unwrap();
    assert_eq!(d.name.as_deref(), Some("进程"));
    // Intel's TBRW_verify refuses a file without legacy sample records, and so does this one.
    let e = f.verify().unwrap_err();
    assert_eq!(e.code(), codes::TBRW_INVALID_SAMPLE_FILE, "{e}");
}

#[test]
fn pid_reuse_unloads_and_a_library_replaced_at_its_address() {
    let f = open("lifetimes.tb7");
    let pt = f.processes().unwrap().unwrap();
    let pids: Vec<(u32, u32, u64)> = pt.pids().map(|p| (p.id, p.flags.bits(), p.event_when)).collect();
    assert_eq!(pids, [(300, 0x10, 1_000_000), (300, 0x11, 1_005_000), (300, 0x10, 1_006_000)]);
    assert_eq!(summary::instances(&pt), (2, 3));
    let m = f.modules().unwrap().unwrap();
    let libs: Vec<(String, u64, u64, u64)> = (1..3)
        .map(|i| {
            let m = f.resolve(m.get(i).unwrap()).unwrap();
            (m.name.unwrap(), m.load_address, m.event_when, m.unload_tsc)
        })
        .collect();
    assert_eq!(
        libs,
        [
            ("liba.so".into(), 0x7f00_0000_0000, 1_000_010, 1_002_000),
            ("libb.so".into(), 0x7f00_0000_0000, 1_002_500, 1_005_000)
        ]
    );
    f.verify().unwrap();
}

#[test]
fn the_bind_intels_dobind_stored_is_read() {
    let f = open("bound.tb7");
    f.verify().unwrap();
    // Intel's dobind appended three bind streams and the process and thread sections.
    let types: Vec<u32> =
        (0..f.stream_count()).map(|n| f.stream(n).unwrap().info().unwrap().unwrap().stream_type).collect();
    assert_eq!(types, [1, 5, 4, 7]);
    let pt = f.processes().unwrap().unwrap();
    assert_eq!((pt.pid_count(), pt.tid_count()), (2, 4));
    let s = f.stream(0).unwrap();
    assert!(s.is_bound());
    assert!((1..4).all(|n| !f.stream(n).unwrap().is_bound()));
    let b = s.bind_view().unwrap().unwrap();
    assert_eq!((b.len(), b.module_bind_count(), b.thread_count(), b.process_count()), (600, 3, 4, 2));
    let mut binds = Vec::new();
    b.data_binds(0, usize::MAX, &mut binds);
    // Record 0 is a kernel sample (i % 7 == 0); record 1 one of /usr/bin/bench's.
    assert_eq!(binds[1].module_index, 1);
    assert!(binds.iter().all(|d| d.pid_index < 2 && d.tid_index < 4));
    let t = b.thread(binds[1].tid_index).unwrap();
    assert_eq!((t.associated_pid, t.id), (500, 501));
    assert_eq!(b.tid_bind(binds[1].tid_index).unwrap().pid_index, binds[1].pid_index);
    // The records begin with their descriptor id.
    assert_eq!(s.layout().unwrap().unwrap().find(desc_type::DESCRIPTOR_ID, None).map(|f| f.offset), Some(0));
}

#[test]
fn every_fixture_reads_whole() {
    for name in FIXTURES {
        let f = open(name);
        let r = read_all(&f);
        match name {
            "streams.tb7" | "strings.tb7" => assert_eq!(r.unwrap_err().code(), codes::TBRW_INVALID_SAMPLE_FILE),
            _ => assert!(r.unwrap() > 0),
        }
    }
}

/// `read_all` of damaged bytes: an error naming the file, or a whole read;
/// never a panic.
fn survives(bytes: Vec<u8>, what: &str) {
    if let Err(e) = Tb5File::from_bytes("bad.tb7", bytes).and_then(|f| read_all(&f)) {
        assert!(e.to_string().starts_with("bad.tb7") || matches!(e, Error::InvalidString { .. }), "{what}: {e}");
    }
}

#[test]
fn truncated_files_give_errors_not_panics() {
    for name in ["guide.tb7", "bound.tb7"] {
        let bytes = fixture(name);
        // Every byte through the tables and the first sections, then a stride.
        let lens = (0..4096).chain((4096..bytes.len()).step_by(61));
        for len in lens {
            survives(bytes[..len].to_vec(), &format!("{name} cut to {len} bytes"));
        }
    }
}

#[test]
fn flipped_bytes_give_errors_not_panics() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let positions = (0..2048).chain((2048..bytes.len()).step_by(31));
        for i in positions {
            for mask in [0xFF, 0x01, 0x80] {
                let mut b = bytes.clone();
                b[i] ^= mask;
                survives(b, &format!("{name}: byte {i} ^ {mask:#x}"));
            }
        }
    }
}

/// The file offset of the section table entry of the first section of
/// `section_type` (in the file header, the global table or a stream table).
fn entry_of(bytes: &[u8], section_type: u32) -> usize {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let mut tables = vec![(16, 40 * u32_at(12))];
    while let Some((off, len)) = tables.pop() {
        for at in (off..off + len).step_by(40) {
            match u32_at(at + 28) {
                t if t == section_type as usize => return at,
                0x22 | 0x29 => tables.push((u64_at(at + 8), u64_at(at))),
                _ => {}
            }
        }
    }
    panic!("no section of type {section_type:#x}")
}

fn patched(name: &str, patch: impl FnOnce(&mut Vec<u8>)) -> Error {
    let mut b = fixture(name);
    patch(&mut b);
    let r = Tb5File::from_bytes("bad.tb7", b).and_then(|f| read_all(&f));
    r.expect_err("a hostile file read without an error")
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn hostile_counts_offsets_and_links_are_named_errors() {
    // A section table longer than the file.
    let e = patched("guide.tb7", |b| b[12..16].copy_from_slice(&u32::MAX.to_le_bytes()));
    assert!(e.to_string().contains("file header, byte 12"), "{e}");
    // A section past the end of the file: the entry naming it is named.
    let e = patched("guide.tb7", |b| {
        let at = entry_of(b, 0x1F);
        put64(b, at + 8, 1 << 40);
    });
    let at = entry_of(&fixture("guide.tb7"), 0x1F);
    assert!(e.to_string().contains(&format!("byte {at}")) && e.to_string().contains("lies outside"), "{e}");
    // A stream table that links to itself.
    let e = patched("streams.tb7", |b| {
        let at = entry_of(b, 0x29);
        let table = u64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap()) as usize;
        let inner = (table..table + 320).step_by(40).find(|&e| b[e + 28] == 0x29).unwrap();
        b[inner + 8..inner + 16].copy_from_slice(&(table as u64).to_le_bytes());
    });
    assert!(e.to_string().contains("overlaps another stream's table"), "{e}");
    // 2^40 processes claimed in a 48-byte section: refused before any allocation.
    let e = patched("guide.tb7", |b| {
        let at = entry_of(b, 0x1D);
        put64(b, at + 16, 1 << 40);
    });
    assert!(e.to_string().contains("TBRW_PROCESS_THREAD_SECTION") && e.to_string().contains("cannot fit"), "{e}");
    // An event with 2^32-1 details.
    let e = patched("guide.tb7", |b| {
        let at = entry_of(b, 0x24);
        let off = u64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap()) as usize;
        b[off + 8..off + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    });
    assert!(e.to_string().contains("stream 0 TBRW_EVENT_DESCRIPTION_SECTION"), "{e}");
    // A system of 2^32-1 nodes.
    let e = patched("guide.tb7", |b| {
        let at = entry_of(b, 0x19);
        let off = u64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap()) as usize;
        b[off + 4..off + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    });
    assert!(e.to_string().contains("TBRW_HARDWARE_SECTION") && e.to_string().contains("nodes"), "{e}");
    // A cpu's architecture offset that is not where its architecture is.
    let e = patched("guide.tb7", |b| {
        let at = entry_of(b, 0x19);
        let off = u64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap()) as usize;
        put64(b, off + 88 + 56, 0xa8);
    });
    assert!(e.to_string().contains("architecture array is said to be at section byte 168"), "{e}");
    // A module's path: past the end of the file, then into bytes with no NUL.
    let m0 = |b: &[u8]| {
        let at = entry_of(b, 0x1F);
        u64::from_le_bytes(b[at + 8..at + 16].try_into().unwrap()) as usize
    };
    let e = patched("guide.tb7", |b| {
        let m = m0(b);
        put64(b, m + 80, (1 << 63) | (1 << 40));
    });
    assert!(e.to_string().contains("past the end of the"), "{e}");
    let e = patched("guide.tb7", |b| {
        let m = m0(b);
        let len = b.len() as u64;
        if let Some(x) = b.last_mut() {
            *x = b'x';
        }
        put64(b, m + 80, (1 << 63) | (len - 1));
    });
    assert!(e.to_string().contains("has no NUL"), "{e}");
    // Records that are not whole records of the descriptor's size.
    let e = patched("guide.tb7", |b| {
        let at = entry_of(b, 0x26);
        let len = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        put64(b, at, len - 3);
    });
    assert!(e.to_string().contains("are not whole 40-byte records"), "{e}");
}
