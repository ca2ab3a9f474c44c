//! The command line's output rules, in one place: input and output paths
//! checked before any work (`--force`, never an input, folders said
//! plainly), files that appear only when complete (a work file for the
//! target, unnamed where the filesystem allows, and the target's writer
//! lock, see [`tbrw::work_file`]), folder outputs that appear whole
//! ([`WorkFolder`]: built beside the target, put in its place in one
//! step), and the command line's crash points for the kill tests.
//!
//! One file on purpose: every rule that decides whether and how an output
//! appears (checks, locks, work files and folders, publication) is read
//! together when any of them changes; the last 130 lines are its tests.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use tbrw::work_file::{Plan, WorkFile, Writing};

use crate::error::CliError;

/// A failed write of the command's output.
pub fn written(e: std::io::Error) -> CliError {
    CliError::Output(e)
}

/// The word for an I/O error on a path, without the errno noise. An error
/// the library phrased itself (a refused link or device) keeps its words.
pub fn plain(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    if e.raw_os_error().is_none() && e.get_ref().is_some() {
        return e.to_string();
    }
    match e.kind() {
        K::NotFound => "no such file or folder".to_owned(),
        K::PermissionDenied => "permission denied".to_owned(),
        K::NotADirectory => "a part of the path before the last '/' is a file, not a folder".to_owned(),
        K::IsADirectory => "is a folder".to_owned(),
        _ => e.to_string(),
    }
}

/// Checks an input path before any work: it must be a file that can be
/// read (`what` says which kind, for the message). `-` (standard input)
/// passes.
pub fn check_input(path: &Path, what: &str) -> Result<(), CliError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(CliError::msg(format!("{}: is a folder, not {what}", path.display()))),
        Ok(_) => std::fs::File::open(path)
            .map(drop)
            .map_err(|e| CliError::msg(format!("{}: cannot be read: {}", path.display(), plain(&e)))),
        Err(e) => Err(CliError::msg(format!("{}: {}", path.display(), plain(&e)))),
    }
}

/// Opens a TB5 file, with [`check_input`]'s messages for bad paths.
pub fn open(file: &Path) -> Result<tbrw::Tb5File, CliError> {
    check_input(file, "a TB5 file")?;
    Ok(tbrw::Tb5File::open(file)?)
}

/// The same file (device and inode: hard and symbolic links included).
pub fn same_file(a: &std::fs::Metadata, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(b).is_ok_and(|m| m.dev() == a.dev() && m.ino() == a.ino())
}

/// [`check_output`] for a TB5 file, which cannot go to standard output: it
/// is written beside its target and committed by a rename, so `-` is
/// refused rather than taken as a file name, and so is a device or FIFO
/// (which a stream is written into).
pub fn check_tb5_output(path: &Path, inputs: &[&Path], force: bool) -> Result<(), CliError> {
    if path.as_os_str() == "-" {
        return Err(CliError::msg(
            "-o -: a TB5 file cannot be written to standard output (it is committed by a rename): give a file name",
        ));
    }
    check_output_as(path, inputs, force, Writing::Whole)
}

/// Checks an output file path before any work: not a folder, in a folder
/// that exists and can be written, never one of `inputs` (not even with
/// `force`), and not an existing file unless `force`. `-` (standard
/// output) passes. What is at the path decides the rest
/// ([`tbrw::work_file::plan`], docs/FORMAT.md "Output paths"): a symbolic
/// link is replaced itself (with `force`), never the file it names; one
/// planted in a shared sticky folder is refused; a character device or
/// FIFO is written into (nothing is replaced, so without `force`, as
/// `perf record -o /dev/null`); a block device or a socket is refused.
pub fn check_output(path: &Path, inputs: &[&Path], force: bool) -> Result<(), CliError> {
    check_output_as(path, inputs, force, Writing::Stream)
}

/// [`check_output`] for an output written as `writing` says.
fn check_output_as(path: &Path, inputs: &[&Path], force: bool, writing: Writing) -> Result<(), CliError> {
    let p = path.display();
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(CliError::msg(format!("{p}: ends with '/', which names a folder: give a file name to write")));
    }
    let is_folder = || CliError::msg(format!("{p}: is a folder: give a file name to write"));
    if let Ok(m) = std::fs::metadata(path) {
        if m.is_dir() {
            return Err(is_folder());
        }
        if let Some(i) = inputs.iter().find(|i| i.as_os_str() != "-" && same_file(&m, i)) {
            return Err(CliError::msg(format!(
                "{p}: is the input {}: give another output name (not even --force replaces an input)",
                i.display()
            )));
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(CliError::msg(format!("{p}: {} is not a folder", dir.display()))),
        Err(e) => return Err(CliError::msg(format!("{p}: folder {}: {}", dir.display(), plain(&e)))),
    }
    match tbrw::work_file::plan(path, writing) {
        // Written into: nothing is made in the folder.
        Ok(Plan::Into) => return Ok(()),
        Ok(Plan::New) => {}
        Ok(Plan::Replace { link }) if !force => {
            return Err(CliError::msg(if link {
                format!(
                    "{p}: exists (a symbolic link): add --force (-f) to replace the link itself (the file it \
                     names is left as it is)"
                )
            } else {
                format!("{p}: exists: add --force (-f) to replace it")
            }))
        }
        Ok(Plan::Replace { .. }) => {}
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => return Err(is_folder()),
        Err(e) => return Err(CliError::msg(format!("{p}: {}", plain(&e)))),
    }
    // An unnamed file, gone when closed: proves the folder can be written
    // without leaving anything there.
    tempfile::tempfile_in(dir)
        .map(drop)
        .map_err(|e| CliError::msg(format!("{p}: cannot write in folder {}: {}", dir.display(), plain(&e))))
}

/// Writes `path` through `f`. A file appears only when complete (a work
/// file put in place): on any error nothing is left at `path`. A character
/// device or FIFO at `path` (or named by a link there, as `/dev/stdout`) is
/// written into instead, and never replaced.
pub fn write_output(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), CliError> {
    if let Ok(Plan::Into) = tbrw::work_file::plan(path, Writing::Stream) {
        let file = tbrw::work_file::open_into(path)
            .map_err(|e| CliError::msg(format!("{}: cannot open: {}", path.display(), plain(&e))))?;
        let mut out = BufWriter::with_capacity(1 << 20, &file);
        return f(&mut out).and_then(|()| out.flush()).map_err(|e| CliError::io(path, e));
    }
    // Refused as the TB5 writers refuse (`bind`, imports): a file another
    // writer holds, a path that cannot be written; before any work.
    let work = WorkFile::create(path).map_err(|source| tbrw::Error::FileOpen { path: path.to_owned(), source })?;
    {
        let mut out = BufWriter::with_capacity(1 << 20, work.file());
        f(&mut out).and_then(|()| out.flush()).map_err(|e| CliError::io(path, e))?;
    }
    work.file().sync_all().map_err(|e| CliError::io(path, e))?;
    work.persist().map_err(|e| CliError::io(path, e))?;
    Ok(())
}

/// The environment variable that arms the command line's crash points
/// (test builds only, see [`crash_point`]). The library's own points have
/// theirs (`TBRW_TEST_CRASH_AT`), counted apart: a command reaches both
/// kinds, and one number must name one point.
#[cfg(debug_assertions)]
pub const CRASH_AT: &str = "TBRW_TEST_CLI_CRASH_AT";

/// Test builds only (debug assertions): with `TBRW_TEST_CLI_CRASH_AT=k` in
/// the environment, the `k`-th crash point this process reaches (the first
/// is number 1) kills it with `SIGKILL`, after printing `tbrw crash point
/// k: NAME` to stderr, as `tbrw::work_file` does for the library's points.
/// Folder outputs have one after each file they write, each rename and each
/// removal, so `cli/tests/crash.rs` can stop a command between any two of
/// them. Release builds have none.
#[cfg(debug_assertions)]
pub fn crash_point(name: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    static REACHED: AtomicU64 = AtomicU64::new(0);
    let at = AT.get_or_init(|| std::env::var(CRASH_AT).ok().and_then(|v| v.parse().ok()));
    let Some(at) = *at else { return };
    let n = REACHED.fetch_add(1, Ordering::SeqCst) + 1;
    if n == at {
        eprintln!("tbrw crash point {n}: {name}");
        // SAFETY: kill(2) of this process with a constant signal; no memory is passed.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
}

/// Release builds: no crash points.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn crash_point(_name: &str) {}

// Folder outputs (`export vtune-csv`, `export parquet`): one rule for all.
//
// A reader of the target path sees the old complete output or the new
// complete output, never a mix, and a killed command leaves nothing beside
// the target but its work folder, which the next command writing the same
// target removes. The output is built in `out` inside a hidden work folder
// beside the target (`.NAME.tbrw-work-PID-N`, on the same filesystem, so
// that it can be renamed; never inside the target, where a reader's
// recursive glob would find it). It is published in one step: renamed to
// the target's name when there is none (RENAME_NOREPLACE: never over a
// folder made meanwhile), else exchanged with the folder there
// (RENAME_EXCHANGE), which puts the old output into the work folder, removed
// with it. A dataset appended to keeps its folder: each run is one folder,
// renamed into it whole (see `crate::dataset`).
//
// Whether a work folder's owner lives is told by a lock: the owner holds an
// exclusive `flock` on `lock` inside it for as long as it runs, and the
// kernel drops it however the owner ends. The process id in the name is
// only the fallback for the moment between the folder's creation and the
// lock file's (ids are reused, so a live id proves nothing: such a folder
// is left for a later run).

/// The name of the lock file in a work folder.
const WORK_LOCK: &str = "lock";
/// The folder the output is built in, inside the work folder.
const WORK_OUT: &str = "out";
/// Where the old output waits, inside the work folder, when the target's
/// filesystem cannot exchange two folders (two renames instead).
const WORK_OLD: &str = "old";
/// How long a writer of a folder waits for another writer's lock (which
/// is held while a few renames are made) before it gives up.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Where a folder output goes: the path given (for messages, which never
/// name the hidden work folder) and the real place, links followed, that
/// is renamed and beside which the work folder is made.
#[derive(Clone, Debug)]
pub struct FolderTarget {
    given: PathBuf,
    parent: PathBuf,
    name: std::ffi::OsString,
    /// The outermost of the missing folders above the target, which the
    /// work makes (`-o new/csv` with no `new` yet).
    made: Option<PathBuf>,
}

impl FolderTarget {
    /// The path as given on the command line.
    pub fn given(&self) -> &Path {
        &self.given
    }

    /// The real path of the folder (which may not exist yet).
    pub fn path(&self) -> PathBuf {
        self.parent.join(&self.name)
    }

    /// The start of the names of this target's work folders.
    fn work_prefix(&self) -> Vec<u8> {
        let mut p = b".".to_vec();
        p.extend_from_slice(self.name.as_bytes());
        p.extend_from_slice(b".tbrw-work-");
        p
    }

    /// The process id in `file_name` when it is a work folder's name of
    /// this target (`.NAME.tbrw-work-PID-N`).
    fn work_owner(&self, file_name: &[u8]) -> Option<i32> {
        let rest = file_name.strip_prefix(self.work_prefix().as_slice())?;
        let (pid, n) = std::str::from_utf8(rest).ok()?.split_once('-')?;
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        pid.parse().ok().filter(|&p| p > 0)
    }

    /// Refuses to replace the folder the command runs in (or one holding
    /// it): exchanged, the user's shell would be left in a removed folder.
    pub fn check_not_current(&self) -> Result<(), CliError> {
        let real = self.path();
        if std::env::current_dir().is_ok_and(|c| c.starts_with(&real)) {
            return Err(CliError::msg(format!(
                "{}: is the current folder or holds it: the export replaces the whole folder, so give another one",
                self.given.display()
            )));
        }
        Ok(())
    }

    /// Removes the work folders of this target whose owner is dead (see
    /// above); when a dead owner had moved the old output aside and the
    /// target is missing (the two-rename fallback, killed in between), the
    /// old output is put back first. Best effort: what cannot be removed
    /// stays for a later run. Returns the work folders removed.
    pub fn remove_dead_work(&self) -> usize {
        let Ok(entries) = fs::read_dir(&self.parent) else { return 0 };
        let mut removed = 0;
        for entry in entries.flatten() {
            let Some(pid) = self.work_owner(entry.file_name().as_bytes()) else { continue };
            let path = entry.path();
            // Never through a link, never a file of that name.
            if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                continue;
            }
            let mut open = OpenOptions::new();
            open.read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
            // Held (when there is a lock file) until the folder is gone, so
            // that no other cleaner works on it at the same time.
            let _lock = match open.open(path.join(WORK_LOCK)) {
                Ok(f) => match f.try_lock() {
                    Ok(()) => Some(f),
                    Err(_) => continue, // its owner runs
                },
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if pid_alive(pid) {
                        continue; // being made, or an id reused: left for a later run
                    }
                    None
                }
                Err(_) => continue,
            };
            let target = self.path();
            let old = path.join(WORK_OLD);
            if fs::symlink_metadata(&target).is_err() && old.is_dir() {
                let _ = rename_noreplace(&old, &target);
            }
            if fs::remove_dir_all(&path).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

/// Whether process `pid` exists (`EPERM`: it does, as another user's).
fn pid_alive(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 checks the process and sends nothing.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() == libc::EPERM }
}

/// Whether the effective user may create and remove names in folder `dir`.
fn writable(dir: &Path) -> io::Result<()> {
    let c = c_path(dir)?;
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    // AT_EACCESS: the effective ids decide, as for the writes that follow.
    if unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK | libc::X_OK, libc::AT_EACCESS) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn c_path(p: &Path) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    let (f, t) = (c_path(from)?, c_path(to)?);
    // SAFETY: both are NUL-terminated paths that live across the call.
    if unsafe { libc::renameat2(libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), flags) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Errors of `renameat2` that mean "this filesystem has no such flag".
fn flag_unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP))
}

/// Whether a rename failed because its target exists (a folder made meanwhile).
pub fn exists_error(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EEXIST | libc::ENOTEMPTY))
}

/// Renames the folder `from` to `to`, which must not exist. Where the
/// filesystem has no `RENAME_NOREPLACE`, a plain rename, which replaces
/// nothing but an empty folder.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    match renameat2(from, to, libc::RENAME_NOREPLACE) {
        Err(e) if flag_unsupported(&e) => fs::rename(from, to),
        r => r,
    }
}

/// Checks the path of a folder output before any work and resolves it: a
/// folder or nothing yet (`what` says what `-o` names, for the message
/// about a file there), in a folder that exists and can be written (the
/// work folder is made there), or, with `parents`, below folders that do
/// not exist yet, made when the work starts ([`WorkFolder::create`]) and
/// removed again if the output is not published. Removes the work folders
/// dead writers of the same target left.
pub fn folder_target(given: &Path, what: &str, parents: bool) -> Result<FolderTarget, CliError> {
    let p = given.display();
    let bad = |e: &io::Error| CliError::msg(format!("{p}: {}", plain(e)));
    let mut made = None;
    let (parent, name) = match fs::symlink_metadata(given) {
        Ok(_) => {
            // A link the user names is followed (the folder it names is the
            // output), unless planted in a shared sticky folder.
            let named: PathBuf = given.components().collect();
            if fs::symlink_metadata(&named).is_ok_and(|m| m.file_type().is_symlink()) {
                tbrw::work_file::refuse_planted(&named).map_err(|e| bad(&e))?;
            }
            let m = fs::metadata(given).map_err(|e| bad(&e))?;
            if !m.is_dir() {
                return Err(CliError::msg(format!("{p}: is a file, not a folder: -o names {what}")));
            }
            // A link to a folder: the folder it names is the output.
            let real = given.canonicalize().map_err(|e| bad(&e))?;
            match (real.parent(), real.file_name()) {
                (Some(d), Some(n)) => (d.to_path_buf(), n.to_owned()),
                _ => return Err(CliError::msg(format!("{p}: is the root folder: -o names {what}"))),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let Some(name) = given.file_name().filter(|_| !given.ends_with("..")) else {
                return Err(CliError::msg(format!("{p}: names no folder: -o names {what}")));
            };
            // The folders above that are missing (with `parents`), nearest first.
            let mut missing = Vec::new();
            let mut dir = tbrw::work_file::folder_of(given);
            loop {
                match fs::metadata(&dir) {
                    Ok(m) if m.is_dir() => break,
                    Ok(_) => return Err(CliError::msg(format!("{p}: {} is not a folder", dir.display()))),
                    Err(e) if e.kind() == io::ErrorKind::NotFound && parents => match dir.file_name() {
                        Some(n) if !dir.ends_with("..") => {
                            missing.push(n.to_owned());
                            dir = tbrw::work_file::folder_of(&dir);
                        }
                        _ => return Err(CliError::msg(format!("{p}: folder {}: {}", dir.display(), plain(&e)))),
                    },
                    Err(e) => return Err(CliError::msg(format!("{p}: folder {}: {}", dir.display(), plain(&e)))),
                }
            }
            writable(&dir)
                .map_err(|e| CliError::msg(format!("{p}: cannot write in folder {}: {}", dir.display(), plain(&e))))?;
            let mut parent = dir.canonicalize().map_err(|e| bad(&e))?;
            for (i, n) in missing.iter().rev().enumerate() {
                parent.push(n);
                if i == 0 {
                    made = Some(parent.clone());
                }
            }
            (parent, name.to_owned())
        }
        Err(e) => return Err(bad(&e)),
    };
    let target = FolderTarget { given: given.to_owned(), parent, name, made };
    if target.made.is_none() {
        writable(&target.parent).map_err(|e| {
            CliError::msg(format!(
                "{p}: cannot write in folder {}, where the output is prepared: {}",
                tbrw::work_file::folder_of(given).display(),
                plain(&e)
            ))
        })?;
        target.remove_dead_work();
    }
    Ok(target)
}

/// What an existing folder output holds, as far as replacing it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Held {
    /// Nothing.
    Empty,
    /// An output of the command (replaced with `--force`).
    Output,
    /// Something else, first name found: never replaced.
    Other(String),
}

/// What the folder of `export vtune-csv` holds: exported CSV files
/// (`*-hostname-*.csv`) only, nothing, or anything else.
pub fn csv_folder_holds(dir: &Path) -> io::Result<Held> {
    let mut held = Held::Empty;
    for e in fs::read_dir(dir)? {
        let e = e?;
        let n = e.file_name().to_string_lossy().into_owned();
        if n.ends_with(".csv") && n.contains("-hostname-") && e.file_type()?.is_file() {
            held = Held::Output;
        } else {
            return Ok(Held::Other(n));
        }
    }
    Ok(held)
}

/// Whether `export vtune-csv` may replace `dir` holding `held`: a folder
/// holding an export only with `force`, never one holding anything else
/// (the export replaces the whole folder).
pub fn csv_may_replace(given: &Path, held: &Held, force: bool) -> Result<(), CliError> {
    let p = given.display();
    match held {
        Held::Empty => Ok(()),
        Held::Output if force => Ok(()),
        Held::Output => {
            Err(CliError::msg(format!("{p}: holds exported CSV files already: add --force (-f) to replace them")))
        }
        Held::Other(n) => Err(CliError::msg(format!(
            "{p}: holds {n}, which is not an exported CSV file: the export replaces the whole folder, so it \
             writes only to a new folder, an empty one or one holding an export (with --force)"
        ))),
    }
}

/// Checks the folder of `export vtune-csv` before any work (see
/// [`folder_target`] and [`csv_may_replace`]).
pub fn check_output_folder(dir: &Path, force: bool) -> Result<FolderTarget, CliError> {
    let target = folder_target(dir, "the folder to write in", true)?;
    let real = target.path();
    if real.is_dir() {
        let held = csv_folder_holds(&real).map_err(|e| CliError::msg(format!("{}: {}", dir.display(), plain(&e))))?;
        csv_may_replace(dir, &held, force)?;
        target.check_not_current()?;
        writable(&real).map_err(|e| CliError::msg(format!("{}: cannot be replaced: {}", dir.display(), plain(&e))))?;
    }
    Ok(target)
}

/// The writer lock of a folder output: an exclusive `flock` on the folder
/// itself, held while a writer changes what is at the path (an exchange,
/// runs renamed into a dataset). Another writer's lock is waited for (up to
/// [`LOCK_WAIT`]: it is held for a few renames); a shared lock, a reader
/// asking writers to wait (`flock -s DIR cmd`), refuses at once, with the
/// messages of the TB5 writer lock. The lock is on the folder at the path
/// when taken: one exchanged meanwhile is locked again.
pub fn lock_folder(path: &Path, given: &Path) -> Result<File, CliError> {
    use std::fs::TryLockError;
    let p = given.display();
    let start = std::time::Instant::now();
    loop {
        // O_NOFOLLOW: the path is the real one; a link there now was put
        // there meanwhile, and is not locked through.
        let f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| CliError::msg(format!("{p}: {}", plain(&e))))?;
        match f.try_lock() {
            Ok(()) => {
                use std::os::unix::fs::MetadataExt;
                let still = match (fs::metadata(path), f.metadata()) {
                    (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                    _ => false,
                };
                if still {
                    return Ok(f);
                }
            }
            Err(TryLockError::WouldBlock) => {
                if f.try_lock_shared().is_ok() {
                    return Err(CliError::msg(format!("{p}: cannot open: {}", tbrw::work_file::READER_HOLDS)));
                }
                if start.elapsed() > LOCK_WAIT {
                    return Err(CliError::msg(format!(
                        "{p}: cannot open: {} (waited {} s)",
                        tbrw::work_file::WRITER_HOLDS,
                        LOCK_WAIT.as_secs()
                    )));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(TryLockError::Error(e)) => return Err(CliError::msg(format!("{p}: {}", plain(&e)))),
        }
    }
}

/// A folder output being built: the work folder beside the target (see
/// the rule above), removed with everything in it when this is dropped.
#[derive(Debug)]
pub struct WorkFolder {
    target: FolderTarget,
    dir: PathBuf,
    /// The exclusive lock on `dir/lock` that says its owner lives.
    _alive: File,
    /// Whether the output is in place (the folders made above it then stay).
    published: std::cell::Cell<bool>,
}

impl WorkFolder {
    /// Makes the work folder of `target` (after [`folder_target`]).
    pub fn create(target: &FolderTarget) -> Result<WorkFolder, CliError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let err = |e: io::Error| {
            CliError::msg(format!(
                "{}: cannot prepare the output in folder {}: {}",
                target.given.display(),
                tbrw::work_file::folder_of(&target.given).display(),
                plain(&e)
            ))
        };
        if let Some(made) = &target.made {
            fs::create_dir_all(&target.parent).map_err(|e| {
                remove_empty_up_to(&target.parent, made);
                CliError::msg(format!("{}: making folder {}: {}", target.given.display(), made.display(), plain(&e)))
            })?;
        }
        let dir = loop {
            let mut name = target.work_prefix();
            name.extend_from_slice(
                format!("{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)).as_bytes(),
            );
            let dir = target.parent.join(std::ffi::OsStr::from_bytes(&name));
            match fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    if let Some(made) = &target.made {
                        remove_empty_up_to(&target.parent, made);
                    }
                    return Err(err(e));
                }
            }
        };
        // The lock file gets its name once locked: a cleaner never finds it unlocked while its owner lives.
        let locked = || -> io::Result<File> {
            let pending = dir.join(".lock-pending");
            let f = OpenOptions::new().write(true).create_new(true).open(&pending)?;
            f.try_lock().map_err(io::Error::from)?;
            fs::rename(&pending, dir.join(WORK_LOCK))?;
            Ok(f)
        };
        let alive = match locked() {
            Ok(f) => f,
            Err(e) => {
                let _ = fs::remove_dir_all(&dir);
                if let Some(made) = &target.made {
                    remove_empty_up_to(&target.parent, made);
                }
                return Err(err(e));
            }
        };
        let work = WorkFolder { target: target.clone(), dir, _alive: alive, published: std::cell::Cell::new(false) };
        fs::create_dir(work.out()).map_err(err)?;
        crash_point("work folder created");
        Ok(work)
    }

    /// The folder the output is built in.
    pub fn out(&self) -> PathBuf {
        self.dir.join(WORK_OUT)
    }

    /// The output's files, for the exports that write through a [`tbrw_export::Folder`].
    pub fn folder(&self) -> DirFolder {
        DirFolder { root: self.out() }
    }

    /// An error writing the output, named by the path given.
    fn error(&self, e: &io::Error) -> CliError {
        CliError::msg(format!("{}: {}", self.target.given.display(), plain(e)))
    }

    /// An export's error while it writes into the output: a failed write,
    /// or a table of the output that could not be written, names the
    /// folder given (never the work folder the file is really in); other
    /// errors (the input's) are kept as they are.
    pub fn export_error(&self, e: tbrw_export::ExportError) -> CliError {
        let given = self.target.given.display();
        match e {
            tbrw_export::ExportError::Write { what, source } => {
                CliError::msg(format!("{given}: writing {what}: {}", plain(&source)))
            }
            e @ tbrw_export::ExportError::Table { .. } => CliError::msg(format!("{given}/{e}")),
            e => e.into(),
        }
    }

    /// Makes the built output durable before it is published (files and
    /// folders synced), so that no name ever points at unwritten content.
    pub fn sync(&self) -> Result<(), CliError> {
        sync_tree(&self.out()).map_err(|e| self.error(&e))?;
        crash_point("staged");
        Ok(())
    }

    /// Renames the built output to the target's name, which must be free.
    /// An error that [`exists_error`] accepts: a folder was made there meanwhile.
    pub fn put_new(&self) -> io::Result<()> {
        rename_noreplace(&self.out(), &self.target.path())?;
        self.published.set(true);
        crash_point("published");
        Ok(())
    }

    /// Exchanges the built output with the folder at the target (whose
    /// [`lock_folder`] the caller holds), keeping that folder's permissions;
    /// the old output is then in the work folder.
    pub fn exchange(&self) -> Result<(), CliError> {
        let (out, target) = (self.out(), self.target.path());
        let mode = fs::metadata(&target).map_err(|e| self.error(&e))?.permissions();
        fs::set_permissions(&out, mode).map_err(|e| self.error(&e))?;
        match renameat2(&out, &target, libc::RENAME_EXCHANGE) {
            Ok(()) => {}
            Err(e) if flag_unsupported(&e) => {
                // Two renames: killed between them, the target is missing and
                // the old output waits in the work folder, which the next
                // writer puts back (`remove_dead_work`).
                let old = self.dir.join(WORK_OLD);
                fs::rename(&target, &old).map_err(|e| self.error(&e))?;
                crash_point("old output moved aside");
                if let Err(e) = fs::rename(&out, &target) {
                    let _ = fs::rename(&old, &target);
                    return Err(self.error(&e));
                }
            }
            Err(e) => return Err(self.error(&e)),
        }
        self.published.set(true);
        crash_point("published");
        Ok(())
    }

    /// Publishes a whole-folder output: renamed to the target's name when
    /// there is none, else exchanged with the folder there once
    /// `may_replace` accepts what it holds (checked again under the lock:
    /// another command may have written it meanwhile). The work folder,
    /// with the old output, is removed last.
    pub fn publish(self, may_replace: &dyn Fn(&Path) -> Result<(), CliError>) -> Result<(), CliError> {
        self.sync()?;
        let target = self.target.path();
        match fs::symlink_metadata(&target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => match self.put_new() {
                Ok(()) => {}
                Err(e) if exists_error(&e) => {
                    return Err(CliError::msg(format!(
                        "{}: another process made it while this export ran: nothing written",
                        self.target.given.display()
                    )))
                }
                Err(e) => return Err(self.error(&e)),
            },
            Err(e) => return Err(self.error(&e)),
            Ok(_) => {
                let _lock = lock_folder(&target, &self.target.given)?;
                may_replace(&target)?;
                self.exchange()?;
            }
        }
        self.finish();
        Ok(())
    }

    /// Removes the work folder (and the old output in it, if any).
    pub fn finish(self) {
        drop(self);
        crash_point("work folder removed");
    }
}

impl Drop for WorkFolder {
    fn drop(&mut self) {
        // While still holding its lock: no cleaner takes it for a dead one's meanwhile.
        let _ = fs::remove_dir_all(&self.dir);
        if let (Some(made), false) = (&self.target.made, self.published.get()) {
            remove_empty_up_to(&self.target.parent, made);
        }
    }
}

/// Removes `dir` and the folders above it up to `top` included, each only
/// if empty (another process may have put something there meanwhile).
fn remove_empty_up_to(dir: &Path, top: &Path) {
    let mut d = Some(dir);
    while let Some(p) = d {
        if fs::remove_dir(p).is_err() || p == top {
            break;
        }
        d = p.parent();
    }
}

/// `fsync`s every file and folder under `dir`, and `dir`.
fn sync_tree(dir: &Path) -> io::Result<()> {
    for e in fs::read_dir(dir)? {
        let e = e?;
        let t = e.file_type()?;
        if t.is_dir() {
            sync_tree(&e.path())?;
        } else if t.is_file() {
            File::open(e.path())?.sync_all()?;
        }
    }
    File::open(dir)?.sync_all()
}

/// The files of a folder export, written into a work folder's `out`.
pub struct DirFolder {
    root: PathBuf,
}

impl tbrw_export::Folder for DirFolder {
    fn create(&mut self, name: &str) -> io::Result<Box<dyn Write + Send>> {
        use std::path::Component;
        // The exports name files relative to the folder; anything else would leave it.
        let rel = Path::new(name);
        if name.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name}: not a name inside the folder")));
        }
        let path = self.root.join(rel);
        if let Some(d) = path.parent() {
            fs::create_dir_all(d)?;
        }
        Ok(Box::new(StagedFile(OpenOptions::new().write(true).create_new(true).open(path)?)))
    }
}

/// A file of a folder output being written: a crash point when done (dropped).
struct StagedFile(File);

impl Write for StagedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        crash_point("file written");
    }
}

#[cfg(test)]
mod tests {
    use tbrw::work_file;

    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }

    #[test]
    fn complete_output_replaces_the_target_and_a_failure_leaves_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        write_output(&p, |w| w.write_all(b"one")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        let r = write_output(&p, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("failed midway"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        write_output(&p, |w| w.write_all(b"two")).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(names(dir.path()), ["out.csv"]);
    }

    #[test]
    fn a_directory_or_missing_folder_is_refused_before_any_work() {
        let dir = tempfile::tempdir().unwrap();
        assert!(work_file::check_target(dir.path()).is_err());
        assert!(work_file::check_target(&dir.path().join("no/such/out.csv")).is_err());
        assert!(work_file::check_target(&dir.path().join("out.csv")).is_ok());
        let mut called = false;
        assert!(write_output(dir.path(), |_| {
            called = true;
            Ok(())
        })
        .is_err());
        assert!(!called, "nothing is written for a bad target");
    }

    /// A process id that is not running: above the kernel's largest.
    const DEAD_PID: u32 = 4_194_304 + 17;

    #[test]
    fn dead_writers_work_folders_go_live_ones_stay() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        let target = folder_target(&out, "x", false).unwrap();
        // A live writer: its lock is held.
        let live = WorkFolder::create(&target).unwrap();
        // A killed one: the lock file is there, nobody holds it.
        let killed = t.path().join(format!(".out.tbrw-work-{DEAD_PID}-0"));
        std::fs::create_dir_all(killed.join("out/sub")).unwrap();
        std::fs::write(killed.join(WORK_LOCK), b"").unwrap();
        // Killed before its lock file had its name, and one being made now by a live process.
        let early = t.path().join(format!(".out.tbrw-work-{DEAD_PID}-1"));
        std::fs::create_dir(&early).unwrap();
        let making = t.path().join(format!(".out.tbrw-work-{}-99", std::process::id()));
        std::fs::create_dir(&making).unwrap();
        // Not work folders of this target.
        for other in [".out.tbrw-work-x-1", ".outer.tbrw-work-1-1", "out.tbrw-work-1-1"] {
            std::fs::create_dir(t.path().join(other)).unwrap();
        }
        assert_eq!(target.remove_dead_work(), 2);
        assert!(!killed.exists() && !early.exists());
        assert!(live.out().is_dir() && making.is_dir());
        drop(live);
        std::fs::remove_dir(&making).unwrap();
        assert_eq!(names(t.path()), [".out.tbrw-work-x-1", ".outer.tbrw-work-1-1", "out.tbrw-work-1-1"]);
    }

    #[test]
    fn an_old_output_moved_aside_by_a_killed_writer_is_put_back() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        let killed = t.path().join(format!(".out.tbrw-work-{DEAD_PID}-3"));
        std::fs::create_dir_all(killed.join(WORK_OLD)).unwrap();
        std::fs::write(killed.join(WORK_OLD).join("a-hostname-h.csv"), b"old").unwrap();
        std::fs::create_dir_all(killed.join(WORK_OUT)).unwrap();
        std::fs::write(killed.join(WORK_LOCK), b"").unwrap();
        folder_target(&out, "x", false).unwrap();
        assert_eq!(names(t.path()), ["out"]);
        assert_eq!(std::fs::read(out.join("a-hostname-h.csv")).unwrap(), b"old");
    }

    #[test]
    fn a_folder_is_published_whole_new_or_exchanged() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        let csv = |work: &WorkFolder, name: &str| std::fs::write(work.out().join(name), name).unwrap();
        let target = check_output_folder(&out, false).unwrap();
        let work = WorkFolder::create(&target).unwrap();
        csv(&work, "a-hostname-h.csv");
        csv(&work, "b-hostname-h.csv");
        assert!(!out.exists(), "nothing at the target before the export is complete");
        work.publish(&|_| unreachable!("nothing to replace")).unwrap();
        assert_eq!(names(&out), ["a-hostname-h.csv", "b-hostname-h.csv"]);
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o750)).unwrap();
        assert!(check_output_folder(&out, false).is_err(), "an export needs --force");
        let target = check_output_folder(&out, true).unwrap();
        let work = WorkFolder::create(&target).unwrap();
        csv(&work, "c-hostname-h.csv");
        // What is there is checked again when the new output replaces it.
        let refused = work.publish(&|real| {
            assert_eq!(csv_folder_holds(real).unwrap(), Held::Output);
            Err(CliError::msg("refused"))
        });
        assert!(refused.is_err());
        assert_eq!(names(&out), ["a-hostname-h.csv", "b-hostname-h.csv"]);
        let work = WorkFolder::create(&target).unwrap();
        csv(&work, "c-hostname-h.csv");
        work.publish(&|_| Ok(())).unwrap();
        assert_eq!(names(&out), ["c-hostname-h.csv"], "the old export's files are gone");
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(names(t.path()), ["out"]);
        // A folder holding anything else is never replaced.
        std::fs::write(out.join("notes.txt"), b"mine").unwrap();
        let e = check_output_folder(&out, true).unwrap_err().to_string();
        assert!(e.contains("holds notes.txt, which is not an exported CSV file"), "{e}");
    }
}
