//! The streams' lifecycle rules of the [`Engine`]: which stream or stream
//! section may be opened for writing or reading, finished or discarded
//! when (guide 5, steps 2 and 3). Imports its parent (the engine's state)
//! and `content` (a stream's state).

use super::*;

impl Engine {
    /// `TBRW_get_number_data_streams`: committed streams plus the streams
    /// written and done in this session.
    pub fn number_of_streams(&self) -> u32 {
        let committed = self.existing.as_ref().map_or(0, |e| e.stream_count());
        let new = self.streams.iter().filter(|(_, s)| s.writing && s.done).map(|(n, _)| n + 1).max().unwrap_or(0);
        committed.max(new)
    }

    pub(super) fn committed_streams(&self) -> u32 {
        self.existing.as_ref().map_or(0, |e| e.stream_count())
    }

    /// `TBRW_writing_stream`.
    pub fn writing_stream(&mut self, n: u32) -> Result<()> {
        self.require_write("writing a stream")?;
        let committed = self.committed_streams();
        if n < committed || self.streams.get(&n).is_some_and(|s| s.writing) {
            return Err(Error::StreamInUse { stream: n });
        }
        let next = committed + self.streams.values().filter(|s| s.writing).count() as u32;
        if n > next {
            return Err(Error::InvalidStream {
                stream: n,
                why: format!("streams are numbered from 0 without gaps; the next free index is {next}"),
            });
        }
        self.streams.insert(n, StreamState::new(true));
        Ok(())
    }

    /// `TBRW_reading_stream`: a committed stream, or one this session
    /// finished with `done_stream` (see the module doc).
    pub fn reading_stream(&mut self, n: u32) -> Result<()> {
        self.require_read("reading a stream")?;
        if n >= self.committed_streams() {
            return self.reading_written_stream(n);
        }
        let file = self.committed("reading a stream")?;
        if self.streams.contains_key(&n) {
            return Err(Error::StreamInUse { stream: n });
        }
        let mut st = StreamState::new(false);
        let stream = file.stream(n)?;
        // Intel's library opens the data section of stream 0 when it has a
        // descriptor and no records (no data section in its layout) and the
        // file has VTune's legacy sample records section (as every file this
        // project writes has), and then finds no entry in it; it finds no
        // data section for such a stream otherwise, nor for any other
        // stream [R: `streams.tb7`, stream 2; a VTune XE 2016 file's
        // record-less streams 4 and 5; a winIDEA import without, and with,
        // its legacy sample records section].
        let legacy = file.intel().is_some_and(|i| {
            i.legacy.iter().any(|e| e.section_type == crate::format::intel::section_type::LEGACY_SAMPLE_RECORDS)
        });
        let no_records = legacy && n == 0 && stream.has_section(StreamSection::DataDescription);
        for s in StreamSection::ALL {
            if stream.has_section(s) || (s == StreamSection::Data && no_records) {
                st.sections[s.index()] = State::Existing;
            }
        }
        self.streams.insert(n, st);
        Ok(())
    }

    /// [`Engine::reading_stream`] of a stream of this session.
    fn reading_written_stream(&mut self, n: u32) -> Result<()> {
        match self.streams.get(&n) {
            None => return Err(Error::StreamNotExist { stream: n }),
            Some(st) if !st.done || st.reading.is_some() => return Err(Error::StreamInUse { stream: n }),
            Some(_) => {}
        }
        self.refresh_view(|kind, stream| stream == n && matches!(kind, SectionKind::Stream(_)))?;
        let st = self.streams.get_mut(&n).expect("checked above");
        st.reading = Some(st.sections.map(|x| if x == State::Written { State::Existing } else { State::Absent }));
        Ok(())
    }

    /// `TBRW_done_stream`: ends reading, or finishes a written stream. A
    /// written stream needs its stream info and data descriptor sections.
    pub fn done_stream(&mut self, n: u32) -> Result<()> {
        if let Some(st) = self.streams.get_mut(&n).filter(|st| st.done) {
            let reading = st.reading.ok_or(Error::StreamNotExist { stream: n })?;
            if let Some(open) = StreamSection::ALL.into_iter().find(|s| reading[s.index()] == State::Reading) {
                return Err(Error::StreamSectionNotClosed { stream: n, section: open });
            }
            st.reading = None;
            return Ok(());
        }
        let st = self.streams.get(&n).filter(|s| !s.done).ok_or(Error::StreamNotExist { stream: n })?;
        if let Some(open) =
            StreamSection::ALL.into_iter().find(|s| matches!(st.sections[s.index()], State::Writing | State::Reading))
        {
            return Err(Error::StreamSectionNotClosed { stream: n, section: open });
        }
        if !st.writing {
            self.streams.remove(&n);
            return Ok(());
        }
        for need in [StreamSection::StreamInfo, StreamSection::DataDescription] {
            if st.sections[need.index()] != State::Written {
                return Err(Error::SectionNotExist { section: SectionRef::Stream(n, need) });
            }
        }
        self.streams.get_mut(&n).expect("checked above").done = true;
        Ok(())
    }

    /// Drops a stream being written, with everything written to it
    /// (the typed facade does this when a stream writer is dropped).
    pub fn discard_stream(&mut self, n: u32) {
        let Some(st) = self.streams.get(&n) else { return };
        if !st.writing {
            return;
        }
        self.streams.remove(&n);
        if let Some(out) = self.out.as_mut() {
            out.release_tail(n);
            out.remove(|_, stream| stream == n);
        }
    }

    /// Whether stream `n` is being written in this session and not finished.
    pub(crate) fn stream_open_for_writing(&self, n: u32) -> bool {
        self.streams.get(&n).is_some_and(|s| s.writing && !s.done)
    }

    pub(super) fn stream_mut(&mut self, n: u32) -> Result<&mut StreamState> {
        self.streams.get_mut(&n).filter(|s| !s.done).ok_or(Error::StreamNotExist { stream: n })
    }

    /// `TBRW_writing_stream_section`.
    pub fn writing_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        self.require_write("writing a stream section")?;
        let out = self.out.as_mut().expect("checked above");
        let st = self.streams.get_mut(&n).filter(|st| !st.done).ok_or(Error::StreamNotExist { stream: n })?;
        if !st.writing {
            return Err(Error::InvalidStream { stream: n, why: "it is open for reading, not writing".into() });
        }
        if st.sections[s.index()] != State::Absent {
            return Err(Error::SectionInUse { section: SectionRef::Stream(n, s) });
        }
        match s {
            StreamSection::EventDescription => {
                st.events = Some((SectionSink::memory(), 0));
                st.event_known = [false; 256];
            }
            StreamSection::DataDescription => st.descs.clear(),
            StreamSection::Data => st.data = Some(DataState::new(out.data_sink(n)?)),
            StreamSection::UserDefinedStream => st.user = None,
            StreamSection::StreamInfo => st.info = None,
        }
        st.sections[s.index()] = State::Writing;
        Ok(())
    }

    /// `TBRW_reading_stream_section`.
    pub fn reading_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        let st = self.streams.get_mut(&n).ok_or(Error::StreamNotExist { stream: n })?;
        let sections = match (st.writing, st.done, st.reading.as_mut()) {
            (false, _, _) => &mut st.sections,
            (true, true, Some(reading)) => reading,
            (true, true, None) => {
                return Err(Error::InvalidStream { stream: n, why: "it is not open for reading".into() })
            }
            (true, false, _) => {
                return Err(Error::InvalidStream { stream: n, why: "it is open for writing, not reading".into() })
            }
        };
        match sections[s.index()] {
            State::Existing => {
                sections[s.index()] = State::Reading;
                Ok(())
            }
            State::Reading => Err(Error::SectionInUse { section: SectionRef::Stream(n, s) }),
            _ => Err(Error::SectionNotExist { section: SectionRef::Stream(n, s) }),
        }
    }

    /// Checks that a stream section is open for reading (`get_`/`enumerate_`)
    /// and returns the file to read it from.
    pub fn check_stream_readable(&self, n: u32, s: StreamSection) -> Result<&Tb5File> {
        let st = self.streams.get(&n).ok_or(Error::StreamNotExist { stream: n })?;
        let sections = if st.writing { st.reading.as_ref() } else { Some(&st.sections) };
        if sections.is_none_or(|x| x[s.index()] != State::Reading) {
            return Err(Error::SectionNotReadable { section: SectionRef::Stream(n, s) });
        }
        if st.writing {
            self.view_file()
        } else {
            self.committed("reading")
        }
    }

    /// `TBRW_done_stream_section`. As [`Engine::done_section`], the section
    /// is closed whatever this returns (an invalid one is dropped).
    ///
    /// Sections come in any order (guide 5.2): a data section done before
    /// the descriptor waits until the descriptor is done, and a descriptor
    /// done after data arrived must fit them (else it is the one dropped,
    /// and the data wait for another).
    pub fn done_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        let section = SectionRef::Stream(n, s);
        let st = self.streams.get_mut(&n).ok_or(Error::StreamNotExist { stream: n })?;
        if let Some(reading) = st.reading.as_mut().filter(|r| r[s.index()] == State::Reading) {
            reading[s.index()] = State::Existing;
            return Ok(());
        }
        match st.sections[s.index()] {
            State::Reading => {
                st.sections[s.index()] = State::Existing;
                return Ok(());
            }
            State::Writing => {}
            _ => return Err(Error::SectionNotExist { section }),
        }
        if s == StreamSection::Data && st.layout.is_none() {
            if let Some(why) = st.data.as_ref().and_then(|d| d.poisoned.clone()) {
                self.discard_stream_section(n, s);
                return Err(Error::UnsupportedDataSize { stream: n, what: why });
            }
            st.data_waiting = true;
            st.sections[s.index()] = State::Written;
            return Ok(());
        }
        let r = self.finish_stream_section(n, s);
        if r.is_err() {
            self.discard_stream_section(n, s);
        }
        r
    }

    fn finish_stream_section(&mut self, n: u32, s: StreamSection) -> Result<()> {
        if s == StreamSection::Data {
            self.note_event_indices(n)?;
        }
        let st = self.streams.get_mut(&n).expect("checked by the caller");
        let pending = st.finish_section(n, s)?;
        if s == StreamSection::DataDescription {
            if let Err(e) = st.check_early_data(n) {
                st.layout = None;
                return Err(e);
            }
        }
        let out = self.out.as_mut().expect("writing implies output");
        if s == StreamSection::Data && pending.is_direct() {
            // Written where it lies: it counts once its bytes are all there.
            out.finish_data(pending)?;
        } else {
            out.submit(pending)?;
        }
        st.sections[s.index()] = State::Written;
        if s == StreamSection::DataDescription && st.data_waiting {
            st.data_waiting = false;
            if let Err(e) = self.finish_stream_section(n, StreamSection::Data) {
                let st = self.streams.get_mut(&n).expect("checked by the caller");
                st.sections[StreamSection::Data.index()] = State::Absent;
                st.data = None;
                if let Some(out) = self.out.as_mut() {
                    out.release_tail(n);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Drops a global section being written, as if it had never been opened.
    pub fn discard_section(&mut self, s: GlobalSection) {
        if self.globals[s.index()] == State::Writing {
            self.globals[s.index()] = State::Absent;
            self.builders[s.index()] = GlobalBuilder::None;
            if s == GlobalSection::VersionInfo {
                self.written_version = None;
            }
        }
    }

    /// Drops a stream section being written, as if it had never been opened.
    pub fn discard_stream_section(&mut self, n: u32, s: StreamSection) {
        let Some(st) = self.streams.get_mut(&n) else { return };
        if st.sections[s.index()] != State::Writing {
            return;
        }
        st.sections[s.index()] = State::Absent;
        match s {
            StreamSection::EventDescription => {
                st.events = None;
                st.event_known = [false; 256];
            }
            StreamSection::DataDescription => {
                st.descs.clear();
                st.layout = None;
            }
            StreamSection::Data => {
                st.data = None;
                st.events_used = None;
                if let Some(out) = self.out.as_mut() {
                    out.release_tail(n);
                }
            }
            StreamSection::UserDefinedStream => st.user = None,
            StreamSection::StreamInfo => st.info = None,
        }
    }
}
