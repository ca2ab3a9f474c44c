//! The text of a Firefox profile's samples tables: their numbers written
//! straight into a buffer ([`Text`]), not through a `serde_json`
//! formatter call each (they are most of the profile's text), as
//! `serde_json` writes them: integers, and time deltas in ms as an `f64`
//! but whole numbers without `.0` ([`DeltaTexts`]).
//!
//! Holds no TB5 knowledge; imports only `serde_json`.

use std::io::{self, Write};

use serde_json::ser::{CompactFormatter, Formatter};

/// A sample's stack index where it has no stack (JSON `null`).
pub(super) const NO_STACK: u32 = u32::MAX;

/// Bytes of a samples table gathered before they go to the writer.
const FLUSH_AT: usize = 64 * 1024;

/// Room past [`FLUSH_AT`] in [`Text`]'s buffer: the longest value (a
/// 32-byte delta text copied whole) and its comma.
const SLACK: usize = 64;

/// A samples table's text, gathered in a buffer of [`FLUSH_AT`] bytes and
/// [`SLACK`] more, its numbers written into it directly.
pub(super) struct Text<'w> {
    w: &'w mut dyn Write,
    bytes: Vec<u8>,
    len: usize,
}

impl<'w> Text<'w> {
    pub(super) fn new(w: &'w mut dyn Write) -> Text<'w> {
        Text { w, bytes: vec![0; FLUSH_AT + SLACK], len: 0 }
    }

    /// Writes out what it holds once it holds [`FLUSH_AT`] bytes.
    #[inline]
    pub(super) fn room(&mut self) -> io::Result<()> {
        match self.len >= FLUSH_AT {
            true => self.flush(),
            false => Ok(()),
        }
    }

    pub(super) fn flush(&mut self) -> io::Result<()> {
        self.w.write_all(&self.bytes[..self.len])?;
        self.len = 0;
        Ok(())
    }

    /// Any text, written out first if it does not fit.
    pub(super) fn raw(&mut self, text: &[u8]) -> io::Result<()> {
        if self.len + text.len() > FLUSH_AT {
            self.flush()?;
            if text.len() > FLUSH_AT {
                return self.w.write_all(text);
            }
        }
        self.bytes[self.len..self.len + text.len()].copy_from_slice(text);
        self.len += text.len();
        Ok(())
    }

    /// Ends a column whose values were written each with its comma:
    /// the last comma taken back (it is still in the buffer: the buffer
    /// is written out before a value, never after).
    pub(super) fn end_column(&mut self, values: bool) {
        if values {
            self.len -= 1;
        }
    }

    /// Up to 32 bytes: `text[..len]`, copied as 32 (the slack has room).
    #[inline]
    pub(super) fn text32(&mut self, text: &[u8; 32], len: usize) {
        self.bytes[self.len..self.len + 32].copy_from_slice(text);
        self.len += len.min(32);
    }

    /// A stack index and a comma, `null` for none.
    #[inline]
    pub(super) fn stack(&mut self, s: u32) {
        match s {
            NO_STACK => {
                self.bytes[self.len..self.len + 5].copy_from_slice(b"null,");
                self.len += 5;
            }
            s => self.number(u64::from(s)),
        }
    }

    /// `v` in decimal, as serde_json writes an integer, and a comma: below
    /// 1000 copied from [`SMALL`] as 4 bytes (no branch on the digits),
    /// else written in place two digits at a time (a digit written to a
    /// scratch array and copied from there stalls on the copy's load).
    #[inline]
    pub(super) fn number(&mut self, v: u64) {
        if let Some(&(text, len)) = SMALL.get(v as usize) {
            self.bytes[self.len..self.len + 4].copy_from_slice(&text);
            self.len += len as usize;
            return;
        }
        let digits = v.checked_ilog10().map_or(1, |d| d as usize + 1);
        let out = &mut self.bytes[self.len..self.len + digits + 1];
        let (mut rest, mut k) = (v, digits);
        while rest >= 100 {
            let pair = (rest % 100) as usize * 2;
            rest /= 100;
            k -= 2;
            out[k..k + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        }
        if rest >= 10 {
            let pair = rest as usize * 2;
            out[..2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        } else {
            out[0] = b'0' + rest as u8;
        }
        out[digits] = b',';
        self.len += digits + 1;
    }

    /// The table's end: `weight` (`null`: every sample weighs 1, where the
    /// crate writes a 1 per sample, a fifth of the text and a third of the
    /// compression) and, when `cpu_deltas`, the `threadCPUDelta` column of
    /// the segments' `(samples, deltas)` (samples past a segment's deltas
    /// have 0).
    pub(super) fn weights_and_deltas<'d>(
        &mut self,
        cpu_deltas: bool,
        segments: impl Iterator<Item = (usize, &'d [u64])>,
    ) -> io::Result<()> {
        self.raw(b",\"weight\":null")?;
        if cpu_deltas {
            self.raw(b",\"threadCPUDelta\":[")?;
            let mut values = false;
            for (n, deltas) in segments {
                for k in 0..n {
                    self.room()?;
                    self.number(deltas.get(k).copied().unwrap_or(0));
                    values = true;
                }
            }
            self.end_column(values);
            self.raw(b"]")?;
        }
        self.raw(b"}")
    }
}

/// The text of each number below 1000 and a comma, and its length.
static SMALL: [([u8; 4], u8); 1000] = small_numbers();

const fn small_numbers() -> [([u8; 4], u8); 1000] {
    let mut table = [([0u8; 4], 0u8); 1000];
    let mut v = 0;
    while v < 1000 {
        let mut text = [0u8; 4];
        let digits = if v >= 100 {
            text[0] = b'0' + (v / 100) as u8;
            text[1] = b'0' + (v / 10 % 10) as u8;
            text[2] = b'0' + (v % 10) as u8;
            3
        } else if v >= 10 {
            text[0] = b'0' + (v / 10) as u8;
            text[1] = b'0' + (v % 10) as u8;
            2
        } else {
            text[0] = b'0' + v as u8;
            1
        };
        text[digits] = b',';
        table[v] = (text, digits as u8 + 1);
        v += 1;
    }
    table
}

/// "00" to "99".
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Entries of [`DeltaTexts`] (a power of two).
const DELTA_TEXTS: usize = 1024;

/// The JSON text of time deltas (ms, from ns), as serde_json writes an
/// `f64` but whole numbers without `.0`, kept for the deltas met most recently: a sampling rate repeats a
/// few deltas (a steady clock, or another thread's samples in between),
/// and the shortest round-trip text of a float is costly to find.
pub(super) struct DeltaTexts {
    /// Per slot (the delta's low bits): a delta and its text.
    slots: Vec<Option<(u64, u8, [u8; 32])>>,
}

impl DeltaTexts {
    pub(super) fn new() -> Self {
        DeltaTexts { slots: vec![None; DELTA_TEXTS] }
    }

    /// Writes the text of a delta of `nanos` ns, and a comma.
    #[inline]
    pub(super) fn write(&mut self, out: &mut Text<'_>, nanos: u64) {
        // A whole number of ms below 2^53 ns is the float's whole number
        // exactly (a clock of record indexes: every delta).
        if nanos.is_multiple_of(1_000_000) && nanos < 1 << 53 {
            out.number(nanos / 1_000_000);
            return;
        }
        // A multiplicative hash: deltas are often multiples of a round number.
        let slot = &mut self.slots[(nanos.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize & (DELTA_TEXTS - 1)];
        if let Some((d, len, text)) = slot {
            if *d == nanos {
                out.text32(text, *len as usize);
                return;
            }
        }
        let mut written = Vec::with_capacity(32);
        // Writing to a Vec does not fail.
        let _ = CompactFormatter.write_f64(&mut written, nanos as f64 / 1_000_000.0);
        // A whole number of ms without its `.0`: the same JSON number.
        if written.ends_with(b".0") {
            written.truncate(written.len() - 2);
        }
        written.push(b',');
        let mut text = [0u8; 32];
        let len = written.len().min(32);
        text[..len].copy_from_slice(&written[..len]);
        out.text32(&text, len);
        *slot = Some((nanos, len as u8, text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firefox::columns::tests::Rng;

    /// The delta texts of `nanos`, each followed by a comma.
    fn texts_of(nanos: &[u64]) -> Vec<u8> {
        let mut texts = DeltaTexts::new();
        let mut written = Vec::new();
        let mut out = Text::new(&mut written);
        for &n in nanos {
            out.room().unwrap();
            texts.write(&mut out, n);
        }
        out.flush().unwrap();
        written
    }

    #[test]
    fn numbers_and_stacks_are_serde_jsons_integers_each_with_a_comma() {
        let mut rng = Rng(7);
        let mut values: Vec<u64> = (0..20_000).collect();
        values.extend((0..20_000).map(|_| rng.next() >> (rng.next() % 64)));
        values.extend([u64::MAX, u64::MAX / 10, 10u64.pow(19), 999, 1000, 1001, 99, 100]);
        let mut written = Vec::new();
        let mut out = Text::new(&mut written);
        let mut want = String::new();
        for &v in &values {
            out.room().unwrap();
            out.number(v);
            want.push_str(&format!("{},", serde_json::to_string(&v).unwrap()));
        }
        for s in [0u32, 7, 999, 1000, 123_456, u32::MAX - 1, NO_STACK] {
            out.room().unwrap();
            out.stack(s);
            want.push_str(&format!("{},", serde_json::to_string(&(s != NO_STACK).then_some(s)).unwrap()));
        }
        // The last comma taken back.
        out.end_column(true);
        out.flush().unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), want.strip_suffix(',').unwrap());
    }

    #[test]
    fn delta_texts_are_serde_jsons_floats() {
        let mut rng = Rng(42);
        let mut nanos = Vec::new();
        let mut want = Vec::new();
        // Whole ms on either side of 2^53 ns (written as integers below it)
        // and whole ms whose float has an exponent.
        let edge = (1u64 << 53) / 1_000_000 * 1_000_000;
        let whole = [edge - 1_000_000, edge, edge + 1_000_000, u64::MAX / 1_000_000 * 1_000_000, 10u64.pow(19)];
        for k in 0..20_000u64 {
            // Repeats, collisions in the table, round and odd numbers.
            let n = match k % 5 {
                0 => rng.next() % 64 * 1_000_000,
                1 => rng.next() % 5_000_000,
                2 => rng.next(),
                3 => whole[(rng.next() % 5) as usize],
                _ => (rng.next() % 10) << 40,
            };
            nanos.push(n);
            let text = serde_json::to_string(&(n as f64 / 1_000_000.0)).unwrap();
            want.extend_from_slice(text.strip_suffix(".0").unwrap_or(&text).as_bytes());
            want.push(b',');
        }
        assert_eq!(String::from_utf8(texts_of(&nanos)).unwrap(), String::from_utf8(want).unwrap());
        // The same numbers: whole ones without `.0`.
        assert!(String::from_utf8(texts_of(&[0, 3_000_000, 1_500_000])).unwrap() == "0,3,1.5,");
    }
}
