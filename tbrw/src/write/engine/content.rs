//! What goes into the sections an [`Engine`] has open for writing: the
//! `set_` and `add_` calls of the guide, the builders that hold what they
//! were given, and the bytes a finished section becomes. Which section may
//! be written when is decided in the parent module.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::super::output::{process_thread_section, Output, Part, Pending};
use super::super::sink::{SectionSink, CHUNK};
use super::{Engine, State};
use crate::format::codec;
use crate::format::kind::SectionKind;
use crate::format::raw::{DescEntryRaw, Raw};
use crate::model::descriptor::{desc_type, DescEntry, RecordLayout};
use crate::model::error::{Error, Result};
use crate::model::event::Event;
use crate::model::hardware::System;
use crate::model::module::Module;
use crate::model::process::{Pid, Tid};
use crate::model::section::{GlobalSection, SectionRef, StreamSection};
use crate::model::software::{Application, Host, Os, Software};
use crate::model::stream::StreamInfo;
use crate::model::strings::StringId;
use crate::model::version::VersionInfo;

/// What a global section being written holds so far.
pub(super) enum GlobalBuilder {
    None,
    Hardware(Option<System>),
    Software(Software<StringId>),
    ProcessThread { pids: SectionSink, tids: SectionSink, np: u64, nt: u64 },
    Module { sink: SectionSink, count: u64 },
    UserDefined(Option<SectionSink>),
    Version(Option<VersionInfo>),
}

pub(super) struct StreamState {
    pub(super) writing: bool,
    pub(super) sections: [State; 5],
    pub(super) events: Option<(SectionSink, u64)>,
    pub(super) descs: Vec<DescEntry<StringId>>,
    /// Known once the data descriptor section is done (guide 5.2: sections
    /// in any order). Until then data are taken in unchecked and checked
    /// against it when it is done.
    pub(super) layout: Option<RecordLayout>,
    pub(super) data: Option<DataState>,
    /// The data section was done before the descriptor: its bytes wait in
    /// `data` and become a section when the descriptor is done.
    pub(super) data_waiting: bool,
    /// Event ids below 256 written to this stream (the ones a legacy
    /// sample's 8-bit eventIndex can name).
    pub(super) event_known: [bool; 256],
    /// The eventIndex values of the finished data section's legacy samples.
    pub(super) events_used: Option<Box<[bool; 256]>>,
    pub(super) user: Option<SectionSink>,
    pub(super) info: Option<StreamInfo<StringId>>,
    pub(super) done: bool,
    /// A stream written and done in this session, open for reading: the
    /// reading state of its sections (`Existing`, `Reading` or `Absent`).
    pub(super) reading: Option<[State; 5]>,
}

pub(super) struct DataState {
    pub(super) sink: SectionSink,
    /// Bytes of the current (incomplete) record received so far.
    pub(super) pos_in_record: u32,
    /// Set when data of a size the layout does not allow was taken in
    /// (only possible with [`Engine::add_data_from_reader`]).
    pub(super) poisoned: Option<String>,
    /// The eventIndex values seen so far, noted as the bytes go by (a read
    /// back of the whole section at its end would cost a second pass over
    /// gigabytes). `None` when some bytes arrived before the layout was
    /// known: then they are read back once the section is done.
    pub(super) events: Option<EventScan>,
    /// Whether the records' times go up, noted as the bytes go by; `None`
    /// when some bytes arrived before the layout was known, or the records
    /// have no time field: then the section is not marked time-ordered.
    pub(super) order: Option<TimeOrder>,
}

/// Whether the times of the records written so far never went back
/// ([`RecordLayout::time_at`]): a data section's "time order" flag.
pub(super) struct TimeOrder {
    at: usize,
    size: usize,
    record_size: usize,
    /// The time field's bytes of a record arriving in pieces.
    piece: [u8; 8],
    last: Option<u64>,
    pub(super) ordered: bool,
}

impl TimeOrder {
    /// The check for records of `layout`, if they have a time field.
    pub(super) fn for_layout(layout: &RecordLayout) -> Option<TimeOrder> {
        let (at, size) = layout.time_at()?;
        Some(TimeOrder {
            at: at as usize,
            size: size as usize,
            record_size: layout.record_size() as usize,
            piece: [0; 8],
            last: None,
            ordered: true,
        })
    }

    #[inline]
    fn see(&mut self, t: u64) {
        if self.last.is_some_and(|last| t < last) {
            self.ordered = false;
        }
        self.last = Some(t);
    }

    #[inline]
    fn time(&self, field: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        b[..self.size].copy_from_slice(&field[..self.size]);
        u64::from_le_bytes(b)
    }

    /// Notes `bytes`, which start at byte `pos` of a record.
    #[inline]
    pub(super) fn note(&mut self, mut pos: usize, mut bytes: &[u8]) {
        let (rs, at, size) = (self.record_size, self.at, self.size);
        while self.ordered && !bytes.is_empty() {
            if pos == 0 && bytes.len() >= rs {
                let whole = bytes.len() / rs * rs;
                for r in bytes[..whole].chunks_exact(rs) {
                    let t = self.time(&r[at..at + size]);
                    self.see(t);
                }
                bytes = &bytes[whole..];
                continue;
            }
            if (at..at + size).contains(&pos) {
                self.piece[pos - at] = bytes[0];
                if pos == at + size - 1 {
                    let t = self.time(&self.piece);
                    self.see(t);
                }
            }
            pos += 1;
            if pos == rs {
                pos = 0;
            }
            bytes = &bytes[1..];
        }
    }
}

/// The eventIndex values of the legacy samples written so far.
pub(super) struct EventScan {
    /// eventIndex is bits 20..28 of the u32 at byte 28 of the PC record:
    /// the high nibble of record byte `lo_at` and the low nibble of `hi_at`.
    lo_at: usize,
    hi_at: usize,
    record_size: usize,
    /// The low nibble of a record whose `hi_at` byte has not arrived yet.
    lo: u8,
    pub(super) used: Box<[bool; 256]>,
}

impl EventScan {
    /// A scan for records of `layout`, if they hold a PC record.
    pub(super) fn for_layout(layout: &RecordLayout) -> Option<EventScan> {
        let pc = layout.legacy_pc_offset()? as usize;
        Some(EventScan {
            lo_at: pc + 30,
            hi_at: pc + 31,
            record_size: layout.record_size() as usize,
            lo: 0,
            used: Box::new([false; 256]),
        })
    }

    /// Notes `bytes`, which start at byte `pos` of a record.
    #[inline]
    pub(super) fn note(&mut self, mut pos: usize, mut bytes: &[u8]) {
        let rs = self.record_size;
        // One whole record per call is the common case: no division.
        if pos == 0 && bytes.len() == rs {
            self.used[usize::from((bytes[self.hi_at] & 0x0F) << 4 | bytes[self.lo_at] >> 4)] = true;
            return;
        }
        while !bytes.is_empty() {
            if pos == 0 && bytes.len() >= rs {
                let whole = bytes.len() / rs * rs;
                for r in bytes[..whole].chunks_exact(rs) {
                    self.used[usize::from((r[self.hi_at] & 0x0F) << 4 | r[self.lo_at] >> 4)] = true;
                }
                bytes = &bytes[whole..];
                continue;
            }
            let b = bytes[0];
            if pos == self.lo_at {
                self.lo = b >> 4;
            } else if pos == self.hi_at {
                self.used[usize::from((b & 0x0F) << 4 | self.lo)] = true;
            }
            pos += 1;
            if pos == rs {
                pos = 0;
            }
            bytes = &bytes[1..];
        }
    }
}

impl GlobalBuilder {
    /// The empty builder of a section.
    pub(super) fn new(s: GlobalSection) -> GlobalBuilder {
        match s {
            GlobalSection::Hardware => GlobalBuilder::Hardware(None),
            GlobalSection::Software => GlobalBuilder::Software(Software::default()),
            GlobalSection::ProcessThread => {
                GlobalBuilder::ProcessThread { pids: SectionSink::memory(), tids: SectionSink::memory(), np: 0, nt: 0 }
            }
            GlobalSection::Module => GlobalBuilder::Module { sink: SectionSink::memory(), count: 0 },
            GlobalSection::UserDefinedGlobal => GlobalBuilder::UserDefined(None),
            GlobalSection::VersionInfo => GlobalBuilder::Version(None),
        }
    }
}

impl DataState {
    pub(super) fn new(sink: SectionSink) -> DataState {
        DataState { sink, pos_in_record: 0, poisoned: None, events: None, order: None }
    }

    /// Notes bytes about to be written at byte `pos` of a record: from the
    /// first byte on when the layout is known then; never once some bytes
    /// were taken in without it.
    #[inline]
    fn note(&mut self, layout: &RecordLayout, pos: u32, bytes: &[u8]) {
        if self.sink.len() == 0 && self.events.is_none() {
            self.events = EventScan::for_layout(layout);
        }
        if self.sink.len() == 0 && self.order.is_none() {
            self.order = TimeOrder::for_layout(layout);
        }
        if let Some(order) = self.order.as_mut() {
            order.note(pos as usize, bytes);
        }
        if let Some(scan) = self.events.as_mut() {
            scan.note(pos as usize, bytes);
        }
    }
}

impl StreamState {
    pub(super) fn new(writing: bool) -> Self {
        StreamState {
            writing,
            sections: [State::Absent; 5],
            events: None,
            descs: Vec::new(),
            layout: None,
            data: None,
            data_waiting: false,
            event_known: [false; 256],
            events_used: None,
            user: None,
            info: None,
            done: false,
            reading: None,
        }
    }
}

impl StreamState {
    /// The finished section `s` of stream `n`, from what it was given.
    pub(super) fn finish_section(&mut self, n: u32, s: StreamSection) -> Result<Pending> {
        let section = SectionRef::Stream(n, s);
        let kind = SectionKind::Stream(s);
        Ok(match s {
            StreamSection::EventDescription => {
                let (sink, count) = self.events.take().expect("writing events");
                Pending::new(kind, n, vec![Part::Sink(sink)], count)
            }
            StreamSection::DataDescription => {
                if self.descs.is_empty() {
                    return Err(Error::NoDataToWrite { section });
                }
                let layout = RecordLayout::from_entries(&self.descs)?;
                let mut bytes = Vec::with_capacity(self.descs.len() * DescEntryRaw::SIZE);
                for (i, d) in self.descs.iter().enumerate() {
                    let mut d = d.clone();
                    d.offset = layout.offset_of(i).expect("one offset per entry");
                    codec::encode_desc(&d).encode_into(&mut bytes);
                }
                // The descriptor is final: the record layout is now known.
                self.layout = Some(layout);
                Pending::new(kind, n, vec![Part::Bytes(bytes)], self.descs.len() as u64)
            }
            StreamSection::Data => {
                let d = self.data.as_ref().expect("writing data");
                if let Some(why) = &d.poisoned {
                    return Err(Error::UnsupportedDataSize { stream: n, what: why.clone() });
                }
                if d.pos_in_record != 0 {
                    return Err(Error::UnsupportedDataSize {
                        stream: n,
                        what: format!(
                            "the data ends {} bytes into a record; the section must end on a whole record",
                            d.pos_in_record
                        ),
                    });
                }
                let record_size = self.layout.as_ref().map_or(0, |l| l.record_size());
                if record_size == 0 {
                    return Err(Error::UnsupportedDataSize {
                        stream: n,
                        what: "the data descriptor defines no bytes, so the data section has no record size".into(),
                    });
                }
                let d = self.data.take().expect("checked above");
                let count = d.sink.len() / u64::from(record_size);
                let ordered = d.order.as_ref().is_some_and(|o| o.ordered);
                Pending::data(n, d.sink, count, record_size, ordered)
            }
            StreamSection::UserDefinedStream => {
                // Bytes are bytes: a section given none is an empty one.
                let part = self.user.take().map_or(Part::Bytes(Vec::new()), Part::Sink);
                Pending::new(kind, n, vec![part], 1)
            }
            StreamSection::StreamInfo => {
                let info = self.info.as_ref().ok_or(Error::NoDataToWrite { section })?;
                Pending::new(kind, n, vec![Part::Bytes(codec::encode_stream_info(info))], 1)
            }
        })
    }
}

impl Engine {
    /// The finished global section `s`, from its builder. Nothing given to
    /// it is [`Error::NoDataToWrite`], and the builder stays as it was.
    pub(super) fn finish_global(&mut self, s: GlobalSection) -> Result<Pending> {
        let section = SectionRef::Global(s);
        let nothing = || Error::NoDataToWrite { section };
        let builder = std::mem::replace(&mut self.builders[s.index()], GlobalBuilder::None);
        let restore = |this: &mut Self, b| this.builders[s.index()] = b;
        let (parts, count) = match builder {
            GlobalBuilder::Hardware(Some(sys)) => match codec::encode_system(&sys) {
                Ok(b) => (vec![Part::Bytes(b)], sys.nodes.len() as u64),
                Err(e) => {
                    restore(self, GlobalBuilder::Hardware(Some(sys)));
                    return Err(e);
                }
            },
            GlobalBuilder::Software(sw) if sw.host.is_some() || sw.os.is_some() || sw.application.is_some() => {
                (vec![Part::Bytes(codec::encode_software(&sw))], 1)
            }
            GlobalBuilder::Version(Some(v)) => {
                self.written_version = Some(v.sample_file_version);
                (vec![Part::Bytes(codec::encode_version(&v))], 1)
            }
            GlobalBuilder::UserDefined(Some(sink)) => (vec![Part::Sink(sink)], 1),
            // Bytes are bytes: a section given none is an empty one.
            GlobalBuilder::UserDefined(None) => (vec![Part::Bytes(Vec::new())], 1),
            GlobalBuilder::Module { sink, count } => (vec![Part::Sink(sink)], count),
            GlobalBuilder::ProcessThread { pids, tids, np, nt } => {
                return Ok(process_thread_section(Part::Sink(pids), Part::Sink(tids), np, nt));
            }
            b => {
                restore(self, b);
                return Err(nothing());
            }
        };
        Ok(Pending::global(s, parts, count))
    }

    fn writing_global(&mut self, s: GlobalSection) -> Result<&mut GlobalBuilder> {
        if self.globals[s.index()] != State::Writing {
            return Err(Error::SectionNotWriteable { section: s.into() });
        }
        Ok(&mut self.builders[s.index()])
    }

    /// `TBRW_set_system` (replaces what was set before).
    pub fn set_system(&mut self, system: &System) -> Result<()> {
        // Encode once now so that a bad system is reported by this call.
        codec::encode_system(system)?;
        match self.writing_global(GlobalSection::Hardware)? {
            GlobalBuilder::Hardware(h) => *h = Some(system.clone()),
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    fn software_builder(&mut self) -> Result<&mut Software<StringId>> {
        match self.writing_global(GlobalSection::Software)? {
            GlobalBuilder::Software(s) => Ok(s),
            _ => unreachable!("builder matches its section"),
        }
    }

    /// `TBRW_set_host`.
    pub fn set_host(&mut self, host: &Host) -> Result<()> {
        self.software_builder()?;
        let h = self.intern_all(host.clone());
        self.software_builder()?.host = Some(h);
        Ok(())
    }

    /// `TBRW_set_os`.
    pub fn set_os(&mut self, os: &Os) -> Result<()> {
        self.software_builder()?;
        let o = self.intern_all(os.clone());
        self.software_builder()?.os = Some(o);
        Ok(())
    }

    /// `TBRW_set_application`.
    pub fn set_application(&mut self, app: &Application) -> Result<()> {
        self.software_builder()?.application = Some(*app);
        Ok(())
    }

    /// `TBRW_set_version_info`.
    pub fn set_version_info(&mut self, v: &VersionInfo) -> Result<()> {
        match self.writing_global(GlobalSection::VersionInfo)? {
            GlobalBuilder::Version(x) => *x = Some(*v),
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    /// `TBRW_set_user_defined_global` (replaces what was set before).
    pub fn set_user_defined_global(&mut self, data: &[u8]) -> Result<()> {
        self.writing_global(GlobalSection::UserDefinedGlobal)?;
        let mut sink = SectionSink::memory();
        self.out.as_ref().expect("writing implies output").write(&mut sink, data)?;
        self.builders[GlobalSection::UserDefinedGlobal.index()] = GlobalBuilder::UserDefined(Some(sink));
        Ok(())
    }

    /// `TBRW_add_process`.
    pub fn add_process(&mut self, pid: &Pid) -> Result<()> {
        self.writing_global(GlobalSection::ProcessThread)?;
        let rec = codec::encode_pid(&self.intern_all(pid.clone())).encode();
        let out = self.out.as_ref().expect("writing implies output");
        match &mut self.builders[GlobalSection::ProcessThread.index()] {
            GlobalBuilder::ProcessThread { pids, np, .. } => {
                out.write(pids, &rec)?;
                *np += 1;
            }
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    /// `TBRW_add_thread`.
    pub fn add_thread(&mut self, tid: &Tid) -> Result<()> {
        self.writing_global(GlobalSection::ProcessThread)?;
        let rec = codec::encode_tid(&self.intern_all(tid.clone())).encode();
        let out = self.out.as_ref().expect("writing implies output");
        match &mut self.builders[GlobalSection::ProcessThread.index()] {
            GlobalBuilder::ProcessThread { tids, nt, .. } => {
                out.write(tids, &rec)?;
                *nt += 1;
            }
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    /// `TBRW_add_module`.
    pub fn add_module(&mut self, module: &Module) -> Result<()> {
        self.writing_global(GlobalSection::Module)?;
        let m = self.intern_all(module.clone());
        let rec = codec::encode_module(&m)?.encode();
        let out = self.out.as_ref().expect("writing implies output");
        match &mut self.builders[GlobalSection::Module.index()] {
            GlobalBuilder::Module { sink, count } => {
                out.write(sink, &rec)?;
                *count += 1;
            }
            _ => unreachable!("builder matches its section"),
        }
        Ok(())
    }

    // ------------------------------------------------------------ stream sections

    fn writing_stream_section_state(&mut self, n: u32, s: StreamSection) -> Result<&mut StreamState> {
        let st = self.stream_mut(n)?;
        if !st.writing || st.sections[s.index()] != State::Writing {
            return Err(Error::SectionNotWriteable { section: SectionRef::Stream(n, s) });
        }
        Ok(st)
    }

    /// `TBRW_set_stream_info` (replaces what was set before).
    pub fn set_stream_info(&mut self, n: u32, info: &StreamInfo) -> Result<()> {
        self.writing_stream_section_state(n, StreamSection::StreamInfo)?;
        let info = self.intern_all(info.clone());
        self.stream_mut(n)?.info = Some(info);
        Ok(())
    }

    /// `TBRW_add_event`.
    pub fn add_event(&mut self, n: u32, event: &Event) -> Result<()> {
        self.writing_stream_section_state(n, StreamSection::EventDescription)?;
        let e = self.intern_all(event.clone());
        let mut bytes = Vec::new();
        codec::encode_event(&e, &mut bytes)?;
        let out = self.out.as_ref().expect("writing implies output");
        let st = self.streams.get_mut(&n).expect("checked above");
        let (sink, count) = st.events.as_mut().expect("writing events");
        out.write(sink, &bytes)?;
        *count += 1;
        if let Ok(i) = u8::try_from(event.id) {
            st.event_known[i as usize] = true;
        }
        Ok(())
    }

    /// `TBRW_add_data_descriptor_entry`.
    pub fn add_data_descriptor_entry(&mut self, n: u32, entry: &DescEntry) -> Result<()> {
        self.writing_stream_section_state(n, StreamSection::DataDescription)?;
        if entry.desc_type == desc_type::LEGACY_SAMPLE_RECORD && n != 0 {
            return Err(Error::bad(format!(
                "stream {n}: legacy sample records (ST_LEGACY_SAMPLE_RECORD) belong in stream 0 only"
            )));
        }
        let e = self.intern_all(entry.clone());
        let st = self.streams.get_mut(&n).expect("checked above");
        st.descs.push(e);
        // Reject a reserved type or an impossible offset at the call that adds it.
        if let Err(err) = RecordLayout::from_entries(&st.descs) {
            st.descs.pop();
            return Err(err);
        }
        Ok(())
    }

    /// The stream's open data section and the output. The layout is `None`
    /// until the descriptor is done: data are then taken in unchecked.
    fn data_state(&mut self, n: u32) -> Result<(&mut StreamState, &Output)> {
        let st = self.streams.get_mut(&n).filter(|s| !s.done).ok_or(Error::StreamNotExist { stream: n })?;
        if !st.writing || st.sections[StreamSection::Data.index()] != State::Writing {
            return Err(Error::SectionNotWriteable { section: SectionRef::Stream(n, StreamSection::Data) });
        }
        if st.layout.as_ref().is_some_and(|l| l.record_size() == 0) {
            return Err(Error::UnsupportedDataSize {
                stream: n,
                what: "the data descriptor defines records of 0 bytes".into(),
            });
        }
        Ok((st, self.out.as_ref().expect("writing implies output")))
    }

    /// `TBRW_add_data`: appends bytes to the data section. A record may
    /// arrive in pieces, but every piece must end at the start or end of a
    /// descriptor field (so the guide's 32-byte PC record followed by the
    /// 8-byte TSC works, and a piece of a wrong size is caught at once).
    pub fn add_data(&mut self, n: u32, bytes: &[u8]) -> Result<()> {
        let (st, out) = self.data_state(n)?;
        let Some(layout) = st.layout.as_ref() else {
            return out.write(&mut st.data.as_mut().expect("writing data").sink, bytes);
        };
        let rs = u64::from(layout.record_size());
        let d = st.data.as_mut().expect("writing data");
        let reach = u64::from(d.pos_in_record) + bytes.len() as u64;
        // One whole record per call is the common case: no division, and
        // a record's end is always a boundary.
        let end = if reach == rs { 0 } else { reach % rs };
        if end != 0 && !layout.is_boundary(end as u32) {
            return Err(Error::UnsupportedDataSize {
                stream: n,
                what: format!(
                    "{} bytes added at byte {} of a {rs}-byte record end at byte {end}, inside a descriptor field",
                    bytes.len(),
                    d.pos_in_record
                ),
            });
        }
        d.note(layout, d.pos_in_record, bytes);
        out.write(&mut d.sink, bytes)?;
        d.pos_in_record = end as u32;
        Ok(())
    }

    /// `TBRW_add_data_from_file`: appends the whole content of a file of records.
    pub fn add_data_from_file(&mut self, n: u32, file: &Path) -> Result<()> {
        let f = File::open(file).map_err(|source| Error::FileOpen { path: file.to_owned(), source })?;
        let len = f.metadata().map_err(|e| Error::io(file, "stat", e))?.len();
        {
            let (st, _) = self.data_state(n)?;
            let d = st.data.as_ref().expect("writing data");
            // Before the descriptor is done, the whole is checked then.
            let bad = st.layout.as_ref().filter(|l| {
                let end = (u64::from(d.pos_in_record) + len) % u64::from(l.record_size());
                !l.is_boundary(end as u32)
            });
            if let Some(layout) = bad {
                return Err(Error::UnsupportedDataSize {
                    stream: n,
                    what: format!(
                        "{}: {len} bytes is not a whole number of {}-byte records",
                        file.display(),
                        layout.record_size()
                    ),
                });
            }
        }
        let got = self.add_data_from_reader(n, &mut std::io::BufReader::with_capacity(CHUNK, f))?;
        if got != len {
            return Err(Error::io(
                file,
                "read",
                std::io::Error::other(format!("file changed size while read ({len} then {got} bytes)")),
            ));
        }
        Ok(())
    }

    /// Appends everything `reader` yields to the data section and returns
    /// the byte count. If the total does not end on a field boundary the
    /// call fails and the data section cannot be finished.
    pub fn add_data_from_reader(&mut self, n: u32, reader: &mut dyn Read) -> Result<u64> {
        let path = self.path.clone();
        let (st, out) = self.data_state(n)?;
        let layout = st.layout.as_ref();
        let d = st.data.as_mut().expect("writing data");
        let mut buf = vec![0u8; CHUNK];
        let mut total = 0u64;
        loop {
            let k = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    d.poisoned = Some(format!("reading the data failed after {total} bytes: {e}"));
                    return Err(Error::io(&path, "read data", e));
                }
            };
            if let Some(layout) = layout {
                let pos = (u64::from(d.pos_in_record) + total) % u64::from(layout.record_size());
                d.note(layout, pos as u32, &buf[..k]);
            }
            out.write(&mut d.sink, &buf[..k])?;
            total += k as u64;
        }
        let Some(layout) = layout else { return Ok(total) };
        let rs = u64::from(layout.record_size());
        let end = (u64::from(d.pos_in_record) + total) % rs;
        d.pos_in_record = end as u32;
        if !layout.is_boundary(end as u32) {
            let what = format!("{total} bytes read end at byte {end} of a {rs}-byte record, inside a descriptor field");
            d.poisoned = Some(what.clone());
            return Err(Error::UnsupportedDataSize { stream: n, what });
        }
        Ok(total)
    }

    /// The record layout of a stream being written, once known.
    pub fn record_layout(&self, n: u32) -> Option<&RecordLayout> {
        self.streams.get(&n).and_then(|s| s.layout.as_ref())
    }

    /// `TBRW_set_user_defined_stream` (replaces what was set before).
    pub fn set_user_defined_stream(&mut self, n: u32, data: &[u8]) -> Result<()> {
        self.writing_stream_section_state(n, StreamSection::UserDefinedStream)?;
        let out = self.out.as_ref().expect("writing implies output");
        let mut sink = SectionSink::memory();
        out.write(&mut sink, data)?;
        self.streams.get_mut(&n).expect("checked above").user = Some(sink);
        Ok(())
    }
}

impl StreamState {
    /// Checks the data taken in before the descriptor was done against
    /// the layout it now gives: they must end on a field boundary (on a
    /// whole record if the data section is done too).
    pub(super) fn check_early_data(&mut self, n: u32) -> Result<()> {
        let Some(layout) = &self.layout else { return Ok(()) };
        let Some(d) = self.data.as_mut() else { return Ok(()) };
        let rs = u64::from(layout.record_size());
        let len = d.sink.len();
        if rs == 0 {
            if len == 0 {
                return Ok(());
            }
            return Err(Error::UnsupportedDataSize {
                stream: n,
                what: format!("{len} bytes of data were given but the data descriptor defines records of 0 bytes"),
            });
        }
        let end = (len % rs) as u32;
        let fits = if self.data_waiting { end == 0 } else { layout.is_boundary(end) };
        if !fits {
            return Err(Error::UnsupportedDataSize {
                stream: n,
                what: format!(
                    "the {len} bytes of data given before the descriptor end at byte {end} of its {rs}-byte record{}",
                    if self.data_waiting {
                        " (the data section is done: it must end on a whole record)"
                    } else {
                        ", inside a field"
                    }
                ),
            });
        }
        d.pos_in_record = end;
        Ok(())
    }
}

impl Engine {
    /// Notes the eventIndex of every legacy sample in the data section of
    /// stream `n` (about to be finished), for [`Engine::verify`].
    pub(super) fn note_event_indices(&mut self, n: u32) -> Result<()> {
        let Some(out) = self.out.as_ref() else { return Ok(()) };
        let Some(st) = self.streams.get_mut(&n) else { return Ok(()) };
        let (Some(layout), Some(d)) = (&st.layout, &st.data) else { return Ok(()) };
        if let Some(scan) = d.events.as_ref() {
            st.events_used = Some(scan.used.clone());
            return Ok(());
        }
        // Some bytes came before the layout: read the section back.
        let Some(mut scan) = EventScan::for_layout(layout) else { return Ok(()) };
        let mut pos = 0usize;
        out.read_back(&d.sink, &mut |bytes| {
            scan.note(pos, bytes);
            pos = (pos + bytes.len()) % scan.record_size;
        })?;
        st.events_used = Some(scan.used);
        Ok(())
    }
}
