//! `tbrw report --children`, perf's inclusive view (`perf report
//! --children --sort sym`): per function, its self figures (the samples
//! whose sampled address it holds, what `--by function` counts) and its
//! children figures (the samples with it anywhere in their stack, each
//! sample once however many of its frames the function has), sorted by
//! children. The samples are those of the one walk, with its filters and
//! weight, aggregated per distinct stack by [`crate::stacks::stacks`] (the
//! stack table, or an old perf import's call-chain stream) as a tree of
//! nodes; each distinct frame is symbolized once and keyed as `--by
//! function` keys a sample (`raw::function_key`), and a module
//! whose file cannot be used is one frame. The figures are summed over
//! the tree once (each node: the samples of the stacks through it), so the
//! time and memory follow the nodes, not the depth times the stacks. A
//! frame in inlined code is also each function inlined there
//! ([`crate::stacks::Names::inlined`], DWARF's chain, as perf's `--inline`
//! and samply show them), for children only: self stays by symbol, as
//! perf's `--no-children` counts it; `--no-inline` leaves them out.
//!
//! [`report`] makes this view for [`super::answer`] when the options ask
//! for children. Imports `stacks`,
//! `file_symbols`, `query`, the report's types and `raw`'s function key.

use std::collections::HashMap;
use tbrw_schema::Progress;

use tbrw::Tb5File;
use tbrw_symbols::Symbolized;

use super::raw::function_key;
use super::{percent, By, Inclusive, Key, Report, ReportOptions, Row, WeightSum};
use crate::error::QueryError;
use crate::query::Weight;
use crate::stacks::{self, Detail, Keep, Names, NodeId, ViewOptions};

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
/// label). `opts.by` must be `function` (or `auto`, which means it here). A
/// stream without call stacks is refused. Warnings about modules without
/// symbols go to `warn`; `progress` gets records done.
pub(crate) fn report(
    file: &Tb5File,
    opts: &ReportOptions,
    warn: &mut Vec<crate::Warning>,
    progress: &mut dyn Progress,
) -> Result<Report, QueryError> {
    let n = opts.query.stream;
    let name = || file.path().display().to_string();
    let (by, symbols) = (opts.by.as_slice(), &opts.symbols);
    if !matches!(by, [] | [By::Auto] | [By::Function]) {
        return Err(QueryError::ChildrenByFunctionOnly { by: by.to_vec() });
    }
    if !stacks::has_stacks(file, n)? {
        return Err(QueryError::NoCallStacks { file: name(), stream: n });
    }
    let view = ViewOptions { query: opts.query.clone(), symbols: symbols.clone() };
    let modules = crate::stream::modules(file)?;
    let mut names = Names::new(file, &modules, Some(symbols))?;
    let st = stacks::stacks(
        file,
        &view,
        Keep::default(),
        &mut names.resolution(Detail::Function),
        super::CHILDREN,
        progress,
    )?;

    // Each distinct frame symbolized once, each distinct key numbered once;
    // a frame's keys are its function's, then its inlined functions'.
    let tree = &st.tree;
    let mut key_ids: HashMap<Key, u32> = HashMap::new();
    let mut keys: Vec<Key> = Vec::new();
    let mut frame_keys = FrameKeys { start: Vec::with_capacity(tree.frame_count() + 1), keys: Vec::new() };
    frame_keys.start.push(0);
    for id in 0..tree.frame_count() as u32 {
        let f = tree.frame(id);
        let module = f.module.and_then(|m| st.info.modules.get(m as usize));
        let s = names.symbolized(f);
        // The function as `--by function` names it (symbol tables only).
        let own = Symbolized { function: s.as_deref().and_then(|s| names.named(s).function), ..Symbolized::default() };
        let inlined = s.as_deref().map(|s| names.inline_frames(s)).unwrap_or_default();
        let module_name = module.and_then(crate::names::module_name);
        let inline_keys = inlined.into_iter().map(|i| Key::Function {
            module: module_name.clone(),
            name: Some(i.function.to_string()),
            unknown: None,
        });
        for key in std::iter::once(function_key(&own, module)).chain(inline_keys) {
            let next = keys.len() as u32;
            let k = *key_ids.entry(key.clone()).or_insert(next);
            if k == next {
                keys.push(key);
            }
            frame_keys.keys.push(k);
        }
        frame_keys.start.push(frame_keys.keys.len() as u32);
    }
    drop(key_ids);
    names.take_warnings(warn);

    let (sums, total_weight) = sums(&st, &frame_keys, keys.len());
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

/// Per distinct frame `f` of a tree, its function keys,
/// `keys[start[f]..start[f + 1]]`: its own function's (what self counts)
/// first, then those of the functions inlined there, outermost first.
struct FrameKeys {
    start: Vec<u32>,
    keys: Vec<u32>,
}

impl FrameKeys {
    fn of(&self, frame: u32) -> &[u32] {
        &self.keys[self.start[frame as usize] as usize..self.start[frame as usize + 1] as usize]
    }
}

/// Per function key (`keys` of them; `frame_keys` per distinct frame of the
/// tree), its self and children figures over the stacks of `st`, and the
/// weight in all. Self goes to a frame's own function only; children to
/// its inlined functions too.
fn sums(st: &stacks::Stacks, frame_keys: &FrameKeys, keys: usize) -> (Vec<Sums>, f64) {
    let tree = &st.tree;
    let node_keys = |n: NodeId| frame_keys.of(tree.frame_id_of(n));
    // Per node, the samples of the stacks ending there; summed up the
    // tree (children come after their parents), each node then holds the
    // samples of every stack through it.
    let mut sums: Vec<Sums> = vec![Sums::default(); keys];
    let mut through: Vec<(u64, f64)> = vec![(0, 0.0); tree.len()];
    let mut total_weight = 0.0;
    let mut ends: Vec<(NodeId, u64, f64)> = st.iter().map(|((_, n), t)| (n, t.samples, t.weight)).collect();
    // One order of the floating-point sums, whatever the map's.
    ends.sort_unstable_by_key(|e| e.0);
    for &(n, samples, weight) in &ends {
        total_weight += weight;
        let s = &mut sums[node_keys(n)[0] as usize];
        s.self_samples += samples;
        s.self_weight += weight;
        through[n as usize].0 += samples;
        through[n as usize].1 += weight;
    }
    drop(ends);
    for n in (0..tree.len() as NodeId).rev() {
        if let Some(p) = tree.parent(n) {
            let (a, b) = through[n as usize];
            through[p as usize].0 += a;
            through[p as usize].1 += b;
        }
    }
    // A function counts a stack once however many of its frames it has:
    // at its outermost node on the path. Depth first from the roots, with
    // the functions on the path so far counted.
    let (start, children) = tree.children();
    let mut on_path: Vec<u32> = vec![0; keys];
    let mut todo: Vec<(NodeId, bool)> = tree.roots().map(|r| (r, false)).collect();
    while let Some((n, leaving)) = todo.pop() {
        if leaving {
            for &k in node_keys(n) {
                on_path[k as usize] -= 1;
            }
            continue;
        }
        for &k in node_keys(n) {
            let k = k as usize;
            if on_path[k] == 0 {
                let (samples, weight) = through[n as usize];
                sums[k].samples += samples;
                sums[k].weight += weight;
            }
            on_path[k] += 1;
        }
        todo.push((n, true));
        let kids = &children[start[n as usize] as usize..start[n as usize + 1] as usize];
        todo.extend(kids.iter().map(|&c| (c, false)));
    }
    (sums, total_weight)
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
