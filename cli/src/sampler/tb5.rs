//! Sampler profiles to TB5 (`tbrw import sampler`) and back (`tbrw export
//! sampler`). The mapping is in docs/IMPORT.md.
//!
//! Import streams: samples are read one at a time and their records go to
//! the data section in batches, so memory does not grow with the profile.

use std::io::{BufWriter, Write};
use std::path::Path;

use tbrw::*;

use super::profile::{self, Header, Magic, Next, ProfileReader, Sample, ThreadSample, VmMap};
use crate::error::CliError;
use crate::fields::{self, read_le};
use crate::imported::{field, write_globals};

/// The pid the profile's process gets when `--pid` is not given.
pub const DEFAULT_PID: u32 = 1;

/// Bytes per imported record: pc, pid, tid, sample index, cputime, value.
pub const RECORD_SIZE: usize = 40;

fn value_field(magic: Magic) -> (u16, &'static str) {
    match magic {
        Magic::Custom => (fields::CUSTOM_VALUE, "custom"),
        Magic::Current => (fields::CURRENT, "current"),
        Magic::Voltage => (fields::VOLTAGE, "voltage"),
        Magic::Power => (desc_type::POWER, "power"),
    }
}

fn magic_of(t: u16) -> Option<Magic> {
    Some(match t {
        fields::CUSTOM_VALUE => Magic::Custom,
        fields::CURRENT => Magic::Current,
        fields::VOLTAGE => Magic::Voltage,
        desc_type::POWER => Magic::Power,
        _ => return None,
    })
}

/// The descriptor of an imported stream.
pub fn descriptor(magic: Magic) -> Vec<DescEntry> {
    let (vt, vn) = value_field(magic);
    vec![
        field(desc_type::IP, desc_subtype::NONE, 8, "pc"),
        field(desc_type::PID, desc_subtype::NONE, 4, "pid"),
        field(desc_type::TID, desc_subtype::NONE, 4, "tid"),
        field(desc_type::TIME_STAMP, desc_subtype::TS_SAMPLE_COUNT, 8, "sample"),
        field(fields::CPUTIME, desc_subtype::NONE, 8, "cputime"),
        field(vt, desc_subtype::NONE, 8, vn),
    ]
}

/// The label of the executable: the first absolute path that is not a
/// shared library (`*.so`, `*.so.*`).
pub fn executable_label(maps: &[VmMap]) -> Option<&str> {
    maps.iter().map(|m| m.label.as_str()).find(|l| {
        let name = l.rsplit('/').next().unwrap_or(l);
        l.starts_with('/') && !name.ends_with(".so") && !name.contains(".so.")
    })
}

/// Options of the import.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// The process id the profile's process gets ([`DEFAULT_PID`] if `None`).
    pub pid: Option<u32>,
    /// The host name to record (the profile has none).
    pub hostname: Option<String>,
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportStats {
    /// Whether the profile was bzip2-compressed.
    pub compressed: bool,
    /// Samples the header announced.
    pub announced: u64,
    /// Whole samples imported.
    pub samples: u64,
    /// Records written (one per thread of each sample).
    pub records: u64,
    /// Samples announced but missing (a killed sampler), including a partial one.
    pub dropped: u64,
    /// Bytes of a partial last sample that were dropped.
    pub partial_bytes: u64,
    /// Bytes of (decompressed) profile read.
    pub bytes: u64,
}

/// Imports the profile at `input` (`-`: standard input) into a new TB5 file
/// at `output`. `progress` is called with the bytes read so far.
pub fn import_sampler(
    input: &Path,
    output: &Path,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<ImportStats, CliError> {
    let (reader, compressed) = profile::open(input)?;
    let size =
        if compressed || input.as_os_str() == "-" { None } else { std::fs::metadata(input).ok().map(|m| m.len()) };
    let mut profile = ProfileReader::new(reader, input, size)?;
    let header = profile.header().clone();
    let pid = opts.pid.unwrap_or(DEFAULT_PID);
    let mut stats = ImportStats { compressed, announced: header.samples, ..Default::default() };

    let mut w = Tb5Writer::create(output)?;
    // What the profile does not say is left unknown: no nodes, no OS version.
    write_globals(
        &mut w,
        &Software {
            host: Some(Host { reserved: 0, ip_address: None, name: opts.hostname.clone() }),
            os: Some(Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() }),
            application: None,
        },
    )?;
    let exe = executable_label(&header.maps).map(str::to_owned);
    let modules: Vec<Module> = header
        .maps
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let is_exe = exe.as_deref() == Some(m.label.as_str());
            let mut flags = ModuleFlags::LOADED;
            if is_exe {
                flags |= ModuleFlags::IS_EXE;
            }
            if i == 0 {
                flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
            }
            let label = (!m.label.is_empty()).then(|| m.label.clone());
            Module {
                associated_pid: pid,
                flags,
                segment_type: processor_mode::BIT64,
                load_address: m.address,
                length: m.size,
                unload_tsc: NEVER_UNLOADED,
                name: label.as_deref().map(|l| l.rsplit('/').next().unwrap_or(l).to_owned()),
                path: label,
                ..Default::default()
            }
        })
        .collect();
    w.write_modules(&modules)?;

    let (_, value_name) = value_field(header.magic);
    let mut stream = w
        .stream(0)?
        .info(&StreamInfo {
            stream_type: stream_type::SAMPLING,
            command_line: Some(format!("sampler profile {}", input.display())),
            comment: Some(format!("sampler profile ({value_name})")),
            ..Default::default()
        })?
        .data_descriptor(&descriptor(header.magic))?;
    stream.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some(value_name.into()), ..Default::default() }])?;
    let mut data = stream.data()?;
    let mut sample = Sample::default();
    let mut batch: Vec<u8> = Vec::with_capacity(1 << 20);
    loop {
        match profile.next_sample(&mut sample)? {
            Next::Sample => {
                let index = stats.samples;
                for t in &sample.threads {
                    let mut rec = [0u8; RECORD_SIZE];
                    rec[0..8].copy_from_slice(&t.pc.to_le_bytes());
                    rec[8..12].copy_from_slice(&pid.to_le_bytes());
                    rec[12..16].copy_from_slice(&t.tid.to_le_bytes());
                    rec[16..24].copy_from_slice(&index.to_le_bytes());
                    rec[24..32].copy_from_slice(&t.cputime.to_le_bytes());
                    rec[32..40].copy_from_slice(&sample.value.to_le_bytes());
                    batch.extend_from_slice(&rec);
                }
                stats.records += sample.threads.len() as u64;
                stats.samples += 1;
                if batch.len() >= (1 << 20) - RECORD_SIZE * 64 {
                    data.add(&batch)?;
                    batch.clear();
                    progress(profile.offset());
                }
            }
            Next::End => break,
            Next::Partial { bytes } => {
                stats.partial_bytes = bytes;
                break;
            }
        }
    }
    data.add(&batch)?;
    data.done()?;
    stats.bytes = profile.offset();
    stats.dropped = header.samples.saturating_sub(stats.samples);
    if stats.partial_bytes > 0 && stats.dropped == 0 {
        stats.dropped = 1;
    }
    stream.user_defined(
        format!(
            "sampler magic={} wall_time={} cpu_time={} samples_announced={} samples={} dropped={}\n",
            header.magic.value(),
            header.wall_time,
            header.cpu_time,
            header.samples,
            stats.samples,
            stats.dropped
        )
        .as_bytes(),
    )?;
    stream.finish()?;
    w.close()?;
    progress(stats.bytes);
    Ok(stats)
}

/// The fields a stream needs to be exported as a sampler profile.
struct ExportFields {
    pc: (usize, usize),
    tid: (usize, usize),
    sample: (usize, usize),
    cputime: (usize, usize),
    value: usize,
    magic: Magic,
}

/// A field of a record, by (offset, size).
fn get(rec: &[u8], (at, size): (usize, usize)) -> u64 {
    read_le(rec, at, size)
}

/// Writes stream `stream` of `file` as a sampler profile to `output`
/// (`-`: standard output). The stream needs ST_IP, ST_TID, a sample-count
/// time stamp, a cputime field and a value field (as an import makes).
/// Returns the number of samples written.
pub fn export_sampler(file: &Path, stream: u32, output: &Path) -> Result<u64, CliError> {
    let f = Tb5File::open(file)?;
    f.verify()?;
    let s = f.stream(stream)?;
    let layout = s
        .layout()?
        .ok_or_else(|| CliError::msg(format!("{}: stream {stream} has no data descriptor", file.display())))?;
    let find_field = |t: u16, st: Option<u16>, sizes: &[u32], what: &str| -> Result<(usize, usize), CliError> {
        layout
            .find(t, st)
            .filter(|fl| sizes.contains(&fl.size))
            .map(|fl| (fl.offset as usize, fl.size as usize))
            .ok_or_else(|| {
                CliError::msg(format!(
                    "{}: stream {stream} has no {what} field, which a sampler profile needs",
                    file.display()
                ))
            })
    };
    let (value, magic) = layout
        .fields()
        .iter()
        .find_map(|fl| magic_of(fl.desc_type).filter(|_| fl.size == 8).map(|m| (fl.offset as usize, m)))
        .ok_or_else(|| {
            CliError::msg(format!(
                "{}: stream {stream} has no 8-byte current, voltage, power or custom value field",
                file.display()
            ))
        })?;
    let at = ExportFields {
        pc: find_field(desc_type::IP, None, &[4, 8], "ST_IP")?,
        tid: find_field(desc_type::TID, None, &[4, 8], "ST_TID")?,
        sample: find_field(
            desc_type::TIME_STAMP,
            Some(desc_subtype::TS_SAMPLE_COUNT),
            &[4, 8],
            "sample-count time stamp",
        )?,
        cputime: find_field(fields::CPUTIME, None, &[8], "cputime")?,
        value,
        magic,
    };
    let data = s.data()?;
    // Wall and cpu time come from what the import recorded, 0 otherwise.
    let note = s.user_defined()?.map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
    let key = |k: &str| -> u64 {
        note.split_whitespace()
            .find_map(|kv| kv.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let records: Vec<&[u8]> = data.as_ref().map(|d| d.records().collect()).unwrap_or_default();
    let mut samples = 0u64;
    let mut last: Option<u64> = None;
    for r in &records {
        let k = get(r, at.sample);
        if last != Some(k) {
            samples += 1;
            last = Some(k);
        }
    }
    let maps = match f.modules()? {
        None => Vec::new(),
        Some(mt) => mt
            .iter()
            .map(|m| {
                let m = f.resolve(m?)?;
                Ok(VmMap { address: m.load_address, size: m.length, label: m.path.or(m.name).unwrap_or_default() })
            })
            .collect::<Result<_>>()?,
    };
    let header = Header { magic: at.magic, wall_time: key("wall_time"), cpu_time: key("cpu_time"), samples, maps };

    let write = |out: &mut dyn Write| -> std::io::Result<()> {
        profile::write_header(out, &header)?;
        let mut i = 0;
        while i < records.len() {
            let k = get(records[i], at.sample);
            let mut s = Sample { value: f64::from_bits(read_le(records[i], at.value, 8)), threads: Vec::new() };
            while i < records.len() && get(records[i], at.sample) == k {
                let r = records[i];
                s.threads.push(ThreadSample {
                    tid: get(r, at.tid) as u32,
                    pc: get(r, at.pc),
                    cputime: get(r, at.cputime),
                });
                i += 1;
            }
            profile::write_sample(out, &s)?;
        }
        Ok(())
    };
    if output.as_os_str() == "-" {
        let stdout = std::io::stdout();
        let mut out = BufWriter::new(stdout.lock());
        write(&mut out).and_then(|()| out.flush()).map_err(|e| CliError::io(output, e))?;
    } else {
        crate::atomic::write_atomically(output, |out| write(out))?;
    }
    Ok(samples)
}
