//! What a crash during an append to a file of this project's `\x89TB5`
//! layout leaves: the file as it was before. (Intel's layout has no
//! commit slots: `tbrw/tests/kill.rs` kills its writers at every step.)
//!
//! The commit hook of the engine stops a commit right before the commit
//! slot is written and captures the bytes on disk at that moment; the test
//! then builds every state a crash could leave (tail partly written, slot
//! not written, slot torn, slot written) and reads each one.

use std::cell::RefCell;
use std::rc::Rc;

use crate::write::output::crash_hook;
use crate::*;

fn content(path: &std::path::Path, streams: u32) {
    let mut w = Tb5Writer::create_as(path, Durability::Ordered, WriteLayout::Tb5).unwrap();
    w.write_version_info(&VersionInfo { sample_file_version: 16, ..Default::default() }).unwrap();
    w.write_modules(&[Module { name: Some("m".into()), ..Default::default() }]).unwrap();
    for _ in 0..streams {
        add_stream(&mut w, 100);
    }
    w.close().unwrap();
}

fn add_stream(w: &mut Tb5Writer, records: usize) {
    let mut s = w
        .next_stream()
        .unwrap()
        .info(&StreamInfo { comment: Some(format!("{records} records")), ..Default::default() })
        .unwrap()
        .data_descriptor(&[DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() }])
        .unwrap();
    let mut d = s.data().unwrap();
    for i in 0..records as u64 {
        d.add(&i.to_le_bytes()).unwrap();
    }
    d.done().unwrap();
    s.finish().unwrap();
}

fn summary(bytes: Vec<u8>) -> Result<(u64, u32, u64)> {
    let f = Tb5File::from_bytes("crash.tb5", bytes)?;
    f.verify().ok();
    let last = f.stream(f.stream_count() - 1)?;
    Ok((f.generation(), f.stream_count(), last.data()?.map_or(0, |d| d.len())))
}

#[test]
fn a_crash_at_any_point_of_an_append_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.tb5");
    content(&p, 1);
    // A second append makes slot B the active one, so the next commit targets A.
    let mut w = Tb5Writer::append(&p).unwrap();
    add_stream(&mut w, 10);
    w.close().unwrap();
    let old = std::fs::read(&p).unwrap();
    assert_eq!(summary(old.clone()).unwrap(), (2, 2, 10));

    /// The disk at the crash, the slot's offset and the slot bytes that were about to be written.
    type Capture = Option<(Vec<u8>, u64, Vec<u8>)>;
    let captured: Rc<RefCell<Capture>> = Rc::default();
    let c2 = captured.clone();
    let p2 = p.clone();
    crash_hook::set(Box::new(move |_file, slot_at, slot| {
        *c2.borrow_mut() = Some((std::fs::read(&p2).unwrap(), slot_at, slot.to_vec()));
        Err(Error::bad("simulated crash"))
    }));
    let mut w = Tb5Writer::append(&p).unwrap();
    add_stream(&mut w, 5000);
    assert!(w.close().is_err());
    let (disk, slot_at, slot) = captured.borrow_mut().take().expect("hook ran");
    assert_eq!(slot_at, 64, "the inactive slot is written");
    assert_eq!(&disk[..old.len()], &old[..], "nothing before the old end changed");

    // Crash before the slot write, with any prefix of the new tail on disk.
    let step = ((disk.len() - old.len()) / 97).max(1);
    for cut in (old.len()..=disk.len()).step_by(step).chain([disk.len()]) {
        assert_eq!(summary(disk[..cut].to_vec()).unwrap(), (2, 2, 10), "cut at {cut}");
    }
    // Crash in the middle of the slot write: the torn slot is ignored.
    for torn in 1..32 {
        let mut b = disk.clone();
        b[slot_at as usize..slot_at as usize + torn].copy_from_slice(&slot[..torn]);
        assert_eq!(summary(b).unwrap(), (2, 2, 10), "slot torn after {torn} bytes");
    }
    // The slot written: the append is there.
    let mut b = disk.clone();
    b[slot_at as usize..slot_at as usize + 32].copy_from_slice(&slot);
    assert_eq!(summary(b).unwrap(), (3, 3, 5000));

    // After the (simulated) crash the engine cleaned up: the file is as before,
    // and a new append works.
    assert_eq!(std::fs::read(&p).unwrap(), old);
    let mut w = Tb5Writer::append(&p).unwrap();
    add_stream(&mut w, 7);
    w.close().unwrap();
    assert_eq!(summary(std::fs::read(&p).unwrap()).unwrap(), (3, 3, 7));
}

#[test]
fn leftover_tail_of_a_crashed_append_is_dropped_by_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.tb5");
    content(&p, 1);
    let old_len = std::fs::metadata(&p).unwrap().len();
    // What a crash leaves: garbage past the committed end.
    let mut b = std::fs::read(&p).unwrap();
    b.extend_from_slice(&[0xAB; 1000]);
    std::fs::write(&p, &b).unwrap();
    assert_eq!(summary(b).unwrap(), (1, 1, 100));
    let mut w = Tb5Writer::append(&p).unwrap();
    add_stream(&mut w, 3);
    w.close().unwrap();
    let after = std::fs::read(&p).unwrap();
    assert_eq!(summary(after.clone()).unwrap(), (2, 2, 3));
    // The new sections start right at the old end: the garbage is gone.
    assert!(!after[old_len as usize..].windows(64).any(|w| w.iter().all(|&b| b == 0xAB)));
}
