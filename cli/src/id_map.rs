//! [`IdMap`]: hash maps keyed by small ids (indexes, addresses, pids,
//! symbol references) looked up once per sample or per distinct address
//! by the viewer exports and the reports, with a cheaper hasher than std's.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for the small keys looked up once or more per sample (frames,
/// stack nodes, thread indices): std's SipHash costs more than everything
/// else a sample needs. A multiply per word, and a final mix so that
/// addresses that differ only in their high bits (code aligned to 64
/// bytes) still spread over the table's low-bit buckets. The keys come
/// from the file being read: a crafted file could make lookups slow, not
/// wrong.
#[derive(Clone, Copy, Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }

    fn write_u8(&mut self, x: u8) {
        self.write_u64(u64::from(x));
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }

    fn finish(&self) -> u64 {
        let h = self.0;
        (h ^ (h >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (h >> 29)
    }
}

/// A hash map keyed by ids, hashed with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
