//! Writing with the lifecycle checked at compile time: [`Tb5Writer`] and
//! its section and stream builders.
//!
//! This is a thin typed layer over [`Engine`]: every call forwards to the
//! engine, which holds the one implementation of the rules. The types add
//! what a compiler can check:
//!
//! * a section counts only after its builder's `done()` (dropping a builder
//!   discards what it was given);
//! * a stream can only be finished once its stream info and data descriptor
//!   are written (`finish()` exists only on `StreamWriter<HasInfo, HasDescriptor>`);
//! * the data section can only be opened once the descriptor is written,
//!   so the record size is known;
//! * a finished section's builder is consumed, so it cannot be written again.
//!
//! What only the file knows (a section or stream that already exists when
//! appending, a record piece of the wrong size) is a run-time [`Error`](crate::Error).
//!
//! ```no_run
//! use tbrw::*;
//!
//! let mut w = Tb5Writer::create("out.tb5")?;
//! w.write_version_info(&VersionInfo { sampling_driver_version: UNKNOWN_DRIVER_VERSION, bind_version: 0, sample_file_version: 0x10 })?;
//! let mut stream = w.stream(0)?
//!     .info(&StreamInfo { stream_type: stream_type::SAMPLING, comment: Some("run 1".into()), ..Default::default() })?
//!     .data_descriptor(&legacy_descriptor())?;
//! let mut data = stream.data()?;
//! data.add(&SampleRecordPc::default().to_bytes())?; // the PC record ...
//! data.add(&1234u64.to_le_bytes())?;                 // ... then its TSC
//! data.done()?;
//! stream.finish()?;
//! w.close()?;
//! # Ok::<(), tbrw::Error>(())
//! ```

use std::io::Read;
use std::marker::PhantomData;
use std::path::Path;

use super::durability::Durability;
use super::engine::{access, Engine};
use super::layout::WriteLayout;
use crate::model::descriptor::{desc_subtype, desc_type, DescEntry, RecordLayout, LEGACY_PC_SIZE, LEGACY_TSC_SIZE};
use crate::model::error::Result;
use crate::model::event::Event;
use crate::model::hardware::System;
use crate::model::module::Module;
use crate::model::process::{Pid, Tid};
use crate::model::section::StreamSection;
use crate::model::software::{Application, Host, Os, Software};
use crate::model::stream::StreamInfo;
use crate::model::version::VersionInfo;
use crate::read::Tb5File;

mod sealed {
    pub trait Sealed {}
}

/// Marker types naming the global sections for [`SectionWriter`].
pub mod kinds {
    use super::sealed::Sealed;
    use crate::model::section::GlobalSection;

    /// A global section kind.
    pub trait GlobalKind: Sealed {
        /// Its identifier.
        const SECTION: GlobalSection;
    }

    macro_rules! kind {
        ($(#[$m:meta])* $name:ident => $s:ident) => {
            $(#[$m])*
            #[derive(Debug)]
            pub enum $name {}
            impl Sealed for $name {}
            impl GlobalKind for $name {
                const SECTION: GlobalSection = GlobalSection::$s;
            }
        };
    }
    kind!(/// The hardware section.
        Hardware => Hardware);
    kind!(/// The software section.
        Software => Software);
    kind!(/// The process/thread section.
        ProcessThread => ProcessThread);
    kind!(/// The module section.
        Modules => Module);
    kind!(/// The user-defined global section.
        UserDefinedGlobal => UserDefinedGlobal);
    kind!(/// The version information section.
        VersionInfo => VersionInfo);
}

use kinds::GlobalKind;

/// A TB5 file being written: a new file, or new sections and streams
/// appended to an existing one. Nothing is visible at the path until
/// [`close`](Tb5Writer::close) succeeds; dropping the writer, or
/// [`abort`](Tb5Writer::abort), discards everything it was given.
#[derive(Debug)]
pub struct Tb5Writer {
    engine: Engine,
}

impl Tb5Writer {
    /// Starts a new file at `path` (any file there is replaced on close).
    /// Close waits as [`Durability::from_env`] says.
    pub fn create(path: impl AsRef<Path>) -> Result<Tb5Writer> {
        Tb5Writer::create_with(path, Durability::from_env())
    }

    /// [`Tb5Writer::create`], with a close that waits as `durability` says.
    pub fn create_with(path: impl AsRef<Path>, durability: Durability) -> Result<Tb5Writer> {
        Tb5Writer::create_as(path, durability, WriteLayout::default())
    }

    /// [`Tb5Writer::create_with`], the file written in `layout` (Intel's
    /// by default; docs/FORMAT.md, "Which layout this project writes").
    pub fn create_as(path: impl AsRef<Path>, durability: Durability, layout: WriteLayout) -> Result<Tb5Writer> {
        Ok(Tb5Writer { engine: Engine::open_as(path, access::CREATE_ALWAYS | access::WRITE, durability, layout)? })
    }

    /// Opens an existing file to add sections and streams it does not have.
    /// Existing bytes are never rewritten; the append becomes visible
    /// atomically on close, which waits as [`Durability::from_env`] says.
    pub fn append(path: impl AsRef<Path>) -> Result<Tb5Writer> {
        Tb5Writer::append_with(path, Durability::from_env())
    }

    /// [`Tb5Writer::append`], with a close that waits as `durability` says.
    pub fn append_with(path: impl AsRef<Path>, durability: Durability) -> Result<Tb5Writer> {
        Ok(Tb5Writer { engine: Engine::open_with(path, access::READ | access::WRITE, durability)? })
    }

    pub(crate) fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// The committed content of the file being appended to.
    pub fn existing(&self) -> Option<&Tb5File> {
        self.engine.existing()
    }

    /// Opens a global section for writing.
    pub fn section<K: GlobalKind>(&mut self) -> Result<SectionWriter<'_, K>> {
        self.engine.writing_section(K::SECTION)?;
        Ok(SectionWriter { engine: Some(&mut self.engine), kind: PhantomData })
    }

    /// Opens the hardware section.
    pub fn hardware(&mut self) -> Result<SectionWriter<'_, kinds::Hardware>> {
        self.section()
    }
    /// Opens the software section.
    pub fn software(&mut self) -> Result<SectionWriter<'_, kinds::Software>> {
        self.section()
    }
    /// Opens the process/thread section.
    pub fn process_threads(&mut self) -> Result<SectionWriter<'_, kinds::ProcessThread>> {
        self.section()
    }
    /// Opens the module section.
    pub fn modules(&mut self) -> Result<SectionWriter<'_, kinds::Modules>> {
        self.section()
    }
    /// Opens the user-defined global section.
    pub fn user_defined_global(&mut self) -> Result<SectionWriter<'_, kinds::UserDefinedGlobal>> {
        self.section()
    }
    /// Opens the version information section.
    pub fn version_info(&mut self) -> Result<SectionWriter<'_, kinds::VersionInfo>> {
        self.section()
    }

    /// Writes the whole hardware section.
    pub fn write_hardware(&mut self, system: &System) -> Result<()> {
        let mut s = self.hardware()?;
        s.set_system(system)?;
        s.done()
    }

    /// Writes the whole software section (the parts that are `Some`).
    pub fn write_software(&mut self, sw: &Software) -> Result<()> {
        let mut s = self.software()?;
        if let Some(h) = &sw.host {
            s.set_host(h)?;
        }
        if let Some(o) = &sw.os {
            s.set_os(o)?;
        }
        if let Some(a) = &sw.application {
            s.set_application(a)?;
        }
        s.done()
    }

    /// Writes the whole version information section.
    pub fn write_version_info(&mut self, v: &VersionInfo) -> Result<()> {
        let mut s = self.version_info()?;
        s.set(v)?;
        s.done()
    }

    /// Writes the whole module section.
    pub fn write_modules<'a>(&mut self, modules: impl IntoIterator<Item = &'a Module>) -> Result<()> {
        let mut s = self.modules()?;
        for m in modules {
            s.add_module(m)?;
        }
        s.done()
    }

    /// Writes the whole process/thread section.
    pub fn write_process_threads(&mut self, pids: &[Pid], tids: &[Tid]) -> Result<()> {
        let mut s = self.process_threads()?;
        for p in pids {
            s.add_process(p)?;
        }
        for t in tids {
            s.add_thread(t)?;
        }
        s.done()
    }

    /// Writes the whole user-defined global section.
    pub fn write_user_defined_global(&mut self, data: &[u8]) -> Result<()> {
        let mut s = self.user_defined_global()?;
        s.set(data)?;
        s.done()
    }

    /// Opens data stream `index` for writing. Streams are numbered from 0
    /// without gaps: the index must be the next free one (or one whose
    /// writer was dropped).
    pub fn stream(&mut self, index: u32) -> Result<StreamWriter<'_, NoInfo, NoDescriptor>> {
        self.engine.writing_stream(index)?;
        Ok(StreamWriter { engine: Some(&mut self.engine), index, state: PhantomData })
    }

    /// Opens the next free data stream for writing.
    pub fn next_stream(&mut self) -> Result<StreamWriter<'_, NoInfo, NoDescriptor>> {
        let n = self.engine.number_of_streams();
        self.stream(n)
    }

    /// Discards everything written: no file appears, an appended-to file
    /// stays exactly as it was. Dropping the writer does the same.
    pub fn abort(mut self) {
        self.engine.abort()
    }
}

/// A global section open for writing. Its contents count only after
/// [`done`](SectionWriter::done); dropping it discards them.
#[derive(Debug)]
pub struct SectionWriter<'w, K: GlobalKind> {
    engine: Option<&'w mut Engine>,
    kind: PhantomData<K>,
}

impl<K: GlobalKind> SectionWriter<'_, K> {
    fn engine(&mut self) -> &mut Engine {
        self.engine.as_deref_mut().expect("present until done")
    }

    /// Finishes the section (the guide's `TBRW_done_section`).
    pub fn done(mut self) -> Result<()> {
        let r = self.engine().done_section(K::SECTION);
        if r.is_ok() {
            self.engine = None;
        }
        r
    }
}

impl<K: GlobalKind> Drop for SectionWriter<'_, K> {
    fn drop(&mut self) {
        if let Some(e) = self.engine.take() {
            e.discard_section(K::SECTION);
        }
    }
}

impl SectionWriter<'_, kinds::Hardware> {
    /// Sets the system (`TBRW_set_system`).
    pub fn set_system(&mut self, system: &System) -> Result<()> {
        self.engine().set_system(system)
    }
}

impl SectionWriter<'_, kinds::Software> {
    /// Sets the host (`TBRW_set_host`).
    pub fn set_host(&mut self, host: &Host) -> Result<()> {
        self.engine().set_host(host)
    }
    /// Sets the OS (`TBRW_set_os`).
    pub fn set_os(&mut self, os: &Os) -> Result<()> {
        self.engine().set_os(os)
    }
    /// Sets the application (`TBRW_set_application`).
    pub fn set_application(&mut self, app: &Application) -> Result<()> {
        self.engine().set_application(app)
    }
}

impl SectionWriter<'_, kinds::ProcessThread> {
    /// Adds a process (`TBRW_add_process`).
    pub fn add_process(&mut self, pid: &Pid) -> Result<()> {
        self.engine().add_process(pid)
    }
    /// Adds a thread (`TBRW_add_thread`).
    pub fn add_thread(&mut self, tid: &Tid) -> Result<()> {
        self.engine().add_thread(tid)
    }
}

impl SectionWriter<'_, kinds::Modules> {
    /// Adds a module (`TBRW_add_module`).
    pub fn add_module(&mut self, module: &Module) -> Result<()> {
        self.engine().add_module(module)
    }
}

impl SectionWriter<'_, kinds::UserDefinedGlobal> {
    /// Sets the bytes (`TBRW_set_user_defined_global`).
    pub fn set(&mut self, data: &[u8]) -> Result<()> {
        self.engine().set_user_defined_global(data)
    }
}

impl SectionWriter<'_, kinds::VersionInfo> {
    /// Sets the version information (`TBRW_set_version_info`).
    pub fn set(&mut self, v: &VersionInfo) -> Result<()> {
        self.engine().set_version_info(v)
    }
}

/// Stream state: the stream info section is not written yet.
#[derive(Debug)]
pub enum NoInfo {}
/// Stream state: the stream info section is written.
#[derive(Debug)]
pub enum HasInfo {}
/// Stream state: the data descriptor is not written yet.
#[derive(Debug)]
pub enum NoDescriptor {}
/// Stream state: the data descriptor is written; the record layout is known.
#[derive(Debug)]
pub enum HasDescriptor {}

/// A data stream open for writing; `I` and `D` say whether its stream info
/// and data descriptor are written. Intended chain:
/// `w.stream(n)?.info(..)?.data_descriptor(..)?`, then `data()`, `events()`,
/// `user_defined()` in any order, then `finish()`. Dropping it unfinished
/// discards the stream.
#[derive(Debug)]
pub struct StreamWriter<'w, I, D> {
    engine: Option<&'w mut Engine>,
    index: u32,
    state: PhantomData<(I, D)>,
}

impl<'w, I, D> StreamWriter<'w, I, D> {
    fn engine(&mut self) -> &mut Engine {
        self.engine.as_deref_mut().expect("present until finished")
    }

    fn into_state<I2, D2>(mut self) -> StreamWriter<'w, I2, D2> {
        StreamWriter { engine: self.engine.take(), index: self.index, state: PhantomData }
    }

    /// The stream's index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Writes the event description section (`TBRW_add_event` for each).
    pub fn events(&mut self, events: &[Event]) -> Result<()> {
        self.whole_section(StreamSection::EventDescription, |e, n| events.iter().try_for_each(|ev| e.add_event(n, ev)))
    }

    /// Stores the stream's stack table (docs/FORMAT.md "Stack table"): the
    /// stacks its records' stack id fields ([`crate::stack_id_entry`])
    /// name. A second call replaces the first; a dropped stream drops it.
    pub fn stack_table(&mut self, table: super::StackTable) -> Result<()> {
        let n = self.index;
        self.engine().set_stack_table(n, table)
    }

    /// Writes the user-defined stream section.
    pub fn user_defined(&mut self, data: &[u8]) -> Result<()> {
        self.whole_section(StreamSection::UserDefinedStream, |e, n| e.set_user_defined_stream(n, data))
    }

    fn whole_section(&mut self, s: StreamSection, f: impl FnOnce(&mut Engine, u32) -> Result<()>) -> Result<()> {
        let n = self.index;
        let e = self.engine();
        e.writing_stream_section(n, s)?;
        let r = f(e, n).and_then(|_| e.done_stream_section(n, s));
        if r.is_err() {
            e.discard_stream_section(n, s);
        }
        r
    }
}

impl<'w, D> StreamWriter<'w, NoInfo, D> {
    /// Writes the stream information section.
    pub fn info(mut self, info: &StreamInfo) -> Result<StreamWriter<'w, HasInfo, D>> {
        self.whole_section(StreamSection::StreamInfo, |e, n| e.set_stream_info(n, info))?;
        Ok(self.into_state())
    }
}

impl<'w, I> StreamWriter<'w, I, NoDescriptor> {
    /// Writes the data descriptor. Offsets follow the layout rule of
    /// [`RecordLayout`] (a later entry at offset 0 goes after the others).
    pub fn data_descriptor(mut self, entries: &[DescEntry]) -> Result<StreamWriter<'w, I, HasDescriptor>> {
        self.whole_section(StreamSection::DataDescription, |e, n| {
            entries.iter().try_for_each(|d| e.add_data_descriptor_entry(n, d))
        })?;
        Ok(self.into_state())
    }
}

impl<I> StreamWriter<'_, I, HasDescriptor> {
    /// Opens the data section. Only one data section writes straight to the
    /// file at a time; while it is open, other finished sections wait in
    /// bounded buffers (see [`crate::Engine`] and the output it writes to).
    pub fn data(&mut self) -> Result<DataSectionWriter<'_>> {
        let n = self.index;
        let e = self.engine();
        e.writing_stream_section(n, StreamSection::Data)?;
        Ok(DataSectionWriter { engine: Some(e), stream: n, bytes: 0, record_size: None })
    }
}

impl StreamWriter<'_, HasInfo, HasDescriptor> {
    /// Finishes the stream (`TBRW_done_stream`).
    pub fn finish(mut self) -> Result<()> {
        let n = self.index;
        let r = self.engine().done_stream(n);
        if r.is_ok() {
            self.engine = None;
        }
        r
    }
}

impl<I, D> Drop for StreamWriter<'_, I, D> {
    fn drop(&mut self) {
        if let Some(e) = self.engine.take() {
            e.discard_stream(self.index);
        }
    }
}

/// The data section of a stream, open for writing. Records stream to disk;
/// memory use does not grow with the amount of data.
#[derive(Debug)]
pub struct DataSectionWriter<'s> {
    engine: Option<&'s mut Engine>,
    stream: u32,
    bytes: u64,
    record_size: Option<u32>,
}

impl DataSectionWriter<'_> {
    fn engine(&mut self) -> &mut Engine {
        self.engine.as_deref_mut().expect("present until done")
    }

    /// Adds bytes (`TBRW_add_data`): whole records, or a record in pieces
    /// that each end at a descriptor field boundary.
    pub fn add(&mut self, bytes: &[u8]) -> Result<()> {
        let n = self.stream;
        self.engine().add_data(n, bytes)?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// Adds the records in a file (`TBRW_add_data_from_file`).
    pub fn add_from_file(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let n = self.stream;
        let before = std::fs::metadata(path.as_ref()).map(|m| m.len()).unwrap_or(0);
        self.engine().add_data_from_file(n, path.as_ref())?;
        self.bytes += before;
        Ok(())
    }

    /// Adds everything `reader` yields; returns the byte count. If the total
    /// does not end at a field boundary the data section cannot be finished.
    pub fn add_from_reader(&mut self, reader: &mut dyn Read) -> Result<u64> {
        let n = self.stream;
        let k = self.engine().add_data_from_reader(n, reader)?;
        self.bytes += k;
        Ok(k)
    }

    /// The record layout (known from the descriptor).
    pub fn layout(&self) -> Option<&RecordLayout> {
        self.engine.as_deref().and_then(|e| e.record_layout(self.stream))
    }

    /// Finishes the data section; returns the number of records in it.
    pub fn done(mut self) -> Result<u64> {
        let n = self.stream;
        self.record_size = self.layout().map(|l| l.record_size());
        let r = self.engine().done_stream_section(n, StreamSection::Data);
        r?;
        self.engine = None;
        Ok(self.record_size.map_or(0, |rs| self.bytes / u64::from(rs)))
    }
}

impl Drop for DataSectionWriter<'_> {
    fn drop(&mut self) {
        if let Some(e) = self.engine.take() {
            e.discard_stream_section(self.stream, StreamSection::Data);
        }
    }
}

/// The data descriptor of the guide's stream 0 (sections 6.9 and 6.10): a
/// 32-byte `ST_LEGACY_SAMPLE_RECORD` followed by an 8-byte
/// `ST_TIME_STAMP`/`SST_TSC`, both given offset 0 as the guide does.
pub fn legacy_descriptor() -> Vec<DescEntry> {
    vec![
        DescEntry {
            desc_type: desc_type::LEGACY_SAMPLE_RECORD,
            subtype: desc_subtype::NONE,
            data_size: LEGACY_PC_SIZE,
            name: Some("SampleRecord".into()),
            ..Default::default()
        },
        DescEntry {
            desc_type: desc_type::TIME_STAMP,
            subtype: desc_subtype::TSC,
            data_size: LEGACY_TSC_SIZE,
            name: Some("TimeStamp".into()),
            ..Default::default()
        },
    ]
}
