//! Outputs that are links, device nodes, FIFOs or sockets (docs/FORMAT.md
//! "Output paths", README "Outputs"): a link planted by another user in a
//! shared sticky folder is refused by every writer; the user's own link is
//! replaced itself, never written through, and a dangling one never makes
//! a file where it points (`record --format profile` followed both); a
//! character device or FIFO is written into by the streamed exports and
//! refused by the writers of whole files (TB5, the profile format), never
//! replaced; a socket is refused. Nodes are made in temporary folders,
//! never the real `/dev` ones.

use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn tbrw_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tbrw")).current_dir(cwd).args(args).output().unwrap()
}

fn tbrw(args: &[&str]) -> Output {
    tbrw_in(Path::new("."), args)
}

fn ok(args: &[&str]) -> String {
    let o = tbrw(args);
    assert!(o.status.success(), "tbrw {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command's standard error, after checking it failed with status 1.
fn fails(o: &Output, what: &str) -> String {
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{what}: {e}");
    e
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn shipped(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// `tbrw record` with `args`, `None` (after saying why) where ptrace is refused.
fn record(cwd: &Path, args: &[&str]) -> Option<Output> {
    let o = tbrw_in(cwd, &[&["record"][..], args].concat());
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("ptrace is refused") {
        eprintln!("SKIPPED: {}", err.trim());
        return None;
    }
    Some(o)
}

/// A folder like `/tmp`: writable by all, with the sticky bit.
fn sticky_folder(parent: &Path) -> PathBuf {
    let d = parent.join("shared");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

/// A link at `at` to `to`, owned by user 65534, as another user plants it.
fn plant(to: &Path, at: &Path) {
    symlink(to, at).unwrap();
    std::os::unix::fs::lchown(at, Some(65534), Some(65534)).unwrap();
}

/// A character device with `/dev/null`'s numbers at `p`, where this
/// process may make one (root); `false` after a note where it may not.
fn null_device(p: &Path) -> bool {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path in a temporary folder.
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
        return true;
    }
    eprintln!("NOTE: no character device tried: mknod: {}", std::io::Error::last_os_error());
    false
}

fn fifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path in a temporary folder.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
}

fn is_char_device(p: &Path) -> bool {
    std::fs::symlink_metadata(p).unwrap().file_type().is_char_device()
}

/// `record --format profile` at a link: a planted one (with `-f`) is
/// refused, the file it names untouched; the user's own link is replaced
/// itself; a dangling one needs `-f` and never makes a file where it
/// points; the default name `sampler.profile` is not followed either.
/// (Before: the first two overwrote the file the link named, the dangling
/// link made a root-owned file at its target.)
#[test]
fn record_never_follows_a_link_at_its_output() {
    let t = tempfile::tempdir().unwrap();
    let victim = t.path().join("victim");
    std::fs::write(&victim, b"precious\n").unwrap();
    let check_victim = || assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    if root() {
        let shared = sticky_folder(t.path());
        let planted = shared.join("out.profile");
        plant(&victim, &planted);
        let Some(o) = record(t.path(), &["--format", "profile", "-f", "-o", s(&planted), "--", "/bin/true"]) else {
            return;
        };
        let e = fails(&o, "a planted link");
        assert!(e.contains("is a symbolic link owned by user 65534") && e.contains("fs.protected_symlinks"), "{e}");
        assert!(is_link(&planted));
        check_victim();
    } else {
        eprintln!("NOTE: a link owned by another user needs root to make (lchown): that case not tried");
    }
    let own = t.path().join("own.profile");
    symlink(&victim, &own).unwrap();
    let Some(o) = record(t.path(), &["-f", "-o", s(&own), "--", "/bin/true"]) else { return };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!is_link(&own), "the link is replaced by the profile");
    check_victim();
    ok(&["import", "sampler", s(&own), "-o", s(&t.path().join("own.tb5"))]);

    let dangling = t.path().join("dangling.profile");
    let nowhere = t.path().join("made-through-the-link");
    symlink(&nowhere, &dangling).unwrap();
    let e = fails(&record(t.path(), &["-o", s(&dangling), "--", "/bin/true"]).unwrap(), "a dangling link");
    assert!(e.contains("exists (a symbolic link); give --force to replace the link itself"), "{e}");
    let o = record(t.path(), &["-f", "-o", s(&dangling), "--", "/bin/true"]).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!is_link(&dangling) && !nowhere.exists());

    // The default name, replaced with --force: the link, not its file.
    symlink(&victim, t.path().join("sampler.profile")).unwrap();
    let o = record(t.path(), &["--format", "profile", "-f", "--", "/bin/true"]).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!is_link(&t.path().join("sampler.profile")));
    check_victim();
}

/// Every writer refuses a link another user planted in a shared sticky
/// folder, with `-f` too, and leaves it and the file or folder it names as
/// they were. (Before: the file writers replaced the link, the folder
/// exports followed it.)
#[test]
fn every_writer_refuses_a_planted_link() {
    if !root() {
        eprintln!("SKIPPED: a link owned by another user needs root to make (lchown)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let shared = sticky_folder(t.path());
    // A TB5 file, so that `bind` gets as far as its writer lock.
    let victim = t.path().join("victim.tb5");
    std::fs::copy(shipped("examples/data/sample.tb5"), &victim).unwrap();
    let before = std::fs::read(&victim).unwrap();
    let folder = t.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    let tasks = t.path().join("tasks.tb5");
    ok(&["import", "mtmc", s(&shipped("cli/tests/data/mtmc/doc_example.log")), "-o", s(&tasks)]);
    let run = t.path().join("run.tb5");
    ok(&["import", "sampler", s(&shipped("examples/data/sampler/current.prof")), "-o", s(&run)]);
    let (sample, tasks, run) = (shipped("examples/data/sample.tb5"), s(&tasks), s(&run));
    let sample = s(&sample);
    let perf = shipped("tbrw-import/tests/data/true.perf.data");
    let (prof, log) = (shipped("examples/data/sampler/current.prof"), shipped("cli/tests/data/mtmc/doc_example.log"));
    let (file_link, folder_link) = (shared.join("out"), shared.join("dir"));
    plant(&victim, &file_link);
    plant(&folder, &folder_link);
    let (l, d) = (s(&file_link), s(&folder_link));
    let writers: Vec<Vec<&str>> = vec![
        vec!["import", "perf", s(&perf), "-o", l, "-f"],
        vec!["import", "sampler", s(&prof), "-o", l, "-f"],
        vec!["import", "mtmc", s(&log), "-o", l, "-f"],
        vec!["export", "pprof", sample, "-o", l, "-f"],
        vec!["export", "flamegraph", sample, "-o", l, "-f"],
        vec!["export", "firefox", sample, "-o", l, "-f"],
        vec!["export", "timeline", tasks, "-o", l, "-f"],
        vec!["export", "sampler", run, "-o", l, "-f"],
        vec!["bind", l],
        vec!["export", "vtune-csv", tasks, "-o", d, "--hostname", "h", "-f"],
        vec!["export", "parquet", sample, "-o", d, "-f"],
        vec!["export", "parquet", sample, "-o", d, "--append"],
    ];
    for args in &writers {
        let e = fails(&tbrw(args), &format!("{args:?}"));
        assert!(e.contains("owned by user 65534") && e.contains("fs.protected_symlinks"), "{args:?}: {e}");
        assert!(is_link(&file_link) && is_link(&folder_link), "{args:?}");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), before);
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
}

/// A character device at the output: the streamed exports write into it
/// (no `--force` needed: nothing is replaced), the writers of whole files
/// (imports, `record`, both formats) are refused saying why; the node stays
/// a device. (Before: `-f` replaced it with a regular file.)
#[test]
fn a_character_device_is_written_into_by_exports_and_never_replaced() {
    let t = tempfile::tempdir().unwrap();
    let dev = t.path().join("null");
    if !null_device(&dev) {
        return;
    }
    let sample = shipped("examples/data/sample.tb5");
    let run = t.path().join("run.tb5");
    ok(&["import", "sampler", s(&shipped("examples/data/sampler/current.prof")), "-o", s(&run)]);
    let d = s(&dev);
    for force in [&[][..], &["-f"]] {
        for args in [
            vec!["export", "pprof", s(&sample), "-o", d],
            vec!["export", "flamegraph", s(&sample), "-o", d],
            vec!["export", "flamegraph", "--folded", s(&sample), "-o", d],
            vec!["export", "firefox", s(&sample), "-o", d],
            vec!["export", "sampler", s(&run), "-o", d],
        ] {
            ok(&[&args[..], force].concat());
            assert!(is_char_device(&dev), "{args:?} {force:?}");
        }
    }
    let perf = shipped("tbrw-import/tests/data/true.perf.data");
    let e = fails(&tbrw(&["import", "perf", s(&perf), "-o", d, "-f"]), "import perf");
    assert!(e.contains("is a character device, which is never replaced"), "{e}");
    assert!(is_char_device(&dev));
    for format in ["tb5", "profile"] {
        let Some(o) = record(t.path(), &["--format", format, "-f", "-o", d, "--", "/bin/true"]) else { return };
        let e = fails(&o, format);
        assert!(e.contains("is a character device, which is never replaced"), "{format}: {e}");
        assert!(is_char_device(&dev));
    }
}

/// Reads the FIFO `p` while `run` runs, without ever blocking for good: the
/// FIFO is opened non-blocking before, and read until `run` is done and
/// nothing more comes.
fn read_fifo_while(p: &Path, run: impl FnOnce() -> Output) -> (Output, Vec<u8>) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(p).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = [0u8; 65536];
            loop {
                match f.read(&mut buf) {
                    Ok(0) if done.load(std::sync::atomic::Ordering::SeqCst) => return got,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => panic!("reading the FIFO: {e}"),
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let o = run();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    (o, reader.join().unwrap())
}

/// A FIFO at the output, or named by the user's link there: a streamed
/// export goes into it, as with the shell's `>`, and it stays a FIFO; a
/// TB5 output is refused. A socket is refused by every writer. (Before:
/// both were replaced by regular files.)
#[test]
fn a_fifo_is_written_into_and_a_socket_refused_neither_replaced() {
    let t = tempfile::tempdir().unwrap();
    let sample = shipped("examples/data/sample.tb5");
    let want = ok(&["export", "flamegraph", "--folded", s(&sample), "-o", "-"]);
    assert!(!want.is_empty());
    let pipe = t.path().join("fifo");
    fifo(&pipe);
    let link = t.path().join("to-fifo");
    symlink(&pipe, &link).unwrap();
    for out in [&pipe, &link] {
        let (o, got) =
            read_fifo_while(&pipe, || tbrw(&["export", "flamegraph", "--folded", s(&sample), "-o", s(out), "-f"]));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(String::from_utf8_lossy(&got), want);
        assert!(std::fs::symlink_metadata(&pipe).unwrap().file_type().is_fifo());
    }
    assert!(is_link(&link));
    let mtmc = shipped("cli/tests/data/mtmc/doc_example.log");
    let e = fails(&tbrw(&["import", "mtmc", s(&mtmc), "-o", s(&pipe), "-f"]), "import into a FIFO");
    assert!(e.contains("is a FIFO (named pipe), which is never replaced"), "{e}");

    let sock = t.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    for args in [
        vec!["export", "pprof", s(&sample), "-o", s(&sock), "-f"],
        vec!["import", "mtmc", s(&mtmc), "-o", s(&sock), "-f"],
    ] {
        let e = fails(&tbrw(&args), &format!("{args:?}"));
        assert!(e.contains("is a socket: no output is written into it"), "{args:?}: {e}");
        assert!(std::fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
    }
}

/// `export parquet --append` puts each run in its host's folder of the
/// dataset: never through a link found there in its place, which would
/// take the run out of the dataset. (Before: followed.)
#[test]
fn a_dataset_append_never_follows_a_link_inside_the_dataset() {
    let t = tempfile::tempdir().unwrap();
    let sample = shipped("examples/data/sample.tb5");
    let ds = t.path().join("ds");
    ok(&["export", "parquet", s(&sample), "-o", s(&ds), "--hostname", "h"]);
    let elsewhere = t.path().join("elsewhere");
    std::fs::rename(ds.join("host=h"), &elsewhere).unwrap();
    symlink(&elsewhere, ds.join("host=h")).unwrap();
    let runs_before = std::fs::read_dir(&elsewhere).unwrap().count();
    let e = fails(&tbrw(&["export", "parquet", s(&sample), "-o", s(&ds), "--append", "--hostname", "h"]), "append");
    assert!(e.contains("host=h in the dataset is a symbolic link: no run is put through it"), "{e}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), runs_before);
}
