//! Computing the bind of a stream: its records decoded, its modules mapped,
//! `tbrw-bind` doing the work, and the generated tables turned into TB5
//! records.

use std::collections::HashMap;

use tbrw_bind::{Binder, DataBind, ModuleKind, ModuleMap, ModuleSpec, Renumbering, Sample};

use super::decode::Decoder;
use crate::format::codec;
use crate::format::packed_bind::Packer;
use crate::format::raw::{PidRaw, Raw, TidRaw};
use crate::model::error::{Error, Location, Result};
use crate::model::module::{Module, ModuleFlags};
use crate::model::process::{Pid, PidTidFlags, Tid};
use crate::model::section::{SectionRef, StreamSection};
use crate::model::strings::StringId;
use crate::read::{BindTables, MemoryBind, Tb5File};

/// Records decoded and bound per step (split over the threads): besides
/// its tables and its packed entries, a bind holds a step's entries packed
/// once more (by the threads, before they join the whole) and a batch of
/// samples per thread, so its memory is flat in the size of the stream.
const CHUNK_RECORDS: usize = 1 << 18;

/// Records decoded at a time before they are bound and packed (`bind_part`).
const DECODE_RECORDS: usize = 1 << 10;

/// Below this many records per thread a step is bound on one thread: a
/// thread costs more than it saves.
const MIN_RECORDS_PER_THREAD: usize = 1 << 14;

/// The threads a bind uses: the machine's, at most 8 (past that the
/// memory bandwidth, not the lookups, limits a bind). Asked once per
/// process: on Linux the answer reads cgroup files, and a report asks
/// several times.
pub fn bind_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(8)))
}

/// The specs of `modules`, with their paths and names as identities of
/// their texts when some unload record has no address (it names the module
/// whose load it ends: docs/BIND.md); otherwise no text is looked up. Texts
/// are compared, not ids: equal texts are one module whatever ids a writer
/// gave them. An empty or unreadable text is no text.
fn module_specs(file: &Tb5File, modules: &[Module<StringId>]) -> Vec<ModuleSpec> {
    let mut specs: Vec<ModuleSpec> = modules.iter().map(ModuleSpec::from).collect();
    let named_unload = |(s, m): (&ModuleSpec, &Module<StringId>)| {
        s.kind == ModuleKind::Unload && s.load_address == 0 && !(m.path.is_none() && m.name.is_none())
    };
    if !specs.iter().zip(modules).any(named_unload) {
        return specs;
    }
    let mut keys: HashMap<&str, u64> = HashMap::new();
    let mut key = |id: StringId| -> Option<u64> {
        let text = file.string_opt(id).ok().flatten().filter(|t| !t.is_empty())?;
        let next = keys.len() as u64;
        Some(*keys.entry(text).or_insert(next))
    };
    for (s, m) in specs.iter_mut().zip(modules) {
        s.path = key(m.path);
        s.name = key(m.name);
    }
    specs
}

/// The file's modules arranged for lookups (docs/BIND.md).
pub(crate) fn module_map(file: &Tb5File) -> Result<ModuleMap> {
    let modules: Vec<Module<StringId>> = match file.modules()? {
        Some(t) => t.iter().collect::<Result<_>>()?,
        None => Vec::new(),
    };
    Ok(ModuleMap::new(&module_specs(file, &modules)))
}

/// What each thread of a bind keeps from one step to the next: a batch of
/// decoded samples and their binds, and its part's entries packed as they
/// are made (while they are in the cache), in the widths of the whole
/// bind so far unless the part's threads outgrow them.
struct PartBuffers {
    samples: Vec<Sample>,
    binds: Vec<DataBind>,
    packer: Packer,
}

/// Decodes `records` (whole records of `size` bytes) a batch at a time,
/// binds each batch, and packs its binds.
fn bind_part(decoder: &Decoder, binder: &mut Binder<'_>, (records, size): (&[u8], usize), buffers: &mut PartBuffers) {
    let PartBuffers { samples, binds, packer } = buffers;
    for records in records.chunks(DECODE_RECORDS * size) {
        samples.clear();
        samples.extend(records.chunks_exact(size).map(|r| decoder.decode(r)));
        binds.resize(samples.len(), DataBind::default());
        binder.bind_into(samples, binds);
        packer.push(binds);
    }
}

/// Appends a part's packed entries to `whole`: a copy when they need no
/// renumbering and are in the same widths, else entry by entry
/// (renumbered by `renumbering`; `scratch`: a buffer for the entries).
fn merge_part(whole: &mut Packer, part: &Packer, renumbering: Option<&Renumbering>, scratch: &mut Vec<DataBind>) {
    if renumbering.is_none() && whole.append_packed(part.widths(), part.bytes()) {
        return;
    }
    let w = part.widths();
    for entries in part.bytes().chunks(DECODE_RECORDS * w.entry_size()) {
        scratch.clear();
        scratch.extend(entries.chunks_exact(w.entry_size()).map(|e| {
            let (module_index, t) = w.decode(e).unwrap_or((tbrw_bind::UNKNOWN_MODULE, 0));
            let tid_index = renumbering.map_or(t, |r| r.thread(t));
            DataBind { module_index, pid_index: 0, tid_index }
        }));
        whole.push(scratch);
    }
}

/// Binds stream `n` of `file` on `threads` threads, packing the
/// per-record binds into `packer` in stream order, step by step, and
/// returns the tables. Each step's records are cut into one part per
/// thread; this thread's binder binds the first, its forks
/// ([`Binder::fork_at`]: its tables so far) the others, and
/// [`Binder::absorb`] takes their work in stream order, so the result is
/// the one-thread result whatever the thread count.
fn compute_on(file: &Tb5File, n: u32, threads: usize, packer: &mut Packer) -> Result<BindTables> {
    let s = file.stream(n)?;
    let decoder = Decoder::for_stream(file, &s)?;
    let modules: Vec<Module<StringId>> = match file.modules()? {
        Some(t) => t.iter().collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let specs = module_specs(file, &modules);
    let map = ModuleMap::new(&specs);
    let mut binder = Binder::new(&map);
    if let Some(data) = s.data()? {
        let want = s.layout()?.map(|l| l.record_size() as usize);
        if want != Some(data.record_size()) {
            return Err(Error::malformed(
                Location {
                    file: file.path().to_owned(),
                    section: SectionRef::Stream(n, StreamSection::Data),
                    record: None,
                    offset: data.file_offset(),
                },
                format!("records are {} bytes but the data descriptor defines {:?}", data.record_size(), want),
            ));
        }
        let size = data.record_size();
        let threads = threads.max(1);
        let mut buffers: Vec<PartBuffers> = (0..threads)
            .map(|_| PartBuffers {
                samples: Vec::new(),
                binds: Vec::new(),
                packer: Packer::with_widths(packer.widths()),
            })
            .collect();
        let mut scratch = Vec::new();
        for chunk in data.as_bytes().chunks(CHUNK_RECORDS * size) {
            let records = chunk.len() / size;
            if records == 0 {
                continue;
            }
            let parts = threads.min(records / MIN_RECORDS_PER_THREAD).max(1);
            let per = records.div_ceil(parts);
            let (first, rest) = chunk.split_at(per * size);
            for b in &mut buffers {
                b.packer.reset(packer.widths());
            }
            let (first_buffers, rest_buffers) = buffers.split_at_mut(1);
            let (decoder, start) = (&decoder, binder.next_index());
            let forks: Vec<Binder> = (1..parts).map(|k| binder.fork_at(start + (k * per) as u64)).collect();
            let done: Vec<(Binder, &PartBuffers)> = std::thread::scope(|scope| {
                let handles: Vec<_> = rest
                    .chunks(per * size)
                    .zip(rest_buffers.iter_mut())
                    .zip(forks)
                    .map(|((records, buffers), mut b)| {
                        scope.spawn(move || {
                            bind_part(decoder, &mut b, (records, size), buffers);
                            (b, &*buffers)
                        })
                    })
                    .collect();
                bind_part(decoder, &mut binder, (first, size), &mut first_buffers[0]);
                handles.into_iter().map(|h| h.join().expect("a bind thread panicked")).collect()
            });
            merge_part(packer, &first_buffers[0].packer, None, &mut scratch);
            for (part, buffers) in done {
                let renumbering = binder.absorb_tables(part, buffers.packer.len() as u64);
                merge_part(packer, &buffers.packer, renumbering.as_ref(), &mut scratch);
            }
        }
    }
    let t = binder.finish();
    let processes = t
        .processes
        .iter()
        .map(|p| {
            let exe = p.exe_module.map(|i| &modules[i as usize]);
            let tsc = exe.is_some_and(|m| m.flags.contains(ModuleFlags::TSC_USED));
            Pid {
                id: p.pid,
                flags: if p.start > 0 && tsc { PidTidFlags::WHEN_TSC } else { PidTidFlags::empty() },
                event_when: p.start,
                path: exe.map_or(StringId::NONE, |m| m.path),
                name: exe.map_or(StringId::NONE, |m| m.name),
                ..Default::default()
            }
        })
        .collect();
    let names = thread_names(file)?;
    let threads = t
        .threads
        .iter()
        .map(|th| {
            let p = &t.processes[th.pid_index as usize];
            // A thread is named by the file's thread records of its (pid,
            // tid): the latest name recorded since its process instance
            // began, so a thread renamed while it ran shows its last name.
            let name = names
                .get(&(p.pid, th.tid))
                .and_then(|v| v.iter().rev().find(|(when, _)| *when >= p.start).or(v.last()))
                .map_or(StringId::NONE, |(_, name)| *name);
            Tid { associated_pid: p.pid, id: th.tid, name, ..Default::default() }
        })
        .collect();
    Ok(BindTables { processes, threads, tid_binds: t.tid_binds(), module_binds: t.module_binds })
}

/// Per (pid, tid), the names its thread records give, with their times.
type ThreadNames = std::collections::HashMap<(u32, u32), Vec<(u64, StringId)>>;

/// The named records of the file's thread section by (pid, tid), in time order.
fn thread_names(file: &Tb5File) -> Result<ThreadNames> {
    let mut names = ThreadNames::new();
    if let Some(pt) = file.processes()? {
        for th in pt.tids() {
            if th.name != StringId::NONE {
                names.entry((th.associated_pid, th.id)).or_default().push((th.event_when, th.name));
            }
        }
    }
    for v in names.values_mut() {
        v.sort_by_key(|(when, _)| *when);
    }
    Ok(names)
}

/// Binds a stream of a file in memory (on [`bind_threads`] threads).
pub fn bind_in_memory(file: &Tb5File, stream: u32) -> Result<MemoryBind> {
    bind_in_memory_on(file, stream, bind_threads())
}

/// Binds a stream of a file in memory on `threads` threads; the result
/// does not depend on the number. The entries are packed as the bind goes,
/// in the thread width of the threads the bind made (`Packer`).
pub fn bind_in_memory_on(file: &Tb5File, stream: u32, threads: usize) -> Result<MemoryBind> {
    let records = file.stream(stream)?.data()?.map_or(0, |d| d.len());
    let mut packer = Packer::new(file.modules()?.map_or(0, |m| m.len()), records);
    let tables = compute_on(file, stream, threads, &mut packer)?;
    packer.widen_for(tables.threads.len() as u64);
    let (widths, entries) = packer.finish();
    Ok(MemoryBind::from_packed(entries, widths, tables))
}

/// The encoded tables: module binds, processes, threads, thread binds.
pub(super) fn encode_tables(tables: &BindTables) -> [Vec<u8>; 4] {
    let mut modules = Vec::with_capacity(tables.module_binds.len() * 8);
    for m in &tables.module_binds {
        modules.extend_from_slice(&m.pid_index.to_le_bytes());
    }
    let mut pids = Vec::with_capacity(tables.processes.len() * PidRaw::SIZE);
    for p in &tables.processes {
        codec::encode_pid(p).encode_into(&mut pids);
    }
    let mut tids = Vec::with_capacity(tables.threads.len() * TidRaw::SIZE);
    for t in &tables.threads {
        codec::encode_tid(t).encode_into(&mut tids);
    }
    let mut tid_binds = Vec::with_capacity(tables.tid_binds.len() * 8);
    for t in &tables.tid_binds {
        tid_binds.extend_from_slice(&t.pid_index.to_le_bytes());
    }
    [modules, pids, tids, tid_binds]
}
