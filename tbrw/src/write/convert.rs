//! `tbrw convert`: any file this library reads (this project's old
//! `\x89TB5` layout, Intel's TB5, TB6 or TB7) rewritten as a new file in
//! Intel's layout, the layout every writer of this project writes
//! (docs/FORMAT.md, "Converting a file").
//!
//! Imports `model`, `read` and this module's siblings (`intel`,
//! `work_file`, `durability`); must not import `bind`.

use std::path::Path;

use super::durability::Durability;
use super::work_file::{lock_target, WorkFile};
use crate::model::error::{Error, Result};
use crate::read::Tb5File;
use tbrw_output::crash::crash_point;

/// Writes every section and stream of `src` as a new file at `path` in
/// Intel's layout (`"Sample6 "`): its stack tables, stored symbols and
/// stored binds become the streams that hold them there. As every writer's
/// new file, it is built in a work file under the target's writer lock and
/// put in place whole: a failure or a kill leaves what was at `path`.
/// `path` must not be the file `src` was read from (the caller checks:
/// the work file replaces it while `src` still maps it).
pub fn convert(src: &Tb5File, path: &Path, durability: Durability) -> Result<()> {
    let open_err = |source| Error::FileOpen { path: path.to_owned(), source };
    let work = WorkFile::create_locked(lock_target(path).map_err(open_err)?).map_err(open_err)?;
    super::intel::convert(src, work.file(), path)?;
    crash_point("converted");
    if durability.syncs() {
        work.file().sync_all().map_err(|e| Error::io(path, "fsync", e))?;
        crash_point("synced");
        work.persist().map_err(|e| Error::io(path, "put into place", e))
    } else {
        work.put_in_place().map_err(|e| Error::io(path, "put into place", e))
    }
}
