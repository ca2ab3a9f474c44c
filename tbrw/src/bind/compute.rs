//! Computing the bind of a stream: its records decoded, its modules mapped,
//! `tbrw-bind` doing the work, and the generated tables turned into TB5
//! records.

use tbrw_bind::{Binder, DataBind, ModuleMap, ModuleSpec};

use super::decode::Decoder;
use crate::format::codec;
use crate::format::raw::{PidRaw, Raw, TidRaw};
use crate::model::error::{Error, Location, Result};
use crate::model::module::{Module, ModuleFlags};
use crate::model::process::{Pid, PidTidFlags, Tid};
use crate::model::section::{SectionRef, StreamSection};
use crate::model::strings::StringId;
use crate::read::{BindTables, MemoryBind, Tb5File};

/// Records decoded per step while binding.
pub(super) const CHUNK_RECORDS: usize = 1 << 16;

fn module_spec(m: &Module<StringId>) -> ModuleSpec {
    ModuleSpec {
        pid: m.associated_pid,
        load_address: m.load_address,
        length: m.length,
        load_time: m.event_when,
        unload_time: m.unload_tsc,
        global: m.flags.contains(ModuleFlags::GLOBAL_LOAD),
        exe: m.flags.contains(ModuleFlags::IS_EXE),
        tsc_time: m.flags.contains(ModuleFlags::TSC_USED),
        kind: if m.flags.contains(ModuleFlags::UNLOADED) && !m.flags.contains(ModuleFlags::LOADED) {
            tbrw_bind::ModuleKind::Unload
        } else {
            tbrw_bind::ModuleKind::Load
        },
        first_in_process: m.flags.contains(ModuleFlags::FIRST_MODULE_REC_IN_PROCESS),
    }
}

/// Binds stream `n` of `file`, handing the per-record binds to `sink` in
/// stream order, chunk by chunk, and returns the tables.
pub(crate) fn compute(file: &Tb5File, n: u32, sink: &mut dyn FnMut(&[DataBind]) -> Result<()>) -> Result<BindTables> {
    let s = file.stream(n)?;
    let decoder = Decoder::for_stream(file, &s)?;
    let modules: Vec<Module<StringId>> = match file.modules()? {
        Some(t) => t.iter().collect::<Result<_>>()?,
        None => Vec::new(),
    };
    let specs: Vec<ModuleSpec> = modules.iter().map(module_spec).collect();
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
        let mut samples = Vec::with_capacity(CHUNK_RECORDS);
        let mut out = Vec::with_capacity(CHUNK_RECORDS);
        for chunk in data.as_bytes().chunks(CHUNK_RECORDS * data.record_size()) {
            samples.clear();
            samples.extend(chunk.chunks_exact(data.record_size()).map(|r| decoder.decode(r)));
            out.clear();
            binder.bind(&samples, &mut out);
            sink(&out)?;
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
    let threads = t
        .threads
        .iter()
        .map(|th| Tid { associated_pid: t.processes[th.pid_index as usize].pid, id: th.tid, ..Default::default() })
        .collect();
    Ok(BindTables { processes, threads, tid_binds: t.tid_binds(), module_binds: t.module_binds })
}

/// Binds a stream of a file in memory.
pub fn bind_in_memory(file: &Tb5File, stream: u32) -> Result<MemoryBind> {
    let mut data = Vec::new();
    let tables = compute(file, stream, &mut |b| {
        data.extend_from_slice(b);
        Ok(())
    })?;
    Ok(MemoryBind { data, tables })
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
