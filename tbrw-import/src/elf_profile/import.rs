//! Sampler profiles to TB5 (`tbrw import sampler`) and back (`tbrw export
//! sampler`). The mapping, units and time stamps are in docs/IMPORT.md;
//! the way back in docs/EXPORT.md.
//!
//! Import streams: a sample's records go to the data section when the
//! sample is whole (so a killed run keeps exactly its whole samples), one
//! sample bigger than [`PENDING_BYTES`] waits in a temporary file, and maps
//! go one by one to the module section. Memory does not depend on any
//! count the profile claims.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom, Write};

use tbrw::*;

use tbrw_elf_profile::{
    self as profile, detect_seekable, is_bzip2, Detected, Format, Layout, Magic, Next, ProfileError, ProfileReader,
    SampleHead, ThreadSample, Threads, VmMap, PROBE_BYTES,
};
use tbrw_schema::elf_profile::{value_field, RecordShape};
use tbrw_schema::elf_profile::{Empty, Meta, TimeSource, MAX_EMPTY_KEPT};

use crate::error::ImportError;
use crate::globals::write_globals;
use crate::progress::Progress;

/// The pid the profile's process gets when `--pid` is not given.
pub const DEFAULT_PID: u32 = 1;

/// Bytes of records held in memory before they go to the data section
/// (or, for one sample alone, to a temporary file).
pub const PENDING_BYTES: usize = 1 << 20;

/// The `segment_name` of every imported module: its load address is the
/// start of the ELF's executable `PT_LOAD` segment, not the ELF's base.
pub const SEGMENT_NAME: &str = "PT_LOAD r-x";

/// Options of the import.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// The process id the profile's process gets ([`DEFAULT_PID`] if `None`).
    pub pid: Option<u32>,
    /// The host name to record (the profile has none).
    pub hostname: Option<String>,
}

/// How to read the profile itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProfileOptions {
    /// The layout, when the bytes fit more than one (`--layout`).
    pub layout: Option<Layout>,
    /// The voltage a current profile was measured at (`--volts`): each
    /// record then gets its power, current × volts.
    pub volts: Option<f64>,
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportStats {
    /// Whether the profile was bzip2-compressed.
    pub compressed: bool,
    /// Layout, byte order and PMU-data size.
    pub format: Option<Format>,
    /// Other layouts the bytes fit too (`--layout` chose).
    pub also: Vec<Layout>,
    /// The header was all zeros: the sampler was killed, and header and maps are missing.
    pub killed: bool,
    /// Samples the header announced (0 for a killed run).
    pub announced: u64,
    /// Whole samples imported (with or without threads).
    pub samples: u64,
    /// Samples without threads (kept in the stream's user-defined section).
    pub empty: u64,
    /// Records written (one per thread of each sample).
    pub records: u64,
    /// VM maps (modules) written.
    pub maps: u64,
    /// Samples announced but missing (a cut run), including a partial one.
    pub dropped: u64,
    /// Bytes of a partial last sample that were dropped.
    pub partial_bytes: u64,
    /// Bytes of (decompressed) profile read.
    pub bytes: u64,
    /// How records got their time.
    pub time: Option<TimeSource>,
}

/// Records of whole samples, and of the sample being read, on their way
/// to the data section.
struct Pending {
    buf: Vec<u8>,
    /// Where the open sample's records start in `buf`.
    open_at: usize,
    /// The open sample's earlier records, when it alone outgrew `buf`.
    spill: Option<File>,
    /// The input's name, for errors.
    input: String,
}

impl Pending {
    fn push(&mut self, rec: &[u8], data: &mut DataSectionWriter<'_>) -> Result<(), ImportError> {
        self.buf.extend_from_slice(rec);
        if self.buf.len() >= PENDING_BYTES {
            if self.open_at > 0 {
                data.add(&self.buf[..self.open_at])?;
                self.buf.drain(..self.open_at);
                self.open_at = 0;
            }
            if self.buf.len() >= PENDING_BYTES {
                let f = match &mut self.spill {
                    Some(f) => f,
                    None => self.spill.insert(tempfile::tempfile().map_err(|e| ImportError::spill(&self.input, e))?),
                };
                f.write_all(&self.buf).map_err(|e| ImportError::spill(&self.input, e))?;
                self.buf.clear();
            }
        }
        Ok(())
    }

    /// The open sample is whole.
    fn close_sample(&mut self, data: &mut DataSectionWriter<'_>) -> Result<(), ImportError> {
        if let Some(mut f) = self.spill.take() {
            f.write_all(&self.buf)
                .and_then(|()| f.seek(SeekFrom::Start(0)))
                .map_err(|e| ImportError::spill(&self.input, e))?;
            data.add_from_reader(&mut f)?;
            self.buf.clear();
        }
        self.open_at = self.buf.len();
        if self.buf.len() >= PENDING_BYTES {
            data.add(&self.buf)?;
            self.buf.clear();
            self.open_at = 0;
        }
        Ok(())
    }

    /// The open sample is cut: none of it is kept.
    fn drop_sample(&mut self) {
        self.buf.truncate(self.open_at);
        self.spill = None;
    }
}

fn module_of(m: &VmMap, pid: u32, first: bool, exe: bool) -> Module {
    let mut flags = ModuleFlags::LOADED;
    if exe {
        flags |= ModuleFlags::IS_EXE;
    }
    if first {
        flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
    }
    let label = (!m.label.is_empty()).then(|| m.label.clone());
    Module {
        associated_pid: pid,
        flags,
        segment_type: processor_mode::BIT64,
        load_address: m.address,
        // Inclusive end, as the sampler's tools take it; never past the address space.
        length: m.size.saturating_add(1).min(u64::MAX - m.address),
        unload_tsc: NEVER_UNLOADED,
        name: label.as_deref().map(|l| l.rsplit('/').next().unwrap_or(l).to_owned()),
        path: label,
        segment_name: Some(SEGMENT_NAME.to_owned()),
        ..Default::default()
    }
}

/// Reads every map the header announces into the module section.
fn write_maps<R: Read>(w: &mut Tb5Writer, profile: &mut ProfileReader<R>, pid: u32) -> Result<u64, ImportError> {
    let mut s = w.modules()?;
    let mut exe: Option<String> = None;
    let mut n = 0u64;
    while let Some(m) = profile.next_map()? {
        // The first map is the target executable.
        let label = exe.get_or_insert_with(|| m.label.clone());
        let is_exe = *label == m.label;
        s.add_module(&module_of(&m, pid, n == 0, is_exe))?;
        n += 1;
    }
    s.done()?;
    Ok(n)
}

/// Imports the sampler profile `input`, from where it stands to its end,
/// into `w`, detecting its layout; `name` names it in errors and in the
/// stream's command line. A plain profile is probed whole for detection
/// (with seeks, then read from its start); a bzip2 one is decompressed and
/// detected from its first bytes, as [`import_profile_stream`] does.
/// `progress` gets the bytes of (decompressed) profile read so far. The
/// caller closes `w`, or drops it on error and nothing is written.
pub fn import_profile<R: Read + Seek>(
    mut input: R,
    name: &str,
    w: &mut Tb5Writer,
    opts: &ImportOptions,
    popts: &ProfileOptions,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let io = |e| ImportError::io(name, e);
    let base = input.stream_position().map_err(io)?;
    let end = input.seek(SeekFrom::End(0)).map_err(io)?;
    input.seek(SeekFrom::Start(base)).map_err(io)?;
    let size = end.saturating_sub(base);
    let mut prefix = Vec::with_capacity(PROBE_BYTES.min(size as usize));
    (&mut input).take(PROBE_BYTES as u64).read_to_end(&mut prefix).map_err(io)?;
    if is_bzip2(&prefix) {
        // The decompressed size is unknown until the end: read once.
        input.seek(SeekFrom::Start(base)).map_err(io)?;
        return import_profile_stream(input, name, w, opts, popts, progress);
    }
    let detected = detect_seekable(&mut input, base, &prefix, size, name, popts.layout)?;
    drop(prefix);
    input.seek(SeekFrom::Start(base + detected.format.layout.header_size())).map_err(io)?;
    let reader = BufReader::with_capacity(1 << 20, input);
    convert(reader, name, Some(size), false, &detected, w, opts, popts, progress)
}

/// Imports a sampler profile read once from `input` to its end (standard
/// input, a pipe, anything that cannot seek), plain or bzip2: its layout
/// is detected from its first [`PROBE_BYTES`]; otherwise as
/// [`import_profile`].
pub fn import_profile_stream<R: Read>(
    input: R,
    name: &str,
    w: &mut Tb5Writer,
    opts: &ImportOptions,
    popts: &ProfileOptions,
    progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let opened = profile::open(input, name)?;
    let detected = profile::detect(&opened, name, popts.layout)?;
    let (size, compressed) = (opened.size, opened.compressed);
    let mut chained = Cursor::new(opened.prefix).chain(opened.rest);
    std::io::copy(&mut (&mut chained).take(detected.format.layout.header_size()), &mut std::io::sink())
        .map_err(|e| ImportError::io(name, e))?;
    convert(chained, name, size, compressed, &detected, w, opts, popts, progress)
}

/// The import proper, from `input` positioned after the header.
#[allow(clippy::too_many_arguments)]
fn convert<R: Read>(
    input: R,
    name: &str,
    size: Option<u64>,
    compressed: bool,
    detected: &Detected,
    w: &mut Tb5Writer,
    opts: &ImportOptions,
    popts: &ProfileOptions,
    mut progress: impl Progress,
) -> Result<ImportStats, ImportError> {
    let (format, header) = (detected.format, detected.header);
    if let Some(v) = popts.volts {
        if header.magic != Magic::Current || header.killed {
            let found = if header.killed { "of an unknown kind (the header is missing)" } else { header.magic.name() };
            return Err(ImportError::VoltsNotCurrent { input: name.to_string(), found: found.to_owned() });
        }
        if !v.is_finite() {
            return Err(ImportError::NotAVoltage { input: name.to_string(), volts: v });
        }
    }
    let mut profile = ProfileReader::new(input, name, size, detected);
    let pid = opts.pid.unwrap_or(DEFAULT_PID);
    let time = time_source(detected);
    let shape = RecordShape {
        time,
        cputime: format.layout.has_cputime(),
        magic: header.magic,
        pmu_size: format.pmu_size,
        power: popts.volts.is_some(),
    };
    let mut stats = ImportStats {
        compressed,
        format: Some(format),
        also: detected.also.iter().map(|f| f.layout).collect(),
        killed: header.killed,
        announced: header.samples,
        time: Some(time),
        ..Default::default()
    };

    // What the profile does not say is left unknown: no nodes, no OS version.
    write_globals(w, &software(opts))?;
    if !format.layout.maps_at_end() {
        stats.maps = write_maps(w, &mut profile, pid)?;
    }

    let value_name = if header.killed { "pmu (kind unknown)" } else { value_field(header.magic).1 };
    let mut stream = w
        .stream(0)?
        .info(&StreamInfo {
            stream_type: stream_type::SAMPLING,
            command_line: Some(format!("sampler profile {name}")),
            comment: Some(format!("sampler profile ({value_name})")),
            ..Default::default()
        })?
        .data_descriptor(&shape.descriptor())?;
    stream.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some(value_name.into()), ..Default::default() }])?;
    let mut data = stream.data()?;
    let mut pending =
        Pending { buf: Vec::with_capacity(PENDING_BYTES + 4096), open_at: 0, spill: None, input: name.to_owned() };
    let mut head = SampleHead::default();
    let mut block: Vec<ThreadSample> = Vec::new();
    let mut records =
        Records { shape, pid, volts: popts.volts, last_cputime: HashMap::new(), rec: Vec::with_capacity(128) };
    let mut empties = Vec::new();
    let mut empties_lost = 0u64;
    let mut last_progress = 0u64;
    loop {
        match profile.next_sample(&mut head)? {
            Next::Sample => {}
            Next::End => break,
            Next::Partial { bytes } => {
                stats.partial_bytes = bytes;
                break;
            }
        }
        let index = stats.samples;
        let time_ns = time_ns(time, &head, index, &header);
        if head.threads == 0 {
            if empties.len() < MAX_EMPTY_KEPT {
                empties.push(Empty { index, time_us: head.time_us.unwrap_or(0), pmu: head.pmu.clone() });
            } else {
                empties_lost += 1;
            }
            stats.empty += 1;
            stats.samples += 1;
            continue;
        }
        let value = head.value();
        let cut = loop {
            let r = profile.threads(&mut block)?;
            for t in &block {
                pending.push(records.encode(time_ns, index, t, &head, value), &mut data)?;
            }
            match r {
                Threads::More => {}
                Threads::Done => break None,
                Threads::Cut { bytes } => break Some(bytes),
            }
        };
        if let Some(bytes) = cut {
            pending.drop_sample();
            stats.partial_bytes = bytes;
            break;
        }
        pending.close_sample(&mut data)?;
        stats.records += u64::from(head.threads);
        stats.samples += 1;
        if profile.offset() - last_progress >= 1 << 20 {
            last_progress = profile.offset();
            progress.done(last_progress);
        }
    }
    if stats.samples == 0 && stats.partial_bytes > 0 {
        // Never an empty stream from a profile that holds (part of) a sample.
        return Err(no_whole_sample(name, profile.offset(), stats.partial_bytes));
    }
    pending.drop_sample();
    data.add(&pending.buf)?;
    data.done()?;
    stats.dropped = header.samples.saturating_sub(stats.samples);
    if stats.partial_bytes > 0 && stats.dropped == 0 {
        stats.dropped = 1;
    }
    let meta = Meta {
        format,
        header,
        samples: stats.samples,
        dropped: stats.dropped,
        time,
        volts: popts.volts,
        empties,
        empties_lost,
    };
    stream.user_defined(meta.text().as_bytes())?;
    stream.finish()?;
    if format.layout.maps_at_end() {
        stats.maps = write_maps(w, &mut profile, pid)?;
    }
    stats.bytes = profile.offset();
    progress.done(stats.bytes);
    Ok(stats)
}

/// What the profile says of its host and OS: the host name given, Linux.
fn software(opts: &ImportOptions) -> Software {
    Software {
        host: Some(Host { reserved: 0, ip_address: None, name: opts.hostname.clone() }),
        os: Some(Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() }),
        application: None,
    }
}

/// Where the samples' times come from: the records' own, else spread over
/// the header's wall time, else none.
fn time_source(detected: &Detected) -> TimeSource {
    let header = &detected.header;
    if detected.format.layout.timed() {
        TimeSource::Realtime
    } else if header.samples > 0 && !header.killed {
        TimeSource::Interpolated
    } else {
        TimeSource::None
    }
}

/// The time of sample `index`, in nanoseconds.
fn time_ns(time: TimeSource, head: &SampleHead, index: u64, header: &profile::ProfileHeader) -> u64 {
    match time {
        TimeSource::Realtime => head.time_us.unwrap_or(0).saturating_mul(1000),
        TimeSource::Interpolated => {
            (u128::from(index) * u128::from(header.wall_us) * 1000 / u128::from(header.samples)) as u64
        }
        TimeSource::None => 0,
    }
}

/// A profile that ends inside its first sample: never an empty stream.
fn no_whole_sample(name: &str, offset: u64, partial_bytes: u64) -> ImportError {
    ProfileError {
        input: name.to_owned(),
        offset: offset - partial_bytes,
        sample: Some(0),
        what: format!("no whole sample: the profile ends inside its first sample, {partial_bytes} bytes into it"),
    }
    .into()
}

/// The encoder of stream 0's records, one per thread of a sample.
struct Records {
    shape: RecordShape,
    pid: u32,
    volts: Option<f64>,
    /// Each thread's CPU time at its previous sample.
    last_cputime: HashMap<u32, u64>,
    rec: Vec<u8>,
}

impl Records {
    #[inline(always)]
    fn encode(&mut self, time_ns: u64, index: u64, t: &ThreadSample, head: &SampleHead, value: Option<f64>) -> &[u8] {
        let rec = &mut self.rec;
        rec.clear();
        if self.shape.time != TimeSource::None {
            rec.extend_from_slice(&time_ns.to_le_bytes());
        }
        rec.extend_from_slice(&index.to_le_bytes());
        rec.extend_from_slice(&t.pc.to_le_bytes());
        rec.extend_from_slice(&self.pid.to_le_bytes());
        rec.extend_from_slice(&t.tid.to_le_bytes());
        if self.shape.cputime {
            // A thread's first sample costs nothing; a counter that goes
            // back (a reused tid) restarts rather than wrapping around.
            let prev = self.last_cputime.insert(t.tid, t.cputime).unwrap_or(t.cputime);
            rec.extend_from_slice(&t.cputime.to_le_bytes());
            rec.extend_from_slice(&t.cputime.saturating_sub(prev).to_le_bytes());
        }
        rec.extend_from_slice(&head.pmu);
        if let (Some(v), Some(i)) = (self.volts, value) {
            rec.extend_from_slice(&(i * v).to_le_bytes());
        }
        rec
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use tbrw_elf_profile::fixtures;

    /// Imports `read` into a new file in `dir` and returns the stats and the records.
    fn import(
        dir: &std::path::Path,
        read: impl FnOnce(&mut Tb5Writer) -> Result<ImportStats, ImportError>,
    ) -> Result<(ImportStats, Vec<u8>), ImportError> {
        let out = dir.join("p.tb5");
        let mut w = Tb5Writer::create(&out)?;
        let stats = read(&mut w)?;
        w.close()?;
        let f = Tb5File::open(&out)?;
        let records = f.stream(0)?.data()?.map_or(Vec::new(), |d| d.as_bytes().to_vec());
        Ok((stats, records))
    }

    #[test]
    fn a_profile_that_seeks_or_not_imports_alike() {
        let (_, bytes) = fixtures::files().into_iter().find(|(n, _)| *n == "current.prof").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (o, p) = (ImportOptions::default(), ProfileOptions::default());
        let (seeking, records) =
            import(dir.path(), |w| import_profile(Cursor::new(&bytes), "current.prof", w, &o, &p, ())).unwrap();
        assert_eq!((seeking.samples, seeking.format.map(|f| f.layout)), (120, Some(Layout::Head)));
        // Read once, as from a pipe: the same records.
        let (once, again) = import(dir.path(), |w| import_profile_stream(&bytes[..], "-", w, &o, &p, ())).unwrap();
        assert_eq!((once.samples, once.records, again == records), (seeking.samples, seeking.records, true));
    }

    #[test]
    fn errors_name_the_input_and_the_byte() {
        let (_, mut bytes) = fixtures::files().into_iter().find(|(n, _)| *n == "current.prof").unwrap();
        bytes[0] = 7;
        let dir = tempfile::tempdir().unwrap();
        let (o, p) = (ImportOptions::default(), ProfileOptions::default());
        let e = import(dir.path(), |w| import_profile(Cursor::new(&bytes), "bad.prof", w, &o, &p, ())).unwrap_err();
        assert!(matches!(&e, ImportError::Profile(ProfileError { input, offset: 0, .. }) if input == "bad.prof"));
        assert!(e.to_string().starts_with("bad.prof: byte 0: magic number 0x7"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing at the output");
        // --volts for a profile that does not measure current.
        let (_, bytes) = fixtures::files().into_iter().find(|(n, _)| *n == "seed-era.prof").unwrap();
        let p = ProfileOptions { volts: Some(3.3), ..Default::default() };
        let e = import(dir.path(), |w| import_profile(Cursor::new(&bytes), "s.prof", w, &o, &p, ())).unwrap_err();
        assert!(matches!(&e, ImportError::VoltsNotCurrent { input, .. } if input == "s.prof"), "{e:?}");
        assert!(!e.to_string().contains("--"), "the library names no option: {e}");
    }
}
