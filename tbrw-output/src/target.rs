//! The target path of an output as a writer meets it before it writes: its
//! folder opened once, what is at its name (looked at, never followed), and
//! the rules for what is found there (docs/FORMAT.md, "Output paths"):
//!
//! * nothing: a new file;
//! * a regular file: replaced whole (the command line asks for `--force`);
//! * a symbolic link: refused when planted (in a folder others can write to
//!   that has the sticky bit, owned by neither this user nor the folder's
//!   owner: the kernel's `fs.protected_symlinks` rule); any other link is
//!   itself replaced by the new file, never the file it names, and a
//!   dangling one never makes a file where it points. A stream is written
//!   into the character device or FIFO a link names (`-o /dev/stdout`);
//! * a character device or a FIFO: a stream (an output written front to
//!   back) is written into it, as `perf record -o /dev/null` writes into
//!   the device; an output written whole (a TB5 file, a sampler profile) is
//!   refused. Neither is ever replaced, renamed over or removed. A FIFO
//!   planted as a link is (the kernel's `fs.protected_fifos` rule) is
//!   refused;
//! * a block device, a socket: refused;
//! * a folder: `EISDIR`.
//!
//! Every later step of a writer (the lock, the work file, its link and
//! rename, the folder's sync) is made relative to the folder's descriptor
//! with the name, never through the path again.
//!
//! Knows nothing of the TB5 layout and imports nothing of this crate.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};

/// What is at a name, the name itself (a link is a link).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Folder,
    /// A symbolic link.
    Link,
    /// A character device (`/dev/null`, a terminal).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// A FIFO (named pipe).
    Fifo,
    /// A socket.
    Socket,
    /// Anything else the system may have.
    Other,
}

impl Kind {
    fn of(st: &rfs::Stat) -> Kind {
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Folder,
            FileType::Symlink => Kind::Link,
            FileType::CharacterDevice => Kind::CharDevice,
            FileType::BlockDevice => Kind::BlockDevice,
            FileType::Fifo => Kind::Fifo,
            FileType::Socket => Kind::Socket,
            _ => Kind::Other,
        }
    }

    /// The kind with its article, as messages say it.
    pub fn described(self) -> &'static str {
        match self {
            Kind::File => "a regular file",
            Kind::Folder => "a folder",
            Kind::Link => "a symbolic link",
            Kind::CharDevice => "a character device",
            Kind::BlockDevice => "a block device",
            Kind::Fifo => "a FIFO (named pipe)",
            Kind::Socket => "a socket",
            Kind::Other => "a special file",
        }
    }
}

/// The folder a file at `path` lives in (`.` for a bare name).
pub fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// How an output is written, which decides what it may go into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writing {
    /// Built in a work file and put at the target when complete: a TB5 file
    /// (its header is rewritten in place), a sampler profile, any output
    /// that appears whole. Needs a regular file.
    Whole,
    /// Written front to back and never read back (an export): written into
    /// a character device or FIFO found at the target; otherwise as `Whole`.
    Stream,
}

/// What a writer does at its target path ([`plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing is there: the output is a new file.
    New,
    /// A regular file is there, or a symbolic link (`link`): the new file
    /// replaces it; a link is itself replaced, never the file it names.
    Replace {
        /// Whether what is replaced is a symbolic link.
        link: bool,
    },
    /// A character device or FIFO, at the name or named by a link there:
    /// the stream is written into it; it is never replaced.
    Into,
}

/// What `path` holds for a writer writing as `writing` says (see the module
/// doc for the rules), before any work. Refusals are errors whose message
/// says what was found and why (a planted link or FIFO, a device or FIFO
/// for an output written whole, a block device or a socket); a folder is
/// `EISDIR`; a folder of the path that is missing or not a folder is the
/// OS error (`ENOENT`, `ENOTDIR`).
pub fn plan(path: &Path, writing: Writing) -> io::Result<Plan> {
    Target::open(path)?.plan(writing)
}

/// Refuses a symbolic link or FIFO at `path` that was planted (see the
/// module doc); anything else passes. For the writers that follow the link
/// the user names: an append to a TB5 file, a folder output.
pub(crate) fn refuse_planted(path: &Path) -> io::Result<()> {
    let target = Target::open(path)?;
    match target.stat(false)? {
        Some(st) => target.refuse_if_planted(&st),
        None => Ok(()),
    }
}

/// Opens the character device or FIFO at `path` (or the one a symbolic
/// link there names) for writing a stream into it: what [`plan`] calls
/// [`Plan::Into`]. A FIFO's open waits for a reader, as the shell's `>`
/// does. Refused when what is there is no longer such a file (replaced
/// since it was looked at).
pub fn open_into(path: &Path) -> io::Result<File> {
    let target = Target::open(path)?;
    let Some(st) = target.stat(false)? else { return Err(io::Error::from_raw_os_error(libc::ENOENT)) };
    target.refuse_if_planted(&st)?;
    let mut flags = OFlags::WRONLY | OFlags::NOCTTY | OFlags::CLOEXEC;
    if Kind::of(&st) != Kind::Link {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = rfs::openat(&target.dir, target.name(), flags, Mode::empty())?;
    match Kind::of(&rfs::fstat(&fd)?) {
        Kind::CharDevice | Kind::Fifo => Ok(File::from(fd)),
        kind => Err(io::Error::other(format!(
            "is {} now, no longer the device or FIFO it was when the command started: nothing written",
            kind.described()
        ))),
    }
}

/// An output's folder, opened once, and the output's name in it.
#[derive(Debug)]
pub(crate) struct Target {
    /// The folder (`O_PATH`): the only way to the name from here on.
    dir: OwnedFd,
    /// The last component of the path.
    name: CString,
    /// The path as given, for messages.
    path: PathBuf,
}

impl Target {
    /// Opens the folder of `path` (the links in the folder's own path are
    /// followed: that path is the user's) and keeps the name. An empty path
    /// is `ENOENT`; one that names no file (`/`, `a/..`, a trailing `/`) is
    /// `EISDIR`.
    pub(crate) fn open(path: &Path) -> io::Result<Target> {
        let bytes = path.as_os_str().as_bytes();
        if bytes.is_empty() {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let name = match path.file_name() {
            Some(n) if !bytes.ends_with(b"/") => n,
            _ => return Err(io::Error::from_raw_os_error(libc::EISDIR)),
        };
        let name = CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let folder = folder_of(path);
        let dir = rfs::open(&folder, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Target { dir, name, path: path.to_owned() })
    }

    /// The path as given.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The name in the folder.
    pub(crate) fn name(&self) -> &CStr {
        &self.name
    }

    /// The folder.
    pub(crate) fn dir(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// What is at `name` in the folder (`follow`: through a link); `None`
    /// when nothing is.
    pub(crate) fn stat_name(&self, name: &CStr, follow: bool) -> io::Result<Option<rfs::Stat>> {
        let flags = if follow { AtFlags::empty() } else { AtFlags::SYMLINK_NOFOLLOW };
        match rfs::statat(&self.dir, name, flags) {
            Ok(st) => Ok(Some(st)),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// What is at the target's name (`follow`: through a link).
    pub(crate) fn stat(&self, follow: bool) -> io::Result<Option<rfs::Stat>> {
        self.stat_name(&self.name, follow)
    }

    /// Whether the effective user may create and remove names in the folder.
    pub(crate) fn check_writable(&self) -> io::Result<()> {
        // AT_EACCESS: the effective ids decide, as for the create that follows.
        rfs::accessat(&self.dir, c".", rfs::Access::WRITE_OK | rfs::Access::EXEC_OK, AtFlags::EACCESS)
            .map_err(io::Error::from)
    }

    /// `fsync`s the folder, so that a new name in it is durable.
    pub(crate) fn sync_folder(&self) -> io::Result<()> {
        let fd = rfs::openat(&self.dir, c".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        File::from(fd).sync_all()
    }

    /// The refusal of a link or FIFO `st` at the name when it was planted:
    /// in a folder that others can write to and that has the sticky bit
    /// (`/tmp`), owned by neither this user nor the folder's owner. The
    /// kernel refuses to follow such a link (`fs.protected_symlinks`) or to
    /// open such a FIFO for creation (`fs.protected_fifos`) where those are
    /// on; this rule holds whatever they are set to.
    pub(crate) fn refuse_if_planted(&self, st: &rfs::Stat) -> io::Result<()> {
        let kind = Kind::of(st);
        if !matches!(kind, Kind::Link | Kind::Fifo) {
            return Ok(());
        }
        let folder = rfs::fstat(&self.dir)?;
        let shared = folder.st_mode & (libc::S_ISVTX | libc::S_IWOTH) == libc::S_ISVTX | libc::S_IWOTH;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if !shared || st.st_uid == me || st.st_uid == folder.st_uid {
            return Ok(());
        }
        let (done, rule) = match kind {
            Kind::Link => ("neither followed nor replaced", "fs.protected_symlinks"),
            _ => ("not written into", "fs.protected_fifos"),
        };
        let folder = folder_of(&self.path);
        let folder = if folder == Path::new(".") {
            "the current folder".to_owned()
        } else {
            format!("folder {}", folder.display())
        };
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "is {} owned by user {}, in {folder}, which others can write to and which has the sticky bit: \
                 one planted there is {done} (the kernel's {rule} rule); remove it, or give another name",
                kind.described(),
                st.st_uid,
            ),
        ))
    }

    /// What a writer writing as `writing` does at the name (see [`plan`]).
    pub(crate) fn plan(&self, writing: Writing) -> io::Result<Plan> {
        let Some(st) = self.stat(false)? else { return Ok(Plan::New) };
        self.refuse_if_planted(&st)?;
        let kind = Kind::of(&st);
        match kind {
            Kind::File => Ok(Plan::Replace { link: false }),
            Kind::Folder => Err(io::Error::from_raw_os_error(libc::EISDIR)),
            Kind::Link => {
                // A link that leads nowhere (dangling, a loop) names nothing.
                let named = self.stat(true).ok().flatten().map(|st| Kind::of(&st));
                match (named, writing) {
                    // A link to a folder: the folder is what the user means.
                    (Some(Kind::Folder), _) => Err(io::Error::from_raw_os_error(libc::EISDIR)),
                    (Some(Kind::CharDevice | Kind::Fifo), Writing::Stream) => Ok(Plan::Into),
                    _ => Ok(Plan::Replace { link: true }),
                }
            }
            Kind::CharDevice | Kind::Fifo if writing == Writing::Stream => Ok(Plan::Into),
            Kind::CharDevice | Kind::Fifo => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "is {}, which is never replaced: a file written whole (a TB5 file, a sampler profile) is put \
                     in place by a rename; give the name of a regular file",
                    kind.described(),
                ),
            )),
            Kind::BlockDevice | Kind::Socket | Kind::Other => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "is {}: no output is written into it or replaces it: give the name of a regular file",
                    kind.described()
                ),
            )),
        }
    }

    /// Opens the regular file at the name, for reading or also writing,
    /// through a link only when `follow` (an append to the file a user's
    /// link names). Never opens anything else: `O_NONBLOCK` so that a FIFO
    /// put there meanwhile does not hang the open, `O_NOCTTY` so that a
    /// terminal is never taken, then refused unless regular.
    pub(crate) fn open_regular(&self, write: bool, follow: bool) -> io::Result<File> {
        let not_regular = |kind: Kind| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("is {}, not a regular file: a TB5 file is changed in place", kind.described()),
            )
        };
        // Looked at first, so that a device is not even opened (an open may
        // act on one: a tape rewinds); then checked again on what was opened.
        match self.stat(follow)?.map(|st| Kind::of(&st)) {
            None => return Err(io::Error::from_raw_os_error(libc::ENOENT)),
            Some(Kind::File | Kind::Link) => {}
            Some(kind) => return Err(not_regular(kind)),
        }
        let mut flags = OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        flags |= if write { OFlags::RDWR } else { OFlags::RDONLY };
        if !follow {
            flags |= OFlags::NOFOLLOW;
        }
        let fd = rfs::openat(&self.dir, &self.name, flags, Mode::empty())?;
        match Kind::of(&rfs::fstat(&fd)?) {
            Kind::File => Ok(File::from(fd)),
            kind => Err(not_regular(kind)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn what_is_there_decides_the_plan() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("file"), b"x").unwrap();
        symlink("file", d.join("to-file")).unwrap();
        symlink("nowhere", d.join("dangling")).unwrap();
        symlink(".", d.join("to-folder")).unwrap();
        rustix::fs::mknodat(rfs::CWD, d.join("fifo"), FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        symlink("fifo", d.join("to-fifo")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(d.join("socket")).unwrap();
        for w in [Writing::Whole, Writing::Stream] {
            assert_eq!(plan(&d.join("new"), w).unwrap(), Plan::New);
            assert_eq!(plan(&d.join("file"), w).unwrap(), Plan::Replace { link: false });
            assert_eq!(plan(&d.join("to-file"), w).unwrap(), Plan::Replace { link: true });
            assert_eq!(plan(&d.join("dangling"), w).unwrap(), Plan::Replace { link: true });
            for folder in ["to-folder", "."] {
                assert_eq!(plan(&d.join(folder), w).unwrap_err().raw_os_error(), Some(libc::EISDIR), "{folder}");
            }
            let e = plan(&d.join("socket"), w).unwrap_err().to_string();
            assert!(e.starts_with("is a socket: no output is written into it"), "{e}");
        }
        assert_eq!(plan(&d.join("fifo"), Writing::Stream).unwrap(), Plan::Into);
        assert_eq!(plan(&d.join("to-fifo"), Writing::Stream).unwrap(), Plan::Into);
        let e = plan(&d.join("fifo"), Writing::Whole).unwrap_err().to_string();
        assert!(e.starts_with("is a FIFO (named pipe), which is never replaced: a file written whole"), "{e}");
        assert_eq!(plan(&d.join("to-fifo"), Writing::Whole).unwrap(), Plan::Replace { link: true });
        assert_eq!(plan(Path::new(""), Writing::Whole).unwrap_err().raw_os_error(), Some(libc::ENOENT));
        let slash = format!("{}/new/", d.display());
        assert_eq!(plan(Path::new(&slash), Writing::Whole).unwrap_err().raw_os_error(), Some(libc::EISDIR));
        let under_file = d.join("file/x");
        assert_eq!(plan(&under_file, Writing::Whole).unwrap_err().raw_os_error(), Some(libc::ENOTDIR));
    }

    #[test]
    fn a_link_or_fifo_of_another_user_in_a_shared_sticky_folder_is_planted() {
        if !root() {
            eprintln!("SKIPPED: giving a link to another user needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let link = shared.join("out");
        symlink("victim", &link).unwrap();
        let fifo = shared.join("fifo");
        rustix::fs::mknodat(rfs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o666), 0).unwrap();
        // This user's own, or the folder owner's: not planted.
        assert_eq!(plan(&link, Writing::Whole).unwrap(), Plan::Replace { link: true });
        refuse_planted(&fifo).unwrap();
        for p in [&link, &fifo] {
            std::os::unix::fs::lchown(p, Some(65534), Some(65534)).unwrap();
        }
        let e = plan(&link, Writing::Whole).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(e.to_string().starts_with("is a symbolic link owned by user 65534, in "), "{e}");
        assert!(e.to_string().contains("fs.protected_symlinks"), "{e}");
        assert!(refuse_planted(&link).is_err());
        assert!(plan(&fifo, Writing::Stream).unwrap_err().to_string().contains("fs.protected_fifos"));
        assert!(open_into(&fifo).is_err());
        // Without the sticky bit, or owned by the folder's owner: not planted.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(plan(&link, Writing::Whole).unwrap(), Plan::Replace { link: true });
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        std::os::unix::fs::chown(&shared, Some(65534), None).unwrap();
        assert_eq!(plan(&link, Writing::Whole).unwrap(), Plan::Replace { link: true });
    }

    #[test]
    fn a_stream_goes_into_a_fifo_never_over_it() {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(rfs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut s = String::new();
                File::open(fifo).unwrap().read_to_string(&mut s).unwrap();
                s
            })
        };
        open_into(&fifo).unwrap().write_all(b"main;work 3\n").unwrap();
        assert_eq!(reader.join().unwrap(), "main;work 3\n");
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&std::fs::symlink_metadata(&fifo).unwrap().file_type()));
        // A regular file is not a stream's to write into.
        std::fs::write(dir.path().join("f"), b"x").unwrap();
        assert!(open_into(&dir.path().join("f")).is_err());
    }
}
