//! What goes into an Intel file, as model values: [`Content`], gathered
//! from a readable file ([`gather`]: a writing session's work file, or any
//! file `tbrw convert` rewrites). Strings are still the source's ids; the
//! encoder (`encode.rs`) stores their texts and writes the offsets.
//!
//! This project's own sections become streams Intel's reader reads
//! (docs/FORMAT.md, "This project's sections in Intel's layout"): a stack
//! table a custom stream of 12-byte node records, the stored symbols a
//! custom stream whose user-defined stream section holds their text, and a
//! stored bind Intel's three bind streams (`bind.rs`).

use super::emit::{Bytes, Str};
use crate::format::intel::{stack_table_comment, SYMBOLS_COMMENT};
use crate::format::stack_table;
use crate::model::descriptor::DescEntry;
use crate::model::error::Result;
use crate::model::event::Event;
use crate::model::hardware::System;
use crate::model::module::Module;
use crate::model::process::{Pid, Tid};
use crate::model::software::Software;
use crate::model::stack::{STACK_ADDRESS_FIELD, STACK_PARENT_FIELD};
use crate::model::stream::{stream_type, StreamInfo};
use crate::model::strings::StringId;
use crate::model::version::VersionInfo;
use crate::read::Tb5File;

/// A file's process and thread records.
pub(crate) type ProcessesAndThreads = (Vec<Pid<StringId>>, Vec<Tid<StringId>>);

/// The global sections.
#[derive(Default)]
pub(crate) struct Globals<'s> {
    pub(crate) system: Option<System>,
    pub(crate) software: Option<Software<StringId>>,
    /// The process and thread tables (Intel's sections 0x1D and 0x1E, always together here).
    pub(crate) processes: Option<ProcessesAndThreads>,
    pub(crate) modules: Option<Vec<Module<StringId>>>,
    pub(crate) user: Option<&'s [u8]>,
    pub(crate) version: Option<VersionInfo>,
}

/// A stream's records: their bytes and how many.
pub(crate) struct Records<'s> {
    pub(crate) bytes: Bytes<'s>,
    pub(crate) count: u64,
    pub(crate) record_size: u32,
    /// Every record's time at or after its predecessor's (docs/FORMAT.md, "Time order").
    pub(crate) time_ordered: bool,
}

/// One stream.
#[derive(Default)]
pub(crate) struct StreamContent<'s> {
    pub(crate) info: Option<StreamInfo<StringId>>,
    pub(crate) events: Option<Vec<Event<StringId>>>,
    pub(crate) descriptor: Option<Vec<DescEntry<StringId>>>,
    pub(crate) user: Option<Bytes<'s>>,
    pub(crate) data: Option<Records<'s>>,
}

/// Everything a new file holds.
#[derive(Default)]
pub(crate) struct Content<'s> {
    pub(crate) globals: Globals<'s>,
    pub(crate) streams: Vec<StreamContent<'s>>,
    /// Texts the writer made (the comments and field names of the streams
    /// it adds), by the ids [`Content::text`] gave them.
    pub(crate) own_texts: Vec<String>,
}

/// Ids of [`Content::own_texts`]: above every id a source can hand out.
const OWN_TEXT_BASE: u64 = 1 << 62;

/// The writer's own text `id` names, if it names one of `own`.
pub(crate) fn own_text(own: &[String], id: StringId) -> Option<&str> {
    id.0.checked_sub(OWN_TEXT_BASE).and_then(|i| own.get(i as usize)).map(String::as_str)
}

impl<'s> Content<'s> {
    /// An id for a text the writer makes.
    pub(crate) fn text(&mut self, t: &str) -> StringId {
        self.own_texts.push(t.to_owned());
        StringId(OWN_TEXT_BASE + self.own_texts.len() as u64 - 1)
    }

    /// What id `id` names: the writer's own text, or whatever `source` says.
    pub(crate) fn resolve(&self, id: StringId, source: &dyn Fn(StringId) -> Result<Str>) -> Result<Str> {
        if id.is_none() {
            return Ok(Str::None);
        }
        match own_text(&self.own_texts, id) {
            Some(t) => Ok(Str::Text(t.to_owned())),
            None => source(id),
        }
    }

    /// A stream the writer adds: a custom stream's information with `comment`.
    pub(crate) fn writer_stream(&mut self, kind: u32, comment: &str) -> StreamContent<'s> {
        let comment = self.text(comment);
        StreamContent {
            info: Some(StreamInfo { stream_type: kind, comment, ..StreamInfo::default() }),
            ..Default::default()
        }
    }

    /// A descriptor entry the writer adds.
    pub(crate) fn field(&mut self, desc_type: u16, offset: u32, size: u32, name: &str) -> DescEntry<StringId> {
        DescEntry { desc_type, offset, data_size: size, name: self.text(name), ..Default::default() }
    }
}

/// The global sections and streams `0..streams` of `src` (see [`gather_range`]).
pub(crate) fn gather(src: &Tb5File, streams: u32, in_place: bool) -> Result<Content<'_>> {
    gather_range(src, 0..streams, in_place)
}

/// The global sections and streams `streams` of `src` (a file of this
/// project's layout, or Intel's); `in_place`: `src`'s bytes are the
/// output's own (a new file's work file), so data sections stay where
/// they are. Stack tables and stored symbols of this project's layout
/// become streams after them; binds are added by the caller.
pub(crate) fn gather_range(src: &Tb5File, streams: std::ops::Range<u32>, in_place: bool) -> Result<Content<'_>> {
    let mut c = Content {
        globals: Globals {
            system: src.hardware()?,
            software: src.software()?,
            processes: src.processes()?.map(|t| (t.pids().collect(), t.tids().collect())),
            modules: src.modules()?.map(|t| t.iter().collect::<Result<Vec<_>>>()).transpose()?,
            user: src.user_defined_global()?,
            version: src.version_info()?,
        },
        ..Default::default()
    };
    for n in streams.clone() {
        let s = src.stream(n)?;
        let data = s.data()?.map(|d| Records {
            bytes: if in_place {
                Bytes::InPlace { offset: d.file_offset(), len: d.as_bytes().len() as u64 }
            } else {
                Bytes::Slice(d.as_bytes())
            },
            count: d.len(),
            record_size: d.record_size() as u32,
            time_ordered: d.time_ordered(),
        });
        c.streams.push(StreamContent {
            info: s.info()?,
            events: s.events()?,
            descriptor: s.descriptor()?,
            user: s.user_defined()?.map(Bytes::Slice),
            data,
        });
    }
    if src.intel().is_none() {
        for n in streams {
            if let Some(e) = src.stack_table_entry(n) {
                let nodes = stack_table::nodes(src.checked_bytes(e)?, e.raw.count).map_err(|(what, _)| {
                    crate::model::error::Error::malformed(src.loc(e.section, e.raw.offset), what)
                })?;
                add_stack_table(&mut c, n, Bytes::Slice(nodes), e.raw.count);
            }
        }
        if let Some(text) = src.stored_symbols()? {
            add_symbols(&mut c, Bytes::Slice(text));
        }
    }
    Ok(c)
}

/// Adds the stack table of data stream `n` (its 12-byte nodes) as a custom stream.
pub(crate) fn add_stack_table<'s>(c: &mut Content<'s>, n: u32, nodes: Bytes<'s>, count: u64) {
    let mut s = c.writer_stream(stream_type::CUSTOM, &stack_table_comment(n));
    let parent = c.field(STACK_PARENT_FIELD, 0, 4, "stack parent");
    let address = c.field(STACK_ADDRESS_FIELD, 4, 8, "frame address");
    s.descriptor = Some(vec![parent, address]);
    s.data = Some(Records { bytes: nodes, count, record_size: stack_table::NODE_SIZE as u32, time_ordered: false });
    c.streams.push(s);
}

/// Adds the stored symbols (their text) as a custom stream's user-defined stream section.
pub(crate) fn add_symbols<'s>(c: &mut Content<'s>, text: Bytes<'s>) {
    let mut s = c.writer_stream(stream_type::CUSTOM, SYMBOLS_COMMENT);
    s.user = Some(text);
    c.streams.push(s);
}
