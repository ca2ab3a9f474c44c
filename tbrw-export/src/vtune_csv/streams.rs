//! One stream's CSV files, by what its records hold: intervals (two time
//! stamps on one clock), legacy samples (cumulative counts per event),
//! values written to variables (one file per variable), or counters and
//! instantaneous values (with the samples' module counts when the records
//! have an address). Imports only its parent's helpers, `tbrw`,
//! `tbrw-schema` and `tbrw-query`'s stream fields.

use std::borrow::Cow;
use std::collections::HashMap;

use tbrw::*;
use tbrw_schema::fields::{self, read};

use super::{
    clock_of, counter_kind, id_cells, id_header, module_counts, per_cpu_counters, sanitize, short_name, write_file,
    Clock, CsvOptions, CsvReport, Kind, Verified, NAME_THE_CLOCK,
};
use crate::error::ExportError;
use crate::folder::Folder;

/// A stream's main file's name, `Ok`, or why it has none, `Err`; or the
/// export's error.
type Exported = std::result::Result<std::result::Result<String, String>, ExportError>;

/// Where an export's files go and what it found so far.
pub(super) struct Out<'a, 'f> {
    pub verified: Verified<'f>,
    pub dir: &'a mut dyn Folder,
    pub host: &'a str,
    /// Files written besides the stream's main one.
    pub extra: Vec<String>,
    pub report: CsvReport,
}

/// Exports stream `n`: `Ok(Ok(name))`, or `Ok(Err(why))` when the stream
/// has nothing VTune can take (no clock, no values).
pub(super) fn export_stream(n: u32, opts: &CsvOptions, out: &mut Out<'_, '_>) -> Exported {
    let f = out.verified.file;
    let s = f.stream(n)?;
    let Some(layout) = s.layout()? else { return Ok(Err("it has no data descriptor".into())) };
    let Some(data) = s.data()? else { return Ok(Err("it has no data".into())) };
    let events = s.events()?.unwrap_or_default();
    let mut st = StreamCsv {
        f,
        n,
        descs: s.descriptor()?.unwrap_or_default(),
        // Sanitized once here, not per row.
        event_names: events
            .iter()
            .map(|e| (e.id, sanitize(f.string_opt(e.name).ok().flatten().unwrap_or("event"))))
            .collect(),
        event_id: layout.find(fields::EVENT_ID, None).filter(|fl| fl.size == 4).copied(),
        comment: s.info()?.and_then(|i| f.string_opt(i.comment).ok().flatten().map(str::to_owned)),
        pid: layout.find(desc_type::PID, None).filter(|fl| fl.size <= 8).copied(),
        tid: layout.find(desc_type::TID, None).filter(|fl| fl.size <= 8).copied(),
        events,
        data,
        time: (0, 8, Clock::Rdtsc),
        layout,
    };
    let legacy = st.layout.legacy_pc_offset();
    let times: Vec<Field> = st
        .layout
        .fields()
        .iter()
        .filter(|fl| fl.desc_type == desc_type::TIME_STAMP && (fl.size == 8 || fl.size == 4))
        .copied()
        .collect();
    st.time = match (legacy, st.layout.tsc_offset()) {
        (Some(_), Some(t)) => (t, 8u32, Clock::Rdtsc),
        _ => match times.first() {
            None => return Ok(Err("its records have no time stamp".into())),
            Some(fl) => match stream_clock(fl, &st.name_of(fl), opts) {
                Ok(c) => (fl.offset, fl.size, c),
                Err(why) => return Ok(Err(why)),
            },
        },
    };
    // Interval streams: a second time stamp on the same clock is the end.
    if legacy.is_none() && times.len() >= 2 && stream_clock(&times[1], &st.name_of(&times[1]), opts) == Ok(st.time.2) {
        return st.intervals(times[1], out);
    }
    // Discrete streams.
    if let Some(pc) = legacy {
        return st.legacy(pc, out);
    }
    let value = st.layout.find(fields::WRITTEN_VALUE, None).filter(|fl| fl.size == 8).copied();
    if let (Some(id), Some(value)) = (st.event_id, value) {
        return st.written_values(id, value, out);
    }
    st.counters(out)
}

/// A stream's clock: the field's own, or the one the options name for
/// nanoseconds of a clock the file does not name.
fn stream_clock(fl: &Field, name: &str, opts: &CsvOptions) -> std::result::Result<Clock, String> {
    match (clock_of(fl, name), opts.clock) {
        (Err(_), Some(c)) if fl.subtype == desc_subtype::TS_NANOSECONDS => Ok(c),
        (Err(why), None) if fl.subtype == desc_subtype::TS_NANOSECONDS => Err(format!("{why}; {NAME_THE_CLOCK}")),
        (r, _) => r,
    }
}

/// One stream being exported: what every kind of stream's file needs.
struct StreamCsv<'f> {
    f: &'f Tb5File,
    n: u32,
    layout: RecordLayout,
    data: DataSection<'f>,
    descs: Vec<DescEntry<StringId>>,
    events: Vec<Event<StringId>>,
    event_names: HashMap<u32, String>,
    /// The records' event id field, when they have one.
    event_id: Option<Field>,
    comment: Option<String>,
    /// The time stamp's offset, size and clock.
    time: (u32, u32, Clock),
    pid: Option<Field>,
    tid: Option<Field>,
}

impl StreamCsv<'_> {
    fn name_of(&self, fl: &Field) -> String {
        self.descs
            .get(fl.entry)
            .and_then(|d| self.f.string_opt(d.name).ok().flatten())
            .map_or_else(|| fields::name(fl.desc_type).unwrap_or("field").to_owned(), str::to_owned)
    }

    fn event_name(&self, id: u32) -> Cow<'_, str> {
        self.event_names.get(&id).map_or_else(|| format!("event_{id:08X}").into(), |n| n.as_str().into())
    }

    fn time(&self, r: &[u8]) -> u64 {
        fields::read_le(r, self.time.0 as usize, self.time.1 as usize)
    }

    fn clock(&self) -> Clock {
        self.time.2
    }

    /// The stream's files' names begin with this.
    fn base(&self) -> String {
        format!("{}-s{}", short_name(self.comment.as_deref()), self.n)
    }

    fn path(&self, host: &str) -> String {
        format!("{}-hostname-{host}.csv", self.base())
    }

    /// Its samples' module counts, in a file of their own.
    fn modules_file(&self, out: &mut Out<'_, '_>) -> std::result::Result<String, ExportError> {
        let p = format!("{}-modules-hostname-{}.csv", self.base(), out.host);
        module_counts(self.f, self.n, out.dir, &p, self.clock())?;
        Ok(p)
    }

    /// An interval stream: a row per ended interval, named after its event
    /// or the stream; and its per-CPU counters.
    fn intervals(&self, end: Field, out: &mut Out<'_, '_>) -> Exported {
        let clock = self.clock();
        let both = [self.pid, self.tid];
        let name = sanitize(self.comment.as_deref().unwrap_or("interval"));
        let path = self.path(out.host);
        let mut unended = 0u64;
        out.verified.check()?;
        write_file(out.dir, &path, |w| {
            write!(w, "name,start_tsc.{},end_tsc", clock.suffix())?;
            id_header(w, both)?;
            for r in self.data.records() {
                let (start, stop) = (self.time(r), read(r, &end));
                if stop < start {
                    unended += 1;
                    continue;
                }
                // Named after the record's event when it has one, else the stream.
                let label = self.event_id.map_or(name.as_str().into(), |fl| self.event_name(read(r, &fl) as u32));
                write!(w, "{},{},{}", label, clock.cell(start), clock.cell(stop))?;
                id_cells(w, r, both)?;
            }
            Ok(())
        })?;
        if unended > 0 {
            out.report.unended.push((self.n, unended));
        }
        let time = |r: &[u8]| self.time(r);
        let name_of = |fl: &Field| self.name_of(fl);
        let (files, decreasing) =
            per_cpu_counters(&self.layout, &self.data, &name_of, (time, end), clock, out.dir, &self.base(), out.host)?;
        out.extra.extend(files);
        if decreasing > 0 {
            out.report.decreasing.push((self.n, decreasing));
        }
        Ok(Ok(path))
    }

    /// Legacy samples: one cumulative column per event, counting sav per sample.
    fn legacy(&self, pc: u32, out: &mut Out<'_, '_>) -> Exported {
        if self.events.is_empty() {
            return Ok(Err("its legacy samples have no events to count".into()));
        }
        out.verified.check()?;
        let clock = self.clock();
        let column: HashMap<u32, usize> = self.events.iter().enumerate().map(|(i, e)| (e.id, i)).collect();
        let names: Vec<String> =
            self.events.iter().map(|e| sanitize(self.f.string_opt(e.name).ok().flatten().unwrap_or("event"))).collect();
        let savs: Vec<u64> = self.events.iter().map(|e| e.sav.max(1)).collect();
        let path = self.path(out.host);
        write_file(out.dir, &path, |w| {
            write!(w, "tsc.{}", clock.suffix())?;
            for nm in &names {
                write!(w, ",{nm}.COUNT")?;
            }
            writeln!(w, ",pid,tid")?;
            let mut totals = vec![0u64; names.len()];
            for r in self.data.records() {
                let rec = SampleRecordPc::from_slice(&r[pc as usize..]).unwrap_or_default();
                if let Some(&c) = column.get(&u32::from(rec.event_index())) {
                    totals[c] += savs[c];
                }
                write!(w, "{}", clock.cell(self.time(r)))?;
                for t in &totals {
                    write!(w, ",{t}")?;
                }
                let pid = if rec.pid_rec_index_raw() { rec.pid_rec_index.to_string() } else { String::new() };
                writeln!(w, ",{pid},{}", rec.tid)?;
            }
            Ok(())
        })?;
        let p = self.modules_file(out)?;
        out.extra.push(p);
        Ok(Ok(path))
    }

    /// Values written to variables (winIDEA data): one file per variable,
    /// because each row holds one variable's new value.
    fn written_values(&self, id: Field, value: Field, out: &mut Out<'_, '_>) -> Exported {
        let clock = self.clock();
        let tid_only = [None, self.tid];
        // (variable, record) pairs, so each file is written from one sorted run.
        let mut order: Vec<(u32, u64)> =
            self.data.records().enumerate().map(|(i, r)| (read(r, &id) as u32, i as u64)).collect();
        order.sort_unstable();
        if order.is_empty() {
            return Ok(Err("it has no values".into()));
        }
        out.verified.check()?;
        let mut paths = Vec::new();
        for run in order.chunk_by(|a, b| a.0 == b.0) {
            let var = self.event_name(run[0].0);
            let p = format!("{}-{var}-hostname-{}.csv", self.base(), out.host);
            write_file(out.dir, &p, |w| {
                write!(w, "tsc.{},{var}.INST", clock.suffix())?;
                id_header(w, tid_only)?;
                for &(_, i) in run {
                    let r = self.data.record(i).unwrap_or_default();
                    write!(w, "{},{}", clock.cell(self.time(r)), read(r, &value))?;
                    id_cells(w, r, tid_only)?;
                }
                Ok(())
            })?;
            paths.push(p);
        }
        let first = paths.remove(0);
        out.extra.extend(paths);
        Ok(Ok(first))
    }

    /// Counters and instantaneous values, one column each; samples with an
    /// address (a perf import, the collector's recordings) also get their
    /// counts per module, as cumulative COUNT columns per time bucket.
    fn counters(&self, out: &mut Out<'_, '_>) -> Exported {
        let clock = self.clock();
        let both = [self.pid, self.tid];
        let counters: Vec<(Field, Kind, bool, String)> = self
            .layout
            .fields()
            .iter()
            .filter_map(|fl| {
                counter_kind(fl.desc_type)
                    .filter(|_| fl.size == 8 || fl.size == 4)
                    .map(|(k, float)| (*fl, k, float && fl.size == 8, sanitize(&self.name_of(fl))))
            })
            .collect();
        let call_chains = self.layout.find(fields::CALLCHAIN_SAMPLE, None).is_some();
        let samples = tbrw_query::stream::SampleFields::of(self.f, self.n)?.bindable() && !call_chains;
        if counters.is_empty() {
            if samples {
                out.verified.check()?;
                return Ok(Ok(self.modules_file(out)?));
            }
            if call_chains {
                return Ok(Err(
                    "it holds the call-chain frames of another stream's samples, which that stream's modules file counts"
                        .into(),
                ));
            }
            return Ok(Err(
                "its records have no counter or instantaneous value, and no instruction pointer and pid to count samples by module (docs/EXPORT.md lists the field types)".into()
            ));
        }
        out.verified.check()?;
        if samples {
            let p = self.modules_file(out)?;
            out.extra.push(p);
        }
        let path = self.path(out.host);
        write_file(out.dir, &path, |w| {
            write!(w, "tsc.{}", clock.suffix())?;
            for (_, kind, _, nm) in &counters {
                write!(w, ",{nm}.{}", if *kind == Kind::Count { "COUNT" } else { "INST" })?;
            }
            id_header(w, both)?;
            for r in self.data.records() {
                write!(w, "{}", clock.cell(self.time(r)))?;
                for (fl, _, float, _) in &counters {
                    let v = read(r, fl);
                    if *float {
                        // A value that is not a finite number has no CSV form: the cell stays empty.
                        let x = f64::from_bits(v);
                        if x.is_finite() {
                            write!(w, ",{x}")?;
                        } else {
                            write!(w, ",")?;
                        }
                    } else {
                        write!(w, ",{v}")?;
                    }
                }
                id_cells(w, r, both)?;
            }
            Ok(())
        })?;
        Ok(Ok(path))
    }
}
