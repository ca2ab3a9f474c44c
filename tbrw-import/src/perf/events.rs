//! perf's events as perf names and finds them: the name perf derives
//! from an attribute that no `EVENT_DESC` names ([`perf_name`], perf
//! 6.1's `evsel__name`, modifiers included), the tracepoints' names from
//! the tracing data ([`tracepoint_names`]), the ids of the file header's
//! attribute section ([`attr_section_ids`]), and the event a sample
//! belongs to by its id ([`sample_id`]). Used by the import loop
//! ([`super::stream`]); it must not import the loop.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};

use linux_perf_event_reader::{
    AttrFlags, HardwareCacheId, HardwareCacheOp, HardwareCacheOpResult, HardwareEventId, HwBreakpointType,
    PerfEventAttr, PerfEventType, SoftwareCounterType,
};

use super::sample::{bits, Layout};

/// perf's `PERF_TYPE_RAW`, which `linux-perf-event-reader` reads as a dynamic PMU.
const PERF_TYPE_RAW: u32 = 4;

/// The name perf gives an event that no `EVENT_DESC` names, from its
/// attribute's type and config and its modifiers (perf 6.1's
/// `evsel__name`); a tracepoint by its `system:name` in `tracepoints`
/// (the tracing data's formats), else perf's "unknown tracepoint".
pub fn perf_name(attr: &PerfEventAttr, tracepoints: &HashMap<u64, String>) -> String {
    let with_mods = |base: String| base + &modifiers(attr.flags);
    match attr.type_ {
        PerfEventType::Hardware(id, pmu) => {
            let name = hardware_name(id);
            // perf's x86 `arch_evsel__hw_name`: a hybrid PMU's type in the
            // config's upper half; a file does not name the PMU.
            with_mods(if pmu.0 == 0 { name.to_owned() } else { format!("cpu/{name}/") })
        }
        PerfEventType::Software(c) => with_mods(software_name(c).to_owned()),
        PerfEventType::Tracepoint(id) => {
            tracepoints.get(&id).cloned().unwrap_or_else(|| "unknown tracepoint".to_owned())
        }
        PerfEventType::HwCache(cache, op, result, _) => with_mods(cache_name(cache, op, result)),
        PerfEventType::Breakpoint(kind, addr, _) => {
            let mut name = format!("mem:0x{:x}:", addr.0);
            for (bit, c) in [(HwBreakpointType::R, 'r'), (HwBreakpointType::W, 'w'), (HwBreakpointType::X, 'x')] {
                if kind.contains(bit) {
                    name.push(c);
                }
            }
            with_mods(name)
        }
        PerfEventType::DynamicPmu(PERF_TYPE_RAW, config, ..) => with_mods(format!("raw 0x{config:x}")),
        PerfEventType::DynamicPmu(t, ..) => format!("unknown attr type: {t}"),
    }
}

/// perf 6.1's `evsel__add_modifiers`: `:` and the contexts counted when
/// some are excluded (k, u, h), the precision (`p` to `ppp`), and H/G
/// when the host is excluded or the guest's exclusion is not the default
/// (excluded when a context is excluded or the event is precise).
fn modifiers(flags: AttrFlags) -> String {
    let excluded = |f: AttrFlags| flags.contains(f);
    let mut m = String::new();
    let mut guest_default = false;
    if excluded(AttrFlags::EXCLUDE_KERNEL) || excluded(AttrFlags::EXCLUDE_USER) || excluded(AttrFlags::EXCLUDE_HV) {
        for (f, c) in [(AttrFlags::EXCLUDE_KERNEL, 'k'), (AttrFlags::EXCLUDE_USER, 'u'), (AttrFlags::EXCLUDE_HV, 'h')] {
            if !excluded(f) {
                m.push(c);
            }
        }
        guest_default = true;
    }
    let precise = ((flags.bits() & AttrFlags::PRECISE_IP_BITMASK.bits()) >> 15) as usize;
    if precise > 0 {
        m.push_str(&"ppp"[..precise.min(3)]);
        guest_default = true;
    }
    if excluded(AttrFlags::EXCLUDE_HOST) || excluded(AttrFlags::EXCLUDE_GUEST) == guest_default {
        for (f, c) in [(AttrFlags::EXCLUDE_HOST, 'H'), (AttrFlags::EXCLUDE_GUEST, 'G')] {
            if !excluded(f) {
                m.push(c);
            }
        }
    }
    if m.is_empty() {
        m
    } else {
        format!(":{m}")
    }
}

fn hardware_name(id: HardwareEventId) -> &'static str {
    match id {
        HardwareEventId::CpuCycles => "cycles",
        HardwareEventId::Instructions => "instructions",
        HardwareEventId::CacheReferences => "cache-references",
        HardwareEventId::CacheMisses => "cache-misses",
        HardwareEventId::BranchInstructions => "branches",
        HardwareEventId::BranchMisses => "branch-misses",
        HardwareEventId::BusCycles => "bus-cycles",
        HardwareEventId::StalledCyclesFrontend => "stalled-cycles-frontend",
        HardwareEventId::StalledCyclesBackend => "stalled-cycles-backend",
        HardwareEventId::RefCpuCycles => "ref-cycles",
        _ => "unknown-hardware",
    }
}

fn software_name(c: SoftwareCounterType) -> &'static str {
    match c {
        SoftwareCounterType::CpuClock => "cpu-clock",
        SoftwareCounterType::TaskClock => "task-clock",
        SoftwareCounterType::PageFaults => "page-faults",
        SoftwareCounterType::ContextSwitches => "context-switches",
        SoftwareCounterType::CpuMigrations => "cpu-migrations",
        SoftwareCounterType::PageFaultsMin => "minor-faults",
        SoftwareCounterType::PageFaultsMaj => "major-faults",
        SoftwareCounterType::AlignmentFaults => "alignment-faults",
        SoftwareCounterType::EmulationFaults => "emulation-faults",
        SoftwareCounterType::Dummy => "dummy",
        _ => "unknown-software",
    }
}

/// perf's `__evsel__hw_cache_name`: `L1-dcache-load-misses`, or with the
/// access result `L1-dcache-loads`; "invalid-cache" for an operation the
/// cache has not (a write or prefetch of iTLB or the branch unit, a
/// write of L1-icache).
fn cache_name(cache: HardwareCacheId, op: HardwareCacheOp, result: HardwareCacheOpResult) -> String {
    let (name, ops) = match cache {
        HardwareCacheId::L1d => ("L1-dcache", 0b111),
        HardwareCacheId::L1i => ("L1-icache", 0b101),
        HardwareCacheId::Ll => ("LLC", 0b111),
        HardwareCacheId::Dtlb => ("dTLB", 0b111),
        HardwareCacheId::Itlb => ("iTLB", 0b001),
        HardwareCacheId::Bpu => ("branch", 0b001),
        HardwareCacheId::Node => ("node", 0b111),
        _ => return "unknown-ext-hardware-cache-type".to_owned(),
    };
    let (op_bit, op_name, op_plural) = match op {
        HardwareCacheOp::Read => (0b001, "load", "loads"),
        HardwareCacheOp::Write => (0b010, "store", "stores"),
        HardwareCacheOp::Prefetch => (0b100, "prefetch", "prefetches"),
    };
    if ops & op_bit == 0 {
        return "invalid-cache".to_owned();
    }
    match result {
        HardwareCacheOpResult::Access => format!("{name}-{op_plural}"),
        HardwareCacheOpResult::Miss => format!("{name}-{op_name}-misses"),
    }
}

/// The tracepoints' `system:name` by id, from perf's tracing data (the
/// `HEADER_TRACING_DATA` feature section, or the payload of the pipe's
/// tracing-data record): its magic and version, the header page and
/// event formats, the ftrace formats, then each system's event formats,
/// each of which says `name: ...` and `ID: ...`. Whatever is cut short or
/// damaged ends the reading with the names found before it.
pub fn tracepoint_names(data: &[u8]) -> HashMap<u64, String> {
    let mut names = HashMap::new();
    let _ = read_tracing_data(data, &mut names);
    names
}

struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
    big_endian: bool,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let end = self.at.checked_add(usize::try_from(n).ok()?)?;
        let b = self.data.get(self.at..end)?;
        self.at = end;
        Some(b)
    }

    fn u32(&mut self) -> Option<u32> {
        let b: [u8; 4] = self.take(4)?.try_into().ok()?;
        Some(if self.big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
    }

    fn u64(&mut self) -> Option<u64> {
        let b: [u8; 8] = self.take(8)?.try_into().ok()?;
        Some(if self.big_endian { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    }

    fn string(&mut self) -> Option<&'a [u8]> {
        let len = self.data.get(self.at..)?.iter().position(|&b| b == 0)?;
        let s = self.take(len as u64)?;
        self.at += 1;
        Some(s)
    }

    /// A size (u64) and that many bytes.
    fn sized(&mut self) -> Option<&'a [u8]> {
        let n = self.u64()?;
        self.take(n)
    }
}

fn read_tracing_data(data: &[u8], names: &mut HashMap<u64, String>) -> Option<()> {
    if data.get(..10)? != b"\x17\x08\x44tracing" {
        return None;
    }
    let mut c = Cursor { data, at: 10, big_endian: false };
    c.string()?; // the version
    c.big_endian = c.take(1)?[0] != 0;
    c.take(1)?; // sizeof(long)
    c.u32()?; // the page size
    for header in [&b"header_page"[..], b"header_event"] {
        if c.string()? != header {
            return None;
        }
        c.sized()?;
    }
    for _ in 0..c.u32()? {
        c.sized()?; // ftrace's own formats
    }
    for _ in 0..c.u32()? {
        let system = String::from_utf8_lossy(c.string()?).into_owned();
        for _ in 0..c.u32()? {
            let format = String::from_utf8_lossy(c.sized()?);
            let field = |key: &str| format.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
            if let (Some(name), Some(id)) = (field("name:"), field("ID:").and_then(|id| id.parse::<u64>().ok())) {
                names.insert(id, format!("{system}:{name}"));
            }
        }
    }
    Some(())
}

/// The ids of each attribute of a file's header attribute section (perf's
/// `perf_file_attr`: an attribute, then the file section of its ids),
/// `attr_size` bytes each; what is out of the file's `len` bytes, or more
/// than it could hold, is left empty. `head` is the file header.
pub fn attr_section_ids<R: Read + Seek>(r: &mut R, head: &[u8], big_endian: bool, len: u64) -> Vec<Vec<u64>> {
    let word = |b: &[u8], at: usize| -> u64 {
        let w: [u8; 8] = b.get(at..at + 8).and_then(|s| s.try_into().ok()).unwrap_or_default();
        if big_endian {
            u64::from_be_bytes(w)
        } else {
            u64::from_le_bytes(w)
        }
    };
    let (attr_size, offset, size) = (word(head, 16), word(head, 24), word(head, 32));
    if attr_size < 16 || offset.saturating_add(size) > len {
        return Vec::new();
    }
    let mut all = Vec::new();
    for i in 0..size / attr_size {
        let mut section = [0u8; 16];
        let at = offset + i * attr_size + attr_size - 16;
        if r.seek(SeekFrom::Start(at)).and_then(|_| r.read_exact(&mut section)).is_err() {
            return Vec::new();
        }
        let (ids_at, ids_size) = (word(&section, 0), word(&section, 8));
        let mut ids = Vec::new();
        if ids_at.saturating_add(ids_size) <= len && r.seek(SeekFrom::Start(ids_at)).is_ok() {
            let mut bytes = vec![0u8; usize::try_from(ids_size).unwrap_or(0)];
            if r.read_exact(&mut bytes).is_ok() {
                ids = bytes.chunks_exact(8).map(|w| word(w, 0)).collect();
            }
        }
        all.push(ids);
    }
    all
}

/// A sample's id, where perf finds it (`perf_evsel__parse_id_sample`'s
/// `id_pos`): the first word with `PERF_SAMPLE_IDENTIFIER`, else after
/// the ip, tid, time and addr words with `PERF_SAMPLE_ID`; perf insists
/// every event of a file has it at the same place, so any event's layout
/// finds it.
pub fn sample_id(body: &[u8], layout: &Layout) -> Option<u64> {
    let t = layout.sample_type;
    let at = if t & bits::IDENTIFIER != 0 {
        0
    } else if t & bits::ID != 0 {
        [bits::IP, bits::TID, bits::TIME, bits::ADDR].iter().filter(|&&b| t & b != 0).count() * 8
    } else {
        return None;
    };
    let w: [u8; 8] = body.get(at..at + 8)?.try_into().ok()?;
    Some(if layout.big_endian { u64::from_be_bytes(w) } else { u64::from_le_bytes(w) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(bits: &[AttrFlags], precise: u64) -> AttrFlags {
        let mut f = AttrFlags::from_bits_retain(precise << 15);
        for b in bits {
            f |= *b;
        }
        f
    }

    #[test]
    fn modifiers_are_perfs() {
        use AttrFlags as F;
        // perf record's defaults for `cycles` (exclude_guest for precise or
        // a context excluded) and simpleperf's attributes (nothing excluded).
        let cases: &[(&[AttrFlags], u64, &str)] = &[
            (&[], 0, ":HG"),
            (&[F::EXCLUDE_GUEST], 0, ""),
            (&[F::EXCLUDE_KERNEL, F::EXCLUDE_HV], 0, ":u"),
            (&[F::EXCLUDE_KERNEL, F::EXCLUDE_HV, F::EXCLUDE_GUEST], 0, ":uH"),
            (&[F::EXCLUDE_USER], 0, ":kh"),
            (&[F::EXCLUDE_GUEST], 3, ":pppH"),
            (&[F::EXCLUDE_GUEST], 1, ":pH"),
            (&[], 2, ":pp"),
            (&[F::EXCLUDE_KERNEL, F::EXCLUDE_HV, F::EXCLUDE_GUEST], 2, ":uppH"),
            (&[F::EXCLUDE_HOST], 0, ":G"),
            (&[F::EXCLUDE_HOST, F::EXCLUDE_GUEST], 0, ":"),
        ];
        for &(bits, precise, want) in cases {
            let want = if want == ":" { "" } else { want };
            assert_eq!(modifiers(flags(bits, precise)), want, "{bits:?} precise {precise}");
        }
    }

    #[test]
    fn cache_names_are_perfs() {
        use HardwareCacheId as C;
        use HardwareCacheOp as O;
        use HardwareCacheOpResult as R;
        assert_eq!(cache_name(C::L1d, O::Read, R::Miss), "L1-dcache-load-misses");
        assert_eq!(cache_name(C::L1d, O::Read, R::Access), "L1-dcache-loads");
        assert_eq!(cache_name(C::Ll, O::Write, R::Access), "LLC-stores");
        assert_eq!(cache_name(C::Dtlb, O::Prefetch, R::Miss), "dTLB-prefetch-misses");
        assert_eq!(cache_name(C::L1i, O::Write, R::Miss), "invalid-cache");
        assert_eq!(cache_name(C::Bpu, O::Read, R::Access), "branch-loads");
    }

    /// Tracing data as perf writes it, with one system of two events.
    fn tracing(big_endian: bool) -> Vec<u8> {
        let u32b = |v: u32| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
        let u64b = |v: u64| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut t = b"\x17\x08\x44tracing0.6\0".to_vec();
        t.extend([u8::from(big_endian), 8]);
        t.extend(u32b(4096));
        for h in ["header_page", "header_event"] {
            t.extend(h.as_bytes());
            t.push(0);
            t.extend(u64b(3));
            t.extend(b"abc");
        }
        t.extend(u32b(1));
        t.extend(u64b(5));
        t.extend(b"ftrac");
        t.extend(u32b(1));
        t.extend(b"sched\0");
        t.extend(u32b(2));
        for (name, id) in [("sched_switch", 316), ("sched_wakeup", 318)] {
            let f = format!("name: {name}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\n");
            t.extend(u64b(f.len() as u64));
            t.extend(f.as_bytes());
        }
        t
    }

    #[test]
    fn tracepoints_are_named_from_the_tracing_data() {
        for big in [false, true] {
            let t = tracing(big);
            let names = tracepoint_names(&t);
            assert_eq!(names.len(), 2);
            assert_eq!(names[&316], "sched:sched_switch");
            assert_eq!(names[&318], "sched:sched_wakeup");
            // Cut anywhere: no panic, and never a name it does not hold.
            for cut in 0..t.len() {
                let some = tracepoint_names(&t[..cut]);
                assert!(some.len() < 2 && some.get(&316).is_none_or(|n| n == "sched:sched_switch"), "{cut}");
            }
        }
        assert!(tracepoint_names(b"not tracing data").is_empty());
    }

    #[test]
    fn the_sample_id_is_where_perf_finds_it() {
        let body: Vec<u8> = (1u64..=6).flat_map(|w| w.to_le_bytes()).collect();
        let layout = |t: u64| Layout { sample_type: t, ..Default::default() };
        assert_eq!(sample_id(&body, &layout(bits::IDENTIFIER | bits::IP | bits::ID)), Some(1));
        assert_eq!(sample_id(&body, &layout(bits::IP | bits::TID | bits::TIME | bits::ID)), Some(4));
        assert_eq!(sample_id(&body, &layout(bits::IP | bits::ADDR | bits::ID | bits::CPU)), Some(3));
        assert_eq!(sample_id(&body, &layout(bits::IP | bits::TID)), None);
        assert_eq!(sample_id(&body[..16], &layout(bits::IP | bits::TID | bits::TIME | bits::ID)), None);
    }
}
