//! Counts kept as lists sorted by key, each key once: the one merge of two
//! such lists, for the aggregations that count by sorting (the report by
//! address, flat sample walks). Imports nothing of the crate.

use std::cmp::Ordering;

/// `a` and `b`, each in `key` order with each key once, as one list in
/// that order: an entry whose key is in both gets `add`ed `b`'s into `a`'s.
pub(crate) fn merge<T, K: Ord>(a: Vec<T>, b: Vec<T>, key: impl Fn(&T) -> K, add: impl Fn(&mut T, T)) -> Vec<T> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match key(x).cmp(&key(y)) {
                Ordering::Less => a.next(),
                Ordering::Greater => b.next(),
                Ordering::Equal => match (a.next(), b.next()) {
                    (Some(mut x), Some(y)) => {
                        add(&mut x, y);
                        Some(x)
                    }
                    (x, y) => x.or(y),
                },
            },
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => break,
        };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::merge;

    #[test]
    fn equal_keys_are_added_and_the_order_kept() {
        let a = vec![(1, 2), (3, 1), (7, 5)];
        let b = vec![(0, 1), (3, 4), (8, 1)];
        let got = merge(a, b, |e| e.0, |x, y| x.1 += y.1);
        assert_eq!(got, [(0, 1), (1, 2), (3, 5), (7, 5), (8, 1)]);
        assert_eq!(merge(vec![], vec![(1, 1)], |e: &(i32, i32)| e.0, |x, y| x.1 += y.1), [(1, 1)]);
    }
}
