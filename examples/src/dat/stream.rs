//! The streams of the dump: each stream's records written from a TB5 file
//! (its data appended to the data file) beside their reading back
//! ([`PendingStream`], written when the stream's end is read).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use tbrw::*;

use super::codec::{record, Dec, Enc};
use super::{tag, DatError, R};

/// Writes stream `n`'s records (the stream's start and end excluded) on
/// `out`, and its records on `data_out` at `*data_at`, which it advances.
pub(super) fn write_stream(
    file: &Tb5File,
    n: u32,
    out: &mut Vec<u8>,
    data_out: &mut dyn Write,
    data_at: &mut u64,
    data_path: &Path,
) -> R {
    let s = file.stream(n)?;
    if let Some(i) = s.info()? {
        let mut e = Enc::default();
        for v in [i.sampling_duration_ms, i.stream_type, i.sampling_interval_us] {
            e.u32(v);
        }
        e.u64(i.start_time.ticks());
        e.u64(i.end_time.ticks());
        e.str(file, i.command_line)?;
        e.str(file, i.cpu_mask)?;
        e.str(file, i.comment)?;
        record(out, tag::STREAM_INFO, n, &e.0);
    }
    if let Some(events) = s.events()? {
        let mut e = Enc::default();
        e.u32(events.len() as u32);
        for ev in &events {
            e.u32(ev.id);
            e.u32(ev.flags.bits());
            e.u64(ev.sav);
            e.str(file, ev.name)?;
            e.str(file, ev.arch_name)?;
            e.u32(ev.details.len() as u32);
            for d in &ev.details {
                e.u16(d.access_size_bits);
                e.u8(d.method);
                e.u8(d.access);
                e.u64(d.address);
                e.u64(d.value);
                e.u8(d.legacy_command);
                e.u8(d.reserved1);
                e.u16(d.reserved2);
                e.u32(d.reserved3);
            }
        }
        record(out, tag::EVENTS, n, &e.0);
    }
    if let Some(descs) = s.descriptor()? {
        let mut e = Enc::default();
        e.u32(descs.len() as u32);
        for d in &descs {
            e.u32(d.offset);
            e.u16(d.desc_type);
            e.u16(d.subtype);
            e.u32(d.data_size);
            e.u64(d.access_offset);
            for v in [d.access_type, d.access_method, d.sample_flag, d.reserved0] {
                e.u8(v);
            }
            e.u32(d.reserved1);
            e.str(file, d.name)?;
        }
        record(out, tag::DESCRIPTOR, n, &e.0);
    }
    if let Some(b) = s.user_defined()? {
        record(out, tag::USER_STREAM, n, b);
    }
    if let Some(d) = s.data()? {
        let mut e = Enc::default();
        e.u32(d.record_size() as u32);
        e.u64(d.len());
        e.u64(*data_at);
        record(out, tag::DATA, n, &e.0);
        data_out.write_all(d.as_bytes()).map_err(|e| DatError::Io(data_path.to_owned(), e))?;
        *data_at += d.as_bytes().len() as u64;
    }
    Ok(())
}

/// The stream information record read back.
pub(super) fn read_info(d: &mut Dec<'_>) -> R<StreamInfo> {
    Ok(StreamInfo {
        sampling_duration_ms: d.u32("duration")?,
        stream_type: d.u32("type")?,
        sampling_interval_us: d.u32("interval")?,
        start_time: FileTime::from_ticks(d.u64("start")?),
        end_time: FileTime::from_ticks(d.u64("end")?),
        command_line: d.str("command line")?,
        cpu_mask: d.str("cpu mask")?,
        comment: d.str("comment")?,
    })
}

/// The event record read back.
pub(super) fn read_events(d: &mut Dec<'_>) -> R<Vec<Event>> {
    let n = d.u32("event count")?;
    let n = d.count(n.into(), 28, "events")?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let id = d.u32("id")?;
        let flags = EventFlags::from_bits_retain(d.u32("flags")?);
        let sav = d.u64("sav")?;
        let name = d.str("name")?;
        let arch_name = d.str("arch name")?;
        let k = d.u32("detail count")?;
        let k = d.count(k.into(), 28, "details")?;
        let details = (0..k)
            .map(|_| {
                Ok(EventDetail {
                    access_size_bits: d.u16("access size")?,
                    method: d.u8("method")?,
                    access: d.u8("access")?,
                    address: d.u64("address")?,
                    value: d.u64("value")?,
                    legacy_command: d.u8("legacy command")?,
                    reserved1: d.u8("reserved1")?,
                    reserved2: d.u16("reserved2")?,
                    reserved3: d.u32("reserved3")?,
                })
            })
            .collect::<R<_>>()?;
        v.push(Event { id, flags, sav, name, arch_name, details });
    }
    Ok(v)
}

/// The descriptor record read back.
pub(super) fn read_descs(d: &mut Dec<'_>) -> R<Vec<DescEntry>> {
    let n = d.u32("entry count")?;
    let n = d.count(n.into(), 32, "descriptor entries")?;
    (0..n)
        .map(|_| {
            Ok(DescEntry {
                offset: d.u32("offset")?,
                desc_type: d.u16("type")?,
                subtype: d.u16("subtype")?,
                data_size: d.u32("size")?,
                access_offset: d.u64("access offset")?,
                access_type: d.u8("access type")?,
                access_method: d.u8("access method")?,
                sample_flag: d.u8("sample flag")?,
                reserved0: d.u8("reserved0")?,
                reserved1: d.u32("reserved1")?,
                name: d.str("name")?,
            })
        })
        .collect()
}

#[derive(Default)]
pub(super) struct PendingStream {
    pub(super) info: Option<StreamInfo>,
    pub(super) events: Option<Vec<Event>>,
    pub(super) descs: Option<Vec<DescEntry>>,
    pub(super) user: Option<Vec<u8>>,
    pub(super) data: Option<(u32, u64, u64)>,
}

impl PendingStream {
    /// Writes the stream the way a collector would: info, descriptor,
    /// events, user-defined bytes, then the records streamed from the data file.
    pub(super) fn write(self, w: &mut Tb5Writer, n: u32, data_path: &Path, d: &Dec<'_>) -> R {
        let info = self.info.ok_or_else(|| d.err(format!("stream {n} has no STREAM_INFO record")))?;
        let descs = self.descs.ok_or_else(|| d.err(format!("stream {n} has no DESCRIPTOR record")))?;
        let mut s = w.stream(n)?.info(&info)?.data_descriptor(&descs)?;
        if let Some(ev) = &self.events {
            s.events(ev)?;
        }
        if let Some(u) = &self.user {
            s.user_defined(u)?;
        }
        if let Some((rs, count, offset)) = self.data {
            let mut data = s.data()?;
            let want = data.layout().map(|l| l.record_size());
            if want != Some(rs) {
                return Err(d.err(format!("stream {n}: record size {rs} but the descriptor defines {want:?}")));
            }
            let len = count.checked_mul(u64::from(rs)).ok_or_else(|| d.err("data length overflows"))?;
            let mut f = File::open(data_path).map_err(|e| DatError::Io(data_path.to_owned(), e))?;
            let size = f.metadata().map_err(|e| DatError::Io(data_path.to_owned(), e))?.len();
            if offset.checked_add(len).is_none_or(|end| end > size) {
                return Err(DatError::Malformed {
                    file: data_path.to_owned(),
                    record: None,
                    offset,
                    what: format!(
                        "stream {n}: {len} bytes of records at byte {offset} run past the end ({size} bytes)"
                    ),
                });
            }
            f.seek(SeekFrom::Start(offset)).map_err(|e| DatError::Io(data_path.to_owned(), e))?;
            let got = data.add_from_reader(&mut std::io::BufReader::with_capacity(1 << 20, f.take(len)))?;
            if got != len {
                return Err(DatError::Malformed {
                    file: data_path.to_owned(),
                    record: None,
                    offset: offset + got,
                    what: "data file ended early".into(),
                });
            }
            data.done()?;
        }
        s.finish()?;
        Ok(())
    }
}
