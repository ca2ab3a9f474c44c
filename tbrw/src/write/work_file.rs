//! Work files: the file a new output is built in before it takes its name,
//! the checks a target path gets before any work starts, and the writer
//! lock of a target.
//!
//! A work file must not outlive the process writing it. Where the
//! filesystem allows it, it has no name at all (`O_TMPFILE`): whatever
//! happens to the process, the kernel frees it. On commit it gets its name
//! with `linkat`, straight at the target when there is none. An existing
//! target cannot be replaced that way (`linkat` never replaces), so the
//! finished file is linked under a work name and renamed over the target:
//! a process killed between those two calls leaves the work name, holding
//! the complete new file, beside the untouched old one. Where `O_TMPFILE`
//! (or `/proc/self/fd`, which an unprivileged `linkat` of an unnamed file
//! goes through) is missing, the work file is a named `.NAME.TOKEN.tmp`
//! beside the target from the start. Every work file, named or not, is
//! `flock`ed for as long as its writer has it open, so a work name whose
//! lock is free belongs to a dead writer: the next writer of the same
//! target (a new file, an append, [`lock_target`]) removes those. No
//! process id is recorded: a lock cannot outlive its process, an id can be
//! reused by another one.
//!
//! Writers of one path exclude each other with an exclusive `flock` on the
//! file at the path ([`lock_target`]); a new file holds it on the file it
//! replaces until the rename. A shared `flock` (what `flock -s` takes, a
//! reader asking writers to wait) refuses writers too, with its own
//! message ([`READER_HOLDS`]); this library's readers take no lock.
//!
//! Holds no TB5 knowledge and imports nothing of this crate: the command
//! line builds its own outputs (CSV, exports) with it too.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The folder a file at `path` lives in (`.` for a bare name).
pub fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Checks, before any work, that a new file can be put at `path`: the name
/// is not empty, is not a directory, and its folder exists and is writable.
/// The errors carry the OS error number the check stands for (`ENOENT`,
/// `EISDIR`, `ENOTDIR`, `EACCES`, `EROFS`).
pub fn check_target(path: &Path) -> io::Result<()> {
    if path.as_os_str().is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(io::Error::from_raw_os_error(libc::EISDIR)),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        // ENOTDIR (a parent that is a file), ELOOP, EACCES on a parent: the target can't be made.
        Err(e) => return Err(e),
    }
    if path.file_name().is_none() {
        // `a/..` or `/`: not a name a file can be given.
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    let dir = folder_of(path);
    if !fs::metadata(&dir)?.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
    }
    let c = c_path(&dir)?;
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    // AT_EACCESS: the effective ids decide, as for the create that follows.
    if unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK | libc::X_OK, libc::AT_EACCESS) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Checks that an existing file at `path` can be opened for reading or
/// appending: not empty, not a directory (`EISDIR`, which `open` itself
/// allows for reading).
pub fn check_existing(path: &Path) -> io::Result<()> {
    if path.as_os_str().is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if fs::metadata(path)?.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    Ok(())
}

/// Why a writer is refused a target whose file another process holds
/// exclusively: another writer.
pub const WRITER_HOLDS: &str = "another writer (an append, or a new file replacing it) has it open";
/// Why a writer is refused a target whose file other processes hold with a
/// shared lock only: readers that asked writers to wait.
pub const READER_HOLDS: &str =
    "another process reads it with a lock (shared flock): no writer may change it until that lock is released";

/// A file this process holds an exclusive `flock` on, released when it is
/// dropped. The release is explicit (`LOCK_UN`) rather than left to the
/// close: a child another thread is starting (fork, then exec) holds a copy
/// of every descriptor until its exec closes them, and with it the lock, so
/// a writer opening the target right after this one closed it would find
/// it held by nobody that still writes.
#[derive(Debug)]
pub(crate) struct LockedFile(Option<File>);

impl LockedFile {
    /// A file whose lock this process already holds through another
    /// descriptor of the same open file (a `try_clone`): released when
    /// either is dropped.
    pub(crate) fn holding(file: File) -> LockedFile {
        LockedFile(Some(file))
    }

    /// Takes the lock on `file` without waiting.
    fn lock(file: File) -> Result<LockedFile, (File, std::fs::TryLockError)> {
        match file.try_lock() {
            Ok(()) => Ok(LockedFile(Some(file))),
            Err(e) => Err((file, e)),
        }
    }

    /// The file, its lock kept until every descriptor of it is closed
    /// (for a holder of another descriptor of the same open file, which
    /// releases it).
    pub(crate) fn into_file(mut self) -> File {
        self.0.take().expect("a LockedFile holds its file until dropped")
    }
}

impl std::ops::Deref for LockedFile {
    type Target = File;
    fn deref(&self) -> &File {
        self.0.as_ref().expect("a LockedFile holds its file until dropped")
    }
}

impl std::ops::DerefMut for LockedFile {
    fn deref_mut(&mut self) -> &mut File {
        self.0.as_mut().expect("a LockedFile holds its file until dropped")
    }
}

impl Drop for LockedFile {
    fn drop(&mut self) {
        if let Some(file) = &self.0 {
            let _ = file.unlock();
        }
    }
}

/// The writer lock of a target path: the file at the path, open and
/// `flock`ed exclusively, or nothing when there was no file to lock. Held
/// until dropped; hand it to [`WorkFile::create_locked`] to keep it until
/// the replacement is in place.
#[derive(Debug)]
pub struct TargetLock {
    target: PathBuf,
    file: Option<LockedFile>,
}

impl TargetLock {
    /// The target path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Whether a file was at the target and is locked (`false`: there was
    /// none, or it could not be opened for reading, as a file this user may
    /// replace but not read: no appender can open it either).
    pub fn is_held(&self) -> bool {
        self.file.is_some()
    }
}

/// Takes the writer lock of `path` before any work is done for a new file
/// there: checks the path ([`check_target`]), locks the file at it if there
/// is one, and removes what killed writers of it left ([`remove_dead`]). A
/// file another writer holds (an append, a new file replacing it) is
/// refused with [`WRITER_HOLDS`], one held with a shared lock with
/// [`READER_HOLDS`], both as `ErrorKind::WouldBlock` (`EWOULDBLOCK`).
/// Every writer of TB5 files in this library takes this lock; an export
/// replacing a file calls this first and keeps the lock until the new file
/// is in place ([`WorkFile::create_locked`]).
pub fn lock_target(path: &Path) -> io::Result<TargetLock> {
    check_target(path)?;
    remove_dead(&folder_of(path), path);
    // O_NONBLOCK: a FIFO of that name does not hang the open (and changes
    // nothing for a regular file).
    let mut read = OpenOptions::new();
    read.read(true).custom_flags(libc::O_NONBLOCK);
    let file = match lock_open(path, &read) {
        Ok(f) => Some(f),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
        // Nothing to replace; or a file this user may replace (the folder is
        // writable) but not read: it cannot be locked, and an appender could
        // not open it either.
        Err(_) => None,
    };
    crash_point("target locked");
    Ok(TargetLock { target: path.to_owned(), file })
}

/// Opens the file at `path` with `options` and takes its writer lock:
/// refused with [`WRITER_HOLDS`] or [`READER_HOLDS`] when another process
/// holds a lock on it. The file returned is the one at `path` once locked
/// (a file renamed over the path between the open and the lock is opened
/// again), so the lock is never taken on a file that is no longer there.
pub(crate) fn lock_open(path: &Path, options: &OpenOptions) -> io::Result<LockedFile> {
    loop {
        let file = match LockedFile::lock(options.open(path)?) {
            Ok(locked) => locked,
            Err((file, std::fs::TryLockError::WouldBlock)) => return Err(busy(&file)),
            Err((_, std::fs::TryLockError::Error(e))) => return Err(e),
        };
        // Followed, as the open followed it: a target may be a link to its file.
        let still = match (fs::metadata(path), file.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if still {
            return Ok(file);
        }
    }
}

/// The error for a file whose exclusive lock is refused, saying who holds
/// it: a shared lock can be had when every holder's lock is shared, so then
/// the holders are readers. (Best effort: the holders may change between
/// the two attempts; either message is then true of a moment.)
fn busy(file: &File) -> io::Error {
    let why = if file.try_lock_shared().is_ok() {
        let _ = file.unlock();
        READER_HOLDS
    } else {
        WRITER_HOLDS
    };
    io::Error::new(io::ErrorKind::WouldBlock, why)
}

/// A file being built for `target` (see the module doc). Dropping it
/// without [`persist`](WorkFile::persist) leaves nothing behind.
#[derive(Debug)]
pub struct WorkFile {
    file: LockedFile,
    target: PathBuf,
    /// The name of a fallback work file; `None` while the file is unnamed.
    named: Option<PathBuf>,
    /// The writer lock of the target, held until the new file replaces it.
    _lock: TargetLock,
}

impl WorkFile {
    /// Starts a work file for `target`, with the usual permissions of a
    /// new file (0666 less the umask), after taking the target's writer
    /// lock ([`lock_target`]: the path checked, dead writers' work files
    /// removed, a target another writer holds refused).
    pub fn create(target: &Path) -> io::Result<WorkFile> {
        Self::create_locked(lock_target(target)?)
    }

    /// [`WorkFile::create`] for a target whose writer lock the caller took
    /// before its work ([`lock_target`]); the lock is held until the new
    /// file is in place, or until the work file is dropped.
    pub fn create_locked(lock: TargetLock) -> io::Result<WorkFile> {
        let target = lock.target.clone();
        check_target(&target)?;
        let dir = folder_of(&target);
        if Path::new("/proc/self/fd").is_dir() {
            match unnamed(&dir) {
                Ok(file) => {
                    crash_point("work file created");
                    return Ok(WorkFile { file, target, named: None, _lock: lock });
                }
                Err(e) if !unsupported(&e) => return Err(e),
                Err(_) => {}
            }
        }
        let (file, name) = named(&dir, &target)?;
        crash_point("work file created");
        Ok(WorkFile { file, target, named: Some(name), _lock: lock })
    }

    /// The file to write.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Whether the work file has a name (the fallback) rather than none.
    pub fn is_named(&self) -> bool {
        self.named.is_some()
    }

    /// Puts the file at its target path, replacing what was there, and
    /// makes the new name durable. The caller syncs the content first.
    /// The writer lock is released.
    pub fn persist(self) -> io::Result<()> {
        self.persist_locked().map(drop)
    }

    /// Puts the file at its target path, replacing what was there
    /// atomically, without waiting for the disk (see
    /// [`crate::write::Durability::Ordered`]). The writer lock is released.
    pub fn put_in_place(self) -> io::Result<()> {
        self.put_in_place_locked().map(drop)
    }

    /// [`persist`](WorkFile::persist) that hands back the file now at the
    /// target, its writer lock still held.
    pub(crate) fn persist_locked(self) -> io::Result<LockedFile> {
        let target = self.target.clone();
        let file = self.put_in_place_locked()?;
        File::open(folder_of(&target))?.sync_all()?;
        crash_point("folder synced");
        Ok(file)
    }

    /// [`put_in_place`](WorkFile::put_in_place) that hands back the file
    /// now at the target, its writer lock still held.
    pub(crate) fn put_in_place_locked(mut self) -> io::Result<LockedFile> {
        match self.named.take() {
            Some(name) => rename_into_place(&name, &self.target)?,
            None => match link(&self.file, &self.target) {
                Ok(()) => crash_point("linked into place"),
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    // linkat never replaces: give the file a work name, then
                    // rename it over the target (atomic). Killed in between,
                    // the work name stays, holding the whole new file beside
                    // the old one; it is locked by this open file until
                    // then, and removed by the next writer of the target.
                    // (RENAME_EXCHANGE would not help: the exchanged name
                    // would be left holding the old file instead.)
                    let dir = folder_of(&self.target);
                    let name = loop {
                        let name = dir.join(work_name(&self.target));
                        match link(&self.file, &name) {
                            Ok(()) => break name,
                            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                            Err(e) => return Err(e),
                        }
                    };
                    crash_point("linked under a work name");
                    rename_into_place(&name, &self.target)?;
                }
                Err(e) => return Err(e),
            },
        }
        // The target's lock (on the file just replaced) goes with `self`;
        // a named work file's name is gone with the rename.
        self.named = None;
        let file = std::mem::replace(&mut self.file, LockedFile(None));
        Ok(file)
    }
}

/// Renames the work name `name` over `target`; on failure the work name is removed.
fn rename_into_place(name: &Path, target: &Path) -> io::Result<()> {
    if let Err(e) = fs::rename(name, target) {
        let _ = fs::remove_file(name);
        return Err(e);
    }
    crash_point("renamed into place");
    Ok(())
}

/// An unnamed temporary file in the folder of `target`, for bytes that
/// never become part of a file's name (a section spilled out of memory).
/// Without `O_TMPFILE` it is a work name of `target`, removed at once:
/// killed in between, it is a dead writer's work file like any other.
/// Errors carry the OS error only, no name: the caller names the target.
pub(crate) fn spill_file(target: &Path) -> io::Result<File> {
    let dir = folder_of(target);
    // Nobody else can reach a spill file, so its lock does not matter.
    match unnamed(&dir) {
        Ok(file) => return Ok(file.into_file()),
        Err(e) if !unsupported(&e) => return Err(e),
        Err(_) => {}
    }
    let (file, name) = named(&dir, target)?;
    fs::remove_file(&name)?;
    Ok(file.into_file())
}

/// Test builds only (debug assertions): with `TBRW_TEST_CRASH_AT=k` in the
/// environment, the `k`-th crash point this process reaches (the first is
/// number 1) kills it with `SIGKILL`, after printing `tbrw crash point k:
/// NAME` to stderr. Crash points follow each write, truncation, link and rename of
/// a commit, so `tbrw/tests/kill.rs` can stop a writer between any two of
/// them and check what is left. Release builds have none.
#[cfg(debug_assertions)]
pub(crate) fn crash_point(name: &str) {
    use std::sync::OnceLock;
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    static REACHED: AtomicU64 = AtomicU64::new(0);
    let at = AT.get_or_init(|| std::env::var("TBRW_TEST_CRASH_AT").ok().and_then(|v| v.parse().ok()));
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
pub(crate) fn crash_point(_name: &str) {}

impl Drop for WorkFile {
    fn drop(&mut self) {
        if let Some(name) = self.named.take() {
            let _ = fs::remove_file(name);
        }
    }
}

fn c_path(p: &Path) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// An `O_TMPFILE` in `dir`, locked.
fn unnamed(dir: &Path) -> io::Result<LockedFile> {
    let file = OpenOptions::new().read(true).write(true).custom_flags(libc::O_TMPFILE).mode(0o666).open(dir)?;
    // Nothing else can reach an unnamed file yet: the lock only matters once
    // `persist` names it, and is taken now so that it is never missing.
    LockedFile::lock(file).map_err(|(_, e)| io::Error::from(e))
}

/// Errors of an `O_TMPFILE` open that mean "not supported here".
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL))
}

/// A new named work file for `target`, locked and known to still be ours.
fn named(dir: &Path, target: &Path) -> io::Result<(LockedFile, PathBuf)> {
    loop {
        let name = dir.join(work_name(target));
        let file = match OpenOptions::new().read(true).write(true).create_new(true).mode(0o666).open(&name) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        // Between the create and the lock another writer's cleanup may have
        // found the file unlocked and removed it (or still hold it to do
        // so): then start again under a new name.
        match LockedFile::lock(file) {
            Ok(file) if same_file(&name, &file) => return Ok((file, name)),
            _ => continue,
        }
    }
}

/// Gives the unnamed `file` the name `to`.
fn link(file: &File, to: &Path) -> io::Result<()> {
    let from = c_path(Path::new(&format!("/proc/self/fd/{}", file.as_raw_fd())))?;
    let to = c_path(to)?;
    // SAFETY: both are NUL-terminated paths that live across the call.
    let r =
        unsafe { libc::linkat(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::AT_SYMLINK_FOLLOW) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether `path` (not followed if a link) is the file open as `file`.
fn same_file(path: &Path, file: &File) -> bool {
    match (fs::symlink_metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Characters of the token in a work file's name.
const TOKEN_LEN: usize = 12;

/// `.NAME.TOKEN.tmp` for `target`, with a token unique in this process and
/// unlikely in any other.
fn work_name(target: &Path) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ (u64::from(std::process::id()) << 32) ^ COUNTER.fetch_add(1, Ordering::Relaxed).rotate_right(7);
    let mut token = String::with_capacity(TOKEN_LEN);
    for _ in 0..TOKEN_LEN {
        // splitmix64 steps: spreads close inputs (consecutive calls) apart.
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        token.push(char::from(b"0123456789abcdefghijklmnopqrstuvwxyz"[(z % 36) as usize]));
    }
    format!(".{}.{token}.tmp", base_name(target))
}

fn base_name(target: &Path) -> String {
    target.file_name().map_or_else(|| "tb5".into(), |n| n.to_string_lossy().into_owned())
}

/// Whether `file_name` is a work file name of `target`. Tokens of 6 to 16
/// letters and digits: this module's, and the `tempfile` crate's that
/// earlier versions used. Anything else with the same prefix is left alone.
fn is_work_name(file_name: &[u8], target: &Path) -> bool {
    let prefix = format!(".{}.", base_name(target));
    let Some(rest) = file_name.strip_prefix(prefix.as_bytes()) else { return false };
    let Some(token) = rest.strip_suffix(b".tmp") else { return false };
    (6..=16).contains(&token.len()) && token.iter().all(u8::is_ascii_alphanumeric)
}

/// Removes the work files of `target` in `dir` whose writer is dead (their
/// lock is free). Best effort: a file it cannot open or lock stays.
pub fn remove_dead(dir: &Path, target: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !is_work_name(name.as_bytes(), target) {
            continue;
        }
        let path = entry.path();
        // O_NOFOLLOW: never act through a link; O_NONBLOCK: a FIFO of that name does not hang us.
        let Ok(file) = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(&path)
        else {
            continue;
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) || file.try_lock().is_err() {
            continue;
        }
        // Locked by us now, so no live writer has it; the name must still be
        // this file (a writer may have renamed it into place meanwhile).
        if same_file(&path, &file) && fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }

    /// A lock of a target with nothing at it.
    fn unlocked(target: &Path) -> TargetLock {
        TargetLock { target: target.to_owned(), file: None }
    }

    #[test]
    fn work_names_are_recognised_and_nothing_else() {
        let t = Path::new("d/out.tb5");
        let n = work_name(t);
        assert!(is_work_name(n.as_bytes(), t), "{n}");
        assert_ne!(work_name(t), work_name(t));
        assert!(is_work_name(b".out.tb5.AbC123.tmp", t));
        for other in [".out.tb5.tmp", ".out.tb5.bak.tmp", ".out.tb5.abc-123.tmp", ".out.tb5x.abc123.tmp", "out.tb5"] {
            assert!(!is_work_name(other.as_bytes(), t), "{other}");
        }
    }

    #[test]
    fn a_dead_writers_named_file_is_removed_a_live_ones_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x.tb5");
        let dead = dir.path().join(".x.tb5.deadbeef0001.tmp");
        fs::write(&dead, b"left by a killed writer").unwrap();
        let live = dir.path().join(".x.tb5.a1ve00000001.tmp");
        fs::write(&live, b"").unwrap();
        let holder = File::open(&live).unwrap();
        holder.try_lock().unwrap();
        let unrelated = dir.path().join(".x.tb5.notes.txt");
        fs::write(&unrelated, b"").unwrap();
        assert_eq!(remove_dead(dir.path(), &target), 1);
        assert_eq!(names(dir.path()), [".x.tb5.a1ve00000001.tmp", ".x.tb5.notes.txt"]);
        drop(holder);
        assert_eq!(remove_dead(dir.path(), &target), 1);
        assert_eq!(names(dir.path()), [".x.tb5.notes.txt"]);
    }

    #[test]
    fn the_fallback_is_locked_while_open_and_gone_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.tb5");
        let (file, name) = named(dir.path(), &target).unwrap();
        let w = WorkFile { file, target: target.clone(), named: Some(name.clone()), _lock: unlocked(&target) };
        assert!(w.is_named());
        assert_eq!(remove_dead(dir.path(), &target), 0, "a live writer's file stays");
        assert!(name.exists());
        drop(w);
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn the_fallback_persists_by_rename() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.tb5");
        fs::write(&target, b"old").unwrap();
        let (mut file, name) = named(dir.path(), &target).unwrap();
        file.write_all(b"new").unwrap();
        WorkFile { file, target: target.clone(), named: Some(name), _lock: unlocked(&target) }.persist().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["f.tb5"]);
    }

    #[test]
    fn an_unnamed_file_is_linked_into_place_new_or_replacing() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("u.tb5");
        for content in [&b"first"[..], b"second"] {
            let mut w = WorkFile::create(&target).unwrap();
            assert!(!w.is_named(), "this test's filesystem supports O_TMPFILE");
            assert_eq!(names(dir.path()).iter().filter(|n| n.ends_with(".tmp")).count(), 0);
            w.file.write_all(content).unwrap();
            w.persist().unwrap();
            assert_eq!(fs::read(&target).unwrap(), content);
            assert_eq!(names(dir.path()), ["u.tb5"]);
        }
    }

    #[test]
    fn targets_are_checked_before_any_work() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let errno = |p: &Path| check_target(p).unwrap_err().raw_os_error();
        assert_eq!(errno(Path::new("")), Some(libc::ENOENT));
        assert_eq!(errno(dir.path()), Some(libc::EISDIR));
        assert_eq!(errno(&dir.path().join("missing/f.tb5")), Some(libc::ENOENT));
        let file = dir.path().join("plain");
        fs::write(&file, b"").unwrap();
        assert_eq!(errno(&file.join("f.tb5")), Some(libc::ENOTDIR));
        assert!(check_target(&dir.path().join("new.tb5")).is_ok());
        assert!(check_target(&file).is_ok(), "an existing file is replaced");
        assert_eq!(check_existing(dir.path()).unwrap_err().raw_os_error(), Some(libc::EISDIR));
        assert_eq!(check_existing(Path::new("")).unwrap_err().raw_os_error(), Some(libc::ENOENT));
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // root writes anywhere: the check can only be seen as another user.
            let ro = dir.path().join("ro");
            fs::create_dir(&ro).unwrap();
            fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
            assert_eq!(errno(&ro.join("f.tb5")), Some(libc::EACCES));
        }
    }
}
