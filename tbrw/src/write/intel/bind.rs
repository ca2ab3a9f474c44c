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
//! index), and the bind's processes and threads follow them, unless they
//! are already the tables' last entries (a stream bound again).

use super::content::{Content, Records, StreamContent};
use super::emit::Bytes;
use crate::format::intel::{bind_data_comment, BIND_COMMENT};
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

/// Binds handed to the data stream per chunk.
const CHUNK: usize = 1 << 16;

/// Where `generated` sits in `table`: at its end when the table ends with
/// it, else appended to it. Returns the index of its first entry.
fn place_in<T: PartialEq + Clone>(table: &mut Vec<T>, generated: &[T]) -> u64 {
    if table.ends_with(generated) {
        return (table.len() - generated.len()) as u64;
    }
    let base = table.len() as u64;
    table.extend_from_slice(generated);
    base
}

/// `i + base`, keeping "none" (`u64::MAX`).
fn shifted(i: u64, base: u64) -> u64 {
    if i == u64::MAX {
        i
    } else {
        i + base
    }
}

fn index_stream<'s>(c: &mut Content<'s>, kind: u32, comment: &str, name: &str, desc: u16, v: Vec<u64>) -> StreamContent<'s> {
    let mut s = c.writer_stream(kind, comment);
    s.descriptor = Some(vec![c.field(desc, 0, 8, name)]);
    let count = v.len() as u64;
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    s.data = Some(Records { bytes: Bytes::Owned(bytes), count, record_size: 8 });
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
    let (p0, t0) = (tables.0.len(), tables.1.len());
    let (pid_base, tid_base) = (place_in(&mut tables.0, &pids), place_in(&mut tables.1, &tids));
    // Every thread's process: the file's own threads keep the first record
    // of their pid among the file's own processes; the bind's its own.
    let own_pids = &tables.0[..p0];
    let mut thread_process: Vec<u64> = tables.1[..t0]
        .iter()
        .map(|t| own_pids.iter().position(|p| p.id == t.associated_pid).map_or(u64::MAX, |i| i as u64))
        .collect();
    thread_process.resize(tables.1.len(), u64::MAX);
    for i in 0..bind.thread_count() {
        let p = bind.tid_bind(i).ok_or_else(|| broken("thread bind"))?.pid_index;
        thread_process[(tid_base + i) as usize] = shifted(p, pid_base);
    }
    let module_process: Vec<u64> = (0..bind.module_bind_count())
        .map(|i| bind.module_bind(i).map(|b| shifted(b.pid_index, pid_base)))
        .collect::<Option<_>>()
        .ok_or_else(|| broken("module bind"))?;

    let modules = index_stream(
        c,
        stream_type::BIND_MODULE_INFORMATION,
        BIND_COMMENT,
        "pid_index",
        ST_MODULE_IDX,
        module_process,
    );
    c.streams.push(modules);

    let mut data = c.writer_stream(stream_type::BIND_DATA_INFORMATION, &bind_data_comment(n));
    data.descriptor = Some(vec![
        c.field(ST_MODULE_IDX, 0, 8, "module index"),
        c.field(ST_PROCESS_IDX, 8, 8, "process index"),
        c.field(ST_THREAD_IDX, 16, 8, "thread index"),
        c.field(ST_OS_IDX, 24, 4, "os index"),
        c.field(0, 28, 4, "padding"),
    ]);
    let fill = move |sink: &mut dyn FnMut(&[u8]) -> Result<()>| -> Result<()> {
        let mut binds = Vec::with_capacity(CHUNK);
        let mut out = Vec::with_capacity(CHUNK * DATA_ENTRY_SIZE);
        let mut at = 0;
        while at < records {
            binds.clear();
            bind.data_binds(at, CHUNK, &mut binds);
            if binds.is_empty() {
                return Err(Error::bad(format!("the bind of stream {n} ends at record {at} of {records}")));
            }
            at += binds.len() as u64;
            out.clear();
            for b in &binds {
                out.extend_from_slice(&b.module_index.to_le_bytes());
                out.extend_from_slice(&shifted(b.pid_index, pid_base).to_le_bytes());
                out.extend_from_slice(&shifted(b.tid_index, tid_base).to_le_bytes());
                out.extend_from_slice(&[0u8; 8]);
            }
            sink(&out)?;
        }
        Ok(())
    };
    data.data = Some(Records {
        bytes: Bytes::Fill { len: records * DATA_ENTRY_SIZE as u64, fill: Box::new(fill) },
        count: records,
        record_size: DATA_ENTRY_SIZE as u32,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_entries_go_after_the_files_own_or_where_they_already_are() {
        let mut t = vec![1, 2, 3];
        assert_eq!(place_in(&mut t, &[4, 5]), 3);
        assert_eq!(t, [1, 2, 3, 4, 5]);
        assert_eq!(place_in(&mut t, &[4, 5]), 3, "bound again");
        assert_eq!(place_in(&mut t, &[]), 5);
        let mut e: Vec<u8> = Vec::new();
        assert_eq!(place_in(&mut e, &[7]), 0);
        assert_eq!((shifted(2, 3), shifted(u64::MAX, 3)), (5, u64::MAX));
    }
}
