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
//! What may be at the target, and what a writer does with it (a link is
//! replaced itself, never followed; a device or FIFO is never replaced), is
//! decided by [`plan`] (the rules are in the crate's private `target`
//! module; their public items are here, at their one public path). The
//! target's folder is opened once; every step after it (the lock, the work
//! file, its link and rename, the removal of dead work files) is made
//! relative to that folder with exclusive, no-follow creation.
//!
//! Writers of one path exclude each other with an exclusive `flock` on the
//! regular file at the path ([`lock_target`]); a new file holds it on the
//! file it replaces until the rename. A shared `flock` (what `flock -s`
//! takes, a reader asking writers to wait) refuses writers too, with its own
//! message ([`READER_HOLDS`]); this library's readers take no lock.
//!
//! Holds no TB5 knowledge and imports nothing of this crate but `target`
//! and `crash`: the `tbrw` crate's writer, the command line's exports and
//! the collector build their files with it.

use std::ffi::{CStr, CString};
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};

use crate::crash::crash_point;
use crate::target::Target;
// The target rules have their one public path here (`target` is private).
pub use crate::target::{folder_of, open_into, plan, Plan, Writing};

/// Checks, before any work, that a new file can be put at `path`: the name
/// is not empty, is not a directory, its folder exists and is writable, and
/// what is at the name may be replaced by a file written whole ([`plan`]:
/// a regular file, or a link, which is replaced itself; never a planted
/// link, a device, a FIFO or a socket). The OS errors carry the error
/// number the check stands for (`ENOENT`, `EISDIR`, `ENOTDIR`, `EACCES`,
/// `EROFS`); the refusals of [`plan`] say what was found.
pub fn check_target(path: &Path) -> io::Result<()> {
    let target = Target::open(path)?;
    target.plan(Writing::Whole)?;
    target.check_writable()
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
pub struct LockedFile(Option<File>);

impl LockedFile {
    /// A file whose lock this process already holds through another
    /// descriptor of the same open file (a `try_clone`): released when
    /// either is dropped.
    pub fn holding(file: File) -> LockedFile {
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
    pub fn into_file(mut self) -> File {
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

/// The writer lock of a target path: the regular file at the path, open
/// and `flock`ed exclusively, or nothing when there was none to lock (no
/// file, or a link: the link is replaced itself, and the file it names is
/// left alone, so its lock is not this writer's to take). Held until
/// dropped; hand it to [`WorkFile::create_locked`] to keep it until the
/// replacement is in place.
#[derive(Debug)]
pub struct TargetLock {
    at: Target,
    file: Option<LockedFile>,
}

impl TargetLock {
    /// The target path.
    pub fn target(&self) -> &Path {
        self.at.path()
    }

    /// Whether a regular file was at the target and is locked (`false`:
    /// there was none, a link is there, or it could not be opened for
    /// reading, as a file this user may replace but not read: no appender
    /// can open it either).
    pub fn is_held(&self) -> bool {
        self.file.is_some()
    }
}

/// Takes the writer lock of `path` before any work is done for a new file
/// there: checks the path ([`check_target`]: a planted link, a device, a
/// FIFO or a socket are refused), locks the regular file at it if there is
/// one (never through a link), and removes what killed writers of it left
/// ([`remove_dead`]). A file another writer holds (an append, a new file
/// replacing it) is refused with [`WRITER_HOLDS`], one held with a shared
/// lock with [`READER_HOLDS`], both as `ErrorKind::WouldBlock`
/// (`EWOULDBLOCK`). Every writer of TB5 files in this library takes this
/// lock; an export replacing a file calls this first and keeps the lock
/// until the new file is in place ([`WorkFile::create_locked`]).
pub fn lock_target(path: &Path) -> io::Result<TargetLock> {
    let at = Target::open(path)?;
    let plan = at.plan(Writing::Whole)?;
    at.check_writable()?;
    remove_dead_at(&at);
    let file = match plan {
        Plan::Replace { link: false } => match lock_at(&at, false, false) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
            // Gone meanwhile; or a file this user may replace (the folder is
            // writable) but not read: it cannot be locked, and an appender
            // could not open it either.
            Err(_) => None,
        },
        Plan::New | Plan::Replace { link: true } | Plan::Into => None,
    };
    crash_point("target locked");
    Ok(TargetLock { at, file })
}

/// Opens the TB5 file at `path` for an append (`write`) and takes its
/// writer lock: refused with [`WRITER_HOLDS`] or [`READER_HOLDS`] when
/// another process holds a lock on it. A symbolic link there is followed
/// (the user names the file to change through it) unless it was planted
/// (planted as the rules of [`plan`] say); anything but a regular file is refused.
pub fn lock_open(path: &Path, write: bool) -> io::Result<LockedFile> {
    let at = Target::open(path)?;
    let follow = match at.stat(false)? {
        Some(st) => {
            at.refuse_if_planted(&st)?;
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
        }
        None => return Err(io::Error::from_raw_os_error(libc::ENOENT)),
    };
    lock_at(&at, write, follow)
}

/// Opens the regular file at `at` ([`Target::open_regular`]) and takes its
/// writer lock. The file returned is the one at the name once locked (a
/// file renamed over the name between the open and the lock is opened
/// again), so the lock is never taken on a file that is no longer there.
fn lock_at(at: &Target, write: bool, follow: bool) -> io::Result<LockedFile> {
    loop {
        let file = match LockedFile::lock(at.open_regular(write, follow)?) {
            Ok(locked) => locked,
            Err((file, std::fs::TryLockError::WouldBlock)) => return Err(busy(&file)),
            Err((_, std::fs::TryLockError::Error(e))) => return Err(e),
        };
        let still = match (at.stat(follow), file.metadata()) {
            (Ok(Some(a)), Ok(b)) => a.st_dev == b.dev() && a.st_ino == b.ino(),
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

/// A file being built for a target (see the module doc). Dropping it
/// without [`persist`](WorkFile::persist) leaves nothing behind.
#[derive(Debug)]
pub struct WorkFile {
    file: LockedFile,
    /// The name of a fallback work file in the target's folder; `None`
    /// while the file is unnamed.
    named: Option<CString>,
    /// The writer lock of the target, held until the new file replaces it;
    /// its target's folder is where the work file is named.
    lock: TargetLock,
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
        // Looked at again: what is at the name may have changed since the lock.
        lock.at.plan(Writing::Whole)?;
        lock.at.check_writable()?;
        if Path::new("/proc/self/fd").is_dir() {
            match unnamed(&lock.at) {
                Ok(file) => {
                    crash_point("work file created");
                    return Ok(WorkFile { file, named: None, lock });
                }
                Err(e) if !unsupported(&e) => return Err(e),
                Err(_) => {}
            }
        }
        let (file, name) = named(&lock.at)?;
        crash_point("work file created");
        Ok(WorkFile { file, named: Some(name), lock })
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
    /// `tbrw::Durability::Ordered`). The writer lock is released.
    pub fn put_in_place(self) -> io::Result<()> {
        self.put_in_place_locked().map(drop)
    }

    /// [`persist`](WorkFile::persist) that hands back the file now at the
    /// target, its writer lock still held.
    pub fn persist_locked(mut self) -> io::Result<LockedFile> {
        let file = self.place()?;
        self.lock.at.sync_folder()?;
        crash_point("folder synced");
        Ok(file)
    }

    /// [`put_in_place`](WorkFile::put_in_place) that hands back the file
    /// now at the target, its writer lock still held.
    pub fn put_in_place_locked(mut self) -> io::Result<LockedFile> {
        self.place()
    }

    /// Puts the file at the target's name and hands it back; the lock of
    /// the file it replaced goes when `self` is dropped.
    fn place(&mut self) -> io::Result<LockedFile> {
        let at = &self.lock.at;
        match self.named.take() {
            Some(name) => rename_into_place(at, &name)?,
            None => match link(&self.file, at, at.name()) {
                Ok(()) => crash_point("linked into place"),
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    // linkat never replaces: give the file a work name, then
                    // rename it over the target (atomic). Killed in between,
                    // the work name stays, holding the whole new file beside
                    // the old one; it is locked by this open file until
                    // then, and removed by the next writer of the target.
                    // (RENAME_EXCHANGE would not help: the exchanged name
                    // would be left holding the old file instead.)
                    let name = loop {
                        let name = work_name(at.path());
                        match link(&self.file, at, &name) {
                            Ok(()) => break name,
                            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                            Err(e) => return Err(e),
                        }
                    };
                    crash_point("linked under a work name");
                    rename_into_place(at, &name)?;
                }
                Err(e) => return Err(e),
            },
        }
        // A named work file's name is gone with the rename.
        Ok(std::mem::replace(&mut self.file, LockedFile(None)))
    }
}

/// Renames the work name `name` over the target of `at`; on failure the
/// work name is removed. Refused when what is at the target became a
/// device, a FIFO, a socket or a folder since it was looked at: those are
/// never replaced.
fn rename_into_place(at: &Target, name: &CStr) -> io::Result<()> {
    let now = at.stat(false).and_then(|st| match st.map(|st| rfs::FileType::from_raw_mode(st.st_mode)) {
        None | Some(rfs::FileType::RegularFile | rfs::FileType::Symlink) => Ok(()),
        Some(_) => at.plan(Writing::Whole).map(drop),
    });
    let renamed = now.and_then(|()| rfs::renameat(at.dir(), name, at.dir(), at.name()).map_err(io::Error::from));
    if let Err(e) = renamed {
        let _ = rfs::unlinkat(at.dir(), name, AtFlags::empty());
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
pub fn spill_file(target: &Path) -> io::Result<File> {
    let at = Target::open(target)?;
    // Nobody else can reach a spill file, so its lock does not matter.
    match unnamed(&at) {
        Ok(file) => return Ok(file.into_file()),
        Err(e) if !unsupported(&e) => return Err(e),
        Err(_) => {}
    }
    let (file, name) = named(&at)?;
    rfs::unlinkat(at.dir(), &name, AtFlags::empty())?;
    Ok(file.into_file())
}

impl Drop for WorkFile {
    fn drop(&mut self) {
        if let Some(name) = self.named.take() {
            let _ = rfs::unlinkat(self.lock.at.dir(), &name, AtFlags::empty());
        }
    }
}

/// An `O_TMPFILE` in the folder of `at`, locked.
fn unnamed(at: &Target) -> io::Result<LockedFile> {
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
    let file = File::from(rfs::openat(at.dir(), c".", flags, Mode::from_raw_mode(0o666))?);
    // Nothing else can reach an unnamed file yet: the lock only matters once
    // `persist` names it, and is taken now so that it is never missing.
    LockedFile::lock(file).map_err(|(_, e)| io::Error::from(e))
}

/// Errors of an `O_TMPFILE` open that mean "not supported here".
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL))
}

/// A new named work file in the folder of `at`, locked and known to still
/// be ours. Made exclusively (`O_EXCL`, which never follows a link, and
/// `O_NOFOLLOW`): a link planted under the name is never written through.
fn named(at: &Target) -> io::Result<(LockedFile, CString)> {
    let flags = OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC;
    loop {
        let name = work_name(at.path());
        let file = match rfs::openat(at.dir(), &name, flags, Mode::from_raw_mode(0o666)) {
            Ok(f) => File::from(f),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        };
        // Between the create and the lock another writer's cleanup may have
        // found the file unlocked and removed it (or still hold it to do
        // so): then start again under a new name.
        match LockedFile::lock(file) {
            Ok(file) if same_file(at, &name, &file) => return Ok((file, name)),
            _ => continue,
        }
    }
}

/// Gives the unnamed `file` the name `to` in the folder of `at` (`linkat`
/// never replaces, nor follows a link at `to`).
fn link(file: &File, at: &Target, to: &CStr) -> io::Result<()> {
    let from = format!("/proc/self/fd/{}", file.as_raw_fd());
    rfs::linkat(rfs::CWD, from.as_str(), at.dir(), to, AtFlags::SYMLINK_FOLLOW).map_err(io::Error::from)
}

/// Whether `name` in the folder of `at` (not followed if a link) is the
/// file open as `file`.
fn same_file(at: &Target, name: &CStr, file: &File) -> bool {
    match (at.stat_name(name, false), file.metadata()) {
        (Ok(Some(a)), Ok(b)) => a.st_dev == b.dev() && a.st_ino == b.ino(),
        _ => false,
    }
}

/// Characters of the token in a work file's name.
const TOKEN_LEN: usize = 12;

/// `.NAME.TOKEN.tmp` for `target`, with a token unique in this process and
/// unlikely in any other.
fn work_name(target: &Path) -> CString {
    let name = work_name_text(target);
    CString::new(name.into_bytes()).unwrap_or_else(|_| CString::from(c".tb5.tmp"))
}

/// [`work_name`] as text.
fn work_name_text(target: &Path) -> String {
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
    match Target::open(&dir.join(base_name(target))) {
        Ok(at) => remove_dead_at(&at),
        Err(_) => 0,
    }
}

/// [`remove_dead`] for the target `at`, in its folder: every name opened,
/// checked and removed relative to the folder, never through a link.
fn remove_dead_at(at: &Target) -> usize {
    let listing = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(entries) = rfs::openat(at.dir(), c".", listing, Mode::empty()).and_then(rfs::Dir::new) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !is_work_name(name.to_bytes(), at.path()) {
            continue;
        }
        // O_NOFOLLOW: never act through a link; O_NONBLOCK: a FIFO of that
        // name does not hang us; O_NOCTTY: a terminal is not taken.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let Ok(file) = rfs::openat(at.dir(), name, flags, Mode::empty()).map(File::from) else { continue };
        if !file.metadata().is_ok_and(|m| m.is_file()) || file.try_lock().is_err() {
            continue;
        }
        // Locked by us now, so no live writer has it; the name must still be
        // this file (a writer may have renamed it into place meanwhile).
        if same_file(at, name, &file) && rfs::unlinkat(at.dir(), name, AtFlags::empty()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    }

    /// A lock of a target, holding no file.
    fn unlocked(target: &Path) -> TargetLock {
        TargetLock { at: Target::open(target).unwrap(), file: None }
    }

    #[test]
    fn work_names_are_recognised_and_nothing_else() {
        let t = Path::new("d/out.tb5");
        let n = work_name(t);
        assert!(is_work_name(n.to_bytes(), t), "{n:?}");
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
        let lock = unlocked(&target);
        let (file, name) = named(&lock.at).unwrap();
        let w = WorkFile { file, named: Some(name.clone()), lock };
        assert!(w.is_named());
        assert_eq!(remove_dead(dir.path(), &target), 0, "a live writer's file stays");
        assert!(dir.path().join(std::ffi::OsStr::from_bytes(name.to_bytes())).exists());
        drop(w);
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn the_fallback_persists_by_rename() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.tb5");
        fs::write(&target, b"old").unwrap();
        let lock = unlocked(&target);
        let (mut file, name) = named(&lock.at).unwrap();
        file.write_all(b"new").unwrap();
        WorkFile { file, named: Some(name), lock }.persist().unwrap();
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
