//! Work files: the file a new output is built in before it takes its name,
//! and the checks a target path gets before any work starts.
//!
//! A work file must not outlive the process writing it. Where the
//! filesystem allows it, it has no name at all (`O_TMPFILE`): whatever
//! happens to the process, the kernel frees it. On commit it gets its name
//! with `linkat`. Where `O_TMPFILE` (or `/proc/self/fd`, which an
//! unprivileged `linkat` of an unnamed file goes through) is missing, it is
//! a named `.NAME.TOKEN.tmp` beside the target. Every work file, named or
//! not, is `flock`ed for as long as its writer has it open, so a named one
//! whose lock is free belongs to a dead writer: the next work file for the
//! same target removes those.
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

/// A file being built for `target` (see the module doc). Dropping it
/// without [`persist`](WorkFile::persist) leaves nothing behind.
#[derive(Debug)]
pub struct WorkFile {
    file: File,
    target: PathBuf,
    /// The name of a fallback work file; `None` while the file is unnamed.
    named: Option<PathBuf>,
}

impl WorkFile {
    /// Starts a work file for `target` (checked with [`check_target`]),
    /// with the usual permissions of a new file (0666 less the umask).
    /// Removes the dead writers' work files of the same target first.
    pub fn create(target: &Path) -> io::Result<WorkFile> {
        check_target(target)?;
        let dir = folder_of(target);
        remove_dead(&dir, target);
        if Path::new("/proc/self/fd").is_dir() {
            match unnamed(&dir) {
                Ok(file) => return Ok(WorkFile { file, target: target.to_owned(), named: None }),
                Err(e) if !unsupported(&e) => return Err(e),
                Err(_) => {}
            }
        }
        let (file, name) = named(&dir, target)?;
        Ok(WorkFile { file, target: target.to_owned(), named: Some(name) })
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
    pub fn persist(self) -> io::Result<()> {
        let target = self.target.clone();
        self.put_in_place()?;
        File::open(folder_of(&target))?.sync_all()
    }

    /// Puts the file at its target path, replacing what was there
    /// atomically, without waiting for the disk (see
    /// [`crate::write::Durability::Ordered`]).
    pub fn put_in_place(mut self) -> io::Result<()> {
        match self.named.take() {
            Some(name) => {
                if let Err(e) = fs::rename(&name, &self.target) {
                    let _ = fs::remove_file(&name);
                    return Err(e);
                }
            }
            None => match link(&self.file, &self.target) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    // linkat never replaces: give the file a work name, then
                    // rename it over the target (atomic). Killed in between,
                    // the work name stays; it is still locked by this open
                    // file until then, and removed by the next writer after.
                    let dir = folder_of(&self.target);
                    let name = loop {
                        let name = dir.join(work_name(&self.target));
                        match link(&self.file, &name) {
                            Ok(()) => break name,
                            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                            Err(e) => return Err(e),
                        }
                    };
                    if let Err(e) = fs::rename(&name, &self.target) {
                        let _ = fs::remove_file(&name);
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            },
        }
        Ok(())
    }
}

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
fn unnamed(dir: &Path) -> io::Result<File> {
    let file = OpenOptions::new().read(true).write(true).custom_flags(libc::O_TMPFILE).mode(0o666).open(dir)?;
    // Nothing else can reach an unnamed file yet: the lock only matters once
    // `persist` names it, and is taken now so that it is never missing.
    file.try_lock().map_err(io::Error::from)?;
    Ok(file)
}

/// Errors of an `O_TMPFILE` open that mean "not supported here".
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL))
}

/// A new named work file for `target`, locked and known to still be ours.
fn named(dir: &Path, target: &Path) -> io::Result<(File, PathBuf)> {
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
        if file.try_lock().is_err() || !same_file(&name, &file) {
            continue;
        }
        return Ok((file, name));
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
        let w = WorkFile { file, target: target.clone(), named: Some(name.clone()) };
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
        WorkFile { file, target: target.clone(), named: Some(name) }.persist().unwrap();
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
