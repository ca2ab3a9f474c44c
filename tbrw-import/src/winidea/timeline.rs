//! Calls and data writes built from the timeline's events, with the
//! statistics winIDEA shows for each function, line, variable and state.

use std::collections::{HashMap, HashSet};

use super::text1::Export;
use super::{Pos, TimelineEvent};
use crate::error::ImportError;

/// One call of a function or line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// Handle.
    pub handle: u32,
    /// Context.
    pub context: u32,
    /// Entry time.
    pub start: i64,
    /// Exit time.
    pub end: i64,
    /// Time running (not suspended).
    pub net: i64,
    /// Time any area of the same context ran between entry and exit
    /// (the call and its callees, not other contexts).
    pub gross: i64,
}

/// A data write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    /// The variable's handle (area type 2 or 4).
    pub handle: u32,
    /// Context.
    pub context: u32,
    /// Time.
    pub time: i64,
    /// Value written.
    pub value: u64,
}

/// Count, sum, minimum and maximum of a series of durations, kept as they
/// come so that statistics need no memory per call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Series {
    /// Values added.
    pub n: u64,
    /// Their sum (i128: no overflow for any number of 63-bit values).
    pub sum: i128,
    /// The smallest (0 when empty, as winIDEA shows).
    pub min: i64,
    /// The largest (0 when empty).
    pub max: i64,
}

impl Series {
    fn add(&mut self, v: i64) {
        if self.n == 0 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.n += 1;
        self.sum += i128::from(v);
    }

    /// The sum, saturated to an i64.
    pub fn total(&self) -> i64 {
        self.sum.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// The mean rounded down and rounded up (equal when exact; 0 when empty).
    pub fn mean_range(&self) -> (i64, i64) {
        if self.n == 0 {
            return (0, 0);
        }
        let n = i128::from(self.n);
        let lo = self.sum.div_euclid(n);
        let hi = if self.sum.rem_euclid(n) == 0 { lo } else { lo + 1 };
        (lo as i64, hi as i64)
    }
}

/// The statistics the timeline gives for one (context, handle), one handle
/// over all contexts, a variable or a state value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Entries (functions) or writes (data).
    pub count: i64,
    /// Total net time (functions) or time in the state (data states).
    pub net: i64,
    /// Net times of complete calls.
    pub nets: Series,
    /// Gross times of complete calls.
    pub gross: Series,
    /// Call times (entry to exit) of complete calls.
    pub call: Series,
    /// Times between successive entries.
    pub periods: Series,
    /// The latest entry, for the next period.
    pub last_entry: Option<i64>,
}

impl Figures {
    fn enter(&mut self, t: i64) {
        self.count += 1;
        if let Some(p) = self.last_entry.replace(t) {
            self.periods.add(t - p);
        }
    }
    fn ran(&mut self, d: i64) {
        self.net = self.net.saturating_add(d);
    }
    fn completed(&mut self, net: i64, gross: i64, call: i64) {
        self.nets.add(net);
        self.gross.add(gross);
        self.call.add(call);
    }
}

/// What building calls found.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Complete calls, in exit order.
    pub calls: Vec<Call>,
    /// Data writes, in time order.
    pub writes: Vec<Write>,
    /// Statistics per (context, handle) for functions and lines.
    pub functions: HashMap<(u32, u32), Figures>,
    /// Statistics per handle over all contexts (winIDEA's "neutral" view).
    pub neutral: HashMap<u32, Figures>,
    /// Statistics per (variable handle) for data, and per (state handle,
    /// value) for the state values the export's STATISTICS lists: a
    /// variable can take as many values as it has writes, so figures for
    /// every value would grow with the events (about 250 B a value); the
    /// check compares the listed ones only.
    pub data: HashMap<(u32, Option<u64>), Figures>,
    /// Calls under way when the trace begins (first event R, S or X), not written as intervals.
    pub started_before: u64,
    /// Calls still open at the end, not written as intervals.
    pub unfinished: u64,
}

#[derive(Clone, Copy)]
struct Open {
    start: Option<i64>,
    running_since: Option<i64>,
    net: i64,
    /// The context's active time at entry.
    active_at_entry: i64,
}

/// When a context has something running, and for how long it has so far.
#[derive(Clone, Copy, Default)]
struct ContextClock {
    running: u32,
    since: i64,
    total: i64,
}

impl ContextClock {
    fn at(&self, t: i64) -> i64 {
        self.total.saturating_add(if self.running > 0 { t - self.since } else { 0 })
    }
    fn start(&mut self, t: i64) {
        if self.running == 0 {
            self.since = t;
        }
        self.running += 1;
    }
    fn stop(&mut self, t: i64) {
        self.running = self.running.saturating_sub(1);
        if self.running == 0 {
            self.total = self.total.saturating_add(t - self.since);
        }
    }
}

/// The largest time stamp magnitude accepted (2^62 - 1 ns, 146 years).
pub(crate) const MAX_TIME_NS: u64 = (1 << 62) - 1;

/// What [`Builder::push`] hands out as the timeline goes: a complete call
/// (at its exit) or a data write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Built {
    /// A call of a function or line, complete.
    Call(Call),
    /// A write of a variable.
    Write(Write),
}

/// Builds calls, writes and statistics from timeline events pushed in time
/// order, holding only the open calls and the figures (per handle and
/// context, per variable, per state value the export's STATISTICS lists):
/// memory does not grow with the events, so a `.BIN` of any size
/// streams through it. Unknown handles are an error (with the line or
/// byte); time going backwards is an error. Errors name `text` for the
/// events of the export's TIMELINE section (a line) and `bin` for those of
/// the `.BIN` (a byte).
pub struct Builder<'a> {
    ex: &'a Export,
    text: &'a str,
    bin: &'a str,
    tl: Timeline,
    stacks: HashMap<(u32, u32), Vec<Open>>,
    clocks: HashMap<u32, ContextClock>,
    last_time: i64,
    last_write: HashMap<u32, (i64, u64)>,
    /// The (state handle, value) pairs the export's STATISTICS lists: the
    /// only state values [`Timeline::data`] keeps figures for.
    states: HashSet<(u32, u64)>,
}

impl<'a> Builder<'a> {
    /// A builder for the events of export `ex`.
    pub fn new(ex: &'a Export, text: &'a str, bin: &'a str) -> Builder<'a> {
        Builder {
            ex,
            text,
            bin,
            tl: Timeline::default(),
            stacks: HashMap::new(),
            clocks: HashMap::new(),
            last_time: i64::MIN,
            last_write: HashMap::new(),
            states: ex
                .stats
                .iter()
                .filter(|r| matches!(r.handle >> 28, 3 | 5))
                .filter_map(|r| Some((r.handle, r.value?)))
                .collect(),
        }
    }

    /// Takes the next event; a call it completes or a write it is goes to `out`.
    pub fn push(&mut self, e: &TimelineEvent, out: &mut dyn FnMut(Built)) -> Result<(), ImportError> {
        let bad = |e: &TimelineEvent, what: String| {
            let input = match e.at {
                Pos::Line(_) => self.text,
                Pos::Byte(_) => self.bin,
            };
            ImportError::invalid(input, e.at.place(), what)
        };
        if !self.ex.names.contains_key(&e.handle) {
            return Err(bad(e, format!("handle {:08X} is not in any HANDLE section", e.handle)));
        }
        // Within this range every difference of two times fits an i64.
        if e.time.unsigned_abs() > MAX_TIME_NS {
            return Err(bad(e, format!("time {} ns is 2^62 ns (146 years) or more from the session's zero", e.time)));
        }
        if e.time < self.last_time {
            return Err(bad(e, format!("time {} goes back from {}", e.time, self.last_time)));
        }
        self.last_time = e.time;
        let tl = &mut self.tl;
        let area = e.handle >> 28;
        let is_data = matches!(area, 2..=5);
        if e.kind == b'W' || (is_data && e.kind == b'E') {
            // A write: to the variable (W on the variable's handle) or entering a state (E on the state handle).
            let var = if area == 3 || area == 5 { e.handle - (1 << 28) } else { e.handle };
            let state = var + (1 << 28);
            if let Some((t0, v0)) = self.last_write.insert(var, (e.time, e.value)) {
                if self.states.contains(&(state, v0)) {
                    let fig = tl.data.entry((state, Some(v0))).or_default();
                    fig.net = fig.net.saturating_add(e.time - t0);
                }
            }
            tl.data.entry((var, None)).or_default().count += 1;
            if self.states.contains(&(state, e.value)) {
                tl.data.entry((state, Some(e.value))).or_default().count += 1;
            }
            out(Built::Write(Write { handle: var, context: e.context, time: e.time, value: e.value }));
            return Ok(());
        }
        if is_data {
            return Ok(()); // exits of states: the next write closes them
        }
        let key = (e.context, e.handle);
        let stack = self.stacks.entry(key).or_default();
        let clock = self.clocks.entry(e.context).or_default();
        let fig = tl.functions.entry(key).or_default();
        let all = tl.neutral.entry(e.handle).or_default();
        match e.kind {
            b'E' => {
                fig.enter(e.time);
                all.enter(e.time);
                let active_at_entry = clock.at(e.time);
                clock.start(e.time);
                stack.push(Open { start: Some(e.time), running_since: Some(e.time), net: 0, active_at_entry });
            }
            b'S' => match stack.last_mut() {
                Some(o) => {
                    if let Some(r) = o.running_since.take() {
                        o.net += e.time - r;
                        fig.ran(e.time - r);
                        all.ran(e.time - r);
                        clock.stop(e.time);
                    }
                }
                None => {
                    tl.started_before += 1;
                    stack.push(Open { start: None, running_since: None, net: 0, active_at_entry: 0 });
                }
            },
            b'R' => match stack.last_mut() {
                Some(o) => {
                    if o.running_since.is_none() {
                        o.running_since = Some(e.time);
                        clock.start(e.time);
                    }
                }
                None => {
                    tl.started_before += 1;
                    clock.start(e.time);
                    stack.push(Open { start: None, running_since: Some(e.time), net: 0, active_at_entry: 0 });
                }
            },
            _ => {
                // X
                match stack.pop() {
                    Some(mut o) => {
                        if let Some(r) = o.running_since {
                            o.net += e.time - r;
                            fig.ran(e.time - r);
                            all.ran(e.time - r);
                            clock.stop(e.time);
                        }
                        if let Some(s) = o.start {
                            let gross = clock.at(e.time) - o.active_at_entry;
                            fig.completed(o.net, gross, e.time - s);
                            all.completed(o.net, gross, e.time - s);
                            out(Built::Call(Call {
                                handle: e.handle,
                                context: e.context,
                                start: s,
                                end: e.time,
                                net: o.net,
                                gross,
                            }));
                        }
                    }
                    None => tl.started_before += 1, // an exit whose entry came before the trace
                }
            }
        }
        Ok(())
    }

    /// The figures, once every event is in: states and calls still running
    /// last until `end_time` (else the last event). The calls and writes
    /// are not in it: they went to `push`'s `out`.
    pub fn finish(self, end_time: Option<i64>) -> Timeline {
        let mut tl = self.tl;
        // States last until the end of the session.
        let end = end_time.unwrap_or(self.last_time).clamp(-(MAX_TIME_NS as i64), MAX_TIME_NS as i64);
        for (var, (t0, v0)) in self.last_write {
            if !self.states.contains(&(var + (1 << 28), v0)) {
                continue;
            }
            let fig = tl.data.entry((var + (1 << 28), Some(v0))).or_default();
            fig.net = fig.net.saturating_add(end.max(t0) - t0);
        }
        // Calls still running at the end ran until then, as states last.
        for ((ctx, h), stack) in &self.stacks {
            for o in stack {
                if let Some(r) = o.running_since {
                    tl.functions.entry((*ctx, *h)).or_default().ran(end.max(r) - r);
                    tl.neutral.entry(*h).or_default().ran(end.max(r) - r);
                }
            }
        }
        tl.unfinished = self.stacks.values().map(|s| s.iter().filter(|o| o.start.is_some()).count() as u64).sum();
        tl
    }
}

/// Builds calls and statistics from the timeline, all in memory (see
/// [`Builder`], which the import streams through).
pub fn build(
    ex: &Export,
    events: &[TimelineEvent],
    text: &str,
    bin: &str,
    end_time: Option<i64>,
) -> Result<Timeline, ImportError> {
    let mut b = Builder::new(ex, text, bin);
    let (mut calls, mut writes) = (Vec::new(), Vec::new());
    for e in events {
        b.push(e, &mut |built| match built {
            Built::Call(c) => calls.push(c),
            Built::Write(w) => writes.push(w),
        })?;
    }
    let mut tl = b.finish(end_time);
    tl.calls = calls;
    tl.writes = writes;
    Ok(tl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::winidea::{check, parse_text1};

    #[test]
    fn state_figures_only_for_the_values_the_statistics_list() {
        let text = "* HANDLE(Data) %HANDLE%,%NAME%,%VALUE%\n20000000,v,\n30000000,,0\n30000000,,1\n\n\
            * STATISTICS(Data) %HANDLE%,%VALUE%,%COUNT%,%T.NET%\n20000000,,4,0\n30000000,1,2,30\n";
        let ex = parse_text1(text, "s.txt").unwrap();
        let ev =
            |value, time| TimelineEvent { handle: 0x2000_0000, kind: b'W', value, time, context: 0, at: Pos::Byte(0) };
        // Values 1, 7, 1, 9: only value 1 of the state is listed.
        let events = [ev(1, 0), ev(7, 10), ev(1, 20), ev(9, 40)];
        let tl = build(&ex, &events, "s.txt", "s.txt.BIN", Some(50)).unwrap();
        let keys: Vec<_> = {
            let mut k: Vec<_> = tl.data.keys().copied().collect();
            k.sort();
            k
        };
        assert_eq!(keys, [(0x2000_0000, None), (0x3000_0000, Some(1))]);
        let one = &tl.data[&(0x3000_0000, Some(1))];
        assert_eq!((one.count, one.net), (2, 10 + 20));
        assert_eq!(tl.data[&(0x2000_0000, None)].count, 4);
        let r = check(&ex, &tl);
        assert_eq!((r.agree, r.differences.len()), (4, 0), "{:?}", r.differences);
    }
}
