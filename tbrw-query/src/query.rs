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
    /// when it has none).
    pub time: Option<(u64, u64)>,
}

impl Filters {
    /// Whether any filter is given.
    pub fn any(&self) -> bool {
        self.pid.is_some() || self.tid.is_some() || self.module.is_some() || self.time.is_some()
    }

    /// The filters as the command line spells them (what a "no sample
    /// matches" error names).
    pub fn spelled(&self) -> String {
        let mut given = Vec::new();
        if let Some(p) = self.pid {
            given.push(format!("--pid {p}"));
        }
        if let Some(t) = self.tid {
            given.push(format!("--tid {t}"));
        }
        if let Some(m) = &self.module {
            given.push(format!("--module {m:?}"));
        }
        if let Some((lo, hi)) = self.time {
            given.push(format!("--time {lo}..{}", if hi == u64::MAX { String::new() } else { hi.to_string() }));
        }
        given.join(" ")
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

/// Parses `A..B`, `A..` or `..B` (decimal or 0x hex).
pub fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("time range {s:?} is not A..B"))?;
    let num = |x: &str, default: u64| -> Result<u64, String> {
        let x = x.trim();
        if x.is_empty() {
            return Ok(default);
        }
        match x.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => x.parse(),
        }
        .map_err(|_| format!("{x:?} in time range {s:?} is not a number"))
    };
    Ok((num(a, 0)?, num(b, u64::MAX)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_open_ended_and_hex() {
        assert_eq!(parse_range("..0x10"), Ok((0, 16)));
        assert_eq!(parse_range("5.."), Ok((5, u64::MAX)));
        assert!(parse_range("5").is_err() && parse_range("x..1").is_err());
    }

    #[test]
    fn filters_are_spelled_as_given() {
        let f =
            Filters { pid: Some(3), module: Some("libc.so.6".into()), time: Some((5, u64::MAX)), ..Filters::default() };
        assert_eq!(f.spelled(), "--pid 3 --module \"libc.so.6\" --time 5..");
        assert!(f.any() && !Filters::default().any());
    }
}
