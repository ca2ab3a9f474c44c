//! The samples tables of a Firefox profile, kept outside
//! `fxprof-processed-profile`'s `Profile` and written into its JSON.
//!
//! `fxprof-processed-profile` keeps 36 bytes per sample (its time, its stack index as an
//! `Option<usize>`, a CPU delta and a weight) and writes them through serde
//! one value at a time: on millions of samples, half the export's memory
//! and much of its time. Here a profile thread's samples are columns of
//! what the stream has ([`Segment`]): the stack's number (4 bytes), the
//! time as the step from the thread's sample before (4; 12 where a step is
//! 4.3 s or more, or back in time), and the CPU delta (8) only where the
//! stream has CPU time. A
//! thread's samples are one segment per part of the walk that met the
//! thread, in record order ([`ThreadSamples`]); a segment's stack numbers
//! are its part's, which [`SampleTables::stack_of`] turns into the
//! thread's stack indexes as the table is written.
//!
//! [`SamplesFormatter`] is a `serde_json` formatter that writes the
//! profile's JSON as serde_json's compact formatter does, except each
//! thread's `samples` value. In the `Profile` that value is the library's
//! table of one placeholder sample whose weight is the thread's slot (the
//! tag: the library orders its threads its own way); the formatter
//! replaces it by that slot's columns, written as the library writes its
//! table (its keys, in its order; samples out of time order sorted as it
//! sorts them) but for three things, each the same profile to the
//! profiler: `weight` is `null` (every sample weighs 1; `null` is what the
//! profiler's upgraders give a table without weights), a whole number of
//! ms is written without `.0` (the same JSON number), and there is no
//! `threadCPUDelta` column where the stream has no CPU time (the profiler
//! reads a delta of 0 as an idle thread, where a missing column means
//! "running", its activity graph then at 100 %). The columns' numbers are
//! written straight into a buffer ([`Text`]), not through a formatter
//! call each: they are most of the profile's text.
//!
//! Holds no TB5 knowledge; imports only `serde_json`.

use std::io::{self, Write};

use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

/// A sample's stack index where it has no stack (JSON `null`).
pub(super) const NO_STACK: u32 = u32::MAX;

/// Bytes of a samples table gathered before they go to the writer.
const FLUSH_AT: usize = 64 * 1024;

/// Room past [`FLUSH_AT`] in [`Text`]'s buffer: the longest value (a
/// 32-byte delta text copied whole) and its comma.
const SLACK: usize = 64;

/// A step in [`Segment::steps`] that is none: the time is the next of
/// [`Segment::far`].
const FAR: u32 = u32::MAX;

/// A part of the walk's samples of one profile thread, in record order.
#[derive(Debug, Default, Clone)]
pub(super) struct Segment {
    /// The part of the walk (its table in [`SampleTables::stack_of`]).
    pub(super) part: u32,
    /// Per sample, its stack's number in its part.
    pub(super) stacks: Vec<u32>,
    /// Per sample, its time (ns, [`SampleTables::t0`] not yet subtracted)
    /// as the step from the sample before's (the first's from 0), 4 bytes
    /// where the time is ahead by less than [`FAR`] ns (4.3 s); else
    /// [`FAR`] and the time in `far`.
    steps: Vec<u32>,
    /// The times no step reaches, in order.
    far: Vec<u64>,
    /// The last time added.
    last: u64,
    /// Per sample, the CPU time its thread used since its previous sample,
    /// whole µs. Empty until a sample has one; samples past its end have 0.
    pub(super) cpu_deltas: Vec<u64>,
}

impl Segment {
    /// Room for the samples this thread will likely have, when its columns
    /// are full: its share of the records walked so far (`walked` of
    /// `records`) carried to the end, so that a thread sampled at a steady
    /// rate is moved once or twice instead of at every doubling. The
    /// threads' shares add up to the records: together they reserve no
    /// more than the stream's record count beyond what they hold.
    pub(super) fn reserve_ahead(&mut self, walked: u64, records: u64) {
        if self.stacks.len() < self.stacks.capacity() {
            return;
        }
        let len = self.stacks.len() as u64;
        let projected = u128::from(len + 1) * u128::from(records) / u128::from(walked.max(1));
        let more = usize::try_from(projected.saturating_sub(u128::from(len))).unwrap_or(0);
        // At least what a doubling gives: a thread early in a burst.
        let more = more.max(self.stacks.len()).max(16);
        self.stacks.reserve_exact(more);
        self.steps.reserve_exact(more);
    }

    /// Adds a sample; `cpu_delta` in µs, when the sample has CPU time.
    #[inline]
    pub(super) fn push(&mut self, stack: u32, time: u64, cpu_delta: Option<u64>) {
        if let Some(d) = cpu_delta {
            // Samples before the first with CPU time have a delta of 0.
            self.cpu_deltas.resize(self.stacks.len(), 0);
            self.cpu_deltas.push(d);
        }
        self.stacks.push(stack);
        match time.checked_sub(self.last).and_then(|d| u32::try_from(d).ok()).filter(|&d| d != FAR) {
            Some(step) => self.steps.push(step),
            None => {
                self.steps.push(FAR);
                self.far.push(time);
            }
        }
        self.last = time;
    }

    /// Its samples' times, in order.
    pub(super) fn times(&self) -> impl Iterator<Item = u64> + '_ {
        let mut far = self.far.iter();
        let mut time = 0u64;
        self.steps.iter().map(move |&step| {
            time = match step {
                FAR => far.next().copied().unwrap_or(0),
                step => time + u64::from(step),
            };
            time
        })
    }
}

/// One profile thread's samples: its segments, in record order.
#[derive(Debug, Default, Clone)]
pub(super) struct ThreadSamples {
    pub(super) segments: Vec<Segment>,
}

impl ThreadSamples {
    /// Its samples.
    pub(super) fn len(&self) -> usize {
        self.segments.iter().map(|s| s.stacks.len()).sum()
    }
}

/// Every profile thread's samples, and what their numbers stand for.
#[derive(Debug, Default)]
pub(super) struct SampleTables {
    /// Per thread slot, its samples.
    pub(super) threads: Vec<ThreadSamples>,
    /// Per part of the walk, by a stack number its segments hold: the
    /// stack's index in the thread's stack table ([`NO_STACK`]: none).
    pub(super) stack_of: Vec<Vec<u32>>,
    /// Subtracted from every time (saturating): a nanosecond clock's first
    /// time stamp, the profile's zero.
    pub(super) t0: u64,
    /// Per thread slot, its `timeDeltas` values as text when made ahead
    /// ([`render_deltas`]; the table writes it as it is).
    pub(super) deltas: Vec<Option<Vec<u8>>>,
}

/// Whether a thread's samples are in time order (the profile's zero
/// subtracted): the library writes such a table as its samples were added.
fn in_time_order(thread: &ThreadSamples, t0: u64) -> bool {
    let mut previous = 0u64;
    thread.segments.iter().flat_map(Segment::times).all(|t| {
        let t = t.saturating_sub(t0);
        t >= std::mem::replace(&mut previous, t)
    })
}

/// The time deltas of a thread whose samples are in time order, as the
/// table's `timeDeltas` values.
fn write_deltas(thread: &ThreadSamples, t0: u64, out: &mut Text<'_>) -> io::Result<()> {
    let (mut texts, mut previous) = (DeltaTexts::new(), 0u64);
    for s in &thread.segments {
        for t in s.times() {
            let t = t.saturating_sub(t0);
            out.room()?;
            texts.write(out, t.wrapping_sub(std::mem::replace(&mut previous, t)));
        }
    }
    out.end_column(thread.len() > 0);
    Ok(())
}

/// The `timeDeltas` values of each thread whose samples are in time order
/// (`t0` the profile's zero), made ahead of the JSON (on a thread of
/// their own while the frames are named): what
/// [`SampleTables::write_table`] would write, as text.
pub(super) fn render_deltas(threads: &[ThreadSamples], t0: u64) -> Vec<Option<Vec<u8>>> {
    threads
        .iter()
        .map(|thread| {
            if !in_time_order(thread, t0) {
                return None;
            }
            let mut text = Vec::with_capacity(thread.len() * 4);
            let mut out = Text::new(&mut text);
            // Writing to a Vec does not fail.
            write_deltas(thread, t0, &mut out).and_then(|()| out.flush()).ok()?;
            Some(text)
        })
        .collect()
}

impl SampleTables {
    /// Empty tables for `slots` threads (a profile of markers).
    pub(super) fn empty(slots: usize) -> SampleTables {
        SampleTables { threads: vec![ThreadSamples::default(); slots], ..SampleTables::default() }
    }

    /// The stack index of number `n` of part `part`.
    #[inline]
    fn stack(&self, part: u32, n: u32) -> u32 {
        self.stack_of.get(part as usize).and_then(|t| t.get(n as usize)).copied().unwrap_or(NO_STACK)
    }

    /// Writes thread `slot`'s table as `fxprof-processed-profile` 0.8
    /// writes its `SampleTable`, but for the weights (all 1: `null`) and
    /// with the `threadCPUDelta` column only when `cpu_deltas`. Samples out
    /// of time order are written in time order, sorted as the crate sorts
    /// them.
    fn write_table(&self, slot: usize, w: &mut dyn Write, cpu_deltas: bool) -> io::Result<()> {
        let Some(thread) = self.threads.get(slot) else { return Ok(()) };
        let t0 = self.t0;
        let n = thread.len();
        let mut out = Text::new(w);
        out.raw(format!("{{\"length\":{n},\"weightType\":\"samples\",\"stack\":[").as_bytes())?;
        // The crate's order: as added while their times do not decrease.
        let rendered = self.deltas.get(slot).and_then(Option::as_ref);
        if rendered.is_none() && !in_time_order(thread, t0) {
            return self.write_sorted(thread, out, cpu_deltas);
        }
        for s in &thread.segments {
            let table = self.stack_of.get(s.part as usize).map_or(&[][..], Vec::as_slice);
            for &number in &s.stacks {
                out.room()?;
                out.stack(table.get(number as usize).copied().unwrap_or(NO_STACK));
            }
        }
        out.end_column(n > 0);
        out.raw(b"],\"timeDeltas\":[")?;
        match rendered {
            Some(text) => out.raw(text)?,
            None => write_deltas(thread, t0, &mut out)?,
        }
        out.raw(b"]")?;
        out.weights_and_deltas(cpu_deltas, thread.segments.iter().map(|s| (s.stacks.len(), &s.cpu_deltas[..])))?;
        out.flush()
    }

    /// [`SampleTables::write_table`]'s columns of a thread whose samples
    /// are out of time order: sorted by time as the crate sorts them.
    fn write_sorted(&self, thread: &ThreadSamples, mut out: Text<'_>, cpu_deltas: bool) -> io::Result<()> {
        let mut stacks = Vec::new();
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        for s in &thread.segments {
            stacks.extend(s.stacks.iter().map(|&n| self.stack(s.part, n)));
            times.extend(s.times().map(|t| t.saturating_sub(self.t0)));
            cpu.extend((0..s.stacks.len()).map(|k| s.cpu_deltas.get(k).copied().unwrap_or(0)));
        }
        let mut order: Vec<usize> = (0..times.len()).collect();
        order.sort_unstable_by_key(|&i| times[i]);
        for &k in &order {
            out.room()?;
            out.stack(stacks[k]);
        }
        out.end_column(!order.is_empty());
        out.raw(b"],\"timeDeltas\":[")?;
        let (mut texts, mut previous) = (DeltaTexts::new(), 0u64);
        for &k in &order {
            out.room()?;
            texts.write(&mut out, times[k].wrapping_sub(std::mem::replace(&mut previous, times[k])));
        }
        out.end_column(!order.is_empty());
        out.raw(b"]")?;
        let sorted: Vec<u64> = order.iter().map(|&k| cpu[k]).collect();
        out.weights_and_deltas(cpu_deltas, std::iter::once((sorted.len(), &sorted[..])))?;
        out.flush()
    }
}

/// A samples table's text, gathered in a buffer of [`FLUSH_AT`] bytes and
/// [`SLACK`] more, its numbers written into it directly.
struct Text<'w> {
    w: &'w mut dyn Write,
    bytes: Vec<u8>,
    len: usize,
}

impl<'w> Text<'w> {
    fn new(w: &'w mut dyn Write) -> Text<'w> {
        Text { w, bytes: vec![0; FLUSH_AT + SLACK], len: 0 }
    }

    /// Writes out what it holds once it holds [`FLUSH_AT`] bytes.
    #[inline]
    fn room(&mut self) -> io::Result<()> {
        match self.len >= FLUSH_AT {
            true => self.flush(),
            false => Ok(()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.write_all(&self.bytes[..self.len])?;
        self.len = 0;
        Ok(())
    }

    /// Any text, written out first if it does not fit.
    fn raw(&mut self, text: &[u8]) -> io::Result<()> {
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
    fn end_column(&mut self, values: bool) {
        if values {
            self.len -= 1;
        }
    }

    /// Up to 32 bytes: `text[..len]`, copied as 32 (the slack has room).
    #[inline]
    fn text32(&mut self, text: &[u8; 32], len: usize) {
        self.bytes[self.len..self.len + 32].copy_from_slice(text);
        self.len += len.min(32);
    }

    /// A stack index and a comma, `null` for none.
    #[inline]
    fn stack(&mut self, s: u32) {
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
    fn number(&mut self, v: u64) {
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
    fn weights_and_deltas<'d>(
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
struct DeltaTexts {
    /// Per slot (the delta's low bits): a delta and its text.
    slots: Vec<Option<(u64, u8, [u8; 32])>>,
}

impl DeltaTexts {
    fn new() -> Self {
        DeltaTexts { slots: vec![None; DELTA_TEXTS] }
    }

    /// Writes the text of a delta of `nanos` ns, and a comma.
    #[inline]
    fn write(&mut self, out: &mut Text<'_>, nanos: u64) {
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
    use fxprof_processed_profile::{
        CategoryHandle, CpuDelta, Frame, FrameFlags, FrameInfo, Profile, ReferenceTimestamp, SamplingInterval,
        Timestamp,
    };

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// Two profiles of the same threads and stacks: `reference` with its
    /// samples in the crate's tables, `ours` with the same samples as
    /// columns, whatever their order in time.
    fn profiles(rng: &mut Rng, cpu: bool) -> (Profile, super::super::FirefoxProfile) {
        let new = || {
            Profile::new("t", ReferenceTimestamp::from_millis_since_unix_epoch(0.0), SamplingInterval::from_millis(1))
        };
        let (mut reference, mut ours) = (new(), new());
        let mut columns = Vec::new();
        let at = Timestamp::from_millis_since_reference(0.0);
        let processes = [reference.add_process("p", 7, at), ours.add_process("p", 7, at)];
        // Slot 0 is not its process's main thread, slot 1 is: the crate
        // writes slot 1 first.
        for (slot, tid) in [(0u32, 8u32), (1, 7)] {
            let mut threads = Vec::new();
            for (p, process) in [(&mut reference, processes[0]), (&mut ours, processes[1])] {
                let th = p.add_thread(process, tid, at, tid == 7);
                let mut stacks = Vec::new();
                for f in ["a", "b", "c"] {
                    let name = p.intern_string(f);
                    let info = FrameInfo {
                        frame: Frame::Label(name),
                        category_pair: CategoryHandle::OTHER.into(),
                        flags: FrameFlags::empty(),
                    };
                    let frame = p.intern_frame(th, info);
                    let parent = stacks.last().copied();
                    stacks.push(p.intern_stack(th, parent, frame));
                }
                threads.push((th, stacks));
            }
            let (th, stacks) = threads.remove(0);
            super::super::tag(&mut ours, threads[0].0, slot);
            let mut samples = Segment::default();
            // Times mostly rising with repeated steps, sometimes back.
            let mut t = 0u64;
            for k in 0..200 {
                t = match rng.next() % 10 {
                    0 => t.saturating_sub(rng.next() % 3_000_000),
                    1..=4 => t + 1_000_000,
                    _ => t + rng.next() % 2_000_000,
                };
                let stack = (rng.next() % 4) as usize;
                let delta = (!rng.next().is_multiple_of(5)).then(|| rng.next() % 2000);
                let handle = stacks.get(stack).copied();
                let fx_delta = CpuDelta::from_micros(delta.unwrap_or(0));
                reference.add_sample(th, Timestamp::from_nanos_since_reference(t), handle, fx_delta, 1);
                let index = if stack < 3 { stack as u32 } else { NO_STACK };
                samples.push(index, t, delta.filter(|_| cpu || k % 2 == 0));
            }
            columns.push(ThreadSamples { segments: vec![samples] });
        }
        // Part 0's numbers are the stack indexes.
        let tables = SampleTables { threads: columns, stack_of: vec![vec![0, 1, 2]], t0: 0, deltas: Vec::new() };
        (reference, super::super::FirefoxProfile { profile: ours, samples: tables })
    }

    #[test]
    fn the_columns_are_the_crates_samples_tables_without_weights() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for cpu in [true, false] {
            let (reference, ours) = profiles(&mut rng, cpu);
            let summary = super::super::FirefoxSummary { cpu_deltas: cpu, ..Default::default() };
            let mut text = Vec::new();
            super::super::json(&ours, &summary, &mut text).unwrap();
            let mut got: serde_json::Value = serde_json::from_slice(&text).unwrap();
            let mut want = serde_json::to_value(&reference).unwrap();
            // Whole ms are written without `.0`: the same numbers.
            for v in [&mut got, &mut want] {
                for t in v["threads"].as_array_mut().unwrap() {
                    let deltas = t["samples"]["timeDeltas"].as_array().unwrap();
                    let ms: Vec<f64> = deltas.iter().map(|d| d.as_f64().unwrap()).collect();
                    t["samples"]["timeDeltas"] = serde_json::json!(ms);
                }
            }
            for t in want["threads"].as_array_mut().unwrap() {
                let samples = t["samples"].as_object_mut().unwrap();
                assert!(samples["weight"].as_array().unwrap().iter().all(|w| w == 1));
                samples.insert("weight".into(), serde_json::Value::Null);
                if !cpu {
                    samples.remove("threadCPUDelta");
                }
            }
            assert_eq!(got, want, "cpu deltas: {cpu}");
            assert_eq!(got["threads"][0]["tid"], "7", "the crate's order");
            // The text is serde_json's compact text of the same value,
            // key order kept: the crate's keys in its order.
            let samples = &text[text.windows(10).position(|w| w == b"\"samples\":").unwrap()..];
            assert!(samples.starts_with(b"\"samples\":{\"length\":200,\"weightType\":\"samples\",\"stack\":["));
        }
    }

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
