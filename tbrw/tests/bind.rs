//! Binding streams of TB5 files: stored binds, in-memory binds, unbind,
//! descriptor-based streams, and agreement with the reference engine.

mod common;

use common::*;
use tbrw::*;

fn file_with(c: &Content) -> (tempfile::TempDir, std::path::PathBuf) {
    file_in(c, WriteLayout::Intel)
}

fn file_in(c: &Content, layout: WriteLayout) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.tb5");
    write_content_as(&p, c, layout).unwrap();
    (dir, p)
}

/// A file with processes that bind in interesting ways: two processes with
/// an exe and a library each, a global kernel module, and samples in all of them.
fn bind_content() -> Content {
    let mut c = guide_content(0);
    c.processes = None; // binding must generate them
    let module = |pid: u32, addr: u64, len: u64, flags: ModuleFlags, name: &str| Module {
        associated_pid: pid,
        flags,
        load_address: addr,
        length: len,
        unload_tsc: NEVER_UNLOADED,
        path: Some(format!("/bin/{name}")),
        name: Some(name.into()),
        ..Default::default()
    };
    c.modules = Some(vec![
        module(0, 0xFFFF_8000_0000_0000, 0x100_0000, ModuleFlags::GLOBAL_LOAD, "vmlinux"),
        module(100, 0x40_0000, 0x1_0000, ModuleFlags::IS_EXE, "app"),
        module(100, 0x7F00_0000_0000, 0x20_0000, ModuleFlags::empty(), "libc.so"),
        module(200, 0x40_0000, 0x2_0000, ModuleFlags::IS_EXE, "server"),
        module(200, 0x7F00_0010_0000, 0x1000, ModuleFlags::empty(), "libhot.so"), // splits libc's range? other process: no
    ]);
    let mut data = Vec::new();
    let samples: [(u32, u32, u64); 8] = [
        (100, 1, 0x40_1000),
        (100, 1, 0x7F00_0001_0000),
        (100, 2, 0xFFFF_8000_0000_1000),
        (200, 5, 0x40_1000),
        (200, 5, 0x7F00_0010_0800),
        (200, 5, 0x7F00_0001_0000), // libc is pid 100's: unknown here
        (300, 9, 0x40_1000),        // no modules at all
        (100, 1, 0x1234),
    ];
    for (i, (pid, tid, ip)) in samples.iter().enumerate() {
        let mut pc = SampleRecordPc::default();
        pc.set_ia64(*ip, 0);
        pc.pid_rec_index = *pid;
        pc.set_pid_rec_index_raw(true);
        pc.tid = *tid;
        data.extend_from_slice(&pc.to_bytes());
        data.extend_from_slice(&(i as u64 * 100).to_le_bytes());
    }
    c.streams[0].data = Some(data);
    c
}

const U: u64 = UNKNOWN_MODULE;

fn triples(v: &BindView<'_>) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    v.data_binds(0, usize::MAX, &mut out);
    out.iter().map(|d| (d.module_index, d.pid_index, d.tid_index)).collect()
}

#[test]
fn dobind_stores_the_bind_and_generates_processes() {
    let (_d, p) = file_with(&bind_content());
    assert!(!Tb5File::open(&p).unwrap().stream(0).unwrap().is_bound());
    bind::dobind(&p, 0).unwrap();
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    let s = f.stream(0).unwrap();
    assert!(s.is_bound());
    let v = s.bind_view().unwrap().unwrap();
    assert_eq!(triples(&v), [(1, 1, 0), (2, 1, 0), (0, 1, 1), (3, 2, 2), (4, 2, 2), (U, 2, 2), (U, 3, 3), (U, 1, 0)]);
    // Processes: the modules' pids in module order (0, 100, 200), then 300 from the samples.
    let procs: Vec<_> = (0..v.process_count()).map(|i| f.resolve(v.process(i).unwrap()).unwrap()).collect();
    assert_eq!(procs.iter().map(|p| p.id).collect::<Vec<_>>(), [0, 100, 200, 300]);
    assert_eq!(procs[1].name.as_deref(), Some("app"));
    assert_eq!(procs[2].path.as_deref(), Some("/bin/server"));
    assert_eq!(procs[3].name, None);
    let threads: Vec<_> = (0..v.thread_count()).map(|i| v.thread(i).unwrap()).collect();
    assert_eq!(
        threads.iter().map(|t| (t.associated_pid, t.id)).collect::<Vec<_>>(),
        [(100, 1), (100, 2), (200, 5), (300, 9)]
    );
    assert_eq!((0..4).map(|i| v.tid_bind(i).unwrap().pid_index).collect::<Vec<_>>(), [1, 1, 2, 3]);
    assert_eq!((0..5).map(|i| v.module_bind(i).unwrap().pid_index).collect::<Vec<_>>(), [0, 1, 1, 2, 2]);
    // The file had no process/thread section: the bind wrote it.
    let pt = f.processes().unwrap().unwrap();
    assert_eq!(pt.pid_count(), 4);
    assert_eq!(pt.tid_count(), 4);
    assert_eq!(f.resolve(pt.pid(2).unwrap()).unwrap().name.as_deref(), Some("server"));
    // And it is what binding in memory gives.
    let m = bind::bind_in_memory(&f, 0).unwrap();
    assert_eq!(triples(&BindView::Memory(&m)), triples(&v));
}

#[test]
fn binding_agrees_with_the_reference_engine() {
    let c = bind_content();
    let (_d, p) = file_with(&c);
    let f = Tb5File::open(&p).unwrap();
    let m = bind::bind_in_memory(&f, 0).unwrap();
    let modules: Vec<_> = c
        .modules
        .as_ref()
        .unwrap()
        .iter()
        .map(|m| tbrw_bind::ModuleSpec {
            pid: m.associated_pid,
            load_address: m.load_address,
            length: m.length,
            load_time: m.event_when,
            unload_time: m.unload_tsc,
            global: m.flags.contains(ModuleFlags::GLOBAL_LOAD),
            exe: m.flags.contains(ModuleFlags::IS_EXE),
            tsc_time: m.flags.contains(ModuleFlags::TSC_USED),
            ..Default::default()
        })
        .collect();
    let samples: Vec<_> = f
        .stream(0)
        .unwrap()
        .legacy_samples()
        .unwrap()
        .map(|s| tbrw_bind::Sample { ip: s.pc.ip(), pid: s.pc.pid_rec_index, tid: s.pc.tid, tsc: s.tsc })
        .collect();
    let want = tbrw_bind::reference::bind(&modules, &samples);
    assert_eq!(m.to_vec(), want.data);
    assert_eq!(m.tables.module_binds, want.tables.module_binds);
}

#[test]
fn binding_twice_is_a_no_op_and_survives_reopening() {
    let (_d, p) = file_with(&bind_content());
    bind::dobind(&p, 0).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    bind::dobind(&p, 0).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), bytes, "the second bind changed the file");
    let e = Engine::open(&p, access::READ).unwrap();
    assert!(e.is_bound(0).unwrap());
}

#[test]
fn an_existing_process_section_is_kept() {
    let mut c = bind_content();
    c.processes = Some((vec![Pid { id: 4242, name: Some("mine".into()), ..Default::default() }], vec![]));
    let (_d, p) = file_with(&c);
    bind::dobind(&p, 0).unwrap();
    // Intel's layout: the bind's indexes are into the file's own tables,
    // which keep their records first and take the bind's processes after
    // them (docs/BIND.md, "In Intel's layout").
    let f = Tb5File::open(&p).unwrap();
    let pt = f.processes().unwrap().unwrap();
    assert_eq!((pt.pid_count(), pt.pid(0).unwrap().id), (5, 4242));
    let v = f.stream(0).unwrap().bind_view().unwrap().unwrap();
    assert_eq!(v.process_count(), 5);
    assert!(triples(&v).iter().all(|t| t.1 >= 1), "no record is the file's own process 4242");
    // This project's layout keeps the generated tables apart.
    let (_d, p) = file_in(&c, WriteLayout::Tb5);
    bind::dobind(&p, 0).unwrap();
    let f = Tb5File::open(&p).unwrap();
    let pt = f.processes().unwrap().unwrap();
    assert_eq!((pt.pid_count(), pt.pid(0).unwrap().id), (1, 4242));
    assert_eq!(f.stream(0).unwrap().bind_view().unwrap().unwrap().process_count(), 4);
}

/// A file's own process and thread records are the bind's where they are
/// the same process and thread (pid, start time and name; pid, tid and
/// name), however their paths and flags differ from what the modules say:
/// no pid gets a second record for that (Intel's `TBRW_dobind` refuses a
/// file that has these sections, 77).
#[test]
fn a_bind_takes_the_file_s_record_of_a_process_whatever_its_path() {
    let mut c = bind_content();
    let pid = |id: u32, path: &str, name: &str| Pid {
        id,
        path: Some(path.into()),
        name: Some(name.into()),
        ..Default::default()
    };
    let tid =
        |pid: u32, id: u32, name: &str| Tid { associated_pid: pid, id, name: Some(name.into()), ..Default::default() };
    // Pid 100's exe module says /bin/app; the file's record says otherwise.
    c.processes = Some((
        vec![
            pid(100, "/opt/app-2.1/app", "app"),
            Pid { flags: PidTidFlags::DESTROYED, ..pid(200, "/bin/server", "server") },
        ],
        vec![tid(100, 1, "main"), tid(200, 5, "worker")],
    ));
    let (_d, p) = file_with(&c);
    bind::dobind(&p, 0).unwrap();
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    let pt = f.processes().unwrap().unwrap();
    let pids: Vec<u32> = pt.pids().map(|p| p.id).collect();
    for id in [100, 200] {
        assert_eq!(pids.iter().filter(|&&p| p == id).count(), 1, "pid {id} in {pids:?}");
    }
    assert_eq!(f.string(pt.pid(0).unwrap().path).unwrap(), "/opt/app-2.1/app");
    let tids: Vec<(u32, u32)> = pt.tids().map(|t| (t.associated_pid, t.id)).collect();
    assert_eq!(tids.iter().filter(|&&t| t == (100, 1)).count(), 1, "{tids:?}");
    assert_eq!(tids.iter().filter(|&&t| t == (200, 5)).count(), 1, "{tids:?}");
    // The samples of pid 100 and 200 name the file's records.
    let v = f.stream(0).unwrap().bind_view().unwrap().unwrap();
    let t = triples(&v);
    assert_eq!((t[0].1, t[0].2), (0, 0));
    assert_eq!((t[3].1, t[3].2), (1, 1));
    assert_eq!(v.tid_bind(0).unwrap().pid_index, 0);
}

#[test]
fn read_only_binds_in_memory_and_writes_nothing() {
    let (_d, p) = file_with(&bind_content());
    let before = std::fs::read(&p).unwrap();
    let mut e = Engine::open(&p, access::READ).unwrap();
    assert!(!e.is_bound(0).unwrap());
    assert_eq!(e.bound(0).unwrap_err().code(), codes::TBRW_STREAM_NOT_BOUND);
    e.dobind(0).unwrap();
    assert!(e.is_bound(0).unwrap());
    let v = e.bound(0).unwrap();
    assert_eq!(v.len(), 8);
    assert_eq!(v.data_bind(3).unwrap().module_index, 3);
    e.unbind(0).unwrap();
    assert!(!e.is_bound(0).unwrap());
    e.close().unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn unbind_then_bind_again() {
    let (_d, p) = file_with(&bind_content());
    bind::dobind(&p, 0).unwrap();
    let bound = triples(&Tb5File::open(&p).unwrap().stream(0).unwrap().bind_view().unwrap().unwrap());
    bind::unbind(&p, 0).unwrap();
    let f = Tb5File::open(&p).unwrap();
    assert!(!f.stream(0).unwrap().is_bound());
    f.verify().unwrap();
    assert_eq!(bind::unbind(&p, 0).unwrap_err().code(), codes::TBRW_STREAM_NOT_BOUND);
    bind::dobind(&p, 0).unwrap();
    let f = Tb5File::open(&p).unwrap();
    assert_eq!(triples(&f.stream(0).unwrap().bind_view().unwrap().unwrap()), bound);
    f.verify().unwrap();
    // Within one session too: bind, unbind, bind.
    let mut e = Engine::open(&p, access::READ | access::WRITE).unwrap();
    e.unbind(0).unwrap();
    assert!(!e.is_bound(0).unwrap());
    e.dobind(0).unwrap();
    assert_eq!(triples(&e.bound(0).unwrap()), bound);
    e.close().unwrap();
    assert!(Tb5File::open(&p).unwrap().stream(0).unwrap().is_bound());
}

#[test]
fn an_interrupted_bind_leaves_the_file_as_it_was() {
    let (_d, p) = file_with(&bind_content());
    let before = std::fs::read(&p).unwrap();
    let mut e = Engine::open(&p, access::READ | access::WRITE).unwrap();
    e.dobind(0).unwrap();
    assert_eq!(e.bound(0).unwrap().len(), 8, "usable before the commit");
    e.abort();
    assert_eq!(std::fs::read(&p).unwrap(), before);
    let mut w = Tb5Writer::append(&p).unwrap();
    w.dobind(0).unwrap();
    drop(w);
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn a_descriptor_based_stream_binds() {
    let c = guide_content(4);
    let (_d, p) = file_with(&c);
    bind::dobind(&p, 1).unwrap();
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    let v = f.stream(1).unwrap().bind_view().unwrap().unwrap();
    assert_eq!(v.len(), 50);
    // ip 0x400000 + i lies in the module at 0x400000 (0x2000 long), pid 0x1000, tids 7, 8, 9.
    assert!(triples(&v).iter().all(|t| t.0 == 0 && t.1 == 0));
    assert_eq!(v.thread_count(), 3);
    assert_eq!(v.thread(2).unwrap().id, 9);
    assert!(!f.stream(0).unwrap().is_bound());
}

#[test]
fn a_stream_without_ip_and_pid_cannot_be_bound() {
    let mut c = guide_content(1);
    c.streams[1].descs.retain(|d| d.desc_type != desc_type::PID);
    let rs = RecordLayout::from_entries(&c.streams[1].descs).unwrap().record_size() as usize;
    c.streams[1].data = Some(vec![0; rs * 3]);
    let (_d, p) = file_with(&c);
    let e = bind::dobind(&p, 1).unwrap_err();
    assert_eq!(e.code(), codes::TBRW_INVALID_STREAM);
    assert!(e.to_string().contains("no ST_PID"), "{e}");
    assert_eq!(bind::dobind(&p, 7).unwrap_err().code(), codes::TBRW_STREAM_NOT_EXIST);
}

#[test]
fn a_non_raw_pid_is_resolved_through_the_process_section() {
    let mut c = bind_content();
    c.processes = Some((vec![Pid { id: 999, ..Default::default() }, Pid { id: 200, ..Default::default() }], vec![]));
    // Sample 3 says "process index 1" instead of the raw pid 200.
    let data = c.streams[0].data.as_mut().unwrap();
    let mut pc = SampleRecordPc::from_slice(&data[3 * 40..]).unwrap();
    pc.pid_rec_index = 1;
    pc.set_pid_rec_index_raw(false);
    data[3 * 40..3 * 40 + 32].copy_from_slice(&pc.to_bytes());
    let (_d, p) = file_with(&c);
    let f = Tb5File::open(&p).unwrap();
    let m = bind::bind_in_memory(&f, 0).unwrap();
    assert_eq!(m.data_bind(3).unwrap().module_index, 3, "bound as pid 200's exe");
}

#[test]
fn enumerating_bound_data_from_any_start() {
    let (_d, p) = file_with(&bind_content());
    bind::dobind(&p, 0).unwrap();
    let f = Tb5File::open(&p).unwrap();
    let s = f.stream(0).unwrap();
    let data = s.data().unwrap().unwrap();
    let v = s.bind_view().unwrap().unwrap();
    let all = triples(&v);
    for start in 0..=8u64 {
        let mut seen = Vec::new();
        for (records, binds) in v.chunks(&data, start, 3).unwrap() {
            assert_eq!(records.len() / 40, binds.len());
            assert!(binds.len() <= 3);
            seen.extend(binds.iter().map(|d| (d.module_index, d.pid_index, d.tid_index)));
        }
        assert_eq!(seen, all[start as usize..]);
    }
    assert_eq!(v.chunks(&data, 9, 3).err().map(|e| e.code()), Some(codes::TBRW_INVALID_READ_START));
    assert_eq!((bind::DATA_BIND_SIZE, bind::MODULE_BIND_SIZE, bind::TID_BIND_SIZE), (24, 8, 8));
}

#[test]
fn a_stream_written_by_the_writer_is_bound_when_it_closes() {
    let c = bind_content();
    let dir = tempfile::tempdir().unwrap();
    let (bound, plain) = (dir.path().join("same-session.tb5"), dir.path().join("plain.tb5"));
    write_content(&plain, &c).unwrap();
    bind::dobind(&plain, 0).unwrap();

    let mut w = Tb5Writer::create(&bound).unwrap();
    write_globals(&mut w, &c).unwrap();
    write_streams(&mut w, &c.streams).unwrap();
    w.dobind(0).unwrap();
    w.close().unwrap();

    let (a, b) = (Tb5File::open(&bound).unwrap(), Tb5File::open(&plain).unwrap());
    a.verify().unwrap();
    let (va, vb) =
        (a.stream(0).unwrap().bind_view().unwrap().unwrap(), b.stream(0).unwrap().bind_view().unwrap().unwrap());
    assert_eq!(triples(&va), triples(&vb));
    assert_eq!(triples(&va)[3], (3, 2, 2), "{:?}", triples(&va));
}

#[test]
fn a_stream_of_the_session_that_cannot_be_bound_is_refused_before_the_commit() {
    let mut c = bind_content();
    c.streams[0].descs = vec![DescEntry { desc_type: desc_type::TIME_STAMP, data_size: 8, ..Default::default() }];
    c.streams[0].data = Some(vec![0; 16]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.tb5");
    let mut w = Tb5Writer::create(&p).unwrap();
    write_globals(&mut w, &c).unwrap();
    write_streams(&mut w, &c.streams).unwrap();
    let e = w.dobind(0).unwrap_err();
    assert!(e.to_string().contains("neither ST_IP nor ST_PID"), "{e}");
    w.close().unwrap();
    assert!(!Tb5File::open(&p).unwrap().stream(0).unwrap().is_bound());
}

/// A stream of `n` records over 12 processes and 40 threads, modules loaded
/// and unloaded during the run and a process begun again half-way: enough
/// records for a bind to use several threads.
fn busy_content(n: u64) -> Content {
    let mut c = guide_content(0);
    c.processes = None;
    let mut modules = vec![Module {
        associated_pid: 0,
        flags: ModuleFlags::GLOBAL_LOAD,
        load_address: 0xFFFF_8000_0000_0000,
        length: 0x100_0000,
        unload_tsc: NEVER_UNLOADED,
        name: Some("vmlinux".into()),
        ..Default::default()
    }];
    for p in 0..12u32 {
        for j in 0..30u64 {
            let mut flags = ModuleFlags::TSC_USED | ModuleFlags::LOADED;
            if j == 0 {
                flags |= ModuleFlags::IS_EXE | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
            }
            modules.push(Module {
                associated_pid: 100 + p,
                flags,
                load_address: 0x1000_0000 + j * 0x10_0000,
                length: 0x8_0000,
                event_when: if j % 5 == 4 { n * 100 / 2 } else { 0 },
                unload_tsc: if j % 7 == 6 { n * 100 / 3 } else { NEVER_UNLOADED },
                name: Some(format!("m{p}-{j}")),
                ..Default::default()
            });
        }
    }
    // Pid 105 begins again half-way (a new exe, first in its process).
    modules.push(Module {
        associated_pid: 105,
        flags: ModuleFlags::TSC_USED
            | ModuleFlags::LOADED
            | ModuleFlags::IS_EXE
            | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS,
        load_address: 0x1000_0000,
        length: 0x8_0000,
        event_when: n * 100 / 2,
        unload_tsc: NEVER_UNLOADED,
        name: Some("again".into()),
        ..Default::default()
    });
    c.modules = Some(modules);
    let mut data = Vec::with_capacity(n as usize * 40);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let p = (x % 13) as u32; // 12: a pid no module names
        let mut pc = SampleRecordPc::default();
        let ip = if x.is_multiple_of(11) { 0xFFFF_8000_0000_1000 } else { 0x1000_0000 + (x >> 20) % 0x200_0000 };
        pc.set_ia64(ip, 0);
        pc.pid_rec_index = 100 + p;
        pc.set_pid_rec_index_raw(true);
        pc.tid = 1000 + p * 4 + ((x >> 8) % 4) as u32;
        data.extend_from_slice(&pc.to_bytes());
        data.extend_from_slice(&(i * 100).to_le_bytes());
    }
    c.streams[0].data = Some(data);
    c
}

#[test]
fn a_bind_on_several_threads_equals_the_bind_on_one() {
    let (_d, p) = file_with(&busy_content(300_000));
    let f = Tb5File::open(&p).unwrap();
    let one = bind::bind_in_memory_on(&f, 0, 1).unwrap();
    assert!(one.tables.processes.len() > 12 && one.tables.threads.len() > 40, "the workload is not busy enough");
    for threads in [2, 3, 7] {
        assert_eq!(bind::bind_in_memory_on(&f, 0, threads).unwrap(), one, "{threads} threads");
    }
    // The stored (packed) bind reads back as the same binds.
    drop(f);
    bind::dobind(&p, 0).unwrap();
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    let v = f.stream(0).unwrap().bind_view().unwrap().unwrap();
    assert_eq!(triples(&v), triples(&BindView::Memory(&one)));
    let mut part = Vec::new();
    v.data_binds(123_456, 1000, &mut part);
    assert_eq!(part[..], one.to_vec()[123_456..124_456]);
    assert_eq!(v.data_bind(299_999), one.to_vec().last().copied());
}

#[test]
fn a_stored_bind_takes_a_few_bytes_per_record_in_the_tb5_layout() {
    let (_d, p) = file_in(&busy_content(100_000), WriteLayout::Tb5);
    let before = std::fs::metadata(&p).unwrap().len();
    bind::dobind(&p, 0).unwrap();
    let grown = std::fs::metadata(&p).unwrap().len() - before;
    // 362 modules: 2-byte module indices; 52 (pid, tid) pairs, one pid
    // with two process instances: at most 53 threads, 1-byte thread
    // indices (the record count alone would take 4); plus the tables and
    // a directory.
    assert!(grown < 100_000 * 3 + 64 * 1024, "the bind added {grown} bytes");
    // The narrow indices are the bind's: equal to the one-thread engine's
    // on 24-byte structs, which knows nothing of widths.
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    let v = f.stream(0).unwrap().bind_view().unwrap().unwrap();
    let (want, threads) = reference_triples(&f);
    assert!(threads > 40 && threads < 256, "{threads}");
    assert_eq!(triples(&v), want);
}

/// The binds of stream 0 of `f` (legacy records) as the one-thread engine
/// on 24-byte structs makes them, which knows nothing of widths, and its
/// thread count.
fn reference_triples(f: &Tb5File) -> (Vec<(u64, u64, u64)>, usize) {
    let samples: Vec<_> = f
        .stream(0)
        .unwrap()
        .legacy_samples()
        .unwrap()
        .map(|s| tbrw_bind::Sample { ip: s.pc.ip(), pid: s.pc.pid_rec_index, tid: s.pc.tid, tsc: s.tsc })
        .collect();
    let modules: Vec<tbrw_bind::ModuleSpec> = f
        .modules()
        .unwrap()
        .unwrap()
        .iter()
        .map(|m| {
            let m = m.unwrap();
            tbrw_bind::ModuleSpec {
                pid: m.associated_pid,
                load_address: m.load_address,
                length: m.length,
                load_time: m.event_when,
                unload_time: m.unload_tsc,
                global: m.flags.contains(ModuleFlags::GLOBAL_LOAD),
                exe: m.flags.contains(ModuleFlags::IS_EXE),
                tsc_time: m.flags.contains(ModuleFlags::TSC_USED),
                first_in_process: m.flags.contains(ModuleFlags::FIRST_MODULE_REC_IN_PROCESS),
                ..Default::default()
            }
        })
        .collect();
    let want = tbrw_bind::bind(&modules, &samples);
    (want.data.iter().map(|d| (d.module_index, d.pid_index, d.tid_index)).collect(), want.tables.threads.len())
}

/// The thread width of a stored bind is the narrowest that holds the
/// threads the bind made, whatever the record count: 53 threads in 60,000
/// records take one byte a record (the record count would take two).
#[test]
fn a_stored_bind_s_thread_indexes_are_as_wide_as_its_threads_need() {
    let (_d, p) = file_in(&busy_content(60_000), WriteLayout::Tb5);
    let before = std::fs::metadata(&p).unwrap().len();
    bind::dobind(&p, 0).unwrap();
    let grown = std::fs::metadata(&p).unwrap().len() - before;
    // 2-byte module and 1-byte thread indices, plus the tables and a directory.
    assert!(grown < 60_000 * 3 + 16 * 1024, "the bind added {grown} bytes");
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    let (want, threads) = reference_triples(&f);
    assert!(threads < 256, "{threads}");
    assert_eq!(triples(&f.stream(0).unwrap().bind_view().unwrap().unwrap()), want);
}

/// Threads first seen late in a long stream (past 256 and past 65,536
/// records) widen the thread indexes packed so far: the stored bind and
/// the bind on any number of threads read back as the reference's.
#[test]
fn threads_that_first_appear_late_widen_the_packed_binds() {
    let n = 400_000u64;
    let mut c = busy_content(n);
    let data = c.streams[0].data.as_mut().unwrap();
    // From the last quarter on, each record's thread is one of 700 new ones.
    for (i, rec) in data.chunks_exact_mut(40).enumerate().skip(n as usize * 3 / 4) {
        let mut pc = SampleRecordPc::from_bytes(rec[..32].try_into().unwrap());
        pc.tid = 50_000 + (i % 700) as u32;
        rec[..32].copy_from_slice(&pc.to_bytes());
    }
    let (_d, p) = file_in(&c, WriteLayout::Tb5);
    let f = Tb5File::open(&p).unwrap();
    let (want, threads) = reference_triples(&f);
    assert!(threads > 700, "{threads}");
    for t in [1, 2, 3] {
        assert_eq!(triples(&BindView::Memory(&bind::bind_in_memory_on(&f, 0, t).unwrap())), want, "{t} threads");
    }
    drop(f);
    bind::dobind(&p, 0).unwrap();
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    assert_eq!(triples(&f.stream(0).unwrap().bind_view().unwrap().unwrap()), want);
}

/// Intel's layout stores a bind as Intel does: 32 bytes a record (module,
/// process and thread index, OS index, padding), which Intel's reader
/// reads whatever the stream's descriptor says.
#[test]
fn a_stored_bind_takes_intels_32_bytes_per_record() {
    let (_d, p) = file_with(&busy_content(100_000));
    let before = std::fs::metadata(&p).unwrap().len();
    bind::dobind(&p, 0).unwrap();
    let grown = std::fs::metadata(&p).unwrap().len() - before;
    assert!((100_000 * 32..100_000 * 32 + 64 * 1024).contains(&grown), "the bind added {grown} bytes");
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    let data = f.stream(f.stream_count() - 2).unwrap();
    let info = data.info().unwrap().unwrap();
    assert_eq!(info.stream_type, stream_type::BIND_DATA_INFORMATION);
    assert_eq!(f.string(info.comment).unwrap(), "bind version 05 bound to data stream 0000");
    assert_eq!(data.data().unwrap().unwrap().record_size(), 32);
}

/// A bind stored before binds were packed: 24-byte `DATA_BIND_STRUCT`s
/// in a bind data section (0x300). Made by this project's writer then
/// (the fuzz corpus keeps it, fuzz/corpus/README.md).
const OLD_BOUND: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus/tb5/sampler-bound.tb5");

#[test]
fn a_bind_stored_as_structs_is_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.tb5");
    std::fs::copy(OLD_BOUND, &p).unwrap();
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    let v = f.stream(0).unwrap().bind_view().unwrap().unwrap();
    assert_eq!(v.data_section(), Some(BindSection::Data));
    assert!(!v.is_empty());
    let old = triples(&v);
    assert_eq!(old, triples(&BindView::Memory(&bind::bind_in_memory(&f, 0).unwrap())));
    drop(f);
    // Bound again, it is stored packed, with the same binds.
    bind::unbind(&p, 0).unwrap();
    bind::dobind(&p, 0).unwrap();
    let f = Tb5File::open(&p).unwrap();
    f.verify().unwrap();
    let v = f.stream(0).unwrap().bind_view().unwrap().unwrap();
    assert_eq!(v.data_section(), Some(BindSection::PackedData));
    assert_eq!(triples(&v), old);
}
