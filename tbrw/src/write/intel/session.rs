//! The commit of a writing session in Intel's layout, from what its work
//! file holds (a view of it in this project's layout, without string
//! blocks: the session's strings are the interner's):
//!
//! - [`commit_new`]: every section of the view, in place (`write_new`);
//! - [`commit_append`]: the view's sections added to the Intel file the
//!   session appends to: its global sections, its streams after the
//!   file's, the binds it made of the file's streams (`bind.rs`), stored
//!   symbols replacing the file's, and the file's binds it removed.

use std::fs::File;
use std::path::Path;

use super::append::{append, AppendInput};
use super::bind::add_bind;
use super::content::{gather_range, Content, StreamContent};
use super::emit::Str;
use super::write_new;
use crate::format::intel::{BIND_COMMENT, SYMBOLS_COMMENT};
use crate::format::kind::SectionKind;
use crate::model::error::{Error, Result};
use crate::model::section::BindSection;
use crate::model::stream::stream_type;
use crate::model::strings::StringId;
use crate::read::{BindView, Tb5File};
use crate::write::durability::Durability;

/// The strings a session added: ids from `first_id`.
#[derive(Clone, Copy)]
pub(crate) struct SessionStrings<'a> {
    pub(crate) first_id: u64,
    pub(crate) new: &'a [String],
}

impl SessionStrings<'_> {
    /// A session's string id: its new text, or (an append) the existing
    /// file's string at that offset, kept.
    fn lookup(&self, id: StringId) -> Result<Str> {
        match id.0.checked_sub(self.first_id).and_then(|i| self.new.get(usize::try_from(i).ok()?)) {
            Some(t) => Ok(Str::Text(t.clone())),
            None if id.0 < self.first_id && id.0 != 0 => Ok(Str::At(id.0)),
            None if id.is_none() => Ok(Str::None),
            None => Err(Error::InvalidString { id: id.0 }),
        }
    }
}

/// Commits a new file: `view` (its work file's sections, `streams`
/// streams) written as Intel's layout in `file` after `end`.
pub(crate) fn commit_new(
    file: &File,
    path: &Path,
    end: u64,
    view: &Tb5File,
    streams: u32,
    strings: SessionStrings<'_>,
) -> Result<u64> {
    let content = gather_range(view, 0..streams, true)?;
    let lookup = |id: StringId| match strings.lookup(id)? {
        Str::At(_) => Err(Error::InvalidString { id: id.0 }),
        s => Ok(s),
    };
    write_new(file, path, end, content, &lookup)
}

/// The stream of `existing` whose comment says it holds the stored symbols.
fn symbols_stream(existing: &Tb5File) -> Option<u32> {
    (0..existing.stream_count()).rev().find(|&n| {
        existing.stream(n).ok().and_then(|s| s.info().ok().flatten()).is_some_and(|i| {
            i.stream_type == stream_type::CUSTOM
                && existing.string_opt(i.comment).ok().flatten() == Some(SYMBOLS_COMMENT)
        })
    })
}

/// What an append session changes in the Intel file it appends to.
pub(crate) struct AppendSession<'a> {
    pub(crate) target: &'a File,
    pub(crate) path: &'a Path,
    pub(crate) existing: &'a Tb5File,
    /// The session's sections (its work file).
    pub(crate) view: &'a Tb5File,
    /// All streams after the session: the file's, then the session's.
    pub(crate) streams: u32,
    pub(crate) strings: SessionStrings<'a>,
    pub(crate) durability: Durability,
}

/// Commits an append; `removed(kind, stream)`: a committed section the
/// session removed (a bind by `unbind`, the stored symbols it replaces).
pub(crate) fn commit_append(s: AppendSession<'_>, removed: &dyn Fn(SectionKind, u32) -> bool) -> Result<()> {
    let e = s.existing;
    let first_new = e.stream_count();
    let mut content = gather_range(s.view, first_new..s.streams.max(first_new), false)?;
    let mut edits: Vec<(u32, StreamContent<'_>)> = Vec::new();
    // The symbols stream of the file: its text replaced, where it is.
    if let Some(k) = symbols_stream(e) {
        if let Some(i) = content.streams.iter().position(|x| is_symbols(&content, x)) {
            let new = content.streams.remove(i);
            edits.push((k, StreamContent { user: new.user, ..Default::default() }));
        } else if removed(SectionKind::StoredSymbols, crate::format::container::NO_STREAM) {
            edits.push((k, StreamContent { user: Some(super::emit::Bytes::Slice(&[])), ..Default::default() }));
        }
    }
    for n in 0..first_new {
        if removed(SectionKind::Bind(BindSection::Modules), n) {
            if let Some(edit) = unbound(&mut content, e, n)? {
                edits.push(edit);
            }
        }
    }
    add_binds(&mut content, e, s.view, first_new)?;
    let strings = s.strings;
    let lookup = |id: StringId| strings.lookup(id);
    append(
        AppendInput { target: s.target, path: s.path, existing: e, content, edits, durability: s.durability },
        &lookup,
    )
}

/// Whether `x` is the stored symbols stream gathered from a work file.
fn is_symbols(c: &Content<'_>, x: &StreamContent<'_>) -> bool {
    x.info.as_ref().is_some_and(|i| {
        i.stream_type == stream_type::CUSTOM
            && super::content::own_text(&c.own_texts, i.comment) == Some(SYMBOLS_COMMENT)
            && x.data.is_none()
    })
}

/// The edit that unbinds stream `n` of `e`: its bind data stream's
/// comment no longer names it (streams are numbered by their place in the
/// chain, so a bind's streams stay, naming no stream: docs/BIND.md).
fn unbound<'s>(c: &mut Content<'s>, e: &Tb5File, n: u32) -> Result<Option<(u32, StreamContent<'s>)>> {
    let Some(index) = e.intel() else { return Ok(None) };
    let Some(bind) = crate::read::intel::find_bind(index, n).map(|b| b.data_stream) else {
        return Ok(None);
    };
    let Some(mut info) = e.stream(bind)?.info()? else { return Ok(None) };
    info.comment = c.text(&format!("{BIND_COMMENT} unbound from data stream {n:04}"));
    Ok(Some((bind, StreamContent { info: Some(info), ..Default::default() })))
}

/// The binds the session made of the file's streams (their sections in
/// the work file), as bind streams: the file's process and thread tables,
/// or the ones the session wrote, hold their processes and threads.
fn add_binds<'s>(c: &mut Content<'s>, e: &'s Tb5File, view: &'s Tb5File, first_new: u32) -> Result<()> {
    let bound: Vec<u32> = (0..first_new.min(view.stream_count()))
        .filter(|&n| view.bind_entry(n, BindSection::Modules).is_some())
        .collect();
    if bound.is_empty() {
        return Ok(());
    }
    if c.globals.processes.is_none() {
        c.globals.processes = e.processes()?.map(|t| (t.pids().collect(), t.tids().collect()));
    }
    for n in bound {
        let records = e.stream(n)?.data()?.map_or(0, |d| d.len());
        let view_bind = BindView::stored_sections(view, n, records)?
            .ok_or_else(|| Error::bad(format!("the bind of stream {n} has no sections")))?;
        add_bind(c, n, view_bind, records)?;
    }
    Ok(())
}
