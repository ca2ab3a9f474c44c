//! Bad input never crashes: truncated, flipped and hostile files give an
//! error (or, where the damage is in bytes no reader looks at, the
//! unchanged content), never a panic or an outsized allocation.
//!
//! Most tests here are of this project's `\x89TB5` layout, whose
//! checksums catch every flipped byte (its files are written with
//! `WriteLayout::Tb5`); the files this project writes in Intel's layout,
//! which has no checksums, are damaged at the end of this file: an error
//! naming the file and its section, or content read as the damaged bytes
//! say, never a panic.

mod common;

use common::*;
use proptest::prelude::*;
use tbrw::*;

fn guide_bytes(samples: u32) -> (Vec<u8>, Content) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.tb5");
    let c = guide_content(samples);
    write_content_as(&p, &c, WriteLayout::Tb5).unwrap();
    (std::fs::read(&p).unwrap(), expected_in(&c, WriteLayout::Tb5))
}

/// Opens, verifies and reads everything.
fn load(bytes: Vec<u8>) -> Result<Content> {
    let f = Tb5File::from_bytes("bad.tb5", bytes)?;
    f.verify()?;
    let c = read_content(&f)?;
    for n in 0..f.stream_count() {
        let s = f.stream(n)?;
        if s.layout()?.and_then(|l| l.legacy_pc_offset()).is_some() {
            s.legacy_samples()?.for_each(drop);
        }
    }
    Ok(c)
}

#[test]
fn truncation_at_every_byte_is_an_error() {
    let (bytes, _) = guide_bytes(20);
    for len in 0..bytes.len() {
        let r = load(bytes[..len].to_vec());
        let e = r.expect_err(&format!("truncated to {len} bytes"));
        assert!(e.to_string().contains("bad.tb5"), "{e}");
    }
}

#[test]
fn flipping_any_byte_gives_an_error_or_the_same_content() {
    let (bytes, want) = guide_bytes(20);
    let mut errors = 0;
    for i in 0..bytes.len() {
        for mask in [0xFFu8, 0x01, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            match load(b) {
                Ok(c) => assert_eq!(c, want, "byte {i} ^ {mask:#x} changed the content without an error"),
                Err(e) => {
                    errors += 1;
                    assert!(e.to_string().starts_with("bad.tb5"), "{e}");
                }
            }
        }
    }
    // Only alignment padding and the empty second slot are unchecked.
    assert!(errors > bytes.len() * 3 * 9 / 10, "{errors} errors");
}

/// Patches the first directory entry of a kind and recomputes every checksum above it, so
/// that only the structural checks stand between the reader and the lie.
fn forge(bytes: &mut [u8], kind: u16, patch: impl Fn(&mut [u8], &mut [u8])) {
    let rd = |b: &[u8], at: usize, n: usize| b[at..at + n].iter().rev().fold(0u64, |a, &x| (a << 8) | x as u64);
    // The active commit slot is the one with the higher generation.
    let slot = if rd(bytes, 96, 8) > rd(bytes, 64, 8) { 96 } else { 64 };
    let dir_offset = rd(bytes, slot + 8, 8) as usize;
    let dir_len = rd(bytes, slot + 16, 4) as usize;
    for e in (dir_offset..dir_offset + dir_len).step_by(48) {
        if rd(bytes, e, 2) as u16 == kind {
            let off = rd(bytes, e + 8, 8) as usize;
            let len = rd(bytes, e + 16, 8) as usize;
            let (head, tail) = bytes.split_at_mut(e);
            patch(&mut tail[..48], &mut head[off..off + len]);
            let crc = crc32fast::hash(&head[off..off + len]);
            tail[36..40].copy_from_slice(&crc.to_le_bytes());
            break;
        }
    }
    let dcrc = crc32fast::hash(&bytes[dir_offset..dir_offset + dir_len]);
    bytes[slot + 24..slot + 28].copy_from_slice(&dcrc.to_le_bytes());
    let scrc = crc32fast::hash(&bytes[slot..slot + 28]);
    bytes[slot + 28..slot + 32].copy_from_slice(&scrc.to_le_bytes());
}

#[test]
fn hostile_counts_are_rejected_before_allocating() {
    let (bytes, _) = guide_bytes(20);
    type Patch = Box<dyn Fn(&mut [u8], &mut [u8])>;
    let cases: Vec<(&str, u16, Patch)> = vec![
        ("module count", 0x0004, Box::new(|e, _| e[24..32].copy_from_slice(&u64::MAX.to_le_bytes()))),
        ("event count", 0x0100, Box::new(|e, _| e[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes()))),
        ("event details", 0x0100, Box::new(|_, s| s[8..12].copy_from_slice(&u32::MAX.to_le_bytes()))),
        ("node count", 0x0001, Box::new(|_, s| s[0..4].copy_from_slice(&u32::MAX.to_le_bytes()))),
        ("cpu count", 0x0001, Box::new(|_, s| s[8 + 20..8 + 24].copy_from_slice(&u32::MAX.to_le_bytes()))),
        ("pid count", 0x0003, Box::new(|_, s| s[0..8].copy_from_slice(&u64::MAX.to_le_bytes()))),
        ("descriptor count", 0x0101, Box::new(|e, _| e[24..32].copy_from_slice(&u64::MAX.to_le_bytes()))),
        ("data record count", 0x0102, Box::new(|e, _| e[24..32].copy_from_slice(&(u64::MAX / 40).to_le_bytes()))),
        ("data record size", 0x0102, Box::new(|e, _| e[32..36].copy_from_slice(&0u32.to_le_bytes()))),
        ("section offset", 0x0004, Box::new(|e, _| e[8..16].copy_from_slice(&u64::MAX.to_le_bytes()))),
        ("string count", 0x0200, Box::new(|_, s| s[8..16].copy_from_slice(&u64::MAX.to_le_bytes()))),
        ("string offsets", 0x0200, Box::new(|_, s| s[20..24].copy_from_slice(&u32::MAX.to_le_bytes()))),
        ("stream index", 0x0104, Box::new(|e, _| e[4..8].copy_from_slice(&u32::MAX.to_le_bytes()))),
    ];
    for (what, kind, patch) in cases {
        let mut b = bytes.clone();
        forge(&mut b, kind, patch);
        let e = load(b).expect_err(what);
        assert_eq!(e.code(), codes::TBRW_SAM_ERROR, "{what}: {e}");
        assert!(e.to_string().contains("bad.tb5"), "{what}: {e}");
    }
}

#[test]
fn wrong_magic_and_version_are_named() {
    let (bytes, _) = guide_bytes(1);
    let mut b = bytes.clone();
    b[1] = b'X';
    assert_eq!(load(b).unwrap_err().code(), codes::TBRW_SAMPLE_FILE_MAPPING_ERROR);
    let mut b = bytes.clone();
    b[8..12].copy_from_slice(&15u32.to_le_bytes());
    let crc = crc32fast::hash(&b[..60]);
    b[60..64].copy_from_slice(&crc.to_le_bytes());
    let e = load(b).unwrap_err();
    assert_eq!(e.code(), codes::TBRW_INCOMPATIBLE_VERSION, "{e}");
    let mut b = bytes;
    b[12..16].copy_from_slice(&17u32.to_le_bytes()); // needs a newer reader
    let crc = crc32fast::hash(&b[..60]);
    b[60..64].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(load(b).unwrap_err().code(), codes::TBRW_INCOMPATIBLE_VERSION);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_damage_never_panics(writes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
                                  cut in any::<prop::sample::Index>(), truncate in any::<bool>()) {
        let (mut bytes, _) = guide_bytes(5);
        for (i, v) in writes {
            let i = i.index(bytes.len());
            bytes[i] = v;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        let _ = load(bytes);
    }

    #[test]
    fn random_bytes_after_a_magic_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut bytes = b"\x89TB5\r\n\x1a\n".to_vec();
        bytes.extend(tail);
        prop_assert!(load(bytes).is_err());
    }
}

#[test]
fn forged_bind_sections_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.tb5");
    write_content_as(&p, &guide_content(20), WriteLayout::Tb5).unwrap();
    bind::dobind(&p, 0).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    load(bytes.clone()).unwrap();
    type Patch = Box<dyn Fn(&mut [u8], &mut [u8])>;
    let cases: Vec<(&str, u16, Patch, &str)> = vec![
        // Packed data binds: an 8-byte head (1-byte module and thread
        // indices here), then (module, thread) per record.
        ("thread index", 0x0305, Box::new(|_, s| s[9] = 77), "out of range"),
        ("module index", 0x0305, Box::new(|_, s| s[8] = 5), "out of range"),
        ("index widths", 0x0305, Box::new(|_, s| s[0] = 3), "index widths"),
        ("bind count", 0x0305, Box::new(|e, _| e[24..32].copy_from_slice(&3u64.to_le_bytes())), "do not hold"),
        ("bind stream", 0x0301, Box::new(|e, _| e[4..8].copy_from_slice(&9u32.to_le_bytes())), "does not exist"),
        ("module bind", 0x0301, Box::new(|_, s| s[0..8].copy_from_slice(&u64::MAX.to_le_bytes())), "out of range"),
    ];
    for (what, kind, patch, msg) in cases {
        let mut b = bytes.clone();
        forge(&mut b, kind, patch);
        let e = load(b).expect_err(what);
        assert!(e.to_string().contains(msg), "{what}: {e}");
    }
}

/// A newest commit that does not read (its directory cut off or damaged:
/// writes lost in a power loss) gives way to the commit before it: the
/// file opens as that one, `verify` names the newest one's damage, and an
/// append refuses the file instead of overwriting the damaged commit.
#[test]
fn a_damaged_newest_commit_gives_way_to_the_one_before() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("two.tb5");
    write_content_as(&p, &guide_content(20), WriteLayout::Tb5).unwrap();
    let first = std::fs::read(&p).unwrap();
    let mut w = Tb5Writer::append(&p).unwrap();
    write_streams(&mut w, &guide_content(5).streams[1..]).unwrap();
    w.close().unwrap();
    let both = std::fs::read(&p).unwrap();
    assert_eq!(Tb5File::from_bytes("two.tb5", both.clone()).unwrap().generation(), 2);

    let cut = both[..both.len() - 1].to_vec();
    let mut flipped = both.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40; // in the newest directory
    for (what, bytes, why) in [("cut", cut, "lies outside"), ("flipped", flipped, "checksum mismatch")] {
        let f = Tb5File::from_bytes("two.tb5", bytes.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!((f.generation(), f.stream_count()), (1, 2), "{what}");
        assert_eq!(read_content(&f).unwrap(), expected_in(&guide_content(20), WriteLayout::Tb5), "{what}");
        let e = f.verify().unwrap_err().to_string();
        assert!(e.contains("the newest commit (generation 2) does not read") && e.contains(why), "{what}: {e}");
        // On disk: an append refuses it, and leaves it as it is.
        std::fs::write(&p, &bytes).unwrap();
        let e = Tb5Writer::append(&p).unwrap_err().to_string();
        assert!(e.contains("generation 2") && e.contains(why), "{what}: {e}");
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{what}");
    }

    // Neither commit reads: the newest one's error.
    let mut neither = both[..both.len() - 1].to_vec();
    neither[first.len() - 12] ^= 1; // the crc of the first directory's last entry
    let e = Tb5File::from_bytes("two.tb5", neither).unwrap_err().to_string();
    assert!(e.contains("byte 96: directory at byte") && e.contains("lies outside"), "{e}");
}

/// A file this project writes in Intel's layout: the guide's content,
/// stream 0 bound (Intel's three bind streams).
fn intel_bytes() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("i.tb5");
    write_content(&p, &guide_content(20)).unwrap();
    bind::dobind(&p, 0).unwrap();
    std::fs::read(&p).unwrap()
}

/// Reads everything a damaged file holds, stopping at the first error.
fn read_all(bytes: Vec<u8>) -> Result<()> {
    let f = Tb5File::from_bytes("bad.tb5", bytes)?;
    f.hardware()?;
    f.version_info()?;
    f.user_defined_global()?;
    f.stored_symbols()?;
    if let Some(sw) = f.software()? {
        f.resolve(sw)?;
    }
    if let Some(pt) = f.processes()? {
        pt.pids().try_for_each(|p| f.resolve(p).map(drop))?;
        pt.tids().try_for_each(|t| f.resolve(t).map(drop))?;
    }
    if let Some(m) = f.modules()? {
        (0..m.len()).try_for_each(|i| f.resolve(m.get(i)?).map(drop))?;
    }
    for k in 0..f.stream_count() {
        let s = f.stream(k)?;
        if let Some(i) = s.info()? {
            f.resolve(i)?;
        }
        s.events()?.unwrap_or_default().into_iter().try_for_each(|e| f.resolve(e).map(drop))?;
        s.descriptor()?.unwrap_or_default().into_iter().try_for_each(|d| f.resolve(d).map(drop))?;
        s.user_defined()?;
        if let Some(d) = s.checked_data()? {
            d.records().for_each(drop);
            if s.layout()?.and_then(|l| l.legacy_pc_offset()).is_some() {
                s.legacy_samples()?.for_each(drop);
            }
        }
        if let Some(t) = s.stack_table()? {
            t.check()?;
        }
        if let Some(b) = s.bind_view()? {
            let mut v = Vec::new();
            b.data_binds(0, usize::MAX, &mut v);
            (0..b.process_count()).for_each(|i| {
                let _ = b.process(i);
            });
            (0..b.thread_count()).for_each(|i| {
                let _ = b.thread(i);
            });
        }
    }
    f.verify()
}

/// Damaged bytes of an Intel file: an error naming it (or an invalid
/// string id), or a read; never a panic.
fn survives(bytes: Vec<u8>, what: &str) {
    if let Err(e) = read_all(bytes) {
        assert!(e.to_string().starts_with("bad.tb5") || matches!(e, Error::InvalidString { .. }), "{what}: {e}");
    }
}

#[test]
fn intel_layout_truncated_anywhere_gives_errors_not_panics() {
    let bytes = intel_bytes();
    load(bytes.clone()).unwrap();
    for len in (0..bytes.len()).step_by(7) {
        survives(bytes[..len].to_vec(), &format!("cut to {len} bytes"));
    }
    // Cut inside the file header or its tables, a file does not open.
    for len in [0, 8, 16, 100, 815] {
        assert!(load(bytes[..len].to_vec()).unwrap_err().to_string().starts_with("bad.tb5"), "{len}");
    }
}

#[test]
fn intel_layout_flipped_anywhere_gives_errors_not_panics() {
    let bytes = intel_bytes();
    for i in (0..bytes.len()).step_by(5) {
        for mask in [0xFFu8, 0x01, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            survives(b, &format!("byte {i} ^ {mask:#x}"));
        }
    }
}
