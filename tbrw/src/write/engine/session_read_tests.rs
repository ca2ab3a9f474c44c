//! Reads of what a session finished (guide 5, step 3), through the engine.
use super::*;
use crate::model::codes::*;
use crate::model::descriptor::{desc_type, DescEntry};
use crate::model::module::Module;
use crate::model::stream::StreamInfo;

fn code<T: std::fmt::Debug>(r: Result<T>) -> u32 {
    r.expect_err("expected an error").code()
}

/// A stream of 8-byte ST_IP records (and a 4-byte ST_PID), `n` of them from `base`.
fn start_stream(e: &mut Engine, s: u32, comment: &str) {
    e.writing_stream(s).unwrap();
    e.writing_stream_section(s, StreamSection::StreamInfo).unwrap();
    e.set_stream_info(s, &StreamInfo { comment: Some(comment.into()), ..Default::default() }).unwrap();
    e.done_stream_section(s, StreamSection::StreamInfo).unwrap();
    e.writing_stream_section(s, StreamSection::DataDescription).unwrap();
    for (t, size) in [(desc_type::IP, 8), (desc_type::PID, 4)] {
        e.add_data_descriptor_entry(s, &DescEntry { desc_type: t, data_size: size, ..Default::default() }).unwrap();
    }
    e.done_stream_section(s, StreamSection::DataDescription).unwrap();
    e.writing_stream_section(s, StreamSection::Data).unwrap();
}

fn add(e: &mut Engine, s: u32, base: u64, range: std::ops::Range<u64>) {
    for i in range {
        let mut r = (base + i).to_le_bytes().to_vec();
        r.extend_from_slice(&7u32.to_le_bytes());
        e.add_data(s, &r).unwrap();
    }
}

fn finish(e: &mut Engine, s: u32) {
    e.done_stream_section(s, StreamSection::Data).unwrap();
    e.done_stream(s).unwrap();
}

/// The records of stream `s`, read through the engine as the C API does.
fn records(e: &mut Engine, s: u32) -> Vec<u64> {
    e.reading_stream(s).unwrap();
    e.reading_stream_section(s, StreamSection::Data).unwrap();
    e.reading_stream_section(s, StreamSection::StreamInfo).unwrap();
    let f = e.check_stream_readable(s, StreamSection::Data).unwrap();
    let d = f.stream(s).unwrap().checked_data().unwrap().unwrap();
    let v = (0..d.len()).map(|i| u64::from_le_bytes(d.record(i).unwrap()[..8].try_into().unwrap())).collect();
    let info = f.stream(s).unwrap().info().unwrap().unwrap();
    assert!(e.string(info.comment).is_ok_and(|c| c.starts_with("stream")));
    e.done_stream_section(s, StreamSection::Data).unwrap();
    e.done_stream_section(s, StreamSection::StreamInfo).unwrap();
    e.done_stream(s).unwrap();
    v
}

#[test]
fn a_stream_done_before_an_earlier_one_is_read_and_the_earlier_one_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.tb5");
    let mut e = Engine::open(&path, access::READ | access::WRITE | access::CREATE_ALWAYS).unwrap();
    start_stream(&mut e, 0, "stream 0");
    add(&mut e, 0, 0x1000, 0..200_000); // holds the tail, past one sink chunk
    start_stream(&mut e, 1, "stream 1");
    add(&mut e, 1, 0x9000, 0..50);
    finish(&mut e, 1); // waits for the tail
    assert_eq!(code(e.reading_stream(0)), TBRW_STREAM_ALREADY_IN_USE);
    assert_eq!(code(e.reading_stream(2)), TBRW_STREAM_NOT_EXIST);
    // Stream 1 is read although stream 0, before it, is not finished:
    // the view has a gap there.
    assert_eq!(records(&mut e, 1), (0x9000..0x9000 + 50).collect::<Vec<_>>());
    // Stream 0 goes on where it was, off the tail now.
    add(&mut e, 0, 0x1000, 200_000..250_000);
    finish(&mut e, 0);
    assert_eq!(records(&mut e, 0), (0x1000..0x1000 + 250_000).collect::<Vec<_>>());
    assert_eq!(records(&mut e, 1).len(), 50, "read again");
    // A module section finished after the view was made is in the next one.
    e.writing_section(GlobalSection::Module).unwrap();
    e.add_module(&Module { name: Some("late.so".into()), length: 16, ..Default::default() }).unwrap();
    e.done_section(GlobalSection::Module).unwrap();
    let f = e.readable_file(GlobalSection::Module).unwrap().unwrap();
    let m = f.modules().unwrap().unwrap().get(0).unwrap();
    assert_eq!(e.string(m.name).unwrap(), "late.so");
    e.reading_section(GlobalSection::Module).unwrap();
    assert_eq!(code(e.close()), TBRW_NOT_ALL_SECTIONS_CLOSED);
    e.done_section(GlobalSection::Module).unwrap();
    e.reading_stream(1).unwrap();
    assert_eq!(code(e.close()), TBRW_NOT_ALL_SECTIONS_CLOSED);
    e.done_stream(1).unwrap();
    e.close().unwrap();
    let t = Tb5File::open(&path).unwrap();
    t.verify().unwrap_or_else(|err| assert_eq!(err.code(), TBRW_SECTION_NOT_EXIST, "only incomplete: {err}"));
    let d = t.stream(0).unwrap().checked_data().unwrap().unwrap();
    assert_eq!(d.len(), 250_000);
    assert_eq!(d.record(249_999).unwrap()[..8], (0x1000u64 + 249_999).to_le_bytes());
}

#[test]
fn without_read_permission_nothing_of_the_session_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = Engine::open(dir.path().join("w.tb5"), access::WRITE | access::CREATE_ALWAYS).unwrap();
    start_stream(&mut e, 0, "stream 0");
    add(&mut e, 0, 0, 0..3);
    finish(&mut e, 0);
    e.writing_section(GlobalSection::Module).unwrap();
    e.add_module(&Module::default()).unwrap();
    e.done_section(GlobalSection::Module).unwrap();
    assert_eq!(code(e.reading_stream(0)), TBRW_INVALID_ACCESS_PERMS);
    assert_eq!(code(e.reading_section(GlobalSection::Module)), TBRW_INVALID_ACCESS_PERMS);
    assert!(e.readable_file(GlobalSection::Module).unwrap().is_none(), "a new file has nothing committed");
    e.close().unwrap();
}
