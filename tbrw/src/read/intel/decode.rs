//! Decoding the sections of an Intel file into the model, each checked
//! against its bytes: strings, the single-structure sections, the tables
//! of fixed-size records, events with their details, data descriptors.

use std::path::Path;

use super::{section_ref, IntelEntry};
use crate::format::cursor::SectionCursor;
use crate::format::intel::codec;
use crate::format::intel::raw::{DescEntryRaw, EventDetailRaw, EventRaw, Raw, StreamInfoRaw, STREAM_INFO_MIN};
use crate::model::descriptor::DescEntry;
use crate::model::error::{Error, Location, Result};
use crate::model::event::Event;
use crate::model::section::SectionRef;
use crate::model::stream::StreamInfo;
use crate::model::strings::StringId;

/// The longest string this reader looks for a NUL in (Intel's strings are
/// paths and names; a string id into bytes without one is damage).
pub(crate) const MAX_STRING: usize = 1 << 20;

/// The text of string `id` (an absolute file offset) of the file `bytes`:
/// NUL-terminated UTF-8.
pub(crate) fn string_at<'b>(path: &Path, bytes: &'b [u8], id: StringId) -> Result<&'b str> {
    let at = |what: String| {
        Error::malformed(
            Location { file: path.to_owned(), section: SectionRef::Strings, record: None, offset: id.0 },
            what,
        )
    };
    if id.is_none() {
        return Err(Error::InvalidString { id: 0 });
    }
    let start = usize::try_from(id.0).ok().filter(|&s| s < bytes.len()).ok_or_else(|| {
        at(format!("string id {:#x} names byte {}, past the end of the {}-byte file", id.0, id.0, bytes.len()))
    })?;
    let window = &bytes[start..bytes.len().min(start.saturating_add(MAX_STRING))];
    let len = window
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| at(format!("the string at byte {start} has no NUL in the {} bytes after it", window.len())))?;
    std::str::from_utf8(&window[..len]).map_err(|e| at(format!("the string at byte {start} is not UTF-8: {e}")))
}

/// Whether `id` names a string of the file `bytes` (for `verify`).
pub(crate) fn check_string(path: &Path, bytes: &[u8], id: StringId) -> Result<()> {
    if id.is_none() {
        Ok(())
    } else {
        string_at(path, bytes, id).map(|_| ())
    }
}

/// A cursor over section `e` (of stream `stream`, when it is a stream's) of the file `bytes`.
pub(crate) fn cursor<'a>(path: &'a Path, bytes: &'a [u8], e: &IntelEntry, stream: u32) -> SectionCursor<'a> {
    SectionCursor::new(&bytes[e.range()], e.offset, path, section_ref(e.section_type, stream))
}

/// The one structure of a section that holds one (`T::SIZE` bytes or more).
pub(crate) fn one<T: Raw>(path: &Path, bytes: &[u8], e: &IntelEntry, what: &str) -> Result<T> {
    cursor(path, bytes, e, 0).read(what)
}

/// A section of fixed-size records: its bytes, the stride, the count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Records<'b> {
    pub(crate) bytes: &'b [u8],
    pub(crate) stride: usize,
    pub(crate) count: u64,
    pub(crate) base: u64,
}

/// The records of section `e`: `number_entries` of `entry_length` bytes
/// (at least `min` bytes each, the structure the reader decodes), inside
/// the section.
pub(crate) fn records<'b>(path: &Path, bytes: &'b [u8], e: &IntelEntry, min: usize, what: &str) -> Result<Records<'b>> {
    let c = cursor(path, bytes, e, 0);
    let stride = e.entry_length as usize;
    if stride < min {
        return Err(c.error(format!("{what} of {stride} bytes, where a record takes at least {min}")));
    }
    c.check_count(e.number_entries, stride, what)?;
    Ok(Records { bytes: &bytes[e.range()], stride, count: e.number_entries, base: e.offset })
}

/// The stream information section `e` of stream `stream`: Intel's
/// 128-byte `TBRW_STREAM_INFO_EX`, or at least the API's 56 bytes.
pub(crate) fn stream_info(path: &Path, bytes: &[u8], e: &IntelEntry, stream: u32) -> Result<StreamInfo<StringId>> {
    let c = cursor(path, bytes, e, stream);
    let b = &bytes[e.range()];
    if b.len() < STREAM_INFO_MIN {
        return Err(c.error(format!("{} bytes, where stream information takes at least {STREAM_INFO_MIN}", b.len())));
    }
    let mut full = [0u8; StreamInfoRaw::SIZE];
    let n = b.len().min(full.len());
    full[..n].copy_from_slice(&b[..n]);
    let raw = StreamInfoRaw::decode(&full).ok_or_else(|| c.error("undecodable stream information"))?;
    Ok(codec::decode_stream_info(&raw))
}

/// This project's flags of stream `stream` (the tagged last reserved word
/// of its information, `format::intel::stream_flags`); 0 when it has none.
pub(crate) fn stream_flags(bytes: &[u8], e: &IntelEntry) -> u64 {
    let b = &bytes[e.range()];
    let at = StreamInfoRaw::SIZE - 8;
    b.get(at..at + 8)
        .map_or(0, |w| crate::format::intel::stream_flags(u64::from_le_bytes(w.try_into().unwrap_or_default())))
}

/// The events of section `e`: each `TBRW_EVENT` followed by its details.
pub(crate) fn events(path: &Path, bytes: &[u8], e: &IntelEntry, stream: u32) -> Result<Vec<Event<StringId>>> {
    let mut c = cursor(path, bytes, e, stream);
    let n = c.check_count(e.number_entries, EventRaw::SIZE, "events")?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        c.at_record(i as u64);
        let raw: EventRaw = c.read("TBRW_EVENT")?;
        if raw.num_details != 0 && raw.details_at != EventRaw::SIZE as u64 {
            return Err(c.error(format!(
                "its details are said to be {} bytes after it, but they follow it at {}",
                raw.details_at,
                EventRaw::SIZE
            )));
        }
        let k = c.check_count(raw.num_details.into(), EventDetailRaw::SIZE, "event details")?;
        let mut details = Vec::with_capacity(k);
        for _ in 0..k {
            details.push(codec::decode_detail(&c.read::<EventDetailRaw>("TBRW_EVENT_DETAIL")?));
        }
        out.push(codec::decode_event(&raw, details));
    }
    Ok(out)
}

/// The data descriptor entries of section `e`.
pub(crate) fn descriptor(path: &Path, bytes: &[u8], e: &IntelEntry, stream: u32) -> Result<Vec<DescEntry<StringId>>> {
    let mut c = cursor(path, bytes, e, stream);
    let stride = e.entry_length as usize;
    if stride < DescEntryRaw::SIZE {
        return Err(c.error(format!("descriptor entries of {stride} bytes, where one takes {}", DescEntryRaw::SIZE)));
    }
    let n = c.check_count(e.number_entries, stride, "descriptor entries")?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        c.at_record(i as u64);
        let entry = c.bytes(stride, "descriptor entry")?;
        let raw = DescEntryRaw::decode(entry).ok_or_else(|| c.error("undecodable descriptor entry"))?;
        out.push(codec::decode_desc(&raw));
    }
    Ok(out)
}
