//! The time order of a stream whose records are not in it, in bounded
//! memory: an external merge sort of (time, record index) keys. The keys
//! are sorted in chunks of a fixed number of records; when there is more
//! than one chunk, each sorted chunk is spilled to an unnamed file in the
//! system's temporary folder (16 bytes a record) and the chunks are merged
//! as the rows are written. The records themselves are never copied: the
//! writer reads record `k` from the mapped TB5 file when its turn comes.
//!
//! Ties keep record order (the key holds the index, which is unique), so
//! the order is that of a stable sort by time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};

/// Records sorted in memory at a time: 16 bytes each, so 32 MiB of keys.
pub const CHUNK_RECORDS: usize = 1 << 21;

/// The environment variable that sets another chunk size (in records), to
/// trade memory for spill files; the tests make it small to go through the
/// merge with small files.
pub const CHUNK_VAR: &str = "TBRW_PARQUET_SORT_RECORDS";

/// Read buffer of each spilled chunk during the merge.
const READ_BUFFER: usize = 1 << 16;

/// A spilled, sorted chunk being read back.
struct Spilled {
    reader: BufReader<File>,
    left: u64,
}

impl Spilled {
    fn next(&mut self) -> io::Result<Option<(i64, u64)>> {
        if self.left == 0 {
            return Ok(None);
        }
        let (mut t, mut k) = ([0u8; 8], [0u8; 8]);
        self.reader.read_exact(&mut t)?;
        self.reader.read_exact(&mut k)?;
        self.left -= 1;
        Ok(Some((i64::from_le_bytes(t), u64::from_le_bytes(k))))
    }
}

/// The (time, record) keys of a stream in time order; see the module doc.
pub struct TimeOrder(Keys);

enum Keys {
    /// One chunk: sorted in memory, nothing spilled.
    Memory(std::vec::IntoIter<(i64, u64)>),
    /// Several chunks: the smallest head of each spilled chunk.
    Merge {
        chunks: Vec<Spilled>,
        /// (time, record, chunk) of each chunk's next key.
        heads: BinaryHeap<Reverse<(i64, u64, usize)>>,
    },
}

/// Sorts the keys of records `0..len` by time, `time_at(k)` giving record
/// `k`'s time, `chunk` records at a time. Errors are those of the spill
/// files.
pub fn time_order(len: u64, chunk: usize, time_at: impl Fn(u64) -> i64) -> io::Result<TimeOrder> {
    let chunk = chunk.max(1) as u64;
    let mut keys: Vec<(i64, u64)> = Vec::with_capacity(len.min(chunk) as usize);
    if len <= chunk {
        keys.extend((0..len).map(|k| (time_at(k), k)));
        keys.sort_unstable();
        return Ok(TimeOrder(Keys::Memory(keys.into_iter())));
    }
    let mut chunks = Vec::new();
    let mut start = 0u64;
    while start < len {
        let end = (start + chunk).min(len);
        keys.clear();
        keys.extend((start..end).map(|k| (time_at(k), k)));
        keys.sort_unstable();
        let mut w = BufWriter::with_capacity(READ_BUFFER, tempfile::tempfile()?);
        for (t, k) in &keys {
            w.write_all(&t.to_le_bytes())?;
            w.write_all(&k.to_le_bytes())?;
        }
        let mut f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.rewind()?;
        chunks.push(Spilled { reader: BufReader::with_capacity(READ_BUFFER, f), left: end - start });
        start = end;
    }
    drop(keys);
    let mut heads = BinaryHeap::with_capacity(chunks.len());
    for (i, c) in chunks.iter_mut().enumerate() {
        if let Some((t, k)) = c.next()? {
            heads.push(Reverse((t, k, i)));
        }
    }
    Ok(TimeOrder(Keys::Merge { chunks, heads }))
}

impl TimeOrder {
    /// Whether the keys were spilled (more than one chunk).
    #[cfg(test)]
    pub fn spilled(&self) -> bool {
        matches!(self.0, Keys::Merge { .. })
    }

    /// The next (time, record) key, `None` after the last.
    pub fn next_key(&mut self) -> io::Result<Option<(i64, u64)>> {
        match &mut self.0 {
            Keys::Memory(it) => Ok(it.next()),
            Keys::Merge { chunks, heads } => {
                let Some(Reverse((t, k, i))) = heads.pop() else { return Ok(None) };
                if let Some((t2, k2)) = chunks[i].next()? {
                    heads.push(Reverse((t2, k2, i)));
                }
                Ok(Some((t, k)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(mut o: TimeOrder) -> Vec<(i64, u64)> {
        let mut v = Vec::new();
        while let Some(x) = o.next_key().unwrap() {
            v.push(x);
        }
        v
    }

    proptest! {
        /// The merge of sorted chunks is a stable sort by time: the records
        /// a stable sort gives, with their times, whatever the chunk size.
        #[test]
        fn the_merge_is_a_stable_sort(times in proptest::collection::vec(-5i64..5, 0..300), chunk in 1usize..40) {
            let o = time_order(times.len() as u64, chunk, |k| times[k as usize]).unwrap();
            prop_assert_eq!(o.spilled(), times.len() > chunk);
            let mut want: Vec<u64> = (0..times.len() as u64).collect();
            want.sort_by_key(|&k| times[k as usize]);
            let want: Vec<(i64, u64)> = want.into_iter().map(|k| (times[k as usize], k)).collect();
            prop_assert_eq!(all(o), want);
        }
    }

    #[test]
    fn extreme_times_and_one_record_chunks() {
        let times = [i64::MAX, i64::MIN, 0, i64::MIN, i64::MAX, -1];
        let got = all(time_order(6, 1, |k| times[k as usize]).unwrap());
        assert_eq!(got, [(i64::MIN, 1), (i64::MIN, 3), (-1, 5), (0, 2), (i64::MAX, 0), (i64::MAX, 4)]);
        assert!(all(time_order(0, 4, |_| 0).unwrap()).is_empty());
    }
}
