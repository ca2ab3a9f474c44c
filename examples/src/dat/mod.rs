//! `tbrw_reader` and `tbrw_writer`: a TB5 file to this project's `.dat`
//! dump and back (guide 2.2, 2.3, 2.5). The format is in docs/DAT.md.
//!
//! `tbrw_reader in.tb5 out.dat` writes `out.dat` (every section but the
//! data) and, beside it, `<in.tb5 file name>.dat` with the data sections of
//! every stream, which `out.dat` names. `tbrw_writer out.dat new.tb5` reads
//! both and writes a new TB5 file through the writing API, section by
//! section. Bind sections are not carried: bind the new file instead.
//!
//! Each section's writing sits beside its reading back (`global` for the
//! global sections, `stream` for the streams), so the two directions of the
//! format cannot drift apart; `codec` holds the encoding and the records.

mod codec;
mod global;
mod stream;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tbrw::work_file::WorkFile;
use tbrw::*;

use codec::{read_header, record, Dec};

/// The magic at the start of a `.dat` file.
pub const MAGIC: &[u8; 8] = b"TBRWDAT1";

/// Record tags.
pub mod tag {
    #![allow(missing_docs)]
    pub const HARDWARE: u32 = 1;
    pub const SOFTWARE: u32 = 2;
    pub const PROCESS_THREAD: u32 = 3;
    pub const MODULES: u32 = 4;
    pub const USER_GLOBAL: u32 = 5;
    pub const VERSION: u32 = 6;
    pub const STREAM: u32 = 16;
    pub const STREAM_INFO: u32 = 17;
    pub const EVENTS: u32 = 18;
    pub const DESCRIPTOR: u32 = 19;
    pub const DATA: u32 = 20;
    pub const USER_STREAM: u32 = 21;
    pub const STREAM_END: u32 = 31;
    pub const END: u32 = 255;
}

/// An error of the dat tools.
#[derive(Debug)]
pub enum DatError {
    /// From the TB5 side.
    Tb5(Error),
    /// An I/O error on a file.
    Io(PathBuf, std::io::Error),
    /// A malformed `.dat` file: which file, which record, which byte.
    Malformed {
        /// The file.
        file: PathBuf,
        /// The record number (0-based) and its tag, when known.
        record: Option<(u64, u32)>,
        /// Byte offset.
        offset: u64,
        /// What is wrong.
        what: String,
    },
}

impl std::fmt::Display for DatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatError::Tb5(e) => e.fmt(f),
            DatError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            DatError::Malformed { file, record, offset, what } => {
                write!(f, "{}: ", file.display())?;
                if let Some((n, t)) = record {
                    write!(f, "record {n} (tag {t}), ")?;
                }
                write!(f, "byte {offset}: {what}")
            }
        }
    }
}

impl std::error::Error for DatError {}

impl From<Error> for DatError {
    fn from(e: Error) -> Self {
        DatError::Tb5(e)
    }
}

type R<T = ()> = std::result::Result<T, DatError>;

/// The name of the data file for a TB5 input: its file name plus `.dat`.
pub fn data_file_name(tb5: &Path) -> String {
    format!("{}.dat", tb5.file_name().map_or_else(|| "tb5".into(), |n| n.to_string_lossy().into_owned()))
}

const GLOBAL: u32 = u32::MAX;

/// Where `tbrw_reader tb5 dat` puts the data file: beside `dat`, named
/// after `tb5`.
pub fn data_path(tb5: &Path, dat: &Path) -> PathBuf {
    beside(dat, &data_file_name(tb5))
}

/// `tbrw_reader`: dumps `tb5` into `dat` and the data file beside it.
/// Returns the path of the data file.
pub fn tb5_to_dat(tb5: &Path, dat: &Path) -> R<PathBuf> {
    let file = Tb5File::open(tb5)?;
    file.verify()?;
    let data_name = data_file_name(tb5);
    let data_path = beside(dat, &data_name);
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(data_name.len() as u32).to_le_bytes());
    out.extend_from_slice(data_name.as_bytes());

    if let Some(sys) = file.hardware()? {
        record(&mut out, tag::HARDWARE, GLOBAL, &global::encode_system(&sys));
    }
    if let Some(sw) = file.software()? {
        record(&mut out, tag::SOFTWARE, GLOBAL, &global::encode_software(&file, &sw)?);
    }
    if let Some(v) = file.version_info()? {
        record(&mut out, tag::VERSION, GLOBAL, &global::encode_version(&v));
    }
    if let Some(pt) = file.processes()? {
        record(&mut out, tag::PROCESS_THREAD, GLOBAL, &global::encode_processes(&file, &pt)?);
    }
    if let Some(mt) = file.modules()? {
        record(&mut out, tag::MODULES, GLOBAL, &global::encode_modules(&file, &mt)?);
    }
    if let Some(b) = file.user_defined_global()? {
        record(&mut out, tag::USER_GLOBAL, GLOBAL, b);
    }

    // Each file is built in a work file and put in place whole: a link at
    // either name is replaced itself, never written through (docs/FORMAT.md,
    // "Output paths").
    let data_work = WorkFile::create(&data_path).map_err(|e| DatError::Io(data_path.clone(), e))?;
    let mut data_out = BufWriter::with_capacity(1 << 20, data_work.file());
    let mut data_at = 0u64;
    for n in 0..file.stream_count() {
        record(&mut out, tag::STREAM, n, &[]);
        stream::write_stream(&file, n, &mut out, &mut data_out, &mut data_at, &data_path)?;
        record(&mut out, tag::STREAM_END, n, &[]);
    }
    record(&mut out, tag::END, GLOBAL, &[]);
    data_out.flush().map_err(|e| DatError::Io(data_path.clone(), e))?;
    drop(data_out);
    data_work.put_in_place().map_err(|e| DatError::Io(data_path.clone(), e))?;
    let dat_work = WorkFile::create(dat).map_err(|e| DatError::Io(dat.to_owned(), e))?;
    dat_work.file().write_all(&out).map_err(|e| DatError::Io(dat.to_owned(), e))?;
    dat_work.put_in_place().map_err(|e| DatError::Io(dat.to_owned(), e))?;
    Ok(data_path)
}

/// The data file a dump names (beside the dump), from its header: what
/// `tbrw_writer` will read besides the dump itself.
pub fn data_file_of(dat: &Path) -> R<PathBuf> {
    let bytes = std::fs::read(dat).map_err(|e| DatError::Io(dat.to_owned(), e))?;
    let name = read_header(&mut Dec { b: &bytes, at: 0, base: 0, file: dat, record: None })?;
    Ok(beside(dat, &name))
}

/// `name` in the folder of `path`.
fn beside(path: &Path, name: &str) -> PathBuf {
    path.parent().unwrap_or(Path::new("")).join(name)
}

/// `tbrw_writer`: reads `dat` (and the data file it names) and writes `tb5`.
pub fn dat_to_tb5(dat: &Path, tb5: &Path) -> R {
    let bytes = std::fs::read(dat).map_err(|e| DatError::Io(dat.to_owned(), e))?;
    let mut top = Dec { b: &bytes, at: 0, base: 0, file: dat, record: None };
    let name = read_header(&mut top)?;
    let data_path = beside(dat, &name);

    let mut w = Tb5Writer::create(tb5)?;
    let mut index = 0u64;
    let mut open_stream: Option<u32> = None;
    let mut pending: Option<stream::PendingStream> = None;
    loop {
        let at = top.at;
        let t = top.u32("record tag")?;
        let stream = top.u32("record stream")?;
        let len = top.u64("record length")?;
        let len = top.count(len, 1, "payload bytes")?;
        let payload = top.take(len, "payload")?;
        let mut d = Dec { b: payload, at: 0, base: (at + 16) as u64, file: dat, record: Some((index, t)) };
        index += 1;
        let in_stream = |d: &Dec<'_>| -> R<u32> {
            match open_stream {
                Some(n) if n == stream => Ok(n),
                _ => Err(d.err(format!("stream record for stream {stream} outside that stream"))),
            }
        };
        match t {
            tag::END => {
                if open_stream.is_some() {
                    return Err(d.err("END inside a stream"));
                }
                break;
            }
            tag::HARDWARE => {
                let sys = global::read_system(&mut d)?;
                w.write_hardware(&sys)?;
            }
            tag::SOFTWARE => {
                let sw = global::read_software(&mut d)?;
                w.write_software(&sw)?;
            }
            tag::VERSION => w.write_version_info(&global::read_version(&mut d)?)?,
            tag::PROCESS_THREAD => global::add_processes(&mut d, &mut w)?,
            tag::MODULES => global::add_modules(&mut d, &mut w)?,
            tag::USER_GLOBAL => w.write_user_defined_global(payload)?,
            tag::STREAM => {
                if open_stream.is_some() {
                    return Err(d.err("a stream inside a stream"));
                }
                open_stream = Some(stream);
                pending = Some(stream::PendingStream::default());
            }
            tag::STREAM_INFO | tag::EVENTS | tag::DESCRIPTOR | tag::USER_STREAM | tag::DATA => {
                in_stream(&d)?;
                let p = pending.as_mut().expect("open stream has pending state");
                match t {
                    tag::STREAM_INFO => p.info = Some(stream::read_info(&mut d)?),
                    tag::EVENTS => p.events = Some(stream::read_events(&mut d)?),
                    tag::DESCRIPTOR => p.descs = Some(stream::read_descs(&mut d)?),
                    tag::USER_STREAM => p.user = Some(payload.to_vec()),
                    _ => {
                        p.data = Some((d.u32("record size")?, d.u64("record count")?, d.u64("data offset")?));
                    }
                }
                if t != tag::USER_STREAM {
                    d.done()?;
                }
            }
            tag::STREAM_END => {
                let n = in_stream(&d)?;
                let p = pending.take().expect("open stream has pending state");
                p.write(&mut w, n, &data_path, &d)?;
                open_stream = None;
            }
            other => return Err(d.err(format!("unknown record tag {other}"))),
        }
    }
    w.close()?;
    Ok(())
}
