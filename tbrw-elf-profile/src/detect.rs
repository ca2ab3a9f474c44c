//! Which writer made a sampler profile: the input (plain or bzip2) with
//! its first bytes kept, every layout and byte order tried against the
//! header, the maps and a walk of the samples, and the one that explains
//! the most bytes chosen. A plain input that seeks is probed whole; a
//! bzip2 one or one that cannot seek, by its first bytes. Reading the
//! samples and writing profiles stay in `codec.rs`.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

use crate::format::*;
/// Bytes of the decompressed or piped input looked at before deciding
/// the layout; an input shorter than this has a known size.
pub const PROBE_BYTES: usize = 1 << 20;

/// How the error about bytes that fit several layouts ends: a front end
/// that can name the layout says how.
pub const SAY_WHICH_LAYOUT: &str = "say which layout it is";

/// A profile being read once, from its start: its first bytes (up to
/// [`PROBE_BYTES`]), the rest of the stream, and what is known of its size.
pub struct Opened<'a> {
    /// The first bytes.
    pub prefix: Vec<u8>,
    /// Everything after `prefix`.
    pub rest: Box<dyn Read + 'a>,
    /// Whether the input was bzip2.
    pub compressed: bool,
    /// The (decompressed) size, when known: an input that ended within
    /// `prefix`.
    pub size: Option<u64>,
}

/// Whether `head` starts with the bzip2 magic (`BZh1`-`BZh9`).
pub fn is_bzip2(head: &[u8]) -> bool {
    head.len() >= 4 && &head[..3] == b"BZh" && (b'1'..=b'9').contains(&head[3])
}

/// Opens the profile `input` (named `name` in errors) to be read once,
/// decompressing bzip2 when the content starts with its magic, and reads
/// its first bytes.
pub fn open<'a>(input: impl Read + 'a, name: &str) -> Result<Opened<'a>, ProfileError> {
    let err = |what: String| ProfileError { input: name.to_owned(), offset: 0, sample: None, what };
    let mut buf = BufReader::with_capacity(1 << 20, input);
    let head = buf.fill_buf().map_err(|e| err(format!("cannot read: {e}")))?;
    let compressed = is_bzip2(head);
    let mut rest: Box<dyn Read + 'a> = if compressed { decompressed(buf).map_err(err)? } else { Box::new(buf) };
    let mut prefix = Vec::with_capacity(PROBE_BYTES);
    (&mut rest).take(PROBE_BYTES as u64).read_to_end(&mut prefix).map_err(|e| err(format!("cannot read: {e}")))?;
    let size = (prefix.len() < PROBE_BYTES).then_some(prefix.len() as u64);
    Ok(Opened { prefix, rest, compressed, size })
}

/// The bzip2 stream's decompressed bytes.
#[cfg(feature = "bzip2")]
fn decompressed<'a>(compressed: impl Read + 'a) -> Result<Box<dyn Read + 'a>, String> {
    Ok(Box::new(BufReader::with_capacity(1 << 20, bzip2::read::MultiBzDecoder::new(compressed))))
}

/// Without the `bzip2` feature a compressed profile is refused.
#[cfg(not(feature = "bzip2"))]
fn decompressed<'a>(_: impl Read + 'a) -> Result<Box<dyn Read + 'a>, String> {
    Err("the profile is bzip2-compressed, and this build has no bzip2 (feature `bzip2` of tbrw-import)".into())
}

/// Random access to the bytes of a profile, for detection.
trait Probe {
    /// Fills `buf` from `at`; returns how many bytes there were.
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> io::Result<usize>;
}

struct PrefixProbe<'a>(&'a [u8]);

impl Probe for PrefixProbe<'_> {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(at).unwrap_or(usize::MAX).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }
}

/// An input that seeks, read through a window, so that a forward walk
/// costs one read per window. Offsets are from `base`, where the profile
/// starts in the input.
struct SeekProbe<'a, R> {
    input: &'a mut R,
    base: u64,
    window: Vec<u8>,
    start: u64,
}

impl<R: Read + Seek> Probe for SeekProbe<'_, R> {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> io::Result<usize> {
        let end = self.start + self.window.len() as u64;
        if at < self.start || at + buf.len() as u64 > end {
            self.input.seek(SeekFrom::Start(self.base + at))?;
            self.window.resize(1 << 16, 0);
            let n = read_full(self.input, &mut self.window)?;
            self.window.truncate(n);
            self.start = at;
        }
        let off = (at - self.start) as usize;
        let n = buf.len().min(self.window.len().saturating_sub(off));
        buf[..n].copy_from_slice(&self.window[off..off + n]);
        Ok(n)
    }
}

/// How a profile was recognised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detected {
    /// Layout, byte order, PMU-data size.
    pub format: Format,
    /// The header.
    pub header: ProfileHeader,
    /// Other layouts that fit as well (when `--layout` chose).
    pub also: Vec<Format>,
}

/// Samples walked per candidate before taking a layout as fitting (all
/// of them when two candidates are left).
const WALK: u64 = 10_000;

/// Decides the layout and byte order of a profile read once (`name`
/// names it in errors) from its first bytes: each layout's header fields
/// are checked against the size (when known), its maps parsed, and its
/// samples walked. `forced` picks among several that fit (and is checked
/// against the bytes too).
pub fn detect(opened: &Opened<'_>, name: &str, forced: Option<Layout>) -> Result<Detected, ProfileError> {
    detect_with(&opened.prefix, opened.size, &mut PrefixProbe(&opened.prefix), name, forced)
}

/// [`detect`] for a plain profile that seeks, starting at byte `base` of
/// `input` and `size` bytes long (`prefix`: its first bytes, already
/// read): every layout is walked over the whole profile. Leaves `input`
/// anywhere.
pub fn detect_seekable<R: Read + Seek>(
    input: &mut R,
    base: u64,
    prefix: &[u8],
    size: u64,
    name: &str,
    forced: Option<Layout>,
) -> Result<Detected, ProfileError> {
    let mut probe = SeekProbe { input, base, window: Vec::new(), start: 0 };
    detect_with(prefix, Some(size), &mut probe, name, forced)
}

fn detect_with(
    p: &[u8],
    size: Option<u64>,
    probe: &mut dyn Probe,
    name: &str,
    forced: Option<Layout>,
) -> Result<Detected, ProfileError> {
    let err = |offset: u64, what: String| ProfileError { input: name.to_owned(), offset, sample: None, what };
    if p.is_empty() {
        return Err(err(0, "empty file: no profile header".into()));
    }
    if p.len() < 32 {
        return Err(err(p.len() as u64, format!("the profile ends inside its 32-byte header (at byte {})", p.len())));
    }
    let le = u32::from_le_bytes(p[0..4].try_into().unwrap_or_default());
    let be = u32::from_be_bytes(p[0..4].try_into().unwrap_or_default());
    if le > 3 && be > 3 {
        return Err(err(
            0,
            format!("magic number {le:#x} is not a sampler profile's (0 custom, 1 current, 2 voltage, 3 power)"),
        ));
    }
    let layouts: Vec<Layout> = Layout::ALL.to_vec();
    let mut fits: Vec<(Detected, bool, u64)> = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    let killed = p[..32].iter().all(|&b| b == 0);
    for layout in layouts {
        for endian in [Endian::Little, Endian::Big] {
            let what = format!("{} {}", layout.name(), endian.name());
            let r = if killed {
                fit_killed(probe, p, size, layout, endian)
            } else {
                fit(probe, p, size, layout, endian, WALK)
            };
            match r {
                Ok(f) => fits.push(f),
                Err(why) => reasons.push(format!("as {what}: {why}")),
            }
        }
    }
    // A walk that stopped early fits weakly; when an exact fit exists, or
    // two remain, walk them completely.
    if fits.len() > 1 && !killed {
        let mut full = Vec::new();
        for (d, exact, explained) in fits.drain(..) {
            if exact {
                full.push((d, true, explained));
            } else {
                match fit(probe, p, size, d.format.layout, d.format.endian, u64::MAX) {
                    Ok(f) => full.push(f),
                    Err(why) => {
                        reasons.push(format!("as {} {}: {why}", d.format.layout.name(), d.format.endian.name()))
                    }
                }
            }
        }
        fits = full;
    }
    // A wrong layout soon meets a sample it cannot read and takes the rest
    // for a cut-off end: the layout that explains the most bytes wins.
    let most = fits.iter().map(|f| f.2).max().unwrap_or(0);
    fits.retain(|f| f.2 == most);
    if fits.is_empty() {
        let at = if killed { 32 } else { 0 };
        let head = if killed {
            "the header is all zeros (a sampler killed before writing it), and no layout's samples follow it"
        } else {
            "no sampler profile layout fits these bytes"
        };
        return Err(err(at, format!("{head}: {}", reasons.join("; "))));
    }
    let mut chosen: Vec<Detected> = fits.into_iter().map(|(d, _, _)| d).collect();
    // Killed runs: both byte orders can fit an all-zero header; prefer the one that fit.
    if let Some(l) = forced {
        let others: Vec<Format> = chosen.iter().filter(|d| d.format.layout != l).map(|d| d.format).collect();
        let Some(mut d) = chosen.into_iter().find(|d| d.format.layout == l) else {
            let fit: Vec<&str> = others.iter().map(|f| f.layout.name()).collect();
            return Err(err(
                0,
                format!(
                    "the bytes do not fit the {} layout ({}){}",
                    l.name(),
                    reasons
                        .iter()
                        .filter(|r| r.starts_with(&format!("as {} ", l.name())))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("; "),
                    if fit.is_empty() { String::new() } else { format!("; they fit {}", fit.join(", ")) }
                ),
            ));
        };
        d.also = others;
        return Ok(d);
    }
    if chosen.len() > 1 {
        let names: Vec<String> =
            chosen.iter().map(|d| format!("{} ({})", d.format.layout.name(), d.format.endian.name())).collect();
        return Err(err(0, format!("the bytes fit more than one layout: {}; {SAY_WHICH_LAYOUT}", names.join(" and "))));
    }
    Ok(chosen.remove(0))
}

fn header_of(p: &[u8], layout: Layout, e: Endian) -> Result<(ProfileHeader, u32), String> {
    let magic_value = e.u32(&p[0..4]);
    let magic = Magic::from_value(magic_value).ok_or_else(|| format!("magic {magic_value:#x} is not 0-3"))?;
    let (pmu, maps) = if layout == Layout::Head {
        if p.len() < 36 {
            return Err("the file ends inside the 36-byte header".into());
        }
        (e.u32(&p[28..32]), e.u32(&p[32..36]))
    } else {
        (8, e.u32(&p[28..32]))
    };
    let h = ProfileHeader {
        magic,
        wall_us: e.u64(&p[4..12]),
        latency_us: e.u64(&p[12..20]),
        samples: e.u64(&p[20..28]),
        maps: u64::from(maps),
        killed: false,
    };
    Ok((h, pmu))
}

/// Reads and checks one map record.
pub(crate) fn parse_map(rec: &[u8], e: Endian, i: u64, n: u64) -> Result<VmMap, (u64, String)> {
    let raw = &rec[16..MAP_SIZE as usize];
    let end = raw
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| (16, format!("the label of VM map {i} of {n} has no NUL terminator within its 256 bytes")))?;
    let label = std::str::from_utf8(&raw[..end])
        .map_err(|x| (16 + x.valid_up_to() as u64, format!("the label of VM map {i} of {n} is not UTF-8")))?;
    Ok(VmMap { address: e.u64(&rec[0..8]), size: e.u64(&rec[8..16]), label: label.to_owned() })
}

fn check_maps(probe: &mut dyn Probe, at: u64, n: u64, e: Endian, limit: u64) -> Result<(), String> {
    let mut rec = [0u8; MAP_SIZE as usize];
    for i in 0..n.min(limit) {
        let got = probe.read_at(at + i * MAP_SIZE, &mut rec).map_err(|x| format!("cannot read: {x}"))?;
        if got < rec.len() {
            // Beyond what can be looked at without a size: not a misfit.
            return Ok(());
        }
        parse_map(&rec, e, i, n).map_err(|(o, w)| format!("byte {}: {w}", at + i * MAP_SIZE + o))?;
    }
    Ok(())
}

/// Where a walk over the samples stopped: samples walked, the offset
/// reached, and whether the data ran out inside a sample (`cut`), exactly
/// at the end of the sample data (`ended`), or beyond what can be looked
/// at without a size (neither); and threads seen.
struct Walk {
    samples: u64,
    offset: u64,
    cut: bool,
    ended: bool,
    threads: u64,
    times: Option<(u64, u64)>,
}

/// Walks samples from `at` to `end` (the end of the sample data when
/// known), at most `limit` of them or the `announced` count. Fails on a
/// sample that cannot be there or an implausible thread.
fn walk(
    probe: &mut dyn Probe,
    fmt: &Format,
    mut at: u64,
    end: Option<u64>,
    announced: Option<u64>,
    limit: u64,
) -> Result<Walk, String> {
    let hs = fmt.sample_head_size() as usize;
    let ts = fmt.layout.thread_size();
    let mut head = vec![0u8; hs];
    let mut th = [0u8; 20];
    let mut w = Walk { samples: 0, offset: at, cut: false, ended: false, threads: 0, times: None };
    let mut last_time = 0u64;
    while announced.is_none_or(|n| w.samples < n) && w.samples < limit {
        if end == Some(at) {
            w.ended = true;
            return Ok(w);
        }
        let got = probe.read_at(at, &mut head).map_err(|x| format!("cannot read: {x}"))?;
        if got < hs {
            // Without a size, the walk ends where the bytes to look at do.
            w.cut = end.is_some() && got > 0;
            return Ok(w);
        }
        let n = u64::from(fmt.endian.u32(&head[hs - 4..]));
        if fmt.layout.timed() {
            let t = fmt.endian.u64(&head[..8]);
            if w.samples > 0 && t < last_time {
                return Err(format!("byte {at}: sample {} goes back in time", w.samples));
            }
            last_time = t;
            w.times = Some((w.times.map_or(t, |x| x.0), t));
        }
        let body = n * ts;
        if let Some(end) = end {
            if at + hs as u64 + body > end {
                if announced.is_some() && fmt.layout.maps_at_end() {
                    return Err(format!(
                        "byte {at}: sample {} claims {n} threads, more than the {} bytes left before the maps",
                        w.samples,
                        // The head itself may run past the end (into the maps).
                        end.saturating_sub(at + hs as u64)
                    ));
                }
                w.cut = true;
                w.offset = at;
                return Ok(w);
            }
        }
        // Look at the first threads: a wrong layout or byte order shows in their tids.
        for k in 0..n.min(4) {
            let got = probe.read_at(at + hs as u64 + k * ts, &mut th[..ts as usize]).map_err(|x| x.to_string())?;
            if got < ts as usize {
                break;
            }
            let tid = fmt.endian.u32(&th[..4]);
            if tid == 0 || tid > MAX_TID {
                return Err(format!(
                    "byte {}: thread {k} of sample {} has tid {tid}, not a Linux thread id",
                    at + hs as u64 + k * ts,
                    w.samples
                ));
            }
        }
        at += hs as u64 + body;
        w.samples += 1;
        w.threads += n;
        w.offset = at;
    }
    Ok(w)
}

/// Whether `layout` in byte order `e` fits a profile with a header; the
/// result says whether the fit is exact (every sample walked) and how many
/// bytes of the profile it explains.
fn fit(
    probe: &mut dyn Probe,
    p: &[u8],
    size: Option<u64>,
    layout: Layout,
    e: Endian,
    limit: u64,
) -> Result<(Detected, bool, u64), String> {
    let (header, pmu_size) = header_of(p, layout, e)?;
    if pmu_size > MAX_PMU_SIZE {
        return Err(format!("{pmu_size} bytes of PMU data per sample is more than {MAX_PMU_SIZE}"));
    }
    let fmt = Format { layout, endian: e, pmu_size };
    let maps_bytes = header.maps * MAP_SIZE;
    let hs = layout.header_size();
    match size {
        Some(s) if hs + maps_bytes > s => {
            return Err(format!(
                "{} VM maps of 272 bytes cannot fit in the {s}-byte file (at most {})",
                header.maps,
                s.saturating_sub(hs) / MAP_SIZE
            ))
        }
        None if header.maps > MAX_MAPS_UNKNOWN_SIZE => {
            return Err(format!(
                "{} VM maps is more than the {MAX_MAPS_UNKNOWN_SIZE} accepted when the size is unknown (compressed or piped)",
                header.maps
            ))
        }
        _ => {}
    }
    let (maps_at, start, end) = if layout.maps_at_end() {
        let end = size.map(|s| s - maps_bytes);
        (end, hs, end)
    } else {
        (Some(hs), hs + maps_bytes, size)
    };
    if let Some(m) = maps_at {
        check_maps(probe, m, header.maps, e, limit)?;
    }
    let w = walk(probe, &fmt, start, end, Some(header.samples), limit)?;
    let exact = if layout.maps_at_end() {
        if w.cut {
            return Err(format!("the data ends inside sample {}", w.samples));
        }
        if end.is_some() && w.samples == header.samples && Some(w.offset) != end {
            return Err(format!(
                "the {} samples end at byte {} but the maps start at byte {}",
                header.samples,
                w.offset,
                end.unwrap_or_default()
            ));
        }
        (w.samples == header.samples, if w.samples == header.samples { size.unwrap_or(w.offset) } else { w.offset })
    } else {
        if w.samples == header.samples && size.is_some_and(|s| w.offset < s) {
            return Err(format!(
                "the {} samples end at byte {} but the file goes on to byte {}",
                header.samples,
                w.offset,
                size.unwrap_or_default()
            ));
        }
        (w.samples == header.samples || w.cut || w.ended, w.offset)
    };
    Ok((Detected { format: fmt, header, also: Vec::new() }, exact.0, exact.1))
}

/// CLOCK_REALTIME microseconds from 2000 to 2100: what a killed current
/// writer's first sample time must look like.
const PLAUSIBLE_US: std::ops::Range<u64> = 946_684_800_000_000..4_102_444_800_000_000;

/// Whether a killed run (all-zero header) of `layout` fits; the PMU-data
/// size of the current layout, zero in such a header, is found from the
/// samples: the first has no threads, and the next time follows.
fn fit_killed(
    probe: &mut dyn Probe,
    p: &[u8],
    size: Option<u64>,
    layout: Layout,
    e: Endian,
) -> Result<(Detected, bool, u64), String> {
    if !layout.maps_at_end() {
        return Err("this writer wrote its header before the samples".into());
    }
    let hs = layout.header_size();
    if p.len() < hs as usize || p[..hs as usize].iter().any(|&b| b != 0) {
        return Err(format!("the first {hs} bytes are not all zero"));
    }
    let header = ProfileHeader { magic: Magic::Custom, wall_us: 0, latency_us: 0, samples: 0, maps: 0, killed: true };
    let pmu_size = if layout == Layout::Head {
        let t = |at: u64, probe: &mut dyn Probe| -> Option<u64> {
            let mut b = [0u8; 8];
            (probe.read_at(at, &mut b).ok()? == 8).then(|| e.u64(&b))
        };
        let t0 = t(hs, probe).filter(|t| PLAUSIBLE_US.contains(t)).ok_or("no plausible time in the first sample")?;
        let mut found = None;
        for k in (0..=1024u64).step_by(4) {
            let mut n = [0u8; 4];
            if probe.read_at(hs + 8 + k, &mut n).map_err(|x| x.to_string())? < 4 {
                break;
            }
            let Some(t1) = t(hs + 12 + k, probe) else { break };
            if e.u32(&n) == 0 && (t0..t0 + 3_600_000_000).contains(&t1) {
                found = Some(k as u32);
                break;
            }
        }
        found.ok_or("no PMU-data size makes the first sample (0 threads) end where a second begins")?
    } else {
        8
    };
    let fmt = Format { layout, endian: e, pmu_size };
    let w = walk(probe, &fmt, hs, size, None, u64::MAX)?;
    if w.threads == 0 {
        return Err("not one whole sample with threads follows the header".into());
    }
    if let Some((a, b)) = w.times {
        if !PLAUSIBLE_US.contains(&a) || !PLAUSIBLE_US.contains(&b) {
            return Err("sample times are not CLOCK_REALTIME microseconds".into());
        }
    }
    Ok((Detected { format: fmt, header, also: Vec::new() }, true, w.offset))
}
