//! The bind functions of an open file ([`Engine::dobind`], `is_bound`,
//! `unbind`, `bound`) and of the typed writer, and the close of both
//! ([`Engine::close`], [`Tb5Writer::close`]), which is where a bind asked
//! for a stream of the same session is made. They go through the engine's
//! and the output's methods: a new bind of a committed stream is five
//! queued sections of the stream, an unbind of a committed bind leaves its
//! sections out of the next directory, and a bind of a file opened
//! read-only is kept in memory.

use super::compute::{bind_in_memory, encode_tables};
use super::decode::Plan;
use crate::format::kind::SectionKind;
use crate::model::error::{Error, Result};
use crate::model::section::{BindSection, GlobalSection};
use crate::read::{BindView, ProcessTable, Tb5File};
use crate::write::engine::Engine;
use crate::write::output::{Part, Pending};
use crate::write::writer::Tb5Writer;

/// Every stored bind has this section (the data binds come in one of two kinds).
const MODULES: SectionKind = SectionKind::Bind(BindSection::Modules);

impl Engine {
    /// `TBRW_close`: commits what this session wrote (see
    /// the write layer's `commit_close` for what is refused first), then binds the
    /// streams of this session `dobind` was asked for (guide 9.3.4: a
    /// finished stream can be bound without a `done_stream`). A bind is made
    /// from committed records, so it is a second atomic append right after
    /// the commit: if it fails, the file is there with its data and without
    /// that bind, and the error says so.
    pub fn close(&mut self) -> Result<()> {
        let deferred: Vec<u32> = self.binds_at_close().iter().copied().collect();
        for &n in &deferred {
            // Checked before the commit so a refusal leaves the session open.
            match self.written_layout(n) {
                Some(layout) => {
                    Plan::for_layout(n, layout)?;
                }
                None => {
                    return Err(Error::InvalidStream {
                        stream: n,
                        why: "dobind was called for it, but its data descriptor was never finished".into(),
                    })
                }
            }
        }
        self.commit_close()?;
        self.binds_at_close_mut().clear();
        if deferred.is_empty() {
            return Ok(());
        }
        let mut bind_all = || -> Result<()> {
            let mut appender = self.continue_appending()?;
            for &n in &deferred {
                appender.dobind(n)?;
            }
            appender.commit_close()
        };
        bind_all().map_err(|e| Error::InvalidStream {
            stream: deferred[0],
            why: format!("the file was written, but binding the streams {deferred:?} after it failed: {e}"),
        })
    }

    fn committed_stream(&self, n: u32) -> Result<&Tb5File> {
        let file = self.existing().ok_or(Error::StreamNotExist { stream: n })?;
        if n >= file.stream_count() {
            if self.stream_written_here(n) {
                return Err(Error::InvalidStream {
                    stream: n,
                    why: "it is written in this session; its bind is made at close and can be read once the file is closed".into(),
                });
            }
            return Err(Error::StreamNotExist { stream: n });
        }
        Ok(file)
    }

    fn committed_bind_visible(&self, n: u32) -> bool {
        self.existing().is_some_and(|f| f.stream(n).is_ok_and(|s| s.is_bound()))
            && !self.output().is_some_and(|o| o.is_removed(MODULES, n))
    }

    /// Whether this session queued the bind sections of stream `n`.
    fn bind_queued(&self, n: u32) -> bool {
        self.output().is_some_and(|o| o.has_section(MODULES, n))
    }

    /// `TBRW_is_bound`. A stream written in this session is bound once
    /// `dobind` asked for it (the bind is made at close).
    pub fn is_bound(&self, n: u32) -> Result<bool> {
        if self.stream_written_here(n) {
            return Ok(self.binds_at_close().contains(&n));
        }
        self.committed_stream(n)?;
        Ok(self.memory_binds().contains_key(&n) || self.bind_queued(n) || self.committed_bind_visible(n))
    }

    /// `TBRW_dobind`: binds a stream. Opened for writing, the bind is
    /// appended to the file on close (and, when the file has no
    /// process/thread section, the generated tables become that section);
    /// opened read-only, it is kept in memory. A stream written in this
    /// session is bound at close, right after its commit; a descriptor that
    /// cannot be bound is refused now when it is finished, else at close.
    /// A bound stream is left as it is.
    pub fn dobind(&mut self, n: u32) -> Result<()> {
        if self.is_bound(n)? {
            return Ok(());
        }
        if self.stream_written_here(n) {
            if let Some(layout) = self.written_layout(n) {
                Plan::for_layout(n, layout)?;
            }
            self.binds_at_close_mut().insert(n);
            return Ok(());
        }
        if self.output().is_none() {
            let m = bind_in_memory(self.committed_stream(n)?, n)?;
            self.memory_binds_mut().insert(n, m);
            self.set_generated_process_threads(true);
            return Ok(());
        }
        // Made in memory (its entries packed in the widths its threads
        // need, known once it is done), written to its place, and kept:
        // a bound enumerate of this session reads it without binding again.
        let bind = bind_in_memory(self.committed_stream(n)?, n)?;
        let Some(out) = self.output_mut() else { unreachable!("checked by is_bound and above") };
        let (widths, entries) = bind.packed();
        let mut sink = out.data_sink(n)?;
        let written = out.write(&mut sink, &widths.head()).and_then(|()| out.write(&mut sink, entries));
        if let Err(e) = written {
            out.release_tail(n);
            return Err(e);
        }
        let (count, tables) = (bind.len(), &bind.tables);
        let [modules, pids, tids, tid_binds] = encode_tables(tables);
        let pending =
            |b: BindSection, part: Part, count: usize| Pending::new(SectionKind::Bind(b), n, vec![part], count as u64);
        let (np, nt) = (tables.processes.len(), tables.threads.len());
        out.finish_data(pending(BindSection::PackedData, Part::Sink(sink), count as usize))?;
        out.submit(pending(BindSection::Modules, Part::Bytes(modules), tables.module_binds.len()))?;
        out.submit(pending(BindSection::Processes, Part::Bytes(pids.clone()), np))?;
        out.submit(pending(BindSection::Threads, Part::Bytes(tids.clone()), nt))?;
        out.submit(pending(BindSection::TidBinds, Part::Bytes(tid_binds), nt))?;
        // Committed bind sections removed by an earlier unbind stay removed: these replace them.
        self.add_generated_process_threads(pids, tids, np as u64, nt as u64)?;
        self.memory_binds_mut().insert(n, bind);
        Ok(())
    }

    /// `TBRW_unbind`: removes the stream's bind. Opened for writing, the
    /// bind sections leave the file's directory on close; a bind made in
    /// memory is dropped. Not bound: [`Error::StreamNotBound`].
    pub fn unbind(&mut self, n: u32) -> Result<()> {
        if self.stream_written_here(n) {
            if !self.binds_at_close_mut().remove(&n) {
                return Err(Error::StreamNotBound { stream: n });
            }
            return Ok(());
        }
        self.committed_stream(n)?;
        let had_memory = self.memory_binds_mut().remove(&n).is_some();
        if had_memory && self.output().is_none() && self.memory_binds().is_empty() {
            self.set_generated_process_threads(false);
        }
        if self.bind_queued(n) {
            let out = self.output_mut().expect("queued binds imply output");
            out.remove(|kind, stream| stream == n && matches!(kind, SectionKind::Bind(_)));
            return Ok(());
        }
        if self.committed_bind_visible(n) {
            let mode = self.mode();
            let Some(out) = self.output_mut() else {
                return Err(Error::InvalidAccess { mode, what: "removing a stored bind from a file opened read-only" });
            };
            for b in BindSection::ALL {
                out.remove_committed(SectionKind::Bind(b), n);
            }
            return Ok(());
        }
        if had_memory {
            Ok(())
        } else {
            Err(Error::StreamNotBound { stream: n })
        }
    }

    /// The bind of a stream, for the `bind_enumerate_` and `get_one_`
    /// functions: stored, or computed in memory (and kept) when it was
    /// made in this session.
    pub fn bound(&mut self, n: u32) -> Result<BindView<'_>> {
        self.committed_stream(n)?;
        if !self.memory_binds().contains_key(&n) {
            if self.bind_queued(n) {
                let m = bind_in_memory(self.committed_stream(n)?, n)?;
                self.memory_binds_mut().insert(n, m);
            } else if self.committed_bind_visible(n) {
                let file = self.existing().expect("checked");
                return Ok(BindView::stored(file, n)?.expect("bind sections exist"));
            } else {
                return Err(Error::StreamNotBound { stream: n });
            }
        }
        Ok(BindView::Memory(&self.memory_binds()[&n]))
    }
}

impl Engine {
    /// The process/thread table `TBRW_enumerate_processes/threads` read
    /// (the section must be open for reading): the file's section, or, in
    /// a file without one, the tables generated by a read-only bind of this
    /// handle (the lowest bound stream's).
    pub fn process_table(&self) -> Result<Option<ProcessTable<'_>>> {
        let file = self.check_readable(GlobalSection::ProcessThread)?;
        if let Some(t) = file.processes()? {
            return Ok(Some(t));
        }
        let generated = self.memory_binds().iter().min_by_key(|(n, _)| **n);
        Ok(generated.map(|(_, m)| ProcessTable::generated(&m.tables)))
    }
}

impl Tb5Writer {
    /// Commits everything done so far: the file appears at its path (or
    /// the append becomes visible) only when this returns `Ok`; the binds
    /// asked for streams of this writer are made then (see [`Engine::close`]).
    pub fn close(mut self) -> Result<()> {
        self.engine_mut().close()
    }

    /// Binds a stream of the file (see [`Engine::dobind`]): a committed
    /// stream of the file being appended to, or one written by this writer;
    /// stored when the writer closes.
    pub fn dobind(&mut self, stream: u32) -> Result<()> {
        self.engine_mut().dobind(stream)
    }

    /// Removes the bind of a committed stream (see [`Engine::unbind`]).
    pub fn unbind(&mut self, stream: u32) -> Result<()> {
        self.engine_mut().unbind(stream)
    }
}
