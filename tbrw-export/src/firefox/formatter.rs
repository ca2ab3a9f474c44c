//! [`SamplesFormatter`]: a `serde_json` formatter that writes a Firefox
//! profile's JSON as serde_json's compact formatter does, except each
//! thread's `samples` value. In the `Profile` that value is the library's
//! table of one placeholder sample whose weight is the thread's slot (the
//! tag: the library orders its threads its own way); the formatter
//! replaces it by that slot's columns ([`super::columns`]).
//!
//! Holds no TB5 knowledge; imports only `serde_json` and
//! [`super::columns`].

use std::io::{self, Write};

use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

use super::columns::SampleTables;

/// A thread's `samples` value being held back: the crate's placeholder
/// table, written out as it is unless its tag names a slot.
struct Held {
    /// Its text so far.
    text: Vec<u8>,
    /// Arrays and objects open in it (its own object included).
    depth: u32,
    /// Where the key being written starts in `text`.
    key_start: usize,
    /// Inside its `weight` column: the first number is the tag.
    in_weight: bool,
    tag: Option<i64>,
}

/// The compact JSON formatter that writes each thread's samples columns in
/// place of its `samples` value (the module doc says how).
pub(super) struct SamplesFormatter<'a> {
    tables: &'a SampleTables,
    cpu_deltas: bool,
    /// The key being written (keys are looked at for `"samples"`).
    key: Option<Vec<u8>>,
    /// The key just written was `"samples"`: an object that starts now is
    /// held back.
    samples_next: bool,
    held: Option<Held>,
}

impl<'a> SamplesFormatter<'a> {
    /// The formatter of a profile whose thread of slot `k` has the samples
    /// `tables[k]`.
    pub(super) fn new(tables: &'a SampleTables, cpu_deltas: bool) -> Self {
        SamplesFormatter { tables, cpu_deltas, key: None, samples_next: false, held: None }
    }

    /// A number written: the tag, if it is the first of a held table's
    /// `weight` column.
    fn note_number(&mut self, v: i64) {
        if let Some(h) = &mut self.held {
            if h.in_weight && h.depth == 2 && h.tag.is_none() {
                h.tag = Some(v);
            }
        }
    }
}

/// The formatter's scalar and string methods: into the held-back value
/// while one is held, else into the key while one is written, else out.
macro_rules! pass {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $name<W: ?Sized + Write>(&mut self, w: &mut W $(, $arg: $ty)*) -> io::Result<()> {
            if let Some(h) = &mut self.held {
                return CompactFormatter.$name(&mut h.text $(, $arg)*);
            }
            match &mut self.key {
                Some(k) => CompactFormatter.$name(k $(, $arg)*),
                None => {
                    self.samples_next = false;
                    CompactFormatter.$name(w $(, $arg)*)
                }
            }
        }
    )*};
}

impl Formatter for SamplesFormatter<'_> {
    pass! {
        write_null();
        write_bool(v: bool);
        write_i8(v: i8);
        write_i16(v: i16);
        write_i64(v: i64);
        write_i128(v: i128);
        write_u8(v: u8);
        write_u16(v: u16);
        write_u32(v: u32);
        write_u64(v: u64);
        write_u128(v: u128);
        write_f32(v: f32);
        write_f64(v: f64);
        write_number_str(v: &str);
        begin_string();
        end_string();
        write_string_fragment(v: &str);
        write_char_escape(v: CharEscape);
        write_byte_array(v: &[u8]);
        write_raw_fragment(v: &str);
    }

    /// The crate writes its weights as `i32`.
    fn write_i32<W: ?Sized + Write>(&mut self, w: &mut W, v: i32) -> io::Result<()> {
        self.note_number(v.into());
        if let Some(h) = &mut self.held {
            return CompactFormatter.write_i32(&mut h.text, v);
        }
        match &mut self.key {
            Some(k) => CompactFormatter.write_i32(k, v),
            None => {
                self.samples_next = false;
                CompactFormatter.write_i32(w, v)
            }
        }
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.held {
            Some(h) => {
                h.depth += 1;
                CompactFormatter.begin_array(&mut h.text)
            }
            None => {
                self.samples_next = false;
                CompactFormatter.begin_array(w)
            }
        }
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.held {
            Some(h) => {
                h.depth -= 1;
                CompactFormatter.end_array(&mut h.text)
            }
            None => CompactFormatter.end_array(w),
        }
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        match &mut self.held {
            Some(h) => CompactFormatter.begin_array_value(&mut h.text, first),
            None => CompactFormatter.begin_array_value(w, first),
        }
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.held {
            Some(h) => CompactFormatter.end_array_value(&mut h.text),
            None => CompactFormatter.end_array_value(w),
        }
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if let Some(h) = &mut self.held {
            h.depth += 1;
            return CompactFormatter.begin_object(&mut h.text);
        }
        if std::mem::take(&mut self.samples_next) {
            let mut held = Held { text: Vec::new(), depth: 1, key_start: 0, in_weight: false, tag: None };
            CompactFormatter.begin_object(&mut held.text)?;
            self.held = Some(held);
            return Ok(());
        }
        CompactFormatter.begin_object(w)
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let Some(h) = &mut self.held else { return CompactFormatter.end_object(w) };
        h.depth -= 1;
        CompactFormatter.end_object(&mut h.text)?;
        if h.depth > 0 {
            return Ok(());
        }
        let slot = h.tag.and_then(|t| usize::try_from(t).ok()).filter(|&t| t < self.tables.threads.len());
        let held = self.held.take();
        match (slot, held) {
            (Some(slot), _) => self.tables.write_table(slot, &mut WriteOf(w), self.cpu_deltas),
            (None, Some(held)) => w.write_all(&held.text),
            (None, None) => Ok(()),
        }
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if let Some(h) = &mut self.held {
            CompactFormatter.begin_object_key(&mut h.text, first)?;
            h.key_start = h.text.len();
            return Ok(());
        }
        self.key = Some(Vec::new());
        CompactFormatter.begin_object_key(w, first)
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if let Some(h) = &mut self.held {
            if h.depth == 1 {
                h.in_weight = &h.text[h.key_start..] == b"\"weight\"";
            }
            return Ok(());
        }
        let key = self.key.take().unwrap_or_default();
        self.samples_next = key == b"\"samples\"";
        w.write_all(&key)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.held {
            Some(h) => CompactFormatter.begin_object_value(&mut h.text),
            None => CompactFormatter.begin_object_value(w),
        }
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        match &mut self.held {
            Some(h) => {
                if h.depth == 1 {
                    h.in_weight = false;
                }
                CompactFormatter.end_object_value(&mut h.text)
            }
            None => CompactFormatter.end_object_value(w),
        }
    }
}

/// A `W: ?Sized + Write` as a `dyn Write`.
struct WriteOf<'w, W: ?Sized>(&'w mut W);

impl<W: ?Sized + Write> Write for WriteOf<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_samples_object_without_a_slots_tag_is_written_as_it_is() {
        use serde::Serialize;
        let v = serde_json::json!({
            "samples": {"length": 1, "weight": [5], "x": {"samples": {"weight": [0]}}},
            "counters": [{"samples": {"length": 0, "weight": [1]}}, {"samples": [1, {"a": 2}]}],
            "other": {"weight": [0]}
        });
        let tables = SampleTables::empty(2);
        let mut text = Vec::new();
        v.serialize(&mut serde_json::Serializer::with_formatter(&mut text, SamplesFormatter::new(&tables, false)))
            .unwrap();
        // Tags 0 and 1 name tables (i32 weights only; these are i64), so
        // nothing is replaced: serde_json's own text.
        assert_eq!(String::from_utf8(text).unwrap(), serde_json::to_string(&v).unwrap());
    }
}
