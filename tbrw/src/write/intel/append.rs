//! An append to a file in Intel's layout (docs/FORMAT.md, "Appends in
//! Intel's layout"): nothing the file holds is rewritten. Past its end go
//! the new strings and sections, then a new chain of stream tables (each
//! existing stream's entries as they were, with the sections an edit
//! replaces, then the new streams) and a new global table; then the file
//! header, rewritten with one `pwrite` at offset 0 (it lies inside the
//! first page), names the new global table. That write is the commit: a
//! writer killed before it leaves the file as it was (with bytes past its
//! old end that nothing names), and a reader that copied the old header
//! reads the old tables, which stay.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::content::{Content, StreamContent};
use super::emit::{Emitter, Str};
use super::encode;
use crate::format::intel::raw::{Raw, SectionTb6Raw};
use crate::format::intel::section_type as st;
use crate::model::error::{Error, Result};
use crate::model::layout::FileLayout;
use crate::model::strings::StringId;
use crate::read::Tb5File;
use crate::write::durability::Durability;
use tbrw_output::crash::crash_point;

/// The bytes of a file header that one `pwrite` replaces atomically with
/// respect to a killed writer: the first page.
const HEADER_PAGE: u64 = 4096;

/// What an append writes.
pub(crate) struct AppendInput<'s> {
    /// The file appended to, opened for writing (and locked by the caller).
    pub(crate) target: &'s File,
    pub(crate) path: &'s Path,
    /// Its content as committed.
    pub(crate) existing: &'s Tb5File,
    /// Global sections to add or replace, and new streams (after the existing ones).
    pub(crate) content: Content<'s>,
    /// Sections replacing some of an existing stream's (its table keeps the others).
    pub(crate) edits: Vec<(u32, StreamContent<'s>)>,
    pub(crate) durability: Durability,
}

/// The used entries of the TB6 table at `range` of `bytes`, the chain's link left out.
fn table_entries(bytes: &[u8], range: std::ops::Range<usize>) -> Vec<SectionTb6Raw> {
    bytes[range]
        .chunks_exact(SectionTb6Raw::SIZE)
        .filter_map(SectionTb6Raw::decode)
        .filter(|e| !matches!(e.section_type, 0 | st::STREAM_TABLE))
        .collect()
}

/// Whether an append to `f` is possible: Intel's TB6/TB7 layout, a header
/// inside the first page. (Intel's TB5 header has 32-bit offsets and is
/// not written here: `tbrw convert` rewrites such a file.)
pub(crate) fn check(f: &Tb5File) -> Result<()> {
    let index = f.intel().ok_or_else(|| Error::bad("not a file in Intel's layout"))?;
    let refuse = |why: String| Error::NotImplemented { path: f.path().to_owned(), what: why };
    if index.layout == FileLayout::IntelTb5 {
        return Err(refuse(format!(
            "appending to a file in {}: its 32-bit header is not written here; `tbrw convert` rewrites it in Intel's \
             TB6 layout, which can be appended to",
            index.layout
        )));
    }
    let header = 16 + u64::from(index.header_entries) * SectionTb6Raw::SIZE as u64;
    let free = index.global_table.is_some() || (0..index.header_entries).any(|i| header_type(f, i as usize) == Some(0));
    if header > HEADER_PAGE || !free {
        return Err(refuse(format!(
            "appending to this file: its header of {} entries {}",
            index.header_entries,
            if free { "does not fit in one page" } else { "has no free entry for a global table" }
        )));
    }
    Ok(())
}

/// The section type of file header entry `i`.
fn header_type(f: &Tb5File, i: usize) -> Option<u32> {
    let at = 16 + i * SectionTb6Raw::SIZE;
    SectionTb6Raw::decode(f.bytes().get(at..)?).map(|e| e.section_type)
}

/// Appends `input` (see the module doc); `source` says what a string id
/// of its content names (the existing file's ids are their offsets, kept).
pub(crate) fn append(input: AppendInput<'_>, source: &dyn Fn(StringId) -> Result<Str>) -> Result<()> {
    let AppendInput { target, path, existing, content, edits, durability } = input;
    check(existing)?;
    let index = existing.intel().expect("checked");
    let io = |what: &'static str| move |e| Error::io(path, what, e);
    let len = target.metadata().map_err(io("stat"))?.len();
    let mut em = Emitter { file: target, path, end: len };
    let new_streams = content.streams.len();
    let sections = encode::encode_sections(&mut em, content, edits, source, false)?;
    let bytes = existing.bytes();

    let mut globals: Vec<SectionTb6Raw> = match &index.global_table {
        Some((t, _)) => table_entries(bytes, t.range()),
        None => Vec::new(),
    };
    globals.retain(|e| !sections.globals.iter().any(|n| n.section_type == e.section_type));
    globals.extend(sections.globals);

    let mut streams: Vec<Vec<SectionTb6Raw>> = Vec::with_capacity(index.streams.len() + new_streams);
    for (i, s) in index.streams.iter().enumerate() {
        let mut entries = table_entries(bytes, s.table_at as usize..(s.table_at + s.table_len) as usize);
        for (_, edit) in sections.edits.iter().filter(|(n, _)| *n as usize == i) {
            entries.retain(|e| !edit.iter().any(|x| x.section_type == e.section_type));
            entries.extend(edit.iter().cloned());
        }
        streams.push(entries);
    }
    streams.extend(sections.streams);
    let table = encode::write_tables(&mut em, globals, streams)?;
    crash_point("intel append sections written");
    if durability.syncs() {
        target.sync_all().map_err(io("fsync"))?;
        crash_point("intel append synced");
    }
    let slot = match &index.global_table {
        Some((_, i)) => *i,
        None => (0..index.header_entries as usize).find(|&i| header_type(existing, i) == Some(0)).expect("checked"),
    };
    let mut header = bytes[..16 + index.header_entries as usize * SectionTb6Raw::SIZE].to_vec();
    let at = 16 + slot * SectionTb6Raw::SIZE;
    header[at..at + SectionTb6Raw::SIZE].copy_from_slice(&table.encode());
    target.write_all_at(&header, 0).map_err(io("write"))?;
    crash_point("intel append header written");
    if durability.syncs() {
        target.sync_all().map_err(io("fsync"))?;
        crash_point("intel append header synced");
    }
    Ok(())
}
