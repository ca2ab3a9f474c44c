//! A stream's bind as Intel stores it (docs/FORMAT.md, "Binds";
//! docs/BIND.md, "In Intel's layout"): three streams, in the order
//! `TBRW_dobind` appends them:
//!
//! - type 5, `"bind version 05"`: per module, its process index (u64);
//! - type 4, `"bind version 05 bound to data stream NNNN"`: per record of
//!   the bound stream, its module, process and thread index (u64 each), an
//!   OS index (u32, 0) and 4 bytes of padding: 32 bytes;
//! - type 7, `"bind version 05"`: per thread, its process index (u64).
//!
//! The indexes are into the file's own process and thread tables. The
//! bind's tables (docs/BIND.md, "Tables") become those tables when the
//! file has none (as `TBRW_dobind` writes them); a file with its own keeps
//! them first, with their indexes (legacy records name processes by
//! index), and each of the bind's processes and threads is the file's
//! record of it where the file has one (a process: the same pid, start
//! time and name; a thread: the same pid, tid and name), whatever its path
//! and flags say, else a new record after them. The name is what reports
//! show, so a report reads the same before and after the bind is stored.
//! Intel's `TBRW_dobind` has no rule to follow here: it refuses a file that
//! has a process or a thread section (77, `TBRW_SECTION_ALREADY_IN_USE`).

use std::collections::{HashMap, VecDeque};

use super::content::{Content, Records, StreamContent};
use super::emit::Bytes;
use crate::format::intel::{bind_data_comment, BIND_COMMENT};
use crate::format::packed_bind::{entry_at, with_widths, Widths};
use crate::model::error::{Error, Result};
use crate::model::process::{Pid, Tid};
use crate::model::stream::stream_type;
use crate::model::strings::StringId;
use crate::read::BindView;

/// Extended descriptor types of the bind streams' fields (`samprec_shared.h`).
const ST_PROCESS_IDX: u16 = 0x2002;
const ST_THREAD_IDX: u16 = 0x2004;
const ST_MODULE_IDX: u16 = 0x2008;
/// The type of the data bind's OS index, as Intel's files give it.
const ST_OS_IDX: u16 = 0x2027;

/// Bytes of one entry of the bind data stream.
pub(crate) const DATA_ENTRY_SIZE: usize = 32;

/// Where each of `generated` sits in `table`: an entry of the table with
/// the same `key` (each table entry taken by one generated entry at most,
/// in table order), else a new entry appended to it. Returns the table
/// index of each.
fn place_in<T: Clone, K: Eq + std::hash::Hash>(table: &mut Vec<T>, generated: &[T], key: impl Fn(&T) -> K) -> Vec<u64> {
    let mut free: HashMap<K, VecDeque<u64>> = HashMap::new();
    for (i, t) in table.iter().enumerate() {
        free.entry(key(t)).or_default().push_back(i as u64);
    }
    generated
        .iter()
        .map(|g| match free.get_mut(&key(g)).and_then(VecDeque::pop_front) {
            Some(i) => i,
            None => {
                table.push(g.clone());
                table.len() as u64 - 1
            }
        })
        .collect()
}

/// Index `i` of a generated table in the file's (`at`), keeping "none" (`u64::MAX`).
fn mapped(i: u64, at: &[u64]) -> u64 {
    usize::try_from(i).ok().and_then(|i| at.get(i)).copied().unwrap_or(u64::MAX)
}

fn index_stream<'s>(
    c: &mut Content<'s>,
    kind: u32,
    comment: &str,
    name: &str,
    desc: u16,
    v: Vec<u64>,
) -> StreamContent<'s> {
    let mut s = c.writer_stream(kind, comment);
    s.descriptor = Some(vec![c.field(desc, 0, 8, name)]);
    let count = v.len() as u64;
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    s.data = Some(Records { bytes: Bytes::Owned(bytes), count, record_size: 8, time_ordered: false });
    s
}

/// Adds the bind of data stream `n` (`bind`, over `records` records) to
/// `c`: its processes and threads into the tables, its three streams at
/// the end.
pub(crate) fn add_bind<'s>(c: &mut Content<'s>, n: u32, bind: BindView<'s>, records: u64) -> Result<()> {
    let broken = |what: &str| Error::bad(format!("the bind of stream {n} is incomplete: {what}"));
    if bind.len() != records {
        return Err(broken(&format!("{} binds for {records} records", bind.len())));
    }
    let pids: Vec<Pid<StringId>> =
        (0..bind.process_count()).map(|i| bind.process(i)).collect::<Option<_>>().ok_or_else(|| broken("process"))?;
    let tids: Vec<Tid<StringId>> =
        (0..bind.thread_count()).map(|i| bind.thread(i)).collect::<Option<_>>().ok_or_else(|| broken("thread"))?;
    let tables = c.globals.processes.get_or_insert_with(Default::default);
    let t0 = tables.1.len();
    // Names are compared as string ids: a session's ids are the file's for
    // the file's texts and new ones only for texts the file lacks.
    let pid_at = place_in(&mut tables.0, &pids, |p| (p.id, p.event_when, p.name));
    let tid_at = place_in(&mut tables.1, &tids, |t| (t.associated_pid, t.id, t.name));
    // Every thread's process: the file's own threads keep the first record
    // of their pid; the bind's their own.
    let mut thread_process: Vec<u64> = tables.1[..t0]
        .iter()
        .map(|t| tables.0.iter().position(|p| p.id == t.associated_pid).map_or(u64::MAX, |i| i as u64))
        .collect();
    thread_process.resize(tables.1.len(), u64::MAX);
    for i in 0..bind.thread_count() {
        let p = bind.tid_bind(i).ok_or_else(|| broken("thread bind"))?.pid_index;
        thread_process[tid_at[i as usize] as usize] = mapped(p, &pid_at);
    }
    let module_process: Vec<u64> = (0..bind.module_bind_count())
        .map(|i| bind.module_bind(i).map(|b| mapped(b.pid_index, &pid_at)))
        .collect::<Option<_>>()
        .ok_or_else(|| broken("module bind"))?;

    let modules =
        index_stream(c, stream_type::BIND_MODULE_INFORMATION, BIND_COMMENT, "pid_index", ST_MODULE_IDX, module_process);
    c.streams.push(modules);

    let mut data = c.writer_stream(stream_type::BIND_DATA_INFORMATION, &bind_data_comment(n));
    data.descriptor = Some(vec![
        c.field(ST_MODULE_IDX, 0, 8, "module index"),
        c.field(ST_PROCESS_IDX, 8, 8, "process index"),
        c.field(ST_THREAD_IDX, 16, 8, "thread index"),
        c.field(ST_OS_IDX, 24, 4, "os index"),
        c.field(0, 28, 4, "padding"),
    ]);
    // Each part of the entries is made from the bind on its own. Only the
    // indexes are written: the OS index and the padding are zeros in every
    // entry of the buffer, which holds nothing but entries. A thread's
    // process and thread index in the file's tables are the same in every
    // entry of the thread: looked up once per thread, not per entry.
    let thread_at: Vec<[u64; 2]> = (0..bind.thread_count())
        .map(|t| {
            let p = bind.tid_bind(t).map_or(u64::MAX, |b| b.pid_index);
            [mapped(p, &pid_at), mapped(t, &tid_at)]
        })
        .collect();
    let make = move |first: u64, count: usize, out: &mut Vec<u8>| -> Result<()> {
        let ends_early = |made: usize| {
            Error::bad(format!("the bind of stream {n} ends at record {} of {records}", first + made as u64))
        };
        // Bytes 24..32 of every entry stay zero: resized, not cleared.
        out.resize(count * DATA_ENTRY_SIZE, 0);
        if let Some((widths, packed)) = bind.packed_range(first, count) {
            if packed.len() != count * widths.entry_size() {
                return Err(ends_early(packed.len() / widths.entry_size()));
            }
            write_packed(widths, packed, &thread_at, out);
            return Ok(());
        }
        let mut binds = Vec::with_capacity(count);
        bind.data_binds(first, count, &mut binds);
        if binds.len() != count {
            return Err(ends_early(binds.len()));
        }
        for (e, b) in out.chunks_exact_mut(DATA_ENTRY_SIZE).zip(&binds) {
            e[..8].copy_from_slice(&b.module_index.to_le_bytes());
            e[8..16].copy_from_slice(&mapped(b.pid_index, &pid_at).to_le_bytes());
            e[16..24].copy_from_slice(&mapped(b.tid_index, &tid_at).to_le_bytes());
        }
        Ok(())
    };
    data.data = Some(Records {
        bytes: Bytes::Records { count: records, size: DATA_ENTRY_SIZE as u64, make: Box::new(make) },
        count: records,
        record_size: DATA_ENTRY_SIZE as u32,
        time_ordered: false,
    });
    c.streams.push(data);

    let threads = index_stream(
        c,
        stream_type::BIND_TID_INFORMATION,
        BIND_COMMENT,
        "process index",
        ST_PROCESS_IDX,
        thread_process,
    );
    c.streams.push(threads);
    Ok(())
}

/// Writes the Intel entries of `packed` (entries in `widths`) into `out`
/// (32 bytes per entry, the last 8 zero): the module index ("no module" all ones), and
/// the file's process and thread index of the entry's thread
/// (`thread_at`; a thread past it is `u64::MAX` in both).
fn write_packed(widths: Widths, packed: &[u8], thread_at: &[[u64; 2]], out: &mut [u8]) {
    fn run<const M: usize, const T: usize>(packed: &[u8], thread_at: &[[u64; 2]], out: &mut [u8]) {
        for (p, e) in packed.chunks_exact(M + T).zip(out.chunks_exact_mut(DATA_ENTRY_SIZE)) {
            let (m, t) = entry_at::<M, T>(p);
            let [pid, tid] = usize::try_from(t).ok().and_then(|t| thread_at.get(t)).copied().unwrap_or([u64::MAX; 2]);
            e[..8].copy_from_slice(&m.to_le_bytes());
            e[8..16].copy_from_slice(&pid.to_le_bytes());
            e[16..24].copy_from_slice(&tid.to_le_bytes());
        }
    }
    with_widths!(widths, run(packed, thread_at, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_entries_take_equal_entries_of_the_table_once_or_go_after_it() {
        let mut t = vec![1, 2, 3, 2];
        let same = |x: &u32| *x;
        assert_eq!(place_in(&mut t, &[2, 5, 2, 2], same), [1, 4, 3, 5]);
        assert_eq!(t, [1, 2, 3, 2, 5, 2]);
        assert_eq!(place_in(&mut t, &[], same), Vec::<u64>::new());
        let mut e: Vec<u32> = Vec::new();
        assert_eq!(place_in(&mut e, &[7], same), [0]);
        // Entries of the same key: the table's entry stays as it is.
        let mut t = vec![(1, "a"), (2, "b")];
        assert_eq!(place_in(&mut t, &[(2, "x"), (3, "c"), (1, "y")], |p| p.0), [1, 2, 0]);
        assert_eq!(t, [(1, "a"), (2, "b"), (3, "c")]);
        assert_eq!((mapped(1, &[4, 5]), mapped(u64::MAX, &[4]), mapped(9, &[4])), (5, u64::MAX, u64::MAX));
    }
}
