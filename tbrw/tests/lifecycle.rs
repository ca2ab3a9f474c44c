//! The lifecycle rules of the guide, through the run-time engine the C API
//! uses: each misuse gives the documented TBRW error code.

mod common;

use common::*;
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

fn pc_record(eip: u32, event: u8) -> [u8; 32] {
    let mut pc = SampleRecordPc::default();
    pc.set_ia32(eip, 0x246, CodeDescriptor::default());
    pc.set_event_index(event);
    pc.to_bytes()
}

#[test]
fn access_modes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.tb5");
    assert_eq!(code(Engine::open(&p, 0)), TBRW_INVALID_ACCESS_PERMS);
    assert_eq!(code(Engine::open(&p, 0x8)), TBRW_INVALID_ACCESS_PERMS);
    assert_eq!(code(Engine::open(&p, access::READ)), TBRW_FILE_OPEN_FAILED);
    assert_eq!(code(Engine::open(&p, access::WRITE)), TBRW_FILE_OPEN_FAILED);
    write_content(&p, &guide_content(10)).unwrap();
    let mut r = Engine::open(&p, access::READ).unwrap();
    assert_eq!(code(r.writing_section(GlobalSection::Hardware)), TBRW_INVALID_ACCESS_PERMS);
    assert_eq!(code(r.writing_stream(2)), TBRW_INVALID_ACCESS_PERMS);
    let mut w = Engine::open(&p, access::WRITE).unwrap();
    assert_eq!(code(w.reading_section(GlobalSection::Hardware)), TBRW_INVALID_ACCESS_PERMS);
    w.abort();
    std::fs::write(dir.path().join("junk.tb5"), b"not a tb5 file at all, just text").unwrap();
    assert_eq!(code(Engine::open(dir.path().join("junk.tb5"), access::READ)), TBRW_SAMPLE_FILE_MAPPING_ERROR);
}

#[test]
fn global_section_rules() {
    let (_d, _p, mut e) = new_engine();
    let hw = GlobalSection::Hardware;
    assert_eq!(code(e.set_system(&System::default())), TBRW_SECTION_NOT_WRITEABLE);
    assert_eq!(code(e.done_section(hw)), TBRW_SECTION_NOT_EXIST);
    e.writing_section(hw).unwrap();
    assert_eq!(code(e.writing_section(hw)), TBRW_SECTION_ALREADY_IN_USE);
    assert_eq!(code(e.done_section(hw)), TBRW_NO_DATA_TO_WRITE, "nothing set yet");
    // Closed whatever done_ returned: dropped, and it can be opened again.
    assert_eq!(code(e.set_system(&System::default())), TBRW_SECTION_NOT_WRITEABLE);
    assert_eq!(code(e.add_module(&Module::default())), TBRW_SECTION_NOT_WRITEABLE);
    e.writing_section(hw).unwrap();
    e.set_system(&System::default()).unwrap();
    assert_eq!(code(e.close()), TBRW_GLOBAL_SECTION_NOT_CLOSED);
    e.done_section(hw).unwrap();
    assert_eq!(code(e.writing_section(hw)), TBRW_SECTION_ALREADY_IN_USE, "a finished section cannot be written again");
    assert_eq!(code(e.set_system(&System::default())), TBRW_SECTION_NOT_WRITEABLE);
    let bad = Module { segment_type: 4, ..Default::default() };
    e.writing_section(GlobalSection::Module).unwrap();
    assert_eq!(code(e.add_module(&bad)), TBRW_BAD_PARAMETER);
    e.done_section(GlobalSection::Module).unwrap();
    e.close().unwrap();
}

#[test]
fn stream_rules() {
    let (_d, path, mut e) = new_engine();
    assert_eq!(code(e.writing_stream(1)), TBRW_INVALID_STREAM, "stream 0 first");
    assert_eq!(code(e.writing_stream_section(0, StreamSection::Data)), TBRW_STREAM_NOT_EXIST);
    e.writing_stream(0).unwrap();
    assert_eq!(code(e.writing_stream(0)), TBRW_STREAM_ALREADY_IN_USE);
    e.writing_stream(1).unwrap(); // two streams at once is allowed
    assert_eq!(code(e.done_stream(0)), TBRW_SECTION_NOT_EXIST, "no stream info or descriptor yet");
    e.writing_stream_section(0, StreamSection::StreamInfo).unwrap();
    assert_eq!(code(e.writing_stream_section(0, StreamSection::StreamInfo)), TBRW_SECTION_ALREADY_IN_USE);
    assert_eq!(code(e.done_stream(0)), TBRW_STREAM_SECTION_NOT_CLOSED);
    assert_eq!(code(e.done_stream_section(0, StreamSection::StreamInfo)), TBRW_NO_DATA_TO_WRITE);
    assert_eq!(code(e.set_stream_info(0, &StreamInfo::default())), TBRW_SECTION_NOT_WRITEABLE, "closed anyway");
    e.writing_stream_section(0, StreamSection::StreamInfo).unwrap();
    e.set_stream_info(0, &StreamInfo::default()).unwrap();
    e.done_stream_section(0, StreamSection::StreamInfo).unwrap();
    assert_eq!(code(e.done_stream(0)), TBRW_SECTION_NOT_EXIST, "descriptor still missing");

    // Several sections of one stream open at once, the guide's way.
    e.writing_stream_section(0, StreamSection::DataDescription).unwrap();
    e.writing_stream_section(0, StreamSection::Data).unwrap();
    e.writing_stream_section(0, StreamSection::EventDescription).unwrap();
    // Guide 5.2, any order: data before any descriptor entry wait, unchecked
    // (the 32-byte PC record, then the 8-byte TSC, in two calls: guide 6.10).
    for i in 0..10u32 {
        e.add_data(0, &pc_record(0x1000 + i, 0)).unwrap();
        e.add_data(0, &u64::from(i).to_le_bytes()).unwrap();
    }
    for d in legacy_descriptor() {
        e.add_data_descriptor_entry(0, &d).unwrap();
    }
    e.add_event(0, &Event { id: 0, ..Default::default() }).unwrap();
    // The descriptor is checked against the 400 bytes given: 10 records.
    e.done_stream_section(0, StreamSection::DataDescription).unwrap();
    // Whole records in one call work too.
    let mut two = pc_record(0x2000, 0).to_vec();
    two.extend_from_slice(&7u64.to_le_bytes());
    two.extend_from_slice(&pc_record(0x2001, 0));
    two.extend_from_slice(&8u64.to_le_bytes());
    e.add_data(0, &two).unwrap();
    // Now the layout is known: a piece that ends inside a field is the wrong size.
    assert_eq!(code(e.add_data(0, &[0u8; 12])), TBRW_UNSUPPORTED_DATA_SIZE);
    assert_eq!(code(e.add_data(0, &[0u8; 36])), TBRW_UNSUPPORTED_DATA_SIZE);
    assert_eq!(
        code(e.add_data_descriptor_entry(0, &DescEntry::default())),
        TBRW_SECTION_NOT_WRITEABLE,
        "descriptor done"
    );
    e.add_data(0, &pc_record(0x3000, 0)).unwrap();
    e.add_data(0, &9u64.to_le_bytes()).unwrap();
    e.done_stream_section(0, StreamSection::Data).unwrap();
    e.done_stream_section(0, StreamSection::EventDescription).unwrap();
    e.done_stream(0).unwrap();
    assert_eq!(code(e.done_stream(0)), TBRW_STREAM_NOT_EXIST);

    // Stream 1 is still open: close refuses.
    assert_eq!(code(e.close()), TBRW_STREAM_NOT_CLOSED);
    e.writing_stream_section(1, StreamSection::DataDescription).unwrap();
    let legacy = &legacy_descriptor()[0];
    assert_eq!(code(e.add_data_descriptor_entry(1, legacy)), TBRW_BAD_PARAMETER, "legacy records are stream 0 only");
    let reserved = DescEntry { desc_type: 0x8001, data_size: 4, ..Default::default() };
    assert_eq!(code(e.add_data_descriptor_entry(1, &reserved)), TBRW_BAD_PARAMETER);
    e.add_data_descriptor_entry(1, &DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() })
        .unwrap();
    e.done_stream_section(1, StreamSection::DataDescription).unwrap();
    e.writing_stream_section(1, StreamSection::StreamInfo).unwrap();
    e.set_stream_info(1, &StreamInfo { stream_type: stream_type::CUSTOM, ..Default::default() }).unwrap();
    e.done_stream_section(1, StreamSection::StreamInfo).unwrap();
    e.done_stream(1).unwrap();
    assert_eq!(e.number_of_streams(), 2);
    e.close().unwrap();

    let f = Tb5File::open(&path).unwrap();
    assert_eq!(f.stream_count(), 2);
    let s: Vec<_> = f.stream(0).unwrap().legacy_samples().unwrap().collect();
    assert_eq!(s.len(), 13);
    assert_eq!((s[3].pc.eip(), s[3].tsc), (0x1003, Some(3)));
    assert_eq!((s[11].pc.eip(), s[11].tsc), (0x2001, Some(8)));
    assert_eq!((s[12].pc.eip(), s[12].tsc), (0x3000, Some(9)));
    assert!(!f.stream(1).unwrap().has_section(StreamSection::Data));
}

#[test]
fn add_data_from_file_and_reader() {
    let (dir, path, mut e) = new_engine();
    let records = dir.path().join("records.bin");
    let mut bytes = Vec::new();
    for i in 0..1000u32 {
        bytes.extend_from_slice(&pc_record(i, 0));
        bytes.extend_from_slice(&u64::from(i).to_le_bytes());
    }
    std::fs::write(&records, &bytes).unwrap();
    std::fs::write(dir.path().join("odd.bin"), &bytes[..45]).unwrap();
    e.writing_stream(0).unwrap();
    e.writing_stream_section(0, StreamSection::DataDescription).unwrap();
    for d in legacy_descriptor() {
        e.add_data_descriptor_entry(0, &d).unwrap();
    }
    e.done_stream_section(0, StreamSection::DataDescription).unwrap();
    e.writing_stream_section(0, StreamSection::Data).unwrap();
    e.add_data_from_file(0, &records).unwrap();
    assert_eq!(code(e.add_data_from_file(0, &dir.path().join("odd.bin"))), TBRW_UNSUPPORTED_DATA_SIZE);
    assert_eq!(code(e.add_data_from_file(0, &dir.path().join("missing.bin"))), TBRW_FILE_OPEN_FAILED);
    assert_eq!(e.add_data_from_reader(0, &mut &bytes[..]).unwrap(), bytes.len() as u64);
    e.done_stream_section(0, StreamSection::Data).unwrap();
    e.writing_stream_section(0, StreamSection::StreamInfo).unwrap();
    e.set_stream_info(0, &StreamInfo::default()).unwrap();
    e.done_stream_section(0, StreamSection::StreamInfo).unwrap();
    e.done_stream(0).unwrap();
    e.close().unwrap();
    let f = Tb5File::open(&path).unwrap();
    let d = f.stream(0).unwrap().data().unwrap().unwrap();
    assert_eq!(d.len(), 2000);
    assert_eq!(&d.as_bytes()[..bytes.len()], &bytes[..]);
    assert_eq!(&d.as_bytes()[bytes.len()..], &bytes[..]);
}

#[test]
fn reader_that_ends_mid_field_poisons_the_data_section() {
    let (_d, _p, mut e) = new_engine();
    e.writing_stream(0).unwrap();
    e.writing_stream_section(0, StreamSection::DataDescription).unwrap();
    e.add_data_descriptor_entry(0, &DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() })
        .unwrap();
    e.done_stream_section(0, StreamSection::DataDescription).unwrap();
    e.writing_stream_section(0, StreamSection::Data).unwrap();
    assert_eq!(code(e.add_data_from_reader(0, &mut &[0u8; 13][..])), TBRW_UNSUPPORTED_DATA_SIZE);
    e.add_data(0, &[0u8; 3]).unwrap();
    assert_eq!(code(e.done_stream_section(0, StreamSection::Data)), TBRW_UNSUPPORTED_DATA_SIZE);
}

#[test]
fn reading_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.tb5");
    write_content(&p, &guide_content(10)).unwrap();
    let mut e = Engine::open(&p, access::READ).unwrap();
    assert_eq!(code(e.check_readable(GlobalSection::Hardware)), TBRW_SECTION_NOT_READABLE);
    e.reading_section(GlobalSection::Hardware).unwrap();
    assert_eq!(code(e.reading_section(GlobalSection::Hardware)), TBRW_SECTION_ALREADY_IN_USE);
    assert!(e.check_readable(GlobalSection::Hardware).unwrap().hardware().unwrap().is_some());
    assert_eq!(code(e.close()), TBRW_NOT_ALL_SECTIONS_CLOSED);
    e.done_section(GlobalSection::Hardware).unwrap();
    assert_eq!(code(e.reading_stream(2)), TBRW_STREAM_NOT_EXIST);
    e.reading_stream(0).unwrap();
    assert_eq!(code(e.reading_stream_section(0, StreamSection::UserDefinedStream)), TBRW_SECTION_NOT_EXIST);
    e.reading_stream_section(0, StreamSection::Data).unwrap();
    assert_eq!(code(e.check_stream_readable(0, StreamSection::EventDescription)), TBRW_SECTION_NOT_READABLE);
    assert!(e.check_stream_readable(0, StreamSection::Data).is_ok());
    assert_eq!(code(e.done_stream(0)), TBRW_STREAM_SECTION_NOT_CLOSED);
    e.done_stream_section(0, StreamSection::Data).unwrap();
    e.done_stream(0).unwrap();
    e.close().unwrap();
}

#[test]
fn append_refuses_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.tb5");
    write_content(&p, &guide_content(10)).unwrap();
    let mut e = Engine::open(&p, access::READ | access::WRITE).unwrap();
    assert_eq!(code(e.writing_section(GlobalSection::Module)), TBRW_SECTION_ALREADY_IN_USE);
    assert_eq!(code(e.writing_stream(1)), TBRW_STREAM_ALREADY_IN_USE);
    assert_eq!(code(e.writing_stream(3)), TBRW_INVALID_STREAM);
    assert_eq!(e.number_of_streams(), 2);
    // A second writer is locked out while this one is open.
    assert_eq!(code(Engine::open(&p, access::WRITE)), TBRW_FILE_OPEN_FAILED);
    // Reading and writing at once: read stream 0 while writing stream 2.
    e.reading_stream(0).unwrap();
    e.writing_stream(2).unwrap();
    e.done_stream(0).unwrap();
    e.abort();
    assert!(Engine::open(&p, access::WRITE).is_ok());
}

#[test]
fn typed_writer_drop_discards() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.tb5");
    let mut w = Tb5Writer::create(&p).unwrap();
    {
        let mut hw = w.hardware().unwrap();
        hw.set_system(&System::default()).unwrap();
        // dropped without done(): the section does not count
    }
    w.write_hardware(&System { nodes: vec![Node { id: 9, ..Default::default() }] }).unwrap();
    {
        let s = w.stream(0).unwrap().info(&StreamInfo::default()).unwrap();
        drop(s); // the stream is discarded, index 0 is free again
    }
    let mut s =
        w.stream(0).unwrap().info(&StreamInfo::default()).unwrap().data_descriptor(&legacy_descriptor()).unwrap();
    {
        let mut d = s.data().unwrap();
        d.add(&[0u8; 40]).unwrap();
        // dropped: the data section is discarded
    }
    let mut d = s.data().unwrap();
    d.add(&[0u8; 80]).unwrap();
    assert_eq!(d.done().unwrap(), 2);
    s.finish().unwrap();
    w.close().unwrap();
    let f = Tb5File::open(&p).unwrap();
    assert_eq!(f.hardware().unwrap().unwrap().nodes[0].id, 9);
    assert_eq!(f.stream(0).unwrap().data().unwrap().unwrap().len(), 2);
}

#[test]
fn error_messages_name_the_place() {
    let (_d, _p, mut e) = new_engine();
    e.writing_stream(0).unwrap();
    let msg = e.done_stream(0).unwrap_err().to_string();
    assert!(msg.contains("stream 0") && msg.contains("TBRW_STREAM_INFO_SECTION"), "{msg}");
    assert_eq!(codes::name(TBRW_BUFFER_TOO_SMALL), Some("TBRW_BUFFER_TOO_SMALL"));
    assert_eq!(codes::name(1), None);
}

/// A stream with a descriptor and no records has no data section in
/// Intel's layout. As Intel's library does, the engine opens one for
/// reading only for stream 0 of a file with VTune's legacy sample records
/// section (every file this project writes has it), which then holds no
/// entry; any other such stream has none to open (docs/FORMAT.md).
#[test]
fn a_record_less_streams_data_section_opens_only_for_stream_0() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.tb5");
    let mut content = guide_content(10);
    let ips = |data: Option<Vec<u8>>| StreamContent {
        info: StreamInfo::default(),
        events: None,
        descs: vec![DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() }],
        data,
        user: None,
    };
    content.streams[0].data = None;
    content.streams.truncate(1);
    content.streams.extend([ips(Some(vec![7; 16])), ips(None)]);
    write_content(&p, &content).unwrap();
    let mut e = Engine::open(&p, access::READ).unwrap();
    for (n, opens) in [(0, true), (1, true), (2, false)] {
        e.reading_stream(n).unwrap();
        let r = e.reading_stream_section(n, StreamSection::Data);
        if opens {
            r.unwrap();
            e.done_stream_section(n, StreamSection::Data).unwrap();
        } else {
            assert_eq!(code(r), TBRW_SECTION_NOT_EXIST, "stream {n}");
        }
        e.done_stream(n).unwrap();
    }
    e.close().unwrap();
}
