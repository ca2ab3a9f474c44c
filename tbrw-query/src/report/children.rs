//! `tbrw report --children`, perf's inclusive view (`perf report
//! --children --sort sym`): per function, its self figures (the samples
//! whose sampled address it holds, what `--by function` counts) and its
//! children figures (the samples with it anywhere in their stack, each
//! sample once however many of its frames the function has), sorted by
//! children. The samples are those of the one walk, with its filters and
//! weight, aggregated per distinct stack by [`crate::stacks::stacks`] (the
//! stack table, or an old perf import's call-chain stream); each distinct
//! frame is symbolized once and keyed as `--by function` keys a sample
//! ([`super::raw::function_key`]). A frame in inlined code is also each
//! function inlined there (DWARF's inline chain, as perf's `--inline` and
//! samply show them), for children only: self stays by symbol, as perf's
//! `--no-children` counts it. `SymbolOptions::no_inline` leaves them out.
//!
//! Imports `stacks`, `file_symbols`, `query`, the report's types and
//! `raw`'s function key; nothing imports it but the command line.

use std::collections::HashMap;
use std::io::Write;

use tbrw::Tb5File;
use tbrw_symbols::Symbolized;

use super::raw::function_key;
use super::{percent, By, Inclusive, Key, Report, ReportOptions, Row, WeightSum};
use crate::error::QueryError;
use crate::file_symbols::{FileSymbols, SymbolOptions};
use crate::query::Weight;
use crate::stacks::{self, Frame, Keep, ViewOptions};

/// Self and children of one function: samples and weight.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    self_samples: u64,
    self_weight: f64,
    samples: u64,
    weight: f64,
}

/// The report `tbrw report --children` prints: rows by function with
/// their [`Row::children`], most children first (then most self, then by
/// label). `by` must be `function` (or `auto`, which means it here). A
/// stream without call stacks is refused. Warnings about modules without
/// symbols go to `warn`; `progress` gets records done.
pub fn report(
    file: &Tb5File,
    opts: &ReportOptions,
    by: &[By],
    symbols: &SymbolOptions,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, QueryError> {
    let n = opts.query.stream;
    let name = || file.path().display().to_string();
    if !matches!(by, [] | [By::Auto] | [By::Function]) {
        let asked: Vec<&str> = by.iter().map(|b| b.name()).collect();
        return Err(QueryError::Request(format!(
            "--children reports by function only (as perf's --children --sort sym), not --by {}",
            asked.join(",")
        )));
    }
    if !stacks::has_stacks(file, n)? {
        return Err(QueryError::Unsupported {
            file: name(),
            stream: n,
            what: "its samples have no call stacks, which --children needs: record with `sampler -g` \
                   (`--call-graph fp` or `dwarf`, also `tbrw record`), or import a `perf record -g` recording"
                .into(),
        });
    }
    let view = ViewOptions { query: opts.query.clone(), symbols: symbols.clone() };
    let st = stacks::stacks(file, &view, Keep::default(), "report --children", progress)?;
    let inline = !symbols.no_inline;
    let config = tbrw_symbols::Config { lines: inline, ..symbols.config() };
    let mut syms = FileSymbols::with_config(file, &st.info.modules, config)?;

    // Each distinct frame symbolized once, each distinct key numbered once;
    // a frame's keys are its function's, then its inlined functions'.
    let mut frame_ids: HashMap<Frame, std::ops::Range<usize>> = HashMap::new();
    let mut frame_keys: Vec<usize> = Vec::new();
    let mut key_ids: HashMap<Key, usize> = HashMap::new();
    let mut keys: Vec<Key> = Vec::new();
    let mut sums: Vec<Sums> = Vec::new();
    // The last stack that counted each key: a function once per stack.
    let mut counted_in: Vec<usize> = Vec::new();
    let mut order: Vec<_> = st.stacks.iter().collect();
    // Symbolized in a stable order: the warnings come out the same every time.
    order.sort_by(|a, b| a.0.cmp(b.0));
    let mut total_weight = 0.0;
    for (i, (stack, t)) in order.into_iter().enumerate() {
        total_weight += t.weight;
        for (depth, f) in stack.frames.iter().enumerate() {
            let ids = match frame_ids.get(f) {
                Some(ids) => ids.clone(),
                None => {
                    let s = syms.symbolize(f.module, f.pc, warn);
                    let module = f.module.and_then(|m| st.info.modules.get(m as usize));
                    let start = frame_keys.len();
                    for key in frame_function_keys(&s, module, inline) {
                        let next = keys.len();
                        let id = *key_ids.entry(key.clone()).or_insert(next);
                        if id == next {
                            keys.push(key);
                            sums.push(Sums::default());
                            counted_in.push(usize::MAX);
                        }
                        frame_keys.push(id);
                    }
                    frame_ids.insert(*f, start..frame_keys.len());
                    start..frame_keys.len()
                }
            };
            for (k, &id) in frame_keys[ids].iter().enumerate() {
                let s = &mut sums[id];
                if depth == 0 && k == 0 {
                    s.self_samples += t.samples;
                    s.self_weight += t.weight;
                }
                if counted_in[id] != i {
                    counted_in[id] = i;
                    s.samples += t.samples;
                    s.weight += t.weight;
                }
            }
        }
    }
    let weighed = opts.query.weight != Weight::Samples;
    let total = st.info.samples;
    let share = |samples: u64, weight: f64| match weighed {
        false => percent(samples, total),
        true if total_weight > 0.0 => weight * 100.0 / total_weight,
        true => 0.0,
    };
    let mut rows: Vec<Row> = keys
        .into_iter()
        .zip(sums)
        .map(|(key, s)| Row {
            key,
            samples: s.self_samples,
            percent: share(s.self_samples, s.self_weight),
            weight: weighed.then_some(s.self_weight),
            task: None,
            children: Some(Inclusive {
                samples: s.samples,
                percent: share(s.samples, s.weight),
                weight: weighed.then_some(s.weight),
            }),
        })
        .collect();
    sort(&mut rows);
    if let Some(k) = opts.top {
        rows.truncate(k);
    }
    Ok(Report {
        file: name(),
        stream: n,
        by: By::Function,
        records: st.info.records,
        samples: total,
        weight: weighed.then(|| WeightSum::new(opts.query.weight, total_weight)),
        rows,
        totals: Vec::new(),
        auto: None,
    })
}

/// A frame's keys: its function's, as `--by function` keys it (from the
/// symbol tables: a name DWARF alone gives is not one), then, with
/// `inline`, each function inlined at its address, outermost first.
fn frame_function_keys(s: &Symbolized, module: Option<&tbrw::Module>, inline: bool) -> Vec<Key> {
    let own = if inline && s.offset.is_none() && s.function.is_some() {
        function_key(&Symbolized { function: None, ..s.clone() }, module)
    } else {
        function_key(s, module)
    };
    let mut keys = vec![own];
    if inline {
        let module_name = match &keys[0] {
            Key::Function { module, .. } => module.clone(),
            _ => None,
        };
        for f in s.inline_chain() {
            if let Some(name) = &f.function {
                keys.push(Key::Function { module: module_name.clone(), name: Some(name.to_string()), unknown: None });
            }
        }
    }
    keys
}

/// Most children first (weight when weighted, else samples), then most
/// self, then by label.
fn sort(rows: &mut [Row]) {
    let children = |r: &Row| r.children.as_ref().map_or((0, 0.0), |c| (c.samples, c.weight.unwrap_or(0.0)));
    let mut labelled: Vec<(String, Row)> = rows.iter().map(|r| (r.key.to_string(), r.clone())).collect();
    labelled.sort_by(|(la, a), (lb, b)| {
        let ((ca, wa), (cb, wb)) = (children(a), children(b));
        wb.total_cmp(&wa)
            .then(cb.cmp(&ca))
            .then(b.weight.unwrap_or(0.0).total_cmp(&a.weight.unwrap_or(0.0)))
            .then(b.samples.cmp(&a.samples))
            .then_with(|| la.cmp(lb))
    });
    for (slot, (_, r)) in rows.iter_mut().zip(labelled) {
        *slot = r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, self_samples: u64, children: u64) -> Row {
        Row {
            key: Key::Function { module: None, name: Some(name.into()), unknown: None },
            samples: self_samples,
            percent: 0.0,
            weight: None,
            task: None,
            children: Some(Inclusive { samples: children, percent: 0.0, weight: None }),
        }
    }

    #[test]
    fn rows_go_by_children_then_self_then_label() {
        let mut rows = vec![row("b", 1, 5), row("a", 0, 9), row("d", 2, 5), row("c", 1, 5)];
        sort(&mut rows);
        let names: Vec<String> = rows.iter().map(|r| r.key.to_string()).collect();
        assert_eq!(names, ["a", "d", "b", "c"]);
    }
}
