//! What a question about a stream's samples is: the stream, the filters
//! (pid, tid, module, time) and what each sample weighs. Every report and
//! export takes a [`Query`]; the walk ([`crate::walk`]) is the one place
//! that applies it. Imports nothing of the crate but its error.

use serde::{Deserialize, Serialize};

/// The samples a question is about, and what each weighs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Query {
    /// The stream.
    pub stream: u32,
    /// The filters.
    pub filters: Filters,
    /// What a sample weighs.
    pub weight: Weight,
}

/// Which samples pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    /// Only samples of this OS pid.
    pub pid: Option<u32>,
    /// Only samples of this OS tid.
    pub tid: Option<u32>,
    /// Only samples whose address is in a module with this name or path.
    pub module: Option<String>,
    /// Only samples with time in `start..end` (the stream's time field: a
    /// legacy sample's TSC, else its first time stamp; the record index
    /// when it has none): clock values, resolved from what was given by
    /// [`crate::time::TimeRange::resolve`].
    pub time: Option<(u64, u64)>,
    /// The time range as given (`10%..20%`), for messages; `None`:
    /// spelled from [`Filters::time`].
    pub time_given: Option<String>,
}

impl Filters {
    /// Whether any filter is given.
    pub fn any(&self) -> bool {
        self.pid.is_some() || self.tid.is_some() || self.module.is_some() || self.time.is_some()
    }
}

/// The filters in the library's words (`pid 3, module "libc.so.6",
/// time 10%..20% (10..20)`), as a "no sample passes" error names them; a
/// front end spells them with its own options.
impl std::fmt::Display for Filters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let given: Vec<String> = self.given().into_iter().map(|(name, value)| format!("{name} {value}")).collect();
        f.write_str(&given.join(", "))
    }
}

impl Filters {
    /// The filters given, each as its name (`pid`, `tid`, `module`,
    /// `time`) and its value as written (`3`, `"libc.so.6"`,
    /// `10%..20% (10..20)`), in that order: what a front end spells its
    /// own way.
    pub fn given(&self) -> Vec<(&'static str, String)> {
        let mut given = Vec::new();
        if let Some(p) = self.pid {
            given.push(("pid", p.to_string()));
        }
        if let Some(t) = self.tid {
            given.push(("tid", t.to_string()));
        }
        if let Some(m) = &self.module {
            given.push(("module", format!("{m:?}")));
        }
        if let Some(t) = self.time_spelled() {
            given.push(("time", t));
        }
        given
    }

    /// The time range as given, with the clock values it resolved to
    /// (`10%..20% (10..20)`); `None` without one.
    pub fn time_spelled(&self) -> Option<String> {
        match (&self.time_given, self.time) {
            (Some(t), Some((lo, hi))) => Some(format!("{t} ({lo}..{})", end(hi))),
            (Some(t), None) => Some(t.clone()),
            (None, Some((lo, hi))) => Some(format!("{lo}..{}", end(hi))),
            (None, None) => None,
        }
    }
}

/// A range's end as spelled: nothing for an open one.
fn end(hi: u64) -> String {
    if hi == u64::MAX {
        String::new()
    } else {
        hi.to_string()
    }
}

/// What a sample weighs (`--weight`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Weight {
    /// Each sample counts 1.
    #[default]
    Samples,
    /// The CPU time its thread used since the thread's previous sample, in
    /// nanoseconds: a blocked thread is sampled but weighs nothing.
    Cputime,
    /// Power times that CPU time, in joules.
    Energy,
}

impl Weight {
    /// Every weight.
    pub const ALL: [Weight; 3] = [Weight::Samples, Weight::Cputime, Weight::Energy];

    /// From [`Weight::name`].
    pub fn from_name(s: &str) -> Option<Weight> {
        Weight::ALL.into_iter().find(|w| w.name() == s)
    }

    /// The name the command line and the JSON give it.
    pub fn name(self) -> &'static str {
        match self {
            Weight::Samples => "samples",
            Weight::Cputime => "cputime",
            Weight::Energy => "energy",
        }
    }

    /// The unit of its sums.
    pub fn unit(self) -> &'static str {
        match self {
            Weight::Samples => "samples",
            Weight::Cputime => "ns",
            Weight::Energy => "J",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_spelled_as_given() {
        let f =
            Filters { pid: Some(3), module: Some("libc.so.6".into()), time: Some((5, u64::MAX)), ..Filters::default() };
        assert_eq!(f.to_string(), "pid 3, module \"libc.so.6\", time 5..");
        let g = Filters { time: Some((10, 20)), time_given: Some("10%..20%".into()), ..Filters::default() };
        assert_eq!(g.to_string(), "time 10%..20% (10..20)");
        assert!(f.any() && !Filters::default().any());
    }
}

/// What to group a report by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    /// What the stream supports: module for samples that can be bound, task
    /// for MTMC task streams, thread for records with a tid field (winIDEA
    /// calls), event otherwise.
    Auto,
    /// Process instances of the bind.
    Process,
    /// Threads (of the bind, or the records' tid field when they cannot be bound).
    Thread,
    /// Modules (samples no module covers: `[unknown]`).
    Module,
    /// Events (legacy samples' event index, an event id field, or the only event).
    Event,
    /// MTMC tasks: duration, counter deltas, topdown; totals per thread and core.
    Task,
    /// Functions, from the modules' ELF symbol tables and DWARF (see docs/SYMBOLS.md).
    Function,
    /// Source lines (DWARF), the line of the sampled address itself.
    Line,
    /// Sampled addresses, each with its module, ELF virtual address and function.
    Address,
    /// Several groupings at once (`--by module,function`): each row's key is
    /// a combined key (the report's `Key::Combined`) whose parts follow the order asked.
    Combined,
}

impl By {
    /// Every grouping a command line can name (not [`By::Combined`], which
    /// a comma list makes).
    pub const ALL: [By; 9] =
        [By::Auto, By::Process, By::Thread, By::Module, By::Event, By::Task, By::Function, By::Line, By::Address];

    /// From [`By::name`] (not `combined`).
    pub fn from_name(s: &str) -> Option<By> {
        By::ALL.into_iter().find(|b| b.name() == s)
    }

    /// The name the command line and the JSON give it.
    pub fn name(self) -> &'static str {
        match self {
            By::Auto => "auto",
            By::Process => "process",
            By::Thread => "thread",
            By::Module => "module",
            By::Event => "event",
            By::Task => "task",
            By::Function => "function",
            By::Line => "line",
            By::Address => "address",
            By::Combined => "combined",
        }
    }

    /// Whether the grouping needs the modules' symbols.
    pub fn symbolic(self) -> bool {
        matches!(self, By::Function | By::Line | By::Address)
    }
}
