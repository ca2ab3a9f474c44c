//! Interval streams for the timeline and the Firefox export: records with
//! a start and an end time stamp on the same clock (MTMC tasks, winIDEA
//! function calls). [`IntervalStream::open`] finds the fields and refuses
//! other streams with a message saying which export does work;
//! [`IntervalStream::interval`] reads one record, [`IntervalStream::figures`]
//! its hover text (duration, an MTMC task's counter deltas and topdown, a
//! winIDEA call's net and gross time).

use std::collections::HashMap;

use tbrw::*;

use crate::error::QueryError;
use crate::report;
use crate::stream::time_field;
use tbrw_schema::fields;
use tbrw_schema::mtmc::{counters_of, decode, Shape, NAME_BASE, UNNAMED};

/// One interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Interval {
    /// Its start.
    pub start: u64,
    /// Its end (an MTMC task that never ended has 0).
    pub end: u64,
    /// The thread (or winIDEA context) it ran on, when the records say.
    pub tid: Option<u32>,
    /// The CPU it began on, when the records say.
    pub cpu: Option<u64>,
    /// The event id naming it, when the records have one.
    pub event: Option<u32>,
}

impl Interval {
    /// Whether it ends (not before it starts).
    pub fn ended(&self) -> bool {
        self.end >= self.start && self.end != 0
    }
}

/// A stream of intervals, its fields found.
pub struct IntervalStream<'f> {
    /// The stream's index.
    pub n: u32,
    /// Its records.
    pub data: DataSection<'f>,
    start: Field,
    end: Field,
    tid: Option<Field>,
    cpu: Option<Field>,
    event: Option<Field>,
    net: Option<Field>,
    gross: Option<Field>,
    /// The MTMC record shape, for MTMC task streams.
    mtmc: Option<Shape>,
    names: HashMap<u32, String>,
    /// The stream's comment (the name of intervals without an event id).
    pub comment: String,
    /// The start field's name and unit.
    pub clock: crate::stream::TimeField,
    /// Thread names from the file's thread table.
    pub thread_names: HashMap<u32, String>,
    /// What the thread field holds, by its descriptor name: `tid` (MTMC
    /// tasks, most streams) or `context` (a winIDEA import's contexts,
    /// which are no OS threads).
    pub lane_kind: String,
    /// The pid of the records, when they have one.
    pub pid: Option<u32>,
}

impl<'f> IntervalStream<'f> {
    /// Stream `n` of `file` as intervals; an error naming the file and
    /// stream, and the exports that do work, for any other stream.
    pub fn open(file: &'f Tb5File, n: u32, what: &str) -> Result<IntervalStream<'f>, QueryError> {
        let name = file.path().display();
        let s = report::stream(file, n)?;
        let layout = s.layout()?.ok_or_else(|| QueryError::NoDescriptor { file: name.to_string(), stream: n })?;
        let times: Vec<Field> =
            layout.fields().iter().filter(|f| f.desc_type == desc_type::TIME_STAMP && f.size == 8).copied().collect();
        let samples_here = layout.legacy_pc_offset().is_some() || layout.find(desc_type::IP, None).is_some();
        if layout.legacy_pc_offset().is_some() || times.len() < 2 || times[0].subtype != times[1].subtype {
            return Err(QueryError::NoIntervals {
                file: name.to_string(),
                stream: n,
                what: what.to_owned(),
                samples: samples_here,
            });
        }
        let data = s.data()?.ok_or_else(|| QueryError::NoData { file: name.to_string(), stream: n })?;
        let size = data.record_size() as u64;
        if let Some(f) = layout.fields().iter().find(|f| u64::from(f.offset) + u64::from(f.size) > size) {
            return Err(QueryError::Damaged {
                file: name.to_string(),
                stream: n,
                what: format!("descriptor entry {} lies past the end of the {size}-byte records", f.entry),
            });
        }
        let descs = s.descriptor()?.unwrap_or_default();
        let find = |t: u16, size: u32| layout.find(t, None).filter(|f| f.size == size).copied();
        let string = |id: StringId| file.string_opt(id).ok().flatten().map(str::to_owned);
        let names: HashMap<u32, String> =
            s.events()?.unwrap_or_default().iter().filter_map(|e| string(e.name).map(|x| (e.id, x))).collect();
        let comment = s.info()?.and_then(|i| string(i.comment)).unwrap_or_else(|| format!("stream {n}"));
        let clock = time_field(file, &s, &layout)?.unwrap_or(crate::stream::TimeField {
            name: "time".into(),
            nanos: false,
            realtime: false,
        });
        let thread_names = match file.processes()? {
            Some(pt) => pt.tids().filter_map(|t| string(t.name).map(|x| (t.id, x))).collect(),
            None => HashMap::new(),
        };
        let tid = find(desc_type::TID, 4);
        let lane_kind = tid
            .and_then(|f| descs.get(f.entry))
            .and_then(|d| string(d.name))
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| "tid".to_owned());
        let pid_f = find(desc_type::PID, 4);
        let pid = pid_f.and_then(|f| data.record(0).map(|r| fields::read(r, &f) as u32));
        Ok(IntervalStream {
            n,
            start: times[0],
            end: times[1],
            tid,
            cpu: layout.find(desc_type::PROCESSOR_NUMBER, None).filter(|f| f.size <= 8).copied(),
            event: find(fields::EVENT_ID, 4),
            net: find(fields::CALL_NET, 8),
            gross: find(fields::CALL_GROSS, 8),
            mtmc: counters_of(&descs, file),
            names,
            comment,
            clock,
            thread_names,
            lane_kind,
            pid,
            data,
        })
    }

    /// Record `k` as an interval.
    pub fn interval(&self, k: u64) -> Interval {
        let r = self.data.record(k).unwrap_or_default();
        Interval {
            start: fields::read(r, &self.start),
            end: fields::read(r, &self.end),
            tid: self.tid.map(|f| fields::read(r, &f) as u32),
            cpu: self.cpu.map(|f| fields::read(r, &f)),
            event: self.event.map(|f| fields::read(r, &f) as u32),
        }
    }

    /// The name of an interval: its event's name, else the stream's comment.
    pub fn name(&self, iv: &Interval) -> &str {
        match iv.event.and_then(|e| self.names.get(&e)) {
            // MTMC tasks whose line gave no name.
            Some(n) if n == UNNAMED && self.mtmc.is_some() => "task",
            Some(n) => n,
            None => &self.comment,
        }
    }

    /// What a thread value `t` is, for lane labels and hover text: an OS
    /// thread as `<name> (tid t)` or `tid t`; a winIDEA context by the name
    /// the import gave it (`ID_TASK_1MS`, `core 2`), else `context t`.
    pub fn lane_name(&self, t: u32) -> String {
        match (self.lane_kind == "tid", self.thread_names.get(&t)) {
            // An OS thread, spelled as every output spells one.
            (true, name) => crate::names::thread_label(t, name.map(String::as_str)),
            // A winIDEA context is no OS thread: its name alone, as winIDEA shows it.
            (false, Some(name)) => name.clone(),
            (false, None) => format!("{} {t}", self.lane_kind),
        }
    }

    /// Whether this is an MTMC task stream.
    pub fn is_mtmc(&self) -> bool {
        self.mtmc.is_some()
    }

    /// Record `k`'s figures as (label, value) lines: duration, then an MTMC
    /// task's counter deltas and topdown (or why they are not valid), a
    /// winIDEA call's net and gross time.
    pub fn figures(&self, k: u64) -> Vec<(String, String)> {
        let r = self.data.record(k).unwrap_or_default();
        let iv = self.interval(k);
        let mut v = Vec::new();
        if iv.ended() {
            v.push(("duration".to_owned(), duration(iv.end - iv.start, self.clock.nanos)));
        } else {
            v.push(("duration".to_owned(), "no end".to_owned()));
        }
        if let Some(t) = iv.tid {
            // A thread by its tid, as the report shows it; anything else
            // (a winIDEA context) by the name that says which it is.
            let value = if self.lane_kind == "tid" { t.to_string() } else { self.lane_name(t) };
            v.push((self.lane_kind.clone(), value));
        }
        if let Some(c) = iv.cpu {
            v.push(("cpu".to_owned(), c.to_string()));
        }
        if let Some(f) = self.net {
            v.push(("net".to_owned(), duration(fields::read(r, &f), true)));
        }
        if let Some(f) = self.gross {
            v.push(("gross".to_owned(), duration(fields::read(r, &f), true)));
        }
        if let Some(shape) = self.mtmc {
            let d = decode(r, shape);
            let name = (d.event >= NAME_BASE).then(|| self.name(&iv).to_owned());
            let fig = crate::tasks::task_figures(&d.task, name);
            if let Some(deltas) = &fig.counter_deltas {
                for (i, x) in deltas.iter().enumerate() {
                    v.push((format!("counter {i} delta"), x.to_string()));
                }
            }
            if let Some(td) = &fig.topdown {
                v.push((
                    "topdown".to_owned(),
                    format!(
                        "retiring {:.1}%, bad speculation {:.1}%, frontend bound {:.1}%, backend bound {:.1}%",
                        td.retiring, td.bad_speculation, td.frontend_bound, td.backend_bound
                    ),
                ));
            }
            for why in &fig.invalid {
                v.push(("not valid".to_owned(), why.clone()));
            }
        }
        v
    }
}

/// A duration as text: ns, µs, ms or s with three significant decimals
/// (plain ticks when the clock is not in nanoseconds).
pub fn duration(d: u64, nanos: bool) -> String {
    if !nanos {
        return format!("{d} ticks");
    }
    let x = d as f64;
    if d < 1_000 {
        format!("{d} ns")
    } else if d < 1_000_000 {
        format!("{:.3} µs", x / 1e3)
    } else if d < 1_000_000_000 {
        format!("{:.3} ms", x / 1e6)
    } else {
        format!("{:.3} s", x / 1e9)
    }
}
