//! The order of a report's rows: most samples first, ties by the label as
//! printed, then as they came ([`sort_rows`]), with the compact sort that
//! tens of thousands of rows by function need, and the merge of two sorted
//! lists. Holds no counting.

use std::borrow::Cow;

use super::{Key, Row};

/// The order of `n` rows most samples first, ties in the order of their
/// labels (as printed), then as they came. Reports by function have tens
/// of thousands of rows: a compact key (samples, the label's first 8
/// bytes, index) is sorted, and labels are compared whole only where those
/// tie.
pub fn order_by_samples_and_label<'l>(
    n: usize,
    samples: impl Fn(usize) -> u64,
    label: impl Fn(usize) -> &'l str,
) -> Vec<usize> {
    let prefix = |i: usize| {
        let mut p = [0u8; 8];
        let l = label(i).as_bytes();
        p[..l.len().min(8)].copy_from_slice(&l[..l.len().min(8)]);
        u64::from_be_bytes(p)
    };
    let mut order: Vec<(std::cmp::Reverse<u64>, u64, usize)> =
        (0..n).map(|i| (std::cmp::Reverse(samples(i)), prefix(i), i)).collect();
    order.sort_unstable();
    for run in order.chunk_by_mut(|a, b| a.0 == b.0 && a.1 == b.1) {
        if run.len() > 1 {
            run.sort_by(|a, b| label(a.2).cmp(label(b.2)).then(a.2.cmp(&b.2)));
        }
    }
    order.into_iter().map(|o| o.2).collect()
}

/// What a row's key prints as, to order rows by.
fn label(key: &Key) -> Cow<'_, str> {
    key.printed_str().map_or_else(|| Cow::Owned(key.to_string()), Cow::Borrowed)
}

/// Sorts rows as [`order_by_samples_and_label`] orders them, moving each
/// row once, in place.
pub fn sort_rows(rows: &mut [Row]) {
    // Weighted rows: the heaviest first, then by samples and label.
    if rows.iter().any(|r| r.weight.is_some()) {
        rows.sort_by(|a, b| {
            b.weight
                .unwrap_or(0.0)
                .total_cmp(&a.weight.unwrap_or(0.0))
                .then(b.samples.cmp(&a.samples))
                .then_with(|| a.key.to_string().cmp(&b.key.to_string()))
        });
        return;
    }
    let printed: Vec<Option<String>> =
        rows.iter().map(|r| r.key.printed_str().is_none().then(|| r.key.to_string())).collect();
    let mut want = order_by_samples_and_label(
        rows.len(),
        |i| rows[i].samples,
        |i| rows[i].key.printed_str().or(printed[i].as_deref()).unwrap_or_default(),
    );
    drop(printed);
    // Position j takes the row at want[j]: follow each cycle with swaps.
    for i in 0..want.len() {
        let mut j = i;
        while want[j] != i && want[j] != j {
            let k = want[j];
            rows.swap(j, k);
            want[j] = j;
            j = k;
        }
        want[j] = j;
    }
}

/// Two lists of rows, each sorted as [`sort_rows`] sorts, as one: on a
/// tie a row of `first` comes first.
pub fn merge_sorted(first: Vec<Row>, second: Vec<Row>) -> Vec<Row> {
    let mut out = Vec::with_capacity(first.len() + second.len());
    let mut second = second.into_iter().peekable();
    for row in first {
        let at = (std::cmp::Reverse(row.samples), label(&row.key));
        while let Some(r) = second.next_if(|r| (std::cmp::Reverse(r.samples), label(&r.key)) < at) {
            out.push(r);
        }
        out.push(row);
    }
    out.extend(second);
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn row(key: Key, samples: u64) -> Row {
        Row { key, samples, percent: 0.0, weight: None, task: None, children: None }
    }

    proptest! {
        /// The same order as a stable sort by (most samples, printed key):
        /// names sharing 8-byte prefixes, NUL bytes, equal names, and keys
        /// that are not functions.
        #[test]
        fn rows_sort_like_a_stable_sort_by_samples_and_label(
            spec in proptest::collection::vec((0u64..4, 0usize..8, any::<bool>(), 0u8..3), 0..60)
        ) {
            let names = ["", "a", "abcdefgh", "abcdefghi", "abcdefgh\0", "abcdefgz", "b\0", "b"];
            let rows: Vec<Row> = spec
                .iter()
                .enumerate()
                .map(|(i, &(samples, name, function, module))| {
                    let key = if function {
                        Key::Function {
                            module: Some(format!("m{module}")),
                            name: Some(names[name].to_owned()),
                            unknown: None,
                        }
                    } else {
                        Key::Process { index: i as u64, pid: name as u32, name: Some(names[name].to_owned()) }
                    };
                    row(key, samples)
                })
                .collect();
            let mut want: Vec<(u64, Key)> = rows.iter().map(|r| (r.samples, r.key.clone())).collect();
            want.sort_by_cached_key(|(n, k)| (std::cmp::Reverse(*n), k.to_string()));
            let mut got = rows.clone();
            sort_rows(&mut got);
            let got: Vec<(u64, Key)> = got.into_iter().map(|r| (r.samples, r.key)).collect();
            prop_assert_eq!(got, want);
            // Two sorted lists merge into what sorting both together gives.
            for split in [0, rows.len() / 3, rows.len()] {
                let (mut first, mut second) = (rows[..split].to_vec(), rows[split..].to_vec());
                sort_rows(&mut first);
                sort_rows(&mut second);
                let mut all = rows.clone();
                sort_rows(&mut all);
                prop_assert_eq!(merge_sorted(first, second), all);
            }
        }
    }
}
