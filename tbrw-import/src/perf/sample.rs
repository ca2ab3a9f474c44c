//! perf's `PERF_RECORD_SAMPLE` body, read as far as the import needs it
//! (ip, pid/tid, time, id, cpu, period, the read values, the call chain,
//! the user registers and the user stack copy), in the kernel's order
//! (`perf_output_sample`). Read here rather than by
//! `linux-perf-event-reader`, whose sample parser swaps the group and
//! single layouts of `PERF_SAMPLE_READ` and knows no `PERF_FORMAT_LOST`:
//! a leader-sampled group (`-e '{a,b}:S'`) needs its values, and every
//! field after them needs their size right. Nothing is copied: the
//! chain, the registers and the stack are views of the record's bytes.
//! Every length is checked against the record: a damaged sample is an
//! error, never a panic or an allocation of its claimed size.

use linux_perf_event_reader::Endianness;

/// `perf_event_attr.sample_type` bits (the kernel's `PERF_SAMPLE_*`).
pub mod bits {
    /// `PERF_SAMPLE_IP`
    pub const IP: u64 = 1 << 0;
    /// `PERF_SAMPLE_TID`
    pub const TID: u64 = 1 << 1;
    /// `PERF_SAMPLE_TIME`
    pub const TIME: u64 = 1 << 2;
    /// `PERF_SAMPLE_ADDR`
    pub const ADDR: u64 = 1 << 3;
    /// `PERF_SAMPLE_READ`
    pub const READ: u64 = 1 << 4;
    /// `PERF_SAMPLE_CALLCHAIN`
    pub const CALLCHAIN: u64 = 1 << 5;
    /// `PERF_SAMPLE_ID`
    pub const ID: u64 = 1 << 6;
    /// `PERF_SAMPLE_CPU`
    pub const CPU: u64 = 1 << 7;
    /// `PERF_SAMPLE_PERIOD`
    pub const PERIOD: u64 = 1 << 8;
    /// `PERF_SAMPLE_STREAM_ID`
    pub const STREAM_ID: u64 = 1 << 9;
    /// `PERF_SAMPLE_RAW`
    pub const RAW: u64 = 1 << 10;
    /// `PERF_SAMPLE_BRANCH_STACK`
    pub const BRANCH_STACK: u64 = 1 << 11;
    /// `PERF_SAMPLE_REGS_USER`
    pub const REGS_USER: u64 = 1 << 12;
    /// `PERF_SAMPLE_STACK_USER`
    pub const STACK_USER: u64 = 1 << 13;
    /// `PERF_SAMPLE_IDENTIFIER`
    pub const IDENTIFIER: u64 = 1 << 16;

    /// `read_format`: `PERF_FORMAT_TOTAL_TIME_ENABLED`
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    /// `read_format`: `PERF_FORMAT_TOTAL_TIME_RUNNING`
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    /// `read_format`: `PERF_FORMAT_ID`
    pub const FORMAT_ID: u64 = 1 << 2;
    /// `read_format`: `PERF_FORMAT_GROUP`
    pub const GROUP: u64 = 1 << 3;
    /// `read_format`: `PERF_FORMAT_LOST` (kernel 6.0)
    pub const LOST: u64 = 1 << 4;
}

/// What an event's samples carry: from its attribute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// `sample_type`.
    pub sample_type: u64,
    /// `read_format`, with the bits `linux-perf-event-reader` drops
    /// (`PERF_FORMAT_LOST`) when the file's raw attribute was found.
    pub read_format: u64,
    /// `branch_sample_type` has `PERF_SAMPLE_BRANCH_HW_INDEX`.
    pub branch_hw_index: bool,
    /// The number of registers `sample_regs_user` selects.
    pub user_regs: u32,
    /// Whether the data is big-endian.
    pub big_endian: bool,
}

impl Layout {
    /// The layout of an event with this parse info and raw `read_format`.
    pub fn new(info: &linux_perf_event_reader::RecordParseInfo, read_format: u64) -> Layout {
        Layout {
            sample_type: info.sample_format.bits(),
            read_format,
            branch_hw_index: info.branch_sample_format.contains(linux_perf_event_reader::BranchSampleFormat::HW_INDEX),
            user_regs: info.sample_regs_user.count_ones(),
            big_endian: info.endian == Endianness::BigEndian,
        }
    }

    fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }
}

/// A run of u64 words of the record, in the file's byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Words<'a> {
    bytes: &'a [u8],
    big_endian: bool,
}

impl<'a> Words<'a> {
    /// The number of words.
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// Word `i`.
    pub fn get(&self, i: usize) -> Option<u64> {
        let b: [u8; 8] = self.bytes.get(i.checked_mul(8)?..i * 8 + 8)?.try_into().ok()?;
        Some(if self.big_endian { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    }

    /// The words in order.
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        let big = self.big_endian;
        self.bytes.chunks_exact(8).map(move |c| {
            let b: [u8; 8] = c.try_into().unwrap_or_default();
            if big {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            }
        })
    }
}

/// The values of `PERF_SAMPLE_READ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadValues<'a> {
    /// The sample has none.
    None,
    /// One counter (`PERF_FORMAT_GROUP` not set): its value and id.
    One {
        /// The counter's value.
        value: u64,
        /// Its id (`PERF_FORMAT_ID`).
        id: Option<u64>,
    },
    /// A group: each member's value and id, as entries of `stride` words
    /// (value first, then id when `PERF_FORMAT_ID`).
    Group {
        /// The entries' words.
        words: Words<'a>,
        /// Words per entry.
        stride: usize,
        /// Whether each entry has an id.
        with_id: bool,
    },
}

impl ReadValues<'_> {
    /// Each counter's (value, id), in the record's order.
    pub fn each(&self) -> impl Iterator<Item = (u64, Option<u64>)> + '_ {
        let (n, single) = match *self {
            ReadValues::None => (0, None),
            ReadValues::One { value, id } => (1, Some((value, id))),
            ReadValues::Group { words, stride, .. } => (words.len() / stride.max(1), None),
        };
        (0..n).filter_map(move |i| match *self {
            ReadValues::Group { words, stride, with_id } => {
                let value = words.get(i * stride)?;
                Some((value, if with_id { words.get(i * stride + 1) } else { None }))
            }
            _ => single,
        })
    }
}

/// A sample, as far as the import reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample<'a> {
    /// `PERF_SAMPLE_IP`.
    pub ip: Option<u64>,
    /// `PERF_SAMPLE_TID`: the process.
    pub pid: Option<i32>,
    /// `PERF_SAMPLE_TID`: the thread.
    pub tid: Option<i32>,
    /// `PERF_SAMPLE_TIME`.
    pub time: Option<u64>,
    /// `PERF_SAMPLE_IDENTIFIER`, else `PERF_SAMPLE_ID`.
    pub id: Option<u64>,
    /// `PERF_SAMPLE_CPU`.
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_PERIOD`.
    pub period: Option<u64>,
    /// `PERF_SAMPLE_READ`.
    pub read: ReadValues<'a>,
    /// `PERF_SAMPLE_CALLCHAIN`, with perf's context markers.
    pub callchain: Option<Words<'a>>,
    /// `PERF_SAMPLE_REGS_USER`: the ABI (1: 32-bit, 2: 64-bit) and one
    /// value per bit of the event's `sample_regs_user`, lowest first; `None`
    /// when the sample has none (ABI 0: a kernel thread).
    pub user_regs: Option<(u64, Words<'a>)>,
    /// `PERF_SAMPLE_STACK_USER`: the valid part of the stack copy (its
    /// first `dyn_size` bytes), which starts at the user sp.
    pub user_stack: Option<&'a [u8]>,
}

/// A cursor over the record's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    big_endian: bool,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], String> {
        let left = self.bytes.len() - self.at;
        let n = usize::try_from(n).ok().filter(|&n| n <= left).ok_or_else(|| {
            format!("its {what} needs {n} bytes at byte {} of the sample, which has {}", self.at, self.bytes.len())
        })?;
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b: [u8; 8] = self.take(8, what)?.try_into().map_err(|_| what.to_owned())?;
        Ok(if self.big_endian { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let b: [u8; 4] = self.take(4, what)?.try_into().map_err(|_| what.to_owned())?;
        Ok(if self.big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
    }

    fn words(&mut self, n: u64, what: &str) -> Result<Words<'a>, String> {
        let bytes = self.take(n.checked_mul(8).ok_or_else(|| format!("its {what} claims {n} words"))?, what)?;
        Ok(Words { bytes, big_endian: self.big_endian })
    }
}

/// Reads a sample record's body (after its 8-byte header) laid out as
/// `layout` says. An error says which field does not fit.
pub fn parse<'a>(body: &'a [u8], layout: &Layout) -> Result<Sample<'a>, String> {
    let mut c = Cursor { bytes: body, at: 0, big_endian: layout.big_endian };
    let mut s = Sample {
        ip: None,
        pid: None,
        tid: None,
        time: None,
        id: None,
        cpu: None,
        period: None,
        read: ReadValues::None,
        callchain: None,
        user_regs: None,
        user_stack: None,
    };
    let l = layout;
    if l.has(bits::IDENTIFIER) {
        s.id = Some(c.u64("identifier")?);
    }
    if l.has(bits::IP) {
        s.ip = Some(c.u64("ip")?);
    }
    if l.has(bits::TID) {
        s.pid = Some(c.u32("pid")? as i32);
        s.tid = Some(c.u32("tid")? as i32);
    }
    if l.has(bits::TIME) {
        s.time = Some(c.u64("time")?);
    }
    if l.has(bits::ADDR) {
        c.u64("addr")?;
    }
    if l.has(bits::ID) {
        let id = c.u64("id")?;
        s.id = s.id.or(Some(id));
    }
    if l.has(bits::STREAM_ID) {
        c.u64("stream id")?;
    }
    if l.has(bits::CPU) {
        s.cpu = Some(c.u32("cpu")?);
        c.u32("cpu")?;
    }
    if l.has(bits::PERIOD) {
        s.period = Some(c.u64("period")?);
    }
    if l.has(bits::READ) {
        let f = l.read_format;
        let times = u64::from(f & bits::TOTAL_TIME_ENABLED != 0) + u64::from(f & bits::TOTAL_TIME_RUNNING != 0);
        let with_id = f & bits::FORMAT_ID != 0;
        let stride = 1 + usize::from(with_id) + usize::from(f & bits::LOST != 0);
        if f & bits::GROUP != 0 {
            let nr = c.u64("read group size")?;
            c.words(times, "read times")?;
            let n = nr.checked_mul(stride as u64).ok_or_else(|| format!("its read group claims {nr} members"))?;
            s.read = ReadValues::Group { words: c.words(n, "read values")?, stride, with_id };
        } else {
            let value = c.u64("read value")?;
            c.words(times, "read times")?;
            let id = if with_id { Some(c.u64("read id")?) } else { None };
            if f & bits::LOST != 0 {
                c.u64("read lost")?;
            }
            s.read = ReadValues::One { value, id };
        }
    }
    if l.has(bits::CALLCHAIN) {
        let nr = c.u64("call chain size")?;
        s.callchain = Some(c.words(nr, "call chain")?);
    }
    if l.has(bits::RAW) {
        let size = c.u32("raw size")?;
        c.take(u64::from(size), "raw data")?;
    }
    if l.has(bits::BRANCH_STACK) {
        let nr = c.u64("branch stack size")?;
        if l.branch_hw_index {
            c.u64("branch hw index")?;
        }
        c.words(nr.checked_mul(3).ok_or_else(|| format!("its branch stack claims {nr} entries"))?, "branch stack")?;
    }
    if l.has(bits::REGS_USER) {
        let abi = c.u64("user regs ABI")?;
        if abi != 0 {
            s.user_regs = Some((abi, c.words(u64::from(l.user_regs), "user regs")?));
        }
    }
    if l.has(bits::STACK_USER) {
        let size = c.u64("user stack size")?;
        let stack = c.take(size, "user stack")?;
        if size != 0 {
            // perf unwinds nothing from a copy of no valid bytes.
            let dyn_size = c.u64("user stack dyn_size")?;
            let valid = usize::try_from(dyn_size).unwrap_or(usize::MAX).min(stack.len());
            s.user_stack = (valid > 0).then(|| &stack[..valid]);
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn a_group_read_with_lost_and_a_dwarf_sample() {
        let layout = Layout {
            sample_type: bits::IP
                | bits::TID
                | bits::TIME
                | bits::READ
                | bits::CALLCHAIN
                | bits::REGS_USER
                | bits::STACK_USER
                | bits::ID
                | bits::PERIOD,
            read_format: bits::FORMAT_ID | bits::GROUP | bits::LOST,
            user_regs: 3,
            ..Layout::default()
        };
        let mut b = words(&[0x1000]); // ip
        b.extend_from_slice(&7u32.to_le_bytes()); // pid
        b.extend_from_slice(&8u32.to_le_bytes()); // tid
        b.extend(words(&[99, 5, 250_000])); // time, id, period
        b.extend(words(&[2, 100, 5, 0, 200, 6, 1])); // group: 2 members (value, id, lost)
        b.extend(words(&[2, 0xffff_ffff_ffff_ff80, 0xffff_8000_0000_1000])); // chain
        b.extend(words(&[2, 10, 20, 30])); // regs: ABI 64, bp sp ip
        b.extend(words(&[16])); // stack size
        b.extend_from_slice(&[0xaa; 16]);
        b.extend(words(&[8])); // dyn_size
        let s = parse(&b, &layout).unwrap();
        assert_eq!(
            (s.ip, s.pid, s.tid, s.time, s.id, s.period),
            (Some(0x1000), Some(7), Some(8), Some(99), Some(5), Some(250_000))
        );
        assert_eq!(s.read.each().collect::<Vec<_>>(), vec![(100, Some(5)), (200, Some(6))]);
        assert_eq!(s.callchain.unwrap().iter().collect::<Vec<_>>(), vec![0xffff_ffff_ffff_ff80, 0xffff_8000_0000_1000]);
        let (abi, regs) = s.user_regs.unwrap();
        assert_eq!((abi, regs.get(2)), (2, Some(30)));
        assert_eq!(s.user_stack, Some(&[0xaa; 8][..]));

        // Any cut is an error naming the field, never a panic.
        for cut in 0..b.len() {
            assert!(parse(&b[..cut], &layout).is_err(), "{cut}");
        }
        // A chain claiming 2^61 words.
        let mut huge = b[..96].to_vec();
        huge.extend(words(&[1 << 61]));
        assert!(parse(&huge, &layout).unwrap_err().contains("call chain"));
    }

    #[test]
    fn a_single_read_and_big_endian() {
        let layout = Layout {
            sample_type: bits::IDENTIFIER | bits::IP | bits::READ | bits::CPU,
            read_format: bits::TOTAL_TIME_ENABLED | bits::FORMAT_ID,
            big_endian: true,
            ..Layout::default()
        };
        let mut b: Vec<u8> = [3u64, 0x40_0000].iter().flat_map(|w| w.to_be_bytes()).collect();
        b.extend_from_slice(&5u32.to_be_bytes());
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend([77u64, 1000, 3].iter().flat_map(|w| w.to_be_bytes()));
        let s = parse(&b, &layout).unwrap();
        assert_eq!((s.id, s.ip, s.cpu), (Some(3), Some(0x40_0000), Some(5)));
        assert_eq!(s.read, ReadValues::One { value: 77, id: Some(3) });
    }
}
