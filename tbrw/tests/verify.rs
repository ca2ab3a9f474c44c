//! `verify()` finds each kind of problem and says where it is: the rules
//! of this project's `\x89TB5` layout (the guide's required sections, its
//! version, checksums; files written with `WriteLayout::Tb5`). A file in
//! Intel's layout is verified by Intel's rule and its structure
//! (`tbrw/tests/intel_read.rs`, docs/FORMAT.md "What `verify` checks
//! (Intel's layout)").

mod common;

use common::*;
use tbrw::*;

fn file_of(c: &Content) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.tb5");
    write_content_as(&p, c, WriteLayout::Tb5).unwrap();
    (dir, p)
}

#[test]
fn a_complete_file_verifies() {
    let (_d, p) = file_of(&guide_content(500));
    Tb5File::open(&p).unwrap().verify().unwrap();
}

#[test]
fn missing_required_sections_are_named() {
    let mut c = guide_content(5);
    c.hardware = None;
    let (_d, p) = file_of(&c);
    let e = Tb5File::open(&p).unwrap().verify().unwrap_err();
    assert!(matches!(e, Error::MissingRequired { section: SectionRef::Global(GlobalSection::Hardware), .. }), "{e}");
    assert_eq!(e.code(), codes::TBRW_SECTION_NOT_EXIST);

    let mut c = guide_content(5);
    c.streams[1].events = None;
    let (_d, p) = file_of(&c);
    let e = Tb5File::open(&p).unwrap().verify().unwrap_err();
    assert!(e.to_string().contains("stream 1 TBRW_EVENT_DESCRIPTION_SECTION"), "{e}");

    let mut c = guide_content(5);
    c.streams[0].data = None;
    let (_d, p) = file_of(&c);
    let e = Tb5File::open(&p).unwrap().verify().unwrap_err();
    assert!(e.to_string().contains("stream 0 TBRW_DATA_SECTION"), "{e}");
}

#[test]
fn an_unknown_event_index_names_the_record() {
    // The writer refuses to commit such a file (its close agrees with
    // verify), so the record is changed afterwards, checksums and all.
    let (_d, p) = file_of(&guide_content(100));
    let mut b = std::fs::read(&p).unwrap();
    let data_at = Tb5File::open(&p).unwrap().stream(0).unwrap().data().unwrap().unwrap().file_offset() as usize;
    // Record 42 says event 7; the stream has events 0 and 1.
    let at = data_at + 42 * 40;
    let mut pc = SampleRecordPc::from_slice(&b[at..]).unwrap();
    pc.set_event_index(7);
    b[at..at + 32].copy_from_slice(&pc.to_bytes());
    rechecksum_data(&mut b, data_at);
    let f = Tb5File::from_bytes(&p, b).unwrap();
    let e = f.verify().unwrap_err();
    let off = data_at + 42 * 40;
    let msg = e.to_string();
    assert!(msg.contains("record 42") && msg.contains(&format!("byte {off}")) && msg.contains("eventIndex 7"), "{msg}");
}

/// Recomputes the checksum of the section starting at `section_at`, then
/// of the directory and of the active commit slot (the layout
/// `corruption.rs` forges files with).
fn rechecksum_data(bytes: &mut [u8], section_at: usize) {
    let rd = |b: &[u8], at: usize, n: usize| b[at..at + n].iter().rev().fold(0u64, |a, &x| (a << 8) | x as u64);
    let slot = if rd(bytes, 96, 8) > rd(bytes, 64, 8) { 96 } else { 64 };
    let dir_offset = rd(bytes, slot + 8, 8) as usize;
    let dir_len = rd(bytes, slot + 16, 4) as usize;
    for e in (dir_offset..dir_offset + dir_len).step_by(48) {
        if rd(bytes, e + 8, 8) as usize == section_at {
            let len = rd(bytes, e + 16, 8) as usize;
            let crc = crc32fast::hash(&bytes[section_at..section_at + len]);
            bytes[e + 36..e + 40].copy_from_slice(&crc.to_le_bytes());
        }
    }
    let dcrc = crc32fast::hash(&bytes[dir_offset..dir_offset + dir_len]);
    bytes[slot + 24..slot + 28].copy_from_slice(&dcrc.to_le_bytes());
    let scrc = crc32fast::hash(&bytes[slot..slot + 28]);
    bytes[slot + 28..slot + 32].copy_from_slice(&scrc.to_le_bytes());
}

#[test]
fn a_damaged_data_record_fails_verify_only() {
    let (_d, p) = file_of(&guide_content(100));
    let mut b = std::fs::read(&p).unwrap();
    let off = Tb5File::open(&p).unwrap().stream(0).unwrap().data().unwrap().unwrap().file_offset() as usize;
    b[off + 5 * 40 + 1] ^= 0x10; // an ip bit: not caught by reading, caught by verify
    let f = Tb5File::from_bytes("v.tb5", b).unwrap();
    assert_eq!(f.stream(0).unwrap().legacy_samples().unwrap().count(), 100);
    let e = f.verify().unwrap_err();
    assert!(matches!(e, Error::Checksum { .. }), "{e}");
    assert!(e.to_string().contains("stream 0 TBRW_DATA_SECTION"), "{e}");
}

#[test]
fn an_old_sample_file_version_is_rejected() {
    let mut c = guide_content(1);
    c.version.as_mut().unwrap().sample_file_version = 15;
    let (_d, p) = file_of(&c);
    assert_eq!(Tb5File::open(&p).unwrap().verify().unwrap_err().code(), codes::TBRW_INCOMPATIBLE_VERSION);
}
