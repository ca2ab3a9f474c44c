//! Nothing half-written is ever visible at the target path.

mod common;

use common::*;
use tbrw::*;

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<_> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn new_file_appears_only_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("new.tb5");
    let mut w = Tb5Writer::create(&p).unwrap();
    write_globals(&mut w, &guide_content(1)).unwrap();
    assert!(!p.exists());
    w.close().unwrap();
    assert!(p.exists());
    assert_eq!(names(dir.path()), ["new.tb5"], "no temporary files left");
}

#[test]
fn drop_and_abort_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gone.tb5");
    {
        let mut w = Tb5Writer::create(&p).unwrap();
        let mut s =
            w.stream(0).unwrap().info(&StreamInfo::default()).unwrap().data_descriptor(&legacy_descriptor()).unwrap();
        let mut d = s.data().unwrap();
        d.add(&vec![0u8; 40 * 100_000]).unwrap(); // large enough to reach the disk
        d.done().unwrap();
        s.finish().unwrap();
        // dropped without close
    }
    assert!(names(dir.path()).is_empty());
    let w = Tb5Writer::create(&p).unwrap();
    w.abort();
    assert!(names(dir.path()).is_empty());
}

#[test]
fn replacing_a_file_keeps_the_old_one_until_close() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.tb5");
    write_content(&p, &guide_content(5)).unwrap();
    let old = std::fs::read(&p).unwrap();
    let mut w = Tb5Writer::create(&p).unwrap();
    w.write_version_info(&VersionInfo::default()).unwrap();
    w.abort();
    assert_eq!(std::fs::read(&p).unwrap(), old);
    let mut w = Tb5Writer::create(&p).unwrap();
    w.write_version_info(&VersionInfo::default()).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), old);
    w.close().unwrap();
    assert!(Tb5File::open(&p).unwrap().modules().unwrap().is_none());
}

#[test]
fn aborted_or_dropped_append_leaves_the_file_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.tb5");
    write_content(&p, &guide_content(50)).unwrap();
    let old = std::fs::read(&p).unwrap();
    for abort in [true, false] {
        let mut w = Tb5Writer::append(&p).unwrap();
        let mut extra = guide_content(1).streams[1..].to_vec();
        extra[0].data = Some(extra[0].data.as_ref().unwrap().repeat(2000)); // a few MiB: reaches the disk
        write_streams(&mut w, &extra).unwrap();
        if abort {
            w.abort();
        } else {
            drop(w);
        }
        assert_eq!(std::fs::read(&p).unwrap(), old);
    }
    assert_eq!(names(dir.path()), ["a.tb5"]);
}

#[test]
fn many_appends_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.tb5");
    let c = guide_content(10);
    write_content(&p, &c).unwrap();
    let mut want = c.clone();
    for g in 2..6u64 {
        let extra = guide_content(g as u32 * 10).streams[1..].to_vec();
        let mut w = Tb5Writer::append(&p).unwrap();
        write_streams(&mut w, &extra).unwrap();
        w.close().unwrap();
        want.streams.extend(extra);
        let f = Tb5File::open(&p).unwrap();
        assert_eq!(f.stream_count() as u64, g + 1);
        f.verify().unwrap();
        assert_eq!(read_content(&f).unwrap(), expected(&want));
    }
}

#[test]
fn a_discarded_data_section_leaves_no_bytes_behind() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.tb5");
    let mut w = Tb5Writer::create(&p).unwrap();
    {
        let mut s =
            w.stream(0).unwrap().info(&StreamInfo::default()).unwrap().data_descriptor(&legacy_descriptor()).unwrap();
        let mut d = s.data().unwrap();
        d.add(&vec![7u8; 40 * 200_000]).unwrap(); // 8 MB straight to the file
                                                  // The stream and its data are dropped.
    }
    w.write_version_info(&VersionInfo::default()).unwrap();
    w.close().unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    assert!(len < 4096, "file is {len} bytes");
    let f = Tb5File::open(&p).unwrap();
    assert_eq!(f.stream_count(), 0);
    assert!(f.version_info().unwrap().is_some());
}

#[test]
fn sections_finished_while_a_data_section_streams_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("q.tb5");
    let mut e = Engine::open(&p, access::CREATE_ALWAYS).unwrap();
    e.writing_stream(0).unwrap();
    e.writing_stream_section(0, StreamSection::DataDescription).unwrap();
    e.add_data_descriptor_entry(0, &DescEntry { desc_type: desc_type::IP, data_size: 8, ..Default::default() })
        .unwrap();
    e.done_stream_section(0, StreamSection::DataDescription).unwrap();
    e.writing_stream_section(0, StreamSection::Data).unwrap(); // owns the tail
    e.add_data(0, &[1u8; 8 * 1000]).unwrap();
    // Finished while the data streams: they wait, then land.
    e.writing_section(GlobalSection::UserDefinedGlobal).unwrap();
    e.set_user_defined_global(&vec![9u8; 3 << 20]).unwrap(); // spills past 1 MiB
    e.done_section(GlobalSection::UserDefinedGlobal).unwrap();
    e.writing_stream_section(0, StreamSection::StreamInfo).unwrap();
    e.set_stream_info(0, &StreamInfo::default()).unwrap();
    e.done_stream_section(0, StreamSection::StreamInfo).unwrap();
    // The data section is discarded: the waiting sections must still land.
    e.discard_stream_section(0, StreamSection::Data);
    e.writing_stream_section(0, StreamSection::Data).unwrap();
    e.add_data(0, &[2u8; 16]).unwrap();
    e.done_stream_section(0, StreamSection::Data).unwrap();
    e.done_stream(0).unwrap();
    e.close().unwrap();
    let f = Tb5File::open(&p).unwrap();
    assert_eq!(f.user_defined_global().unwrap().unwrap(), &vec![9u8; 3 << 20][..]);
    assert_eq!(f.stream(0).unwrap().data().unwrap().unwrap().as_bytes(), &[2u8; 16]);
}

#[test]
fn a_new_file_gets_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("perm.tb5");
    let w = Tb5Writer::create(&p).unwrap();
    w.close().unwrap();
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    // 0666 less the umask: readable by others unless the umask says otherwise, never 0600 by accident.
    let umask = {
        let probe = dir.path().join("probe");
        std::fs::write(&probe, b"").unwrap();
        0o666 & !(std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777)
    };
    assert_eq!(mode, 0o666 & !umask, "mode {mode:o}");
}

fn open_code(p: &std::path::Path, mode: u32) -> u32 {
    Engine::open(p, mode).unwrap_err().code()
}

#[test]
fn bad_paths_are_refused_at_open_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let empty = std::path::Path::new("");
    // Reading a directory is refused by TBRW_open (tbrw-sys); here the writers.
    for mode in [access::CREATE_ALWAYS, access::WRITE, access::READ | access::WRITE] {
        assert_eq!(open_code(empty, mode), codes::TBRW_FILE_OPEN_FAILED, "empty, mode {mode}");
        assert_eq!(open_code(dir.path(), mode), codes::TBRW_FILE_OPEN_FAILED, "directory, mode {mode}");
        assert_eq!(open_code(&dir.path().join("no/such.tb5"), mode), codes::TBRW_FILE_OPEN_FAILED, "mode {mode}");
    }
    match Engine::open(dir.path(), access::CREATE_ALWAYS).unwrap_err() {
        Error::FileOpen { source, .. } => assert_eq!(source.raw_os_error(), Some(21), "EISDIR"),
        e => panic!("{e}"),
    }
    assert!(names(dir.path()).is_empty(), "nothing created");
}

#[test]
fn create_always_and_append_on_one_path_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("shared.tb5");
    write_content(&p, &guide_content(5)).unwrap();
    let old = std::fs::read(&p).unwrap();

    // An append is running: a new file may not replace it (its stream would be lost).
    let mut appender = Tb5Writer::append(&p).unwrap();
    write_streams(&mut appender, &guide_content(1).streams[1..]).unwrap();
    let e = Tb5Writer::create(&p).unwrap_err();
    assert_eq!(e.code(), codes::TBRW_FILE_OPEN_FAILED);
    assert!(e.to_string().contains("another writer"), "{e}");
    assert!(Tb5Writer::append(&p).is_err(), "nor may a second append start");
    appender.close().unwrap();
    assert_eq!(Tb5File::open(&p).unwrap().stream_count(), 3, "the append landed");

    // A new file is being built: an append to the file it replaces is refused.
    let creator = Tb5Writer::create(&p).unwrap();
    let e = Tb5Writer::append(&p).unwrap_err();
    assert!(e.to_string().contains("another writer"), "{e}");
    assert!(Tb5Writer::create(&p).is_err(), "nor may a second new file");
    creator.abort();
    assert_ne!(std::fs::read(&p).unwrap(), old, "the file as the append left it");
    Tb5Writer::append(&p).unwrap().abort(); // free again
    assert_eq!(names(dir.path()), ["shared.tb5"]);
}

/// In Intel's layout nothing says where a file's committed bytes end
/// (Intel's writer puts strings after its last section): the bytes a
/// killed append left past the end stay, named by nothing, and the next
/// append writes after them.
#[test]
fn a_killed_appends_tail_is_left_named_by_nothing() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.tb5");
    let c = guide_content(5);
    write_content(&p, &c).unwrap();
    let committed = std::fs::read(&p).unwrap();
    std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(&vec![0xAB; 1 << 20]).unwrap();
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    assert_eq!(read_content(&f).unwrap(), expected(&c));
    Tb5Writer::append(&p).unwrap().abort();
    let now = std::fs::read(&p).unwrap();
    assert_eq!((&now[..committed.len()], now.len()), (&committed[..], committed.len() + (1 << 20)));
    let mut w = Tb5Writer::append(&p).unwrap();
    let extra = guide_content(3).streams[1..].to_vec();
    write_streams(&mut w, &extra).unwrap();
    w.close().unwrap();
    let mut want = c.clone();
    want.streams.extend(extra);
    assert_eq!(read_content(&Tb5File::open(&p).unwrap()).unwrap(), expected(&want));
}

#[test]
fn a_killed_appends_tail_is_cut_on_the_next_open_for_writing_in_the_tb5_layout() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.tb5");
    write_content_as(&p, &guide_content(5), WriteLayout::Tb5).unwrap();
    let committed = std::fs::read(&p).unwrap();
    // What an append killed before its commit leaves: bytes past the committed end.
    std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(&vec![0xAB; 1 << 20]).unwrap();
    Tb5File::open(&p).unwrap().verify().unwrap();
    // A reader leaves the file alone; the next writer cuts it back.
    assert_eq!(std::fs::metadata(&p).unwrap().len(), committed.len() as u64 + (1 << 20));
    Tb5Writer::append(&p).unwrap().abort();
    assert_eq!(std::fs::read(&p).unwrap(), committed);
}

#[test]
fn a_new_file_leaves_no_named_work_file_while_written() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("n.tb5");
    let mut w = Tb5Writer::create(&p).unwrap();
    write_globals(&mut w, &guide_content(1)).unwrap();
    // O_TMPFILE here (ext4, tmpfs): a kill now would leave nothing to clean.
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    w.close().unwrap();
    assert_eq!(names(dir.path()), ["n.tb5"]);
}

#[test]
fn a_dead_writers_work_file_is_removed_by_the_next_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.tb5");
    // What a writer killed on a filesystem without O_TMPFILE leaves (unlocked).
    std::fs::write(dir.path().join(".s.tb5.k1lled000001.tmp"), vec![0u8; 4096]).unwrap();
    std::fs::write(dir.path().join(".s.tb5.keep.me"), b"not ours").unwrap();
    Tb5Writer::create(&p).unwrap().close().unwrap();
    assert_eq!(names(dir.path()), [".s.tb5.keep.me", "s.tb5"]);
}

/// Both durability settings write the same bytes, new file and append
/// alike, and leave only the target behind: they differ in waiting, not
/// in content or in the order of the commit.
#[test]
fn both_durabilities_write_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let content = guide_content(3000);
    let mut more = guide_content(1).streams[1..].to_vec();
    more.truncate(1);
    let mut files = Vec::new();
    for (name, durability) in [("ordered.tb5", Durability::Ordered), ("synced.tb5", Durability::Synced)] {
        let path = dir.path().join(name);
        let mut w = Tb5Writer::create_with(&path, durability).unwrap();
        write_globals(&mut w, &content).unwrap();
        write_streams(&mut w, &content.streams).unwrap();
        w.close().unwrap();
        let mut w = Tb5Writer::append_with(&path, durability).unwrap();
        write_streams(&mut w, &more).unwrap();
        w.close().unwrap();
        files.push(std::fs::read(&path).unwrap());
    }
    assert!(files[0] == files[1], "the two settings wrote different bytes");
    assert_eq!(names(dir.path()), ["ordered.tb5", "synced.tb5"]);
    Tb5File::open(dir.path().join("ordered.tb5")).unwrap().verify().unwrap();
}

/// Who holds a target's lock is told: an exclusive `flock` is another
/// writer's, a shared one a reader's that asked writers to wait. Every
/// writer (append, new file, a command's work file, the C API's open for
/// writing) refuses either with the message that says which, and changes
/// nothing.
#[test]
fn a_locked_target_is_refused_saying_who_holds_it() {
    use tbrw::work_file::{self, READER_HOLDS, WRITER_HOLDS};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("l.tb5");
    write_content(&p, &guide_content(5)).unwrap();
    let old = std::fs::read(&p).unwrap();
    for (shared, why) in [(false, WRITER_HOLDS), (true, READER_HOLDS)] {
        // Another open file description: flock locks conflict across them, as across processes.
        let holder = std::fs::File::open(&p).unwrap();
        if shared {
            holder.try_lock_shared().unwrap();
        } else {
            holder.try_lock().unwrap();
        }
        let refused = |what: &str, e: Error| {
            assert_eq!(e.code(), codes::TBRW_FILE_OPEN_FAILED, "{what}: {e}");
            assert_eq!(e.to_string(), format!("{}: cannot open: {why}", p.display()), "{what}");
        };
        refused("append", Tb5Writer::append(&p).unwrap_err());
        refused("new file", Tb5Writer::create(&p).unwrap_err());
        refused("engine", Engine::open(&p, access::WRITE).unwrap_err());
        let e = work_file::lock_target(&p).unwrap_err();
        assert_eq!((e.kind(), e.to_string()), (std::io::ErrorKind::WouldBlock, why.to_owned()));
        let e = work_file::WorkFile::create(&p).unwrap_err();
        assert_eq!((e.kind(), e.to_string()), (std::io::ErrorKind::WouldBlock, why.to_owned()));
        // Readers take no lock: they read on.
        Tb5File::open(&p).unwrap().verify().unwrap();
        // Released explicitly: a child another test thread forks meanwhile
        // holds a copy of the descriptor until its exec, and with it the
        // lock, if it is only closed (as the writers do, work_file.rs).
        holder.unlock().unwrap();
        drop(holder);
        assert_eq!(std::fs::read(&p).unwrap(), old);
        assert_eq!(names(dir.path()), ["l.tb5"]);
    }
    Tb5Writer::append(&p).unwrap().abort(); // free again
}

/// The same told apart for a lock another process holds (the `flock`
/// command, where installed).
#[test]
fn a_lock_another_process_holds_is_told_apart_too() {
    use std::process::{Command, Stdio};
    use tbrw::work_file::{self, READER_HOLDS, WRITER_HOLDS};
    if Command::new("flock").arg("--version").stdout(Stdio::null()).status().is_err() {
        eprintln!("no flock command: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.tb5");
    write_content(&p, &guide_content(5)).unwrap();
    for (flag, why) in [("-x", WRITER_HOLDS), ("-s", READER_HOLDS)] {
        // -o: the lock stays with `flock` itself, not with the `sleep` it runs.
        let mut holder = Command::new("flock").args([flag, "-o"]).arg(&p).args(["sleep", "60"]).spawn().unwrap();
        let start = std::time::Instant::now();
        let e = loop {
            match work_file::lock_target(&p) {
                Err(e) => break e,
                Ok(_) => {
                    assert!(start.elapsed().as_secs() < 20, "flock {flag} never took the lock");
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        };
        assert_eq!(e.to_string(), why, "flock {flag}");
        assert!(Tb5Writer::append(&p).unwrap_err().to_string().ends_with(why), "flock {flag}");
        holder.kill().unwrap();
        holder.wait().unwrap();
        // `flock` forks the command before the child closes the locked
        // descriptor (`-o`): until it has, the child holds the lock too.
        // Free again once it has, well before `sleep` ends.
        let start = std::time::Instant::now();
        while work_file::lock_target(&p).is_err() {
            assert!(start.elapsed().as_secs() < 20, "flock {flag}: the lock outlived its holder");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    Tb5Writer::append(&p).unwrap().abort(); // free again
}

/// An export replacing a file takes the target's writer lock before its
/// work ([`work_file::lock_target`]) and holds it until its file is in
/// place: writers are refused throughout, and free to go after.
#[test]
fn an_export_holds_the_target_lock_until_its_file_is_in_place() {
    use std::io::Write;
    use tbrw::work_file::{self, WorkFile, WRITER_HOLDS};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.tb5");
    write_content(&p, &guide_content(5)).unwrap();
    let lock = work_file::lock_target(&p).unwrap();
    assert!(lock.is_held());
    assert_eq!(lock.target(), p);
    assert!(Tb5Writer::append(&p).unwrap_err().to_string().ends_with(WRITER_HOLDS));
    let w = WorkFile::create_locked(lock).unwrap();
    w.file().write_all(b"exported").unwrap();
    assert!(Tb5Writer::append(&p).unwrap_err().to_string().ends_with(WRITER_HOLDS), "held during the work");
    assert!(Tb5File::open(&p).is_ok(), "the old file, until the new one is in place");
    w.persist().unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"exported");
    assert_eq!(names(dir.path()), ["x.tb5"]);
    drop(work_file::lock_target(&p).unwrap()); // free
                                               // Nothing at the target: nothing to hold, nothing refused.
    let none = work_file::lock_target(&dir.path().join("new.csv")).unwrap();
    assert!(!none.is_held());
    // A bad target is refused before any work.
    assert_eq!(work_file::lock_target(dir.path()).unwrap_err().raw_os_error(), Some(libc::EISDIR));
}

/// An append through a symbolic link: the lock is taken on the file it
/// names (not retried forever because the link itself is another inode). A
/// new file at the link replaces the link, not that file, so it takes no
/// lock through the link (docs/FORMAT.md, "Output paths").
#[test]
fn a_target_behind_a_symbolic_link_is_locked_and_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.tb5");
    let link = dir.path().join("link.tb5");
    write_content(&real, &guide_content(5)).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let mut w = Tb5Writer::append(&link).unwrap();
    write_streams(&mut w, &guide_content(1).streams[1..]).unwrap();
    // Held on the file itself: a writer through its real name is refused.
    assert!(Tb5Writer::append(&real).unwrap_err().to_string().ends_with(tbrw::work_file::WRITER_HOLDS));
    w.close().unwrap();
    assert_eq!(Tb5File::open(&real).unwrap().stream_count(), 3);
    assert!(!tbrw::work_file::lock_target(&link).unwrap().is_held());
}

/// A child forked while a writer is open, and not yet past its exec (as
/// any thread of a program may start one at any time), holds copies of the
/// writer's descriptors. Its copies must not keep the writer's lock once
/// the writer is done: the next writer of the path gets it at once.
#[test]
fn a_child_forked_meanwhile_does_not_keep_a_finished_writers_lock() {
    /// A forked child that waits, doing nothing, until it is killed.
    struct Forked(libc::pid_t);
    impl Forked {
        fn start() -> Forked {
            // SAFETY: the child only calls pause(2), which is async-signal-safe.
            match unsafe { libc::fork() } {
                0 => loop {
                    unsafe { libc::pause() };
                },
                -1 => panic!("fork: {}", std::io::Error::last_os_error()),
                pid => Forked(pid),
            }
        }
    }
    impl Drop for Forked {
        fn drop(&mut self) {
            // SAFETY: our own child, killed and reaped.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
                libc::waitpid(self.0, std::ptr::null_mut(), 0);
            }
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.tb5");
    let content = guide_content(3);
    let mut more = guide_content(1).streams[1..].to_vec();
    more.truncate(1);
    let mut children = Vec::new();
    // A new file, a file replacing it, an append, an append after a commit.
    for round in 0..2 {
        let mut w = Tb5Writer::create(&p).unwrap();
        write_globals(&mut w, &content).unwrap();
        write_streams(&mut w, &content.streams).unwrap();
        children.push(Forked::start());
        w.close().unwrap();
        let mut w = Tb5Writer::append(&p).unwrap_or_else(|e| panic!("round {round}, append after a new file: {e}"));
        write_streams(&mut w, &more).unwrap();
        children.push(Forked::start());
        w.close().unwrap();
        Tb5Writer::append(&p).unwrap_or_else(|e| panic!("round {round}, append after an append: {e}")).close().unwrap();
    }
    // A command's work file, and a target lock taken and let go.
    let q = dir.path().join("w.csv");
    let work = tbrw::work_file::WorkFile::create(&q).unwrap();
    children.push(Forked::start());
    work.persist().unwrap();
    let lock = tbrw::work_file::lock_target(&q).unwrap();
    assert!(lock.is_held());
    children.push(Forked::start());
    drop(lock);
    tbrw::work_file::lock_target(&q).unwrap_or_else(|e| panic!("lock after a lock: {e}"));
    Tb5File::open(&p).unwrap().verify().unwrap();
    drop(children);
}
