//! Sample counts of a stream per process, thread, module or event (the
//! reports that need no symbols), through the walk: sample counts in parts
//! on the bind's threads, weights in one pass.

use rustc_hash::FxHashMap as IdMap;
use tbrw::*;
use tbrw_schema::Progress;

use super::{percent, By, Key, Report, ReportOptions, Row, WeightSum};
use crate::error::QueryError;
use crate::query::Weight;
use crate::stream::{self, SampleFields};
use crate::walk::{Binding, Sample, Walk};

/// The sample groupings that work for stream `n`, in the order `--by auto`
/// prefers them: module and process need records that can be bound (a
/// legacy sample record, or an IP and a PID), thread a bind or a 4-byte tid
/// field, event a legacy record, an event id field or a single event.
pub fn groupings(file: &Tb5File, n: u32) -> Result<Vec<By>, QueryError> {
    let s = stream::open_stream(file, n)?;
    if s.layout()?.is_none() {
        return Ok(Vec::new());
    }
    let f = SampleFields::of(file, n)?;
    let bindable = f.bindable();
    let works = [
        (By::Module, bindable),
        (By::Process, bindable),
        (By::Thread, bindable || f.has_tid()),
        (By::Event, f.has_event()),
    ];
    Ok(works.into_iter().filter(|(_, w)| *w).map(|(b, _)| b).collect())
}

/// Stream `n`, or an error naming the file and how many streams it has.
pub fn stream(file: &Tb5File, n: u32) -> Result<StreamReader<'_>, QueryError> {
    stream::open_stream(file, n)
}

/// The grouping `by` names for stream `n`: [`By::Auto`] becomes the first
/// of [`groupings`]; one the stream does not support is an error that
/// lists those it does.
pub fn resolve_by(file: &Tb5File, n: u32, by: By) -> Result<By, QueryError> {
    let works = groupings(file, n)?;
    let unsupported =
        |what: String| QueryError::Unsupported { file: file.path().display().to_string(), stream: n, what };
    match by {
        By::Auto => works.first().copied().ok_or_else(|| {
            unsupported(
                "it has records no report can group: no data descriptor, no bind fields, no tid field and no single event"
                    .into(),
            )
        }),
        b if works.contains(&b) => Ok(b),
        by => {
            let why = if matches!(by, By::Module | By::Process | By::Thread) {
                crate::error::GroupingGap::Unbindable
            } else {
                crate::error::GroupingGap::NoEvent
            };
            let file = file.path().display().to_string();
            Err(QueryError::GroupingUnsupported { file, stream: n, by, why, works })
        }
    }
}

/// The report of a stream grouped by process, thread, module or event
/// (`by`, which [`super::answer`] chose; `opts.by` is not read;
/// [`By::Auto`] as [`resolve_by`] says). Filters that leave no
/// sample are an error (see the README's report section). `progress` gets
/// records done. Weighted (`opts.query.weight`), the rows' percentages and
/// order follow the weight and each row carries its sum.
pub(crate) fn report(
    file: &Tb5File,
    opts: &ReportOptions,
    by: By,
    progress: &mut dyn Progress,
) -> Result<Report, QueryError> {
    let n = opts.query.stream;
    if by == By::Task || by.symbolic() || by == By::Combined {
        return Err(QueryError::NotASampleCount { by });
    }
    let by = resolve_by(file, n, by)?;
    let needed = matches!(by, By::Process | By::Module | By::Thread);
    let walk = Walk::open(file, &opts.query, Binding::IfBindable { needed })?;
    let fields = walk.fields();
    // Module, process and thread indexes are below their tables' sizes.
    let view = walk.bind_view();
    let dense = match (by, &view) {
        (By::Module, _) => walk.modules().len(),
        (By::Process, Some(v)) => usize::try_from(v.process_count()).unwrap_or(0),
        (By::Thread, Some(v)) if !walk.direct_tid() => usize::try_from(v.thread_count()).unwrap_or(0),
        _ => 0,
    };
    let weighed = opts.query.weight != Weight::Samples;
    let key_of = |s: &Sample<'_>| -> Option<u64> {
        match by {
            By::Process => s.process,
            By::Thread => s.own_tid.map(u64::from).or(s.thread),
            By::Module => s.module,
            By::Event => fields.event(s.record).map(u64::from),
            By::Task | By::Auto | By::Function | By::Line | By::Address | By::Combined => None,
        }
    };
    // One part of the records counted: (counts, weights, samples, weight).
    let count_part = |range: std::ops::Range<u64>,
                      progress: &mut dyn Progress|
     -> Result<(Tally<u64>, Tally<f64>, u64, f64), QueryError> {
        let mut counts: Tally<u64> = Tally::new(dense);
        let mut weights: Tally<f64> = Tally::new(if weighed { dense } else { 0 });
        let mut total_weight = 0f64;
        let total = walk.pass(range, progress, |s| {
            let key = key_of(s);
            counts.add(key, 1);
            if weighed {
                weights.add(key, s.weight);
                total_weight += s.weight;
            }
        })?;
        Ok((counts, weights, total, total_weight))
    };
    // Counts are integers: the parts' sums add up to the one-pass sums
    // whatever the split, so the records are counted in contiguous parts on
    // the bind's threads ([`Walk::parts`] is one when samples are weighed).
    let (counts, weights, total, total_weight) = walk.in_parts(walk.parts(), progress, count_part, |all, part| {
        // The first error in stream order.
        match (all, part) {
            (Ok((mut c, mut w, n, x)), Ok((c2, w2, n2, x2))) => {
                c.absorb(c2);
                w.absorb(w2);
                Ok((c, w, n + n2, x + x2))
            }
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        }
    })?;
    if total == 0 && walk.records() > 0 {
        return Err(walk.nothing_matches());
    }
    if opts.top == Some(0) {
        return Err(QueryError::NoRowsAsked { file: file.path().display().to_string(), stream: n });
    }
    let events = stream::open_stream(file, n)?.events()?.unwrap_or_default();
    let string = |id: StringId| file.string_opt(id).ok().flatten().map(str::to_owned);
    // The counting key is an index or id whose meaning depends on the
    // grouping; the row gets the thing it stands for.
    let typed = |key: Option<u64>| -> Key {
        match (by, key) {
            (By::Module, None) => Key::UnknownModule,
            (By::Module, Some(m)) => super::module_key(m, &walk.modules()[m as usize]),
            (By::Process, Some(p)) => super::process_key(p, &walk.process(p)),
            (By::Thread, Some(t)) if walk.direct_tid() => super::thread_key(None, &walk.thread_by_tid(t as u32)),
            (By::Thread, Some(t)) => super::thread_key(Some(t), &walk.thread(t)),
            (By::Event, Some(e)) => Key::Event {
                id: e as u32,
                name: events.iter().find(|ev| u64::from(ev.id) == e).and_then(|ev| string(ev.name)),
            },
            (_, None) | (By::Task | By::Auto | By::Function | By::Line | By::Address | By::Combined, _) => Key::Unbound,
        }
    };
    let mut counted: Vec<(Option<u64>, u64)> = counts.counted();
    let weight_of = |k: &Option<u64>| weights.get(*k);
    counted.sort_by(|a, b| {
        weight_of(&b.0)
            .total_cmp(&weight_of(&a.0))
            .then(b.1.cmp(&a.1))
            .then(a.0.unwrap_or(u64::MAX).cmp(&b.0.unwrap_or(u64::MAX)))
    });
    if let Some(k) = opts.top {
        counted.truncate(k);
    }
    let rows = counted
        .into_iter()
        .map(|(key, samples)| {
            let (share, weight) = match weighed {
                false => (percent(samples, total), None),
                true => {
                    let w = weight_of(&key);
                    (if total_weight > 0.0 { w * 100.0 / total_weight } else { 0.0 }, Some(w))
                }
            };
            Row { key: typed(key), samples, percent: share, weight, task: None, children: None }
        })
        .collect();
    Ok(Report {
        file: file.path().display().to_string(),
        stream: n,
        by,
        records: walk.records(),
        samples: total,
        weight: weighed.then(|| WeightSum::new(opts.query.weight, total_weight)),
        rows,
        totals: Vec::new(),
        auto: None,
    })
}

/// Sums per counting key, added to once per record: in a vector for the
/// indexes below its size (modules, processes, threads), in a map for the
/// others; either way no SipHash per record.
pub(crate) struct Tally<T> {
    dense: Vec<T>,
    none: T,
    other: IdMap<u64, T>,
}

impl<T: Copy + Default + PartialEq + std::ops::AddAssign> Tally<T> {
    pub(crate) fn new(dense: usize) -> Tally<T> {
        Tally { dense: vec![T::default(); dense], none: T::default(), other: IdMap::default() }
    }

    #[inline]
    pub(crate) fn add(&mut self, key: Option<u64>, x: T) {
        let Some(k) = key else {
            self.none += x;
            return;
        };
        match usize::try_from(k).ok().and_then(|i| self.dense.get_mut(i)) {
            Some(sum) => *sum += x,
            None => *self.other.entry(k).or_default() += x,
        }
    }

    pub(crate) fn get(&self, key: Option<u64>) -> T {
        match key {
            None => self.none,
            Some(k) => match usize::try_from(k).ok().and_then(|i| self.dense.get(i)) {
                Some(&sum) => sum,
                None => self.other.get(&k).copied().unwrap_or_default(),
            },
        }
    }

    /// Adds the sums of `later` (a later part of the same records).
    pub(crate) fn absorb(&mut self, later: Tally<T>) {
        for (sum, x) in self.dense.iter_mut().zip(later.dense) {
            *sum += x;
        }
        self.none += later.none;
        for (k, x) in later.other {
            *self.other.entry(k).or_default() += x;
        }
    }

    /// The keys added to (a sum other than zero: counts) and their sums.
    pub(crate) fn counted(self) -> Vec<(Option<u64>, T)> {
        let zero = T::default();
        let dense = self.dense.into_iter().enumerate().filter(|&(_, n)| n != zero).map(|(i, n)| (Some(i as u64), n));
        let none = (self.none != zero).then_some((None, self.none));
        dense.chain(self.other.into_iter().map(|(k, n)| (Some(k), n))).chain(none).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::Tally;

    proptest! {
        /// Against a map of every key: the same sums, each key once, keys
        /// below, at and past the dense part and none, counted in one part
        /// or two.
        #[test]
        fn a_tally_sums_as_a_map_does(
            dense in 0usize..6,
            adds in proptest::collection::vec((proptest::option::of(0u64..10), 1u64..5), 0..60),
            cut in 0usize..61,
        ) {
            // Two parts, the second absorbed into the first: as a report
            // counted on several threads sums.
            let cut = cut.min(adds.len());
            let mut tally = Tally::new(dense);
            let mut later = Tally::new(dense);
            let mut want: HashMap<Option<u64>, u64> = HashMap::new();
            for (i, &(k, x)) in adds.iter().enumerate() {
                if i < cut { tally.add(k, x) } else { later.add(k, x) }
                *want.entry(k).or_default() += x;
            }
            tally.absorb(later);
            for k in (0..12).map(Some).chain([None]) {
                prop_assert_eq!(tally.get(k), want.get(&k).copied().unwrap_or(0));
            }
            let mut got = tally.counted();
            got.sort_unstable();
            let mut want: Vec<(Option<u64>, u64)> = want.into_iter().collect();
            want.sort_unstable();
            prop_assert_eq!(got, want);
        }
    }
}
