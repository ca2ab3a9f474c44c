//! Nothing half-written is ever visible at the target path.

mod common;

use common::*;
use tbrw::*;

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<_> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn new_file_appears_only_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("new.tb5");
    let mut w = Tb5Writer::create(&p).unwrap();
    write_globals(&mut w, &guide_content(1)).unwrap();
    assert!(!p.exists());
    w.close().unwrap();
    assert!(p.exists());
    assert_eq!(names(dir.path()), ["new.tb5"], "no temporary files left");
}

#[test]
fn drop_and_abort_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gone.tb5");
    {
        let mut w = Tb5Writer::create(&p).unwrap();
        let mut s =
            w.stream(0).unwrap().info(&StreamInfo::default()).unwrap().data_descriptor(&legacy_descriptor()).unwrap();
        let mut d = s.data().unwrap();
        d.add(&vec![0u8; 40 * 100_000]).unwrap(); // large enough to reach the disk
        d.done().unwrap();
        s.finish().unwrap();
        // dropped without close
    }
    assert!(names(dir.path()).is_empty());
    let w = Tb5Writer::create(&p).unwrap();
    w.abort();
    assert!(names(dir.path()).is_empty());
}

#[test]
fn replacing_a_file_keeps_the_old_one_until_close() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.tb5");
    write_content(&p, &guide_content(5)).unwrap();
    let old = std::fs::read(&p).unwrap();
    let mut w = Tb5Writer::create(&p).unwrap();
    w.write_version_info(&VersionInfo::default()).unwrap();
    w.abort();
    assert_eq!(std::fs::read(&p).unwrap(), old);
    let mut w = Tb5Writer::create(&p).unwrap();
    w.write_version_info(&VersionInfo::default()).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), old);
    w.close().unwrap();
    assert!(Tb5File::open(&p).unwrap().modules().unwrap().is_none());
}

#[test]
fn aborted_or_dropped_append_leaves_the_file_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.tb5");
    write_content(&p, &guide_content(50)).unwrap();
    let old = std::fs::read(&p).unwrap();
    for abort in [true, false] {
        let mut w = Tb5Writer::append(&p).unwrap();
        let mut extra = guide_content(1).streams[1..].to_vec();
        extra[0].data = Some(extra[0].data.as_ref().unwrap().repeat(2000)); // a few MiB: reaches the disk
        write_streams(&mut w, &extra).unwrap();
        if abort {
            w.abort();
        } else {
            drop(w);
        }
        assert_eq!(std::fs::read(&p).unwrap(), old);
    }
    assert_eq!(names(dir.path()), ["a.tb5"]);
}

#[test]
fn many_appends_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.tb5");
    let c = guide_content(10);
    write_content(&p, &c).unwrap();
    let mut want = c.clone();
    for g in 2..6u64 {
        let extra = guide_content(g as u32 * 10).streams[1..].to_vec();
        let mut w = Tb5Writer::append(&p).unwrap();
        write_streams(&mut w, &extra).unwrap();
        w.close().unwrap();
        want.streams.extend(extra);
        let f = Tb5File::open(&p).unwrap();
        assert_eq!(f.generation(), g);
        f.verify().unwrap();
        assert_eq!(read_content(&f).unwrap(), expected(&want));
    }
}

#[test]
fn a_discarded_data_section_leaves_no_bytes_behind() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.tb5");
    let mut w = Tb5Writer::create(&p).unwrap();
    {
        let mut s =
            w.stream(0).unwrap().info(&StreamInfo::default()).unwrap().data_descriptor(&legacy_descriptor()).unwrap();
        let mut d = s.data().unwrap();
        d.add(&vec![7u8; 40 * 200_000]).unwrap(); // 8 MB straight to the file
                                                  // The stream and its data are dropped.
    }
    w.write_version_info(&VersionInfo::default()).unwrap();
    w.close().unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    assert!(len < 4096, "file is {len} bytes");
    let f = Tb5File::open(&p).unwrap();
    assert_eq!(f.stream_count(), 0);
    assert!(f.version_info().unwrap().is_some());
}

#[test]
fn sections_finished_while_a_data_section_streams_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("q.tb5");
    let mut e = Engine::open(&p, access::CREATE_ALWAYS).unwrap();
    e.writing_stream(0).unwrap();
    e.writing_stream_section(0, StreamSection::DataDescription).unwrap();
    e.add_data_descriptor_entry(0, &DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() })
        .unwrap();
    e.done_stream_section(0, StreamSection::DataDescription).unwrap();
    e.writing_stream_section(0, StreamSection::Data).unwrap(); // owns the tail
    e.add_data(0, &[1u8; 8 * 1000]).unwrap();
    // Finished while the data streams: they wait, then land.
    e.writing_section(GlobalSection::UserDefinedGlobal).unwrap();
    e.set_user_defined_global(&vec![9u8; 3 << 20]).unwrap(); // spills past 1 MiB
    e.done_section(GlobalSection::UserDefinedGlobal).unwrap();
    e.writing_stream_section(0, StreamSection::StreamInfo).unwrap();
    e.set_stream_info(0, &StreamInfo::default()).unwrap();
    e.done_stream_section(0, StreamSection::StreamInfo).unwrap();
    // The data section is discarded: the waiting sections must still land.
    e.discard_stream_section(0, StreamSection::Data);
    e.writing_stream_section(0, StreamSection::Data).unwrap();
    e.add_data(0, &[2u8; 16]).unwrap();
    e.done_stream_section(0, StreamSection::Data).unwrap();
    e.done_stream(0).unwrap();
    e.close().unwrap();
    let f = Tb5File::open(&p).unwrap();
    assert_eq!(f.user_defined_global().unwrap().unwrap(), &vec![9u8; 3 << 20][..]);
    assert_eq!(f.stream(0).unwrap().data().unwrap().unwrap().as_bytes(), &[2u8; 16]);
}

#[test]
fn a_new_file_gets_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("perm.tb5");
    let w = Tb5Writer::create(&p).unwrap();
    w.close().unwrap();
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    // 0666 less the umask: readable by others unless the umask says otherwise, never 0600 by accident.
    let umask = {
        let probe = dir.path().join("probe");
        std::fs::write(&probe, b"").unwrap();
        0o666 & !(std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777)
    };
    assert_eq!(mode, 0o666 & !umask, "mode {mode:o}");
}
