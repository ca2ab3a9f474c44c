//! Folder outputs (a CSV folder, a Parquet dataset), one rule for all.
//! Imports `error`, `crash`, `work_file` (the words of its locks) and
//! `target`.
//!
//! A reader of the target path sees the old complete output or the new
//! complete output, never a mix, and a killed command leaves nothing beside
//! the target but its work folder, which the next command writing the same
//! target removes. The output is built in `out` inside a hidden work folder
//! beside the target (`.NAME.tbrw-work-PID-N`, on the same filesystem, so
//! that it can be renamed; never inside the target, where a reader's
//! recursive glob would find it). It is published in one step: renamed to
//! the target's name when there is none (RENAME_NOREPLACE: never over a
//! folder made meanwhile), else exchanged with the folder there
//! (RENAME_EXCHANGE), which puts the old output into the work folder, removed
//! with it. A dataset appended to keeps its folder: each run is one folder,
//! renamed into it whole (the `tbrw` command's Parquet dataset).
//!
//! Whether a work folder's owner lives is told by a lock: the owner holds an
//! exclusive `flock` on `lock` inside it for as long as it runs, and the
//! kernel drops it however the owner ends. The process id in the name is
//! only the fallback for the moment between the folder's creation and the
//! lock file's (ids are reused, so a live id proves nothing: such a folder
//! is left for a later run).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::crash::folder_crash_point;
use crate::error::OutputError;
use crate::target::{folder_of, refuse_planted};
use crate::work_file::{READER_HOLDS, WRITER_HOLDS};

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
    pub fn check_not_current(&self) -> Result<(), OutputError> {
        let real = self.path();
        if std::env::current_dir().is_ok_and(|c| c.starts_with(&real)) {
            return Err(OutputError::HoldsCurrentFolder { path: self.given.clone() });
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
pub fn writable(dir: &Path) -> io::Result<()> {
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
pub fn folder_target(given: &Path, what: &str, parents: bool) -> Result<FolderTarget, OutputError> {
    let bad = |e: io::Error| OutputError::io(given, "", e);
    let no_folder = || OutputError::NamesNoFolder { path: given.to_owned(), what: what.to_owned() };
    let mut made = None;
    let (parent, name) = match fs::symlink_metadata(given) {
        Ok(_) => {
            // A link the user names is followed (the folder it names is the
            // output), unless planted in a shared sticky folder.
            let named: PathBuf = given.components().collect();
            if fs::symlink_metadata(&named).is_ok_and(|m| m.file_type().is_symlink()) {
                refuse_planted(&named).map_err(bad)?;
            }
            let m = fs::metadata(given).map_err(bad)?;
            if !m.is_dir() {
                return Err(OutputError::IsFile { path: given.to_owned(), what: what.to_owned() });
            }
            // A link to a folder: the folder it names is the output.
            let real = given.canonicalize().map_err(bad)?;
            match (real.parent(), real.file_name()) {
                (Some(d), Some(n)) => (d.to_path_buf(), n.to_owned()),
                _ => return Err(no_folder()),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let Some(name) = given.file_name().filter(|_| !given.ends_with("..")) else {
                return Err(no_folder());
            };
            // The folders above that are missing (with `parents`), nearest first.
            let mut missing = Vec::new();
            let mut dir = folder_of(given);
            loop {
                match fs::metadata(&dir) {
                    Ok(m) if m.is_dir() => break,
                    Ok(_) => return Err(OutputError::NotAFolder { path: given.to_owned(), part: dir }),
                    Err(e) if e.kind() == io::ErrorKind::NotFound && parents => match dir.file_name() {
                        Some(n) if !dir.ends_with("..") => {
                            missing.push(n.to_owned());
                            dir = folder_of(&dir);
                        }
                        _ => return Err(OutputError::io(given, format!("folder {}", dir.display()), e)),
                    },
                    Err(e) => return Err(OutputError::io(given, format!("folder {}", dir.display()), e)),
                }
            }
            writable(&dir)
                .map_err(|e| OutputError::io(given, format!("cannot write in folder {}", dir.display()), e))?;
            let mut parent = dir.canonicalize().map_err(bad)?;
            for (i, n) in missing.iter().rev().enumerate() {
                parent.push(n);
                if i == 0 {
                    made = Some(parent.clone());
                }
            }
            (parent, name.to_owned())
        }
        Err(e) => return Err(bad(e)),
    };
    let target = FolderTarget { given: given.to_owned(), parent, name, made };
    if target.made.is_none() {
        writable(&target.parent).map_err(|e| {
            let step = format!("cannot write in folder {}, where the output is prepared", folder_of(given).display());
            OutputError::io(given, step, e)
        })?;
        target.remove_dead_work();
    }
    Ok(target)
}

/// The writer lock of a folder output: an exclusive `flock` on the folder
/// itself, held while a writer changes what is at the path (an exchange,
/// runs renamed into a dataset). Another writer's lock is waited for (up to
/// 60 s: it is held for a few renames); a shared lock, a reader
/// asking writers to wait (`flock -s DIR cmd`), refuses at once, with the
/// messages of the TB5 writer lock. The lock is on the folder at the path
/// when taken: one exchanged meanwhile is locked again.
pub fn lock_folder(path: &Path, given: &Path) -> Result<File, OutputError> {
    use std::fs::TryLockError;
    let locked = |why: String| OutputError::Locked { path: given.to_owned(), why };
    let start = std::time::Instant::now();
    loop {
        // O_NOFOLLOW: the path is the real one; a link there now was put
        // there meanwhile, and is not locked through.
        let f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| OutputError::io(given, "", e))?;
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
                    return Err(locked(READER_HOLDS.to_owned()));
                }
                if start.elapsed() > LOCK_WAIT {
                    return Err(locked(format!("{WRITER_HOLDS} (waited {} s)", LOCK_WAIT.as_secs())));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(TryLockError::Error(e)) => return Err(OutputError::io(given, "", e)),
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
    pub fn create(target: &FolderTarget) -> Result<WorkFolder, OutputError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let err = |e: io::Error| {
            let step = format!("cannot prepare the output in folder {}", folder_of(&target.given).display());
            OutputError::io(&target.given, step, e)
        };
        if let Some(made) = &target.made {
            fs::create_dir_all(&target.parent).map_err(|e| {
                remove_empty_up_to(&target.parent, made);
                OutputError::io(&target.given, format!("making folder {}", made.display()), e)
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
        folder_crash_point("work folder created");
        Ok(work)
    }

    /// The target this output is built for.
    pub fn target(&self) -> &FolderTarget {
        &self.target
    }

    /// The folder the output is built in.
    pub fn out(&self) -> PathBuf {
        self.dir.join(WORK_OUT)
    }

    /// An error writing the output, named by the path given.
    pub fn error(&self, e: io::Error) -> OutputError {
        OutputError::io(&self.target.given, "", e)
    }

    /// Creates the file `name` (a path relative to the output, made of
    /// plain names: nothing that would leave it) in the output being built,
    /// with the folders above it.
    pub fn create_file(&self, name: &str) -> io::Result<StagedFile> {
        use std::path::Component;
        let rel = Path::new(name);
        if name.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name}: not a name inside the folder")));
        }
        let path = self.out().join(rel);
        if let Some(d) = path.parent() {
            fs::create_dir_all(d)?;
        }
        Ok(StagedFile(OpenOptions::new().write(true).create_new(true).open(path)?))
    }

    /// Makes the built output durable before it is published (files and
    /// folders synced), so that no name ever points at unwritten content.
    pub fn sync(&self) -> Result<(), OutputError> {
        sync_tree(&self.out()).map_err(|e| self.error(e))?;
        folder_crash_point("staged");
        Ok(())
    }

    /// Renames the built output to the target's name, which must be free.
    /// An error that [`exists_error`] accepts: a folder was made there meanwhile.
    pub fn put_new(&self) -> io::Result<()> {
        rename_noreplace(&self.out(), &self.target.path())?;
        self.published.set(true);
        folder_crash_point("published");
        Ok(())
    }

    /// Exchanges the built output with the folder at the target (whose
    /// [`lock_folder`] the caller holds), keeping that folder's permissions;
    /// the old output is then in the work folder.
    pub fn exchange(&self) -> Result<(), OutputError> {
        let (out, target) = (self.out(), self.target.path());
        let mode = fs::metadata(&target).map_err(|e| self.error(e))?.permissions();
        fs::set_permissions(&out, mode).map_err(|e| self.error(e))?;
        match renameat2(&out, &target, libc::RENAME_EXCHANGE) {
            Ok(()) => {}
            Err(e) if flag_unsupported(&e) => {
                // Two renames: killed between them, the target is missing and
                // the old output waits in the work folder, which the next
                // writer puts back (`remove_dead_work`).
                let old = self.dir.join(WORK_OLD);
                fs::rename(&target, &old).map_err(|e| self.error(e))?;
                folder_crash_point("old output moved aside");
                if let Err(e) = fs::rename(&out, &target) {
                    let _ = fs::rename(&old, &target);
                    return Err(self.error(e));
                }
            }
            Err(e) => return Err(self.error(e)),
        }
        self.published.set(true);
        folder_crash_point("published");
        Ok(())
    }

    /// Publishes a whole-folder output: renamed to the target's name when
    /// there is none, else exchanged with the folder there once
    /// `may_replace` accepts what it holds (checked again under the lock:
    /// another command may have written it meanwhile). The work folder,
    /// with the old output, is removed last.
    pub fn publish<E: From<OutputError>>(self, may_replace: &dyn Fn(&Path) -> Result<(), E>) -> Result<(), E> {
        self.sync()?;
        let target = self.target.path();
        match fs::symlink_metadata(&target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => match self.put_new() {
                Ok(()) => {}
                Err(e) if exists_error(&e) => {
                    return Err(OutputError::MadeMeanwhile { path: self.target.given.clone() }.into())
                }
                Err(e) => return Err(self.error(e).into()),
            },
            Err(e) => return Err(self.error(e).into()),
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
        folder_crash_point("work folder removed");
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

/// A file of a folder output being written ([`WorkFolder::create_file`]):
/// a crash point when done (dropped).
pub struct StagedFile(File);

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
        folder_crash_point("file written");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
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
    fn a_folder_is_published_whole_then_exchanged_with_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        let target = folder_target(&out, "x", false).unwrap();
        let work = WorkFolder::create(&target).unwrap();
        work.create_file("a/b.txt").unwrap().write_all(b"one").unwrap();
        assert!(work.create_file("../escape").is_err() && work.create_file("/abs").is_err());
        assert!(!out.exists(), "nothing at the target before the output is complete");
        work.publish::<OutputError>(&|_| unreachable!("nothing to replace")).unwrap();
        assert_eq!(std::fs::read(out.join("a/b.txt")).unwrap(), b"one");
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o750)).unwrap();
        let work = WorkFolder::create(&target).unwrap();
        work.create_file("c.txt").unwrap();
        work.publish::<OutputError>(&|_| Ok(())).unwrap();
        assert_eq!(names(&out), ["c.txt"], "the old output is gone");
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(names(t.path()), ["out"]);
    }
}
