//! The statistics check: every STATISTICS figure of the export recomputed
//! from the timeline, and where they differ.

use std::collections::HashMap;

use super::text1::Export;
use super::timeline::{Figures, Timeline};

/// One difference between the export's statistics and the timeline's.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// The STATISTICS row's line.
    pub line: u64,
    /// What, e.g. `00000000 T.NET`.
    pub what: String,
    /// The export's figure.
    pub export: i64,
    /// The timeline's figure (an inexact average: rounded down).
    pub timeline: i64,
}

/// A figure recomputed from the timeline, as the range of values that
/// agree with it: one value, or for an inexact average the mean rounded
/// down and up (the document does not say how winIDEA rounds).
fn figure(f: &Figures, name: &str) -> Option<(i64, i64)> {
    let one = |v: i64| Some((v, v));
    match name {
        "COUNT" => one(f.count),
        "T.NET" => one(f.net),
        "T.GROSS" => one(f.gross.total()),
        "T.CALL" => one(f.call.total()),
        _ => {
            let (cat, which) = name.strip_prefix("T.")?.split_once('.')?;
            let series = match cat {
                "NET" => &f.nets,
                "GROSS" => &f.gross,
                "CALL" => &f.call,
                "PERIOD" => &f.periods,
                _ => return None,
            };
            match which {
                "MIN" => one(series.min),
                "MAX" => one(series.max),
                "AVG" => Some(series.mean_range()),
                _ => None,
            }
        }
    }
}

/// The outcome of [`check`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckResult {
    /// Figures that agree.
    pub agree: u64,
    /// Figures that differ.
    pub differences: Vec<Difference>,
    /// Figures a timeline cannot give (T.OUTSIDE...), per figure name in
    /// the order first met: one entry per name, however many rows have it,
    /// so memory follows the header's columns, not rows x columns.
    pub unchecked: Vec<Unchecked>,
}

/// The figures of one name that a timeline cannot give.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unchecked {
    /// The figure's name (the macro without `%`).
    pub figure: String,
    /// How many figures of that name were not checked.
    pub count: u64,
    /// The line of the first.
    pub first_line: u64,
}

impl CheckResult {
    /// Figures not checked, all names together.
    pub fn unchecked_count(&self) -> u64 {
        self.unchecked.iter().map(|u| u.count).sum()
    }
}

/// Recomputes every STATISTICS figure from the timeline and lists where
/// they differ. Rows of a CONTEXT are compared with that context's calls;
/// rows without one with all contexts together. An average agrees when it
/// is the exact mean rounded either way.
pub fn check(ex: &Export, tl: &Timeline) -> CheckResult {
    let mut result = CheckResult::default();
    // Context names to handles once, not a scan of every context per row
    // (the first handle of a name that two contexts share, as before).
    let mut by_name: HashMap<&str, u32> = HashMap::with_capacity(ex.contexts.len());
    let mut sorted: Vec<(&u32, &String)> = ex.contexts.iter().collect();
    sorted.sort();
    for (k, n) in sorted {
        by_name.entry(n.as_str()).or_insert(*k);
    }
    let mut unchecked_at: HashMap<&str, usize> = HashMap::new();
    for row in &ex.stats {
        let fig = if row.class.eq_ignore_ascii_case("Data") || matches!(row.handle >> 28, 2..=5) {
            let key = if row.handle >> 28 == 3 || row.handle >> 28 == 5 {
                (row.handle, row.value)
            } else {
                (row.handle, None)
            };
            tl.data.get(&key)
        } else {
            match &row.context {
                None => tl.neutral.get(&row.handle),
                // A CONTEXT the CONTEXTS section does not list has no calls.
                Some(c) => by_name.get(c.as_str()).and_then(|k| tl.functions.get(&(*k, row.handle))),
            }
        };
        let none = Figures::default();
        let fig = fig.unwrap_or(&none);
        for (name, value) in &row.figures {
            let Some((lo, hi)) = figure(fig, name) else {
                let i = *unchecked_at.entry(name.as_str()).or_insert_with(|| {
                    result.unchecked.push(Unchecked { figure: name.clone(), count: 0, first_line: row.line });
                    result.unchecked.len() - 1
                });
                result.unchecked[i].count += 1;
                continue;
            };
            if (lo..=hi).contains(value) {
                result.agree += 1;
            } else {
                let what =
                    format!("{:08X}{} {name}", row.handle, row.value.map_or(String::new(), |v| format!(" value {v}")));
                result.differences.push(Difference { line: row.line, what, export: *value, timeline: lo });
            }
        }
    }
    result
}
