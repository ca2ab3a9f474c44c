//! A TB5 stream back to an ELF-sampler profile (`tbrw export sampler`),
//! in the layout it was imported from or another, through the one profile
//! codec, `tbrw-elf-profile` (the stream's vocabulary:
//! `tbrw_schema::elf_profile`). A stream that `tbrw import sampler`
//! made comes back byte for byte; the collector's recordings (no sample
//! index: a sample ends where a thread repeats) export too. The way there
//! is in docs/EXPORT.md.

use std::io::Write;

use tbrw::*;
use tbrw_elf_profile::{self as profile, Endian, Format, Layout, Magic, ProfileHeader, ThreadSample, VmMap};
use tbrw_schema::elf_profile::{magic_of, Meta};
use tbrw_schema::fields::{self, read_le};

use crate::error::ExportError;

/// Where each field an export reads is in a record: (offset, size).
#[derive(Clone)]
struct ExportFields {
    time: Option<(usize, usize)>,
    /// The sample index; `None` for the collector's recordings, whose
    /// samples are told apart by [`Samples`].
    sample: Option<(usize, usize)>,
    pc: (usize, usize),
    tid: (usize, usize),
    cputime: Option<(usize, usize)>,
    pmu: Option<(usize, usize)>,
    magic: Option<Magic>,
}

fn get(rec: &[u8], (at, size): (usize, usize)) -> u64 {
    read_le(rec, at, size)
}

/// Which sample each record belongs to, asked in record order: the
/// sample-count time stamp when there is one; else (the collector's
/// recordings, whose ticks write one record per thread read, consecutive)
/// a new sample starts where a thread of the current one repeats.
struct Samples {
    at: ExportFields,
    /// Threads of the current sample (no sample index).
    seen: std::collections::HashSet<u64>,
    current: u64,
}

impl Samples {
    fn of(&mut self, rec: &[u8]) -> u64 {
        if let Some(s) = self.at.sample {
            return get(rec, s);
        }
        if !self.seen.insert(get(rec, self.at.tid)) {
            self.seen.clear();
            self.seen.insert(get(rec, self.at.tid));
            self.current += 1;
        }
        self.current
    }
}

/// Writes stream `stream` of `f` as a sampler profile to `out`, in
/// `layout` (default: the one it was imported from, else the current
/// writer's). Returns the number of samples written.
pub fn export_profile(
    f: &Tb5File,
    stream: u32,
    layout: Option<Layout>,
    out: &mut dyn Write,
) -> Result<u64, ExportError> {
    f.verify()?;
    let s = f.stream(stream)?;
    let unsupported = |what: String| ExportError::Unsupported { file: f.path().display().to_string(), stream, what };
    let lay = s.layout()?.ok_or_else(|| unsupported("it has no data descriptor".into()))?;
    let at = export_fields(&lay, &unsupported)?;
    let note = s.user_defined()?.map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
    let meta = Meta::parse(&note);
    let data = s.data()?;
    let records = || data.iter().flat_map(|d| d.records());

    let imported = meta.as_ref().map(|m| m.format);
    let target = layout.or(imported.map(|f| f.layout)).unwrap_or(Layout::Head);
    let pmu_size = match at.pmu {
        Some((_, n)) => n as u32,
        None => imported.map_or(0, |f| f.pmu_size),
    };
    if target != Layout::Head && pmu_size != 8 {
        return Err(unsupported(format!(
            "it has {pmu_size} bytes of PMU data per sample; only the current (head) layout holds other than an 8-byte value"
        )));
    }
    if at.pmu.is_none() && pmu_size > 0 {
        return Err(unsupported("it has no 8-byte current, voltage, power or custom value field".into()));
    }
    let endian = imported.filter(|f| f.layout == target).map_or(Endian::Little, |f| f.endian);
    let fmt = Format { layout: target, endian, pmu_size };
    let empties = meta.as_ref().map(|m| m.empties.clone()).unwrap_or_default();
    let grouper = || Samples { at: at.clone(), seen: Default::default(), current: 0 };
    // Samples: distinct sample indices (records of a sample are consecutive) plus the empty ones.
    let mut samples = empties.len() as u64;
    let mut last = None;
    let mut g = grouper();
    for r in records() {
        let k = g.of(r);
        if last != Some(k) {
            samples += 1;
            last = Some(k);
        }
    }
    let maps = module_maps(f)?;
    let same = imported.is_some_and(|f| f.layout == target);
    let header = match &meta {
        Some(m) if same && m.header.killed => ProfileHeader { killed: true, ..m.header },
        Some(m) => ProfileHeader {
            magic: at.magic.unwrap_or(m.header.magic),
            samples: if same { m.header.samples } else { samples },
            maps: maps.len() as u64,
            killed: false,
            ..m.header
        },
        None => ProfileHeader {
            magic: at.magic.unwrap_or(Magic::Custom),
            wall_us: 0,
            latency_us: 0,
            samples,
            maps: maps.len() as u64,
            killed: false,
        },
    };

    let write = |out: &mut dyn Write| -> std::io::Result<()> {
        out.write_all(&profile::encode_header(&fmt, &header)?)?;
        let write_maps = |out: &mut dyn Write| -> std::io::Result<()> {
            if header.killed {
                return Ok(());
            }
            maps.iter().try_for_each(|m| profile::write_map(out, &fmt, m))
        };
        if !target.maps_at_end() {
            write_maps(out)?;
        }
        let mut empties = empties.iter().peekable();
        // Samples without threads go back where their index says.
        let mut put_empties = |out: &mut dyn Write, before: Option<u64>| -> std::io::Result<()> {
            while let Some(e) = empties.next_if(|e| before.is_none_or(|b| e.index < b)) {
                profile::write_sample_head(out, &fmt, e.time_us, &resize(&e.pmu, pmu_size), 0)?;
            }
            Ok(())
        };
        let mut g = grouper();
        let mut it = records().map(|r| (g.of(r), r)).peekable();
        let mut threads: Vec<ThreadSample> = Vec::new();
        while let Some((k, first)) = it.next() {
            // Only samples with a sample index have empty ones to put back.
            if at.sample.is_some() {
                put_empties(out, Some(k))?;
            }
            let time_us = at.time.map_or(0, |t| get(first, t) / 1000);
            let pmu = at.pmu.map(|(o, n)| first.get(o..o + n).unwrap_or_default().to_vec()).unwrap_or_default();
            threads.clear();
            let thread = |r: &[u8]| ThreadSample {
                tid: get(r, at.tid) as u32,
                pc: get(r, at.pc),
                cputime: at.cputime.map_or(0, |c| get(r, c)),
            };
            threads.push(thread(first));
            while let Some((_, r)) = it.next_if(|(next, _)| *next == k) {
                threads.push(thread(r));
            }
            let n = u32::try_from(threads.len()).map_err(|_| std::io::Error::other("more than 2^32 threads"))?;
            profile::write_sample_head(out, &fmt, time_us, &pmu, n)?;
            threads.iter().try_for_each(|t| profile::write_thread(out, &fmt, t))?;
        }
        put_empties(out, None)?;
        if target.maps_at_end() {
            write_maps(out)?;
        }
        Ok(())
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    write(&mut out).and_then(|()| out.flush()).map_err(|e| ExportError::write("profile", e))?;
    Ok(samples)
}

/// Where the fields a sampler profile needs lie in the stream's records.
fn export_fields(lay: &RecordLayout, unsupported: &dyn Fn(String) -> ExportError) -> Result<ExportFields, ExportError> {
    let find = |t: u16, st: Option<u16>, sizes: &[u32]| -> Option<(usize, usize)> {
        lay.find(t, st).filter(|fl| sizes.contains(&fl.size)).map(|fl| (fl.offset as usize, fl.size as usize))
    };
    let need = |x: Option<(usize, usize)>, what: &str| {
        x.ok_or_else(|| unsupported(format!("it has no {what} field, which a sampler profile needs")))
    };
    let typed_value =
        lay.fields().iter().find_map(|fl| magic_of(fl.desc_type).filter(|_| fl.size == 8).map(|m| (fl, m)));
    Ok(ExportFields {
        time: find(desc_type::TIME_STAMP, Some(desc_subtype::TS_NANOSECONDS), &[8]),
        sample: find(desc_type::TIME_STAMP, Some(desc_subtype::TS_SAMPLE_COUNT), &[4, 8]),
        pc: need(find(desc_type::IP, None, &[4, 8]), "ST_IP")?,
        tid: need(find(desc_type::TID, None, &[4, 8]), "ST_TID")?,
        cputime: find(fields::CPUTIME, None, &[8]),
        pmu: typed_value
            .map(|(fl, _)| (fl.offset as usize, 8))
            .or_else(|| lay.find(fields::PMU_DATA, None).map(|fl| (fl.offset as usize, fl.size as usize))),
        magic: typed_value.map(|(_, m)| m),
    })
}

/// The file's modules as the sampler's maps.
fn module_maps(f: &Tb5File) -> Result<Vec<VmMap>, ExportError> {
    Ok(match f.modules()? {
        None => Vec::new(),
        Some(mt) => mt
            .iter()
            .map(|m| {
                let m = f.resolve(m?)?;
                // The sampler's maps end inclusively: the module covers one more byte.
                Ok(VmMap {
                    address: m.load_address,
                    size: m.length.saturating_sub(1),
                    label: m.path.or(m.name).unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>>>()?,
    })
}

/// PMU data of `n` bytes: as kept, or zero-padded/cut when a layout change asks.
fn resize(pmu: &[u8], n: u32) -> Vec<u8> {
    let mut v = pmu.to_vec();
    v.resize(n as usize, 0);
    v
}

/// The ELF sampler profile export with its options, as the registry runs
/// it ([`crate::registry::Export`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SamplerProfile {
    /// The stream.
    pub stream: u32,
    /// The layout to write (default: the one the stream was imported from, else head).
    pub layout: Option<Layout>,
}

impl crate::registry::Export for SamplerProfile {
    fn name(&self) -> &'static str {
        "sampler"
    }

    fn export(
        &self,
        file: &Tb5File,
        out: crate::registry::Output<'_>,
        _warn: &mut Vec<crate::Warning>,
        _progress: &mut dyn tbrw_schema::Progress,
    ) -> Result<crate::registry::Summary, ExportError> {
        let out = crate::registry::file_of(self.name(), out)?;
        // The query's words for a stream that is not there, as the other exports say it.
        tbrw_query::report::stream(file, self.stream)?;
        let n = export_profile(file, self.stream, self.layout, out)?;
        Ok(crate::registry::Summary { line: format!("{n} samples"), ..Default::default() })
    }
}

/// An ELF sampler profile, from a stream with the fields an import makes (`-o -`: standard output).
#[cfg(feature = "cli")]
#[derive(clap::Args, Debug)]
pub struct SamplerArgs {
    /// The TB5 file.
    pub file: std::path::PathBuf,
    /// The profile to write.
    #[arg(short, long)]
    pub output: std::path::PathBuf,
    /// Replace OUTPUT if it exists (never an input).
    #[arg(short, long)]
    pub force: bool,
    /// The stream.
    #[arg(long, default_value_t = 0)]
    pub stream: u32,
    /// The layout to write (default: the one the stream was imported from, else head).
    #[arg(long, value_parser = crate::named!(Layout))]
    pub layout: Option<Layout>,
}

#[cfg(feature = "cli")]
impl crate::cli::ExportArgs for SamplerArgs {
    fn job(self) -> Result<crate::cli::Job, crate::cli::ArgsError> {
        let export = Box::new(SamplerProfile { stream: self.stream, layout: self.layout });
        Ok(crate::cli::Job::One { input: self.file, output: self.output, force: self.force, export })
    }
}
