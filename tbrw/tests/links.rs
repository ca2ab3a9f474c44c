//! What the TB5 writers (and so the C API and every import) do with a
//! target path that is not a plain file: a link planted in a shared sticky
//! folder is refused; any other link is replaced itself, never written
//! through, and a dangling one never makes a file where it points; a
//! device node, a FIFO or a socket is refused and left as it was
//! (docs/FORMAT.md, "Output paths"). Device nodes and FIFOs are made in a
//! temporary folder, never the real `/dev` ones.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::*;
use tbrw::*;

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<_> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).unwrap().file_type().is_symlink()
}

/// A new TB5 file written at `p`.
fn write_new(p: &Path) -> Result<()> {
    let mut w = Tb5Writer::create(p)?;
    write_globals(&mut w, &guide_content(2))?;
    w.close()
}

/// A folder like `/tmp`: writable by all, with the sticky bit.
fn sticky_folder(parent: &Path) -> PathBuf {
    let d = parent.join("shared");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// The special files a target may be, made in `dir`: a FIFO, a socket (its
/// listener kept open) and, where this process may make one, a character
/// device with `/dev/null`'s numbers.
fn special_files(dir: &Path) -> (Vec<(PathBuf, &'static str)>, std::os::unix::net::UnixListener) {
    let mut v = Vec::new();
    let dev = dir.join("null");
    let c = CString::new(dev.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; mknod makes a node in our temporary folder.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
        v.push((dev, "a character device"));
    } else {
        eprintln!("NOTE: no character device tried: mknod: {}", std::io::Error::last_os_error());
    }
    let fifo = dir.join("fifo");
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
    v.push((fifo, "a FIFO (named pipe)"));
    let sock = dir.join("socket");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    v.push((sock, "a socket"));
    (v, listener)
}

fn kind_of(p: &Path) -> &'static str {
    let t = std::fs::symlink_metadata(p).unwrap().file_type();
    match () {
        _ if t.is_char_device() => "a character device",
        _ if t.is_fifo() => "a FIFO (named pipe)",
        _ if t.is_socket() => "a socket",
        _ if t.is_file() => "a regular file",
        _ => "something else",
    }
}

/// A link another user planted in a shared sticky folder (`/tmp`): no
/// writer follows it nor replaces it, and the file it names is untouched.
/// (Before: a new file replaced the link, and an append wrote through it.)
#[test]
fn a_planted_link_is_refused_by_every_writer() {
    if !root() {
        eprintln!("SKIPPED: a link owned by another user needs root to make (lchown)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let shared = sticky_folder(dir.path());
    let victim = dir.path().join("victim.tb5");
    write_content(&victim, &guide_content(3)).unwrap();
    let before = std::fs::read(&victim).unwrap();
    let (link, dangling) = (shared.join("out.tb5"), shared.join("new.tb5"));
    symlink(&victim, &link).unwrap();
    symlink(dir.path().join("made-by-root.tb5"), &dangling).unwrap();
    for l in [&link, &dangling] {
        std::os::unix::fs::lchown(l, Some(65534), Some(65534)).unwrap();
    }
    for l in [&link, &dangling] {
        let e = write_new(l).unwrap_err();
        assert_eq!(e.code(), codes::TBRW_FILE_OPEN_FAILED);
        let text = e.to_string();
        assert!(text.contains("is a symbolic link owned by user 65534") && text.contains("sticky bit"), "{text}");
        assert!(tbrw::work_file::WorkFile::create(l).is_err());
        assert!(is_link(l));
    }
    let e = Tb5Writer::append(&link).unwrap_err().to_string();
    assert!(e.contains("fs.protected_symlinks"), "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), before);
    assert!(!dir.path().join("made-by-root.tb5").exists());
    assert_eq!(names(&shared), ["new.tb5", "out.tb5"]);
}

/// The user's own link at a new file's path: the link itself is replaced,
/// the file it names is left as it was (its lock, held by an appender, does
/// not refuse the new file: it is not what is replaced), and a dangling
/// link never makes a file where it points. An append follows the user's
/// link. (Before: the lock was taken through the link.)
#[test]
fn a_users_link_is_replaced_itself_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let real = d.join("real.tb5");
    write_content(&real, &guide_content(3)).unwrap();
    let before = std::fs::read(&real).unwrap();
    let link = d.join("link.tb5");
    symlink(&real, &link).unwrap();
    let holder = Tb5Writer::append(&real).unwrap();
    write_new(&link).unwrap_or_else(|e| panic!("a new file at a link: {e}"));
    drop(holder);
    assert!(!is_link(&link), "the link is replaced by the new file");
    Tb5File::open(&link).unwrap().verify().unwrap();
    assert_eq!(std::fs::read(&real).unwrap(), before, "the file the link named is untouched");

    let dangling = d.join("dangling.tb5");
    symlink(d.join("nowhere.tb5"), &dangling).unwrap();
    write_new(&dangling).unwrap();
    assert!(!is_link(&dangling) && !d.join("nowhere.tb5").exists());

    // A link planted at a work name is neither followed nor removed.
    let decoy = d.join(".link.tb5.aaaaaaaaaaaa.tmp");
    symlink(&real, &decoy).unwrap();
    write_new(&link).unwrap();
    assert!(is_link(&decoy));
    assert_eq!(std::fs::read(&real).unwrap(), before);

    // An append through the user's link changes the file it names.
    let link2 = d.join("link2.tb5");
    symlink(&real, &link2).unwrap();
    let mut w = Tb5Writer::append(&link2).unwrap();
    write_streams(&mut w, &guide_content(1).streams[1..]).unwrap();
    w.close().unwrap();
    assert!(is_link(&link2));
    assert_eq!(Tb5File::open(&real).unwrap().stream_count(), 3, "the append's stream is in the file the link names");
}

/// A device node, a FIFO or a socket at the path: a TB5 file (written whole,
/// its header rewritten in place) is refused with what was found, and the
/// node is left as it was: never replaced, renamed over or removed. An
/// append is refused too. (Before: each was replaced by a regular file.)
#[test]
fn device_nodes_fifos_and_sockets_are_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (nodes, _listener) = special_files(dir.path());
    for (p, kind) in &nodes {
        let e = write_new(p).unwrap_err();
        assert_eq!(e.code(), codes::TBRW_FILE_OPEN_FAILED, "{kind}");
        assert!(e.to_string().contains(&format!("is {kind}")), "{kind}: {e}");
        assert!(tbrw::work_file::WorkFile::create(p).is_err(), "{kind}");
        assert!(Tb5Writer::append(p).is_err(), "{kind}");
        assert_eq!(kind_of(p), *kind);
    }
    let mut expected: Vec<String> =
        nodes.iter().map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    expected.sort();
    assert_eq!(names(dir.path()), expected, "nothing left beside them");
}
