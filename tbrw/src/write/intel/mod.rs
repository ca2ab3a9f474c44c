//! Writing Intel's layout (docs/FORMAT.md, "Intel's layout" and "What
//! Intel's reader requires of a file"), what every writer of this project
//! writes by default.
//!
//! A writing session builds its sections in a work file in this project's
//! own layout (the engine, the output, the sinks and the session's reads
//! of what it finished are unchanged); its commit writes Intel's layout:
//!
//! - a **new file** ([`write_new`]): the work file reserved room for Intel's
//!   file header; its data sections stay where they were written, Intel's
//!   sections (strings, global sections, streams, tables, VTune's legacy
//!   sections) are written after the session's, and the header last, at
//!   offset 0. The work file is then put at the target as before (an
//!   unnamed file linked or renamed into place), so a killed writer leaves
//!   the old file or the new one;
//! - an **append** to an Intel file (`append.rs`): the new sections and a
//!   new chain of tables are written past the file's end, then the file
//!   header, one `pwrite` of under a page at offset 0, names the new
//!   global table: the commit.
//!
//! `tbrw convert` writes any readable file this way ([`convert`]).
//!
//! Imports `model`, `format` and `read`; nothing of `write` but the work file's crash points.

mod append;
mod bind;
mod content;
mod emit;
mod encode;
mod legacy;
mod session;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

pub(crate) use append::check as check_append;
pub(crate) use content::{gather, Content};
pub(crate) use emit::{Emitter, Str};
pub(crate) use session::{commit_append, commit_new, AppendSession, SessionStrings};

use crate::format::intel::raw::{FileStartRaw, Raw, SectionTb6Raw};
use crate::format::intel::{HEADER_ENTRIES, HEADER_SIZE, WRITE_EYECATCHER, WRITE_VERSION};
use crate::model::error::{Error, Result};
use crate::model::strings::StringId;
use crate::read::Tb5File;

/// The file header: the eyecatcher and version this project writes and
/// `entries`, in [`HEADER_ENTRIES`] slots.
pub(crate) fn header(entries: &[SectionTb6Raw]) -> Result<Vec<u8>> {
    if entries.len() > HEADER_ENTRIES as usize {
        return Err(Error::bad(format!(
            "{} file header entries, where Intel's layout has {HEADER_ENTRIES}",
            entries.len()
        )));
    }
    let mut out = Vec::with_capacity(HEADER_SIZE as usize);
    FileStartRaw { eye_catcher: *WRITE_EYECATCHER, version: WRITE_VERSION, num_sections: HEADER_ENTRIES }
        .encode_into(&mut out);
    for e in entries {
        e.encode_into(&mut out);
    }
    out.resize(HEADER_SIZE as usize, 0);
    Ok(out)
}

/// Writes `content` as a new Intel file in `file`, whose first
/// [`HEADER_SIZE`] bytes are free and whose sections end at `end`:
/// Intel's sections after `end`, the file header at 0. Returns the file's end.
pub(crate) fn write_new(
    file: &File,
    path: &Path,
    end: u64,
    content: Content<'_>,
    source: &dyn Fn(StringId) -> Result<Str>,
) -> Result<u64> {
    let mut em = Emitter { file, path, end };
    let sections = encode::encode_sections(&mut em, content, Vec::new(), source, true)?;
    let global_table = encode::write_tables(&mut em, sections.globals, sections.streams)?;
    let mut entries = vec![global_table];
    legacy::write(&mut em, &sections.placed, &mut entries)?;
    tbrw_output::crash::crash_point("intel sections written");
    file.write_all_at(&header(&entries)?, 0).map_err(|e| Error::io(path, "write", e))?;
    tbrw_output::crash::crash_point("intel header written");
    Ok(em.end)
}

/// Writes every section and stream of `src` (any layout this library
/// reads) as a new Intel file into `out` (empty): what `tbrw convert`
/// does. This project's stack tables, stored symbols and stored binds
/// become the streams that hold them in Intel's layout.
pub fn convert(src: &Tb5File, out: &File, out_path: &Path) -> Result<()> {
    let mut content = gather(src, src.stream_count(), false)?;
    if src.intel().is_none() {
        for n in 0..src.stream_count() {
            if let Some(view) = src.stream(n)?.bind_view()? {
                let records = src.stream(n)?.data()?.map_or(0, |d| d.len());
                bind::add_bind(&mut content, n, view, records)?;
            }
        }
    }
    out.write_all_at(&[0u8; HEADER_SIZE as usize], 0).map_err(|e| Error::io(out_path, "write", e))?;
    let text = |id: StringId| -> Result<Str> {
        Ok(match src.string_opt(id)? {
            Some(t) => Str::Text(t.to_owned()),
            None => Str::None,
        })
    };
    write_new(out, out_path, HEADER_SIZE, content, &text)?;
    Ok(())
}
