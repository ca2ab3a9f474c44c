//! Round trips: whatever is written is read back equal.

mod common;

use common::*;
use proptest::prelude::*;
use tbrw::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_content_round_trips(c in content()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.tb5");
        write_content(&path, &c).unwrap();
        let f = Tb5File::open(&path).unwrap();
        prop_assert_eq!(read_content(&f).unwrap(), expected(&c));
        // The same bytes read from memory give the same content.
        let g = Tb5File::from_bytes("mem", std::fs::read(&path).unwrap()).unwrap();
        prop_assert_eq!(read_content(&g).unwrap(), expected(&c));
    }

    #[test]
    fn appending_streams_keeps_everything(c in content(), extra in proptest::collection::vec(stream(), 1..3)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tb5");
        write_content(&path, &c).unwrap();
        let before = std::fs::read(&path).unwrap();
        let mut w = Tb5Writer::append(&path).unwrap();
        write_streams(&mut w, &extra).unwrap();
        w.close().unwrap();
        let after = std::fs::read(&path).unwrap();
        // Existing bytes are untouched except the file header's entry of
        // the global table (docs/FORMAT.md, "Appends in Intel's layout").
        prop_assert!(after.len() > before.len());
        let header = 816;
        prop_assert_eq!(&after[header..before.len()], &before[header..]);
        let changed: Vec<usize> = (0..header).filter(|&i| after[i] != before[i]).collect();
        prop_assert!(changed.iter().all(|&i| (16..56).contains(&i)), "header bytes changed: {:?}", changed);
        let mut want = c.clone();
        want.streams.extend(extra);
        let f = Tb5File::open(&path).unwrap();
        prop_assert_eq!(read_content(&f).unwrap(), expected(&want));
    }

    /// The same append to a file of this project's own layout: a commit slot.
    #[test]
    fn appending_streams_to_a_tb5_layout_file_keeps_everything(
        c in content(),
        extra in proptest::collection::vec(stream(), 1..3),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tb5");
        write_content_as(&path, &c, WriteLayout::Tb5).unwrap();
        let before = std::fs::read(&path).unwrap();
        let mut w = Tb5Writer::append(&path).unwrap();
        write_streams(&mut w, &extra).unwrap();
        w.close().unwrap();
        let after = std::fs::read(&path).unwrap();
        // Existing bytes are untouched except one commit slot of the header.
        prop_assert!(after.len() > before.len());
        prop_assert_eq!(&after[..64], &before[..64]);
        prop_assert_eq!(&after[128..before.len()], &before[128..]);
        let mut want = c.clone();
        want.streams.extend(extra);
        let f = Tb5File::open(&path).unwrap();
        prop_assert_eq!(f.layout(), FileLayout::Project);
        prop_assert_eq!(f.generation(), 2);
        prop_assert_eq!(read_content(&f).unwrap(), expected_in(&want, WriteLayout::Tb5));
    }

    #[test]
    fn arbitrary_content_round_trips_in_the_tb5_layout(c in content()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.tb5");
        write_content_as(&path, &c, WriteLayout::Tb5).unwrap();
        let f = Tb5File::open(&path).unwrap();
        prop_assert_eq!(read_content(&f).unwrap(), expected_in(&c, WriteLayout::Tb5));
    }
}

#[test]
fn guide_shaped_file_round_trips_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guide.tb5");
    let c = guide_content(3000);
    write_content(&path, &c).unwrap();
    let f = Tb5File::open(&path).unwrap();
    f.verify().unwrap();
    assert_eq!(read_content(&f).unwrap(), expected(&c));
    let s0 = f.stream(0).unwrap();
    let layout = s0.layout().unwrap().unwrap();
    assert_eq!((layout.record_size(), layout.legacy_pc_offset(), layout.tsc_offset()), (40, Some(0), Some(32)));
    let samples: Vec<_> = s0.legacy_samples().unwrap().collect();
    assert_eq!(samples.len(), 3000);
    assert_eq!(samples[5].pc.ip(), 0x400005);
    assert_eq!(samples[5].pc.event_index(), 1);
    assert_eq!(samples[5].tsc, Some(0x1972178D8F5E + 5000));
    assert!(samples.iter().all(|s| s.pc.pid_rec_index == 0x1000 && s.pc.pid_rec_index_raw()));
}

/// A text is stored once per file, whatever refers to it: in Intel's
/// layout a string id is the text's offset, the same for every use.
#[test]
fn strings_are_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.tb5");
    let m = Module { path: Some("/lib/libc.so.6".into()), name: Some("libc.so.6".into()), ..Default::default() };
    let mut w = Tb5Writer::create(&path).unwrap();
    w.write_modules(&vec![m; 1000]).unwrap();
    w.close().unwrap();
    let f = Tb5File::open(&path).unwrap();
    let mt = f.modules().unwrap().unwrap();
    let a = mt.get(0).unwrap();
    let b = mt.get(999).unwrap();
    assert_eq!((a.path, a.name), (b.path, b.name));
    assert_eq!(f.string(a.path).unwrap(), "/lib/libc.so.6");
    assert_eq!(a.segment_name, StringId::NONE);
    // (VTune's legacy module section, which Intel's writer writes beside,
    // keeps each module's path in its own record, as Intel's does.)
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(f.string(StringId::NONE).unwrap_err().code(), codes::TBRW_INVALID_STRING);
    // An id past the file's end names no text: an error naming the byte.
    let e = f.string(StringId(bytes.len() as u64)).unwrap_err();
    assert_eq!(e.code(), codes::TBRW_SAM_ERROR);
    assert!(e.to_string().contains(&format!("names byte {}, past the end", bytes.len())), "{e}");
}

/// In this project's own layout, string ids count from 1 and an append
/// reuses the ids of texts the file already has.
#[test]
fn strings_are_stored_once_in_the_tb5_layout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.tb5");
    let m = Module { path: Some("/lib/libc.so.6".into()), name: Some("libc.so.6".into()), ..Default::default() };
    let mut w = Tb5Writer::create_as(&path, Durability::Ordered, WriteLayout::Tb5).unwrap();
    w.write_modules(&vec![m; 1000]).unwrap();
    w.close().unwrap();
    let f = Tb5File::open(&path).unwrap();
    assert_eq!(f.string_count(), 2);
    let mt = f.modules().unwrap().unwrap();
    let a = mt.get(0).unwrap();
    let b = mt.get(999).unwrap();
    assert_eq!((a.path, a.name), (b.path, b.name));
    assert_eq!(f.string(a.path).unwrap(), "/lib/libc.so.6");
    assert_eq!(a.segment_name, StringId::NONE);
    let err = f.string(StringId::NONE).unwrap_err();
    assert_eq!(err.code(), codes::TBRW_INVALID_STRING);
    assert_eq!(f.string(StringId(3)).unwrap_err().code(), codes::TBRW_INVALID_STRING);
    // Appending reuses the ids of strings the file already has.
    let mut w = Tb5Writer::append(&path).unwrap();
    let s =
        w.next_stream().unwrap().info(&StreamInfo { comment: Some("libc.so.6".into()), ..Default::default() }).unwrap();
    let s2 = s.data_descriptor(&legacy_descriptor());
    drop(s2);
    drop(w);
    let mut w = Tb5Writer::append(&path).unwrap();
    let s =
        w.next_stream().unwrap().info(&StreamInfo { comment: Some("libc.so.6".into()), ..Default::default() }).unwrap();
    s.data_descriptor(&legacy_descriptor()).unwrap().finish().unwrap();
    w.close().unwrap();
    let f = Tb5File::open(&path).unwrap();
    assert_eq!(f.string_count(), 4, "only SampleRecord and TimeStamp are new");
    assert_eq!(f.stream(0).unwrap().info().unwrap().unwrap().comment, a.name);
}

/// A text holding a NUL cannot be stored in Intel's layout: the commit
/// says so, and no file appears.
#[test]
fn a_text_with_a_nul_is_refused_by_intels_layout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nul.tb5");
    let mut w = Tb5Writer::create(&path).unwrap();
    w.write_modules(&[Module { name: Some("a\0b".into()), ..Default::default() }]).unwrap();
    let e = w.close().unwrap_err();
    assert_eq!(e.code(), codes::TBRW_BAD_PARAMETER);
    assert!(e.to_string().contains("NUL"), "{e}");
    assert!(!path.exists());
}

#[test]
fn data_chunks_from_any_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.tb5");
    write_content(&path, &guide_content(1000)).unwrap();
    let f = Tb5File::open(&path).unwrap();
    let data = f.stream(0).unwrap().data().unwrap().unwrap();
    for start in [0u64, 1, 999, 1000] {
        let mut n = 0u64;
        for chunk in data.chunks_from(start, 64).unwrap() {
            assert!(chunk.len() % 40 == 0 && chunk.len() <= 64 * 40);
            assert_eq!(chunk, &data.as_bytes()[((start + n) * 40) as usize..][..chunk.len()]);
            n += (chunk.len() / 40) as u64;
        }
        assert_eq!(n, 1000 - start);
    }
    assert_eq!(data.chunks_from(1001, 1).unwrap_err().code(), codes::TBRW_INVALID_READ_START);
    assert_eq!(data.record(999).unwrap().len(), 40);
    assert!(data.record(1000).is_none());
}
