//! The writing side's rules: stream sections in any order, verify and
//! close agreeing on what a session wrote, and `done_` closing its section
//! whatever it returns.

mod common;

use tbrw::codes::*;
use tbrw::*;

fn code<T: std::fmt::Debug>(r: Result<T>) -> u32 {
    r.expect_err("expected an error").code()
}

fn new_engine() -> (tempfile::TempDir, std::path::PathBuf, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.tb5");
    let e = Engine::open(&path, access::WRITE | access::CREATE_ALWAYS).unwrap();
    (dir, path, e)
}

fn sample(eip: u32, event: u8, tsc: u64) -> Vec<u8> {
    let mut pc = SampleRecordPc::default();
    pc.set_ia32(eip, 0x246, CodeDescriptor::default());
    pc.set_event_index(event);
    let mut v = pc.to_bytes().to_vec();
    v.extend_from_slice(&tsc.to_le_bytes());
    v
}

fn section(e: &mut Engine, n: u32, s: StreamSection, f: impl FnOnce(&mut Engine)) {
    e.writing_stream_section(n, s).unwrap();
    f(e);
    e.done_stream_section(n, s).unwrap();
}

fn info_and_events(e: &mut Engine, n: u32, events: &[u32]) {
    section(e, n, StreamSection::StreamInfo, |e| e.set_stream_info(n, &StreamInfo::default()).unwrap());
    section(e, n, StreamSection::EventDescription, |e| {
        for &id in events {
            e.add_event(n, &Event { id, ..Default::default() }).unwrap();
        }
    });
}

#[test]
fn data_done_before_the_descriptor_waits_for_it() {
    let (_d, path, mut e) = new_engine();
    e.writing_stream(0).unwrap();
    e.writing_stream_section(0, StreamSection::Data).unwrap();
    for i in 0..100u32 {
        e.add_data(0, &sample(0x1000 + i, 0, u64::from(i))).unwrap();
    }
    e.done_stream_section(0, StreamSection::Data).unwrap();
    info_and_events(&mut e, 0, &[0]);
    assert_eq!(code(e.done_stream(0)), TBRW_SECTION_NOT_EXIST, "no descriptor yet");
    // A descriptor the 4000 bytes are not a whole number of records of is
    // the one refused (and dropped); the data keep waiting.
    e.writing_stream_section(0, StreamSection::DataDescription).unwrap();
    e.add_data_descriptor_entry(0, &legacy_descriptor()[0]).unwrap();
    e.add_data_descriptor_entry(0, &DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() })
        .unwrap();
    e.add_data_descriptor_entry(0, &DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() })
        .unwrap();
    assert_eq!(code(e.done_stream_section(0, StreamSection::DataDescription)), TBRW_UNSUPPORTED_DATA_SIZE);
    section(&mut e, 0, StreamSection::DataDescription, |e| {
        for d in legacy_descriptor() {
            e.add_data_descriptor_entry(0, &d).unwrap();
        }
    });
    e.done_stream(0).unwrap();
    e.verify().unwrap_err(); // the global sections the guide requires are missing
    e.close().unwrap();
    let f = Tb5File::open(&path).unwrap();
    let s: Vec<_> = f.stream(0).unwrap().legacy_samples().unwrap().collect();
    assert_eq!(s.len(), 100);
    assert_eq!((s[42].pc.eip(), s[42].tsc), (0x1000 + 42, Some(42)));
}

#[test]
fn data_given_while_the_descriptor_grows_is_checked_when_it_is_done() {
    let (_d, path, mut e) = new_engine();
    e.writing_stream(0).unwrap();
    e.writing_stream_section(0, StreamSection::DataDescription).unwrap();
    e.writing_stream_section(0, StreamSection::Data).unwrap();
    let ip = DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() };
    e.add_data_descriptor_entry(0, &ip).unwrap();
    // 12 bytes: not a whole 8-byte record, but the descriptor is still open.
    e.add_data(0, &[1u8; 12]).unwrap();
    e.add_data_descriptor_entry(0, &DescEntry { desc_type: desc_type::PID, data_size: 4, ..Default::default() })
        .unwrap();
    // 12-byte records: the 12 bytes are one.
    e.done_stream_section(0, StreamSection::DataDescription).unwrap();
    // From now on pieces are checked: the IP, then the PID, fit; 3 bytes do not.
    e.add_data(0, &[2u8; 8]).unwrap();
    assert_eq!(code(e.add_data(0, &[2u8; 3])), TBRW_UNSUPPORTED_DATA_SIZE);
    e.add_data(0, &[2u8; 4]).unwrap();
    e.done_stream_section(0, StreamSection::Data).unwrap();
    section(&mut e, 0, StreamSection::StreamInfo, |e| e.set_stream_info(0, &StreamInfo::default()).unwrap());
    e.done_stream(0).unwrap();
    e.close().unwrap();
    let f = Tb5File::open(&path).unwrap();
    let d = f.stream(0).unwrap().data().unwrap().unwrap();
    assert_eq!((d.len(), d.record_size()), (2, 12));
}

#[test]
fn a_data_section_ending_mid_record_is_dropped_and_can_be_written_again() {
    let (_d, path, mut e) = new_engine();
    e.writing_stream(0).unwrap();
    section(&mut e, 0, StreamSection::DataDescription, |e| {
        for d in legacy_descriptor() {
            e.add_data_descriptor_entry(0, &d).unwrap();
        }
    });
    e.writing_stream_section(0, StreamSection::Data).unwrap();
    e.add_data(0, &sample(1, 0, 1)[..32]).unwrap();
    assert_eq!(code(e.done_stream_section(0, StreamSection::Data)), TBRW_UNSUPPORTED_DATA_SIZE);
    assert_eq!(code(e.add_data(0, &[0u8; 8])), TBRW_SECTION_NOT_WRITEABLE, "closed anyway");
    section(&mut e, 0, StreamSection::Data, |e| e.add_data(0, &sample(2, 0, 2)).unwrap());
    info_and_events(&mut e, 0, &[0]);
    e.done_stream(0).unwrap();
    e.close().unwrap();
    let f = Tb5File::open(&path).unwrap();
    let s: Vec<_> = f.stream(0).unwrap().legacy_samples().unwrap().collect();
    assert_eq!((s.len(), s[0].pc.eip()), (1, 2));
}

#[test]
fn empty_sections_are_treated_alike_and_never_trap_the_handle() {
    let (_d, path, mut e) = new_engine();
    // Sections holding one structure need it: 145, and the section is closed.
    for g in [GlobalSection::Hardware, GlobalSection::Software, GlobalSection::VersionInfo] {
        e.writing_section(g).unwrap();
        assert_eq!(code(e.done_section(g)), TBRW_NO_DATA_TO_WRITE, "{g:?}");
    }
    e.writing_stream(0).unwrap();
    for s in [StreamSection::StreamInfo, StreamSection::DataDescription] {
        e.writing_stream_section(0, s).unwrap();
        assert_eq!(code(e.done_stream_section(0, s)), TBRW_NO_DATA_TO_WRITE, "{s:?}");
    }
    // Tables and bytes may be empty.
    for g in [GlobalSection::Module, GlobalSection::ProcessThread, GlobalSection::UserDefinedGlobal] {
        e.writing_section(g).unwrap();
        e.done_section(g).unwrap();
    }
    section(&mut e, 0, StreamSection::EventDescription, |_| ());
    section(&mut e, 0, StreamSection::UserDefinedStream, |_| ());
    section(&mut e, 0, StreamSection::StreamInfo, |e| e.set_stream_info(0, &StreamInfo::default()).unwrap());
    section(&mut e, 0, StreamSection::DataDescription, |e| {
        e.add_data_descriptor_entry(0, &DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() })
            .unwrap()
    });
    section(&mut e, 0, StreamSection::Data, |_| ());
    e.done_stream(0).unwrap();
    e.close().unwrap();
    let f = Tb5File::open(&path).unwrap();
    assert!(!f.has_section(GlobalSection::Hardware));
    assert_eq!(f.modules().unwrap().unwrap().len(), 0);
    assert_eq!(f.processes().unwrap().unwrap().pid_count(), 0);
    assert_eq!(f.stream(0).unwrap().events().unwrap().unwrap().len(), 0);
    // Intel's layout has no section of no bytes (docs/FORMAT.md, "What
    // Intel's layout cannot hold"): no records read as an empty data
    // section (the stream has a descriptor), empty bytes as none.
    assert!(!f.stream(0).unwrap().has_section(StreamSection::Data));
    assert_eq!(f.stream(0).unwrap().data().unwrap().map(|d| d.len()), Some(0));
    assert!(f.user_defined_global().unwrap().is_none());
    assert!(f.stream(0).unwrap().user_defined().unwrap().is_none());
}

fn complete_file(e: &mut Engine, events: &[u32], sample_events: &[u8]) {
    e.writing_section(GlobalSection::Hardware).unwrap();
    e.set_system(&System::default()).unwrap();
    e.done_section(GlobalSection::Hardware).unwrap();
    e.writing_section(GlobalSection::Software).unwrap();
    e.set_application(&Application::default()).unwrap();
    e.done_section(GlobalSection::Software).unwrap();
    e.writing_section(GlobalSection::VersionInfo).unwrap();
    e.set_version_info(&VersionInfo { sample_file_version: 0x10, ..Default::default() }).unwrap();
    e.done_section(GlobalSection::VersionInfo).unwrap();
    e.writing_section(GlobalSection::Module).unwrap();
    e.done_section(GlobalSection::Module).unwrap();
    e.writing_stream(0).unwrap();
    // Data first, events last: the check is made when everything is there.
    section(e, 0, StreamSection::DataDescription, |e| {
        for d in legacy_descriptor() {
            e.add_data_descriptor_entry(0, &d).unwrap();
        }
    });
    section(e, 0, StreamSection::Data, |e| {
        for (i, &ev) in sample_events.iter().enumerate() {
            e.add_data(0, &sample(i as u32, ev, i as u64)).unwrap();
        }
    });
    info_and_events(e, 0, events);
    e.done_stream(0).unwrap();
}

#[test]
fn verify_on_the_writing_handle_and_close_agree_with_verify_after_reopening() {
    let (_d, path, mut e) = new_engine();
    complete_file(&mut e, &[0, 1], &[0, 1, 0, 3, 1]);
    // eventIndex 3 names no event: verify says so, and close refuses with the same code.
    let v = code(e.verify());
    assert_eq!(v, TBRW_SAM_ERROR);
    assert_eq!(code(e.close()), v);
    assert!(!e.is_finished(), "a refused close leaves the handle to abort");
    e.abort();
    assert!(!path.exists());

    let (_d, path, mut e) = new_engine();
    complete_file(&mut e, &[0, 1, 3], &[0, 1, 0, 3, 1]);
    e.verify().unwrap();
    e.close().unwrap();
    Tb5File::open(&path).unwrap().verify().unwrap();
}
