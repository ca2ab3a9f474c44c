//! What an append to a large file in Intel's layout costs: it must cost
//! what it appends, not a rewrite of the file (docs/FORMAT.md, "Appends in
//! Intel's layout").
//!
//! Writes a file of about `GIB` GiB (default 1) in a temporary folder
//! (`TMPDIR`, default /tmp): a small stream 0 of 100,000 legacy records
//! (40 bytes: PC record and TSC) and stream 1 of 24-byte records (ip,
//! pid, tid, TSC), most of the bytes. Then, each as its own append, timed,
//! with the bytes this process wrote for it (`/proc/self/io`: `wchar`,
//! bytes handed to write calls, and `write_bytes`, bytes it sent to
//! storage): a new stream of 1 MiB of records, a bind of stream 0 (Intel's
//! bind is 32 bytes a record: 3.2 MB), and stored symbols (64 KiB). The
//! file is deleted at the end.
//!
//! `cargo run --release -p tbrw --example append_cost [-- GIB]`

use std::path::Path;
use std::time::Instant;

use tbrw::*;

const RECORD: usize = 40;
const FIELDS_RECORD: usize = 24;

/// Ip, pid, tid and TSC, as a stream other than stream 0 holds samples.
fn fields_descriptor() -> Vec<DescEntry> {
    let field = |desc_type, subtype, offset, data_size, name: &str| DescEntry {
        desc_type,
        subtype,
        offset,
        data_size,
        name: Some(name.into()),
        ..Default::default()
    };
    vec![
        field(desc_type::IP, desc_subtype::NONE, 0, 8, "ip"),
        field(desc_type::PID, desc_subtype::NONE, 8, 4, "pid"),
        field(desc_type::TID, desc_subtype::NONE, 12, 4, "tid"),
        field(desc_type::TIME_STAMP, desc_subtype::TSC, 16, 8, "tsc"),
    ]
}

fn fields_record(i: u64, pid: u32, out: &mut [u8]) {
    out[..8].copy_from_slice(&(0x40_0000 + (i % 0x8000) * 16).to_le_bytes());
    out[8..12].copy_from_slice(&pid.to_le_bytes());
    out[12..16].copy_from_slice(&(pid + (i % 4) as u32).to_le_bytes());
    out[16..].copy_from_slice(&(i * 1000).to_le_bytes());
}

fn record(i: u64, pid: u32, out: &mut [u8]) {
    let mut pc = SampleRecordPc::default();
    pc.set_ia64(0x40_0000 + (i % 0x8000) * 16, 0);
    pc.pid_rec_index = pid;
    pc.set_pid_rec_index_raw(true);
    pc.tid = pid + (i % 4) as u32;
    out[..32].copy_from_slice(&pc.to_bytes());
    out[32..].copy_from_slice(&(i * 1000).to_le_bytes());
}

/// Writes record `i` of a pid into the bytes given.
type Fill = fn(u64, u32, &mut [u8]);

/// Writes `records` records of `pid` as the next stream of `w`: legacy
/// records in stream 0, else [`fields_descriptor`]'s.
fn write_stream(w: &mut Tb5Writer, records: u64, pid: u32) -> Result<()> {
    let info = StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() };
    let s = w.next_stream()?.info(&info)?;
    let legacy = s.index() == 0;
    let (size, fill): (usize, Fill) = if legacy { (RECORD, record) } else { (FIELDS_RECORD, fields_record) };
    let mut s = s.data_descriptor(&if legacy { legacy_descriptor() } else { fields_descriptor() })?;
    let mut data = s.data()?;
    let mut buf = vec![0u8; 4096 * size];
    let mut i = 0;
    while i < records {
        let n = (records - i).min(4096) as usize;
        for (k, r) in buf[..n * size].chunks_exact_mut(size).enumerate() {
            fill(i + k as u64, pid, r);
        }
        data.add(&buf[..n * size])?;
        i += n as u64;
    }
    data.done()?;
    s.finish()
}

/// (`wchar`, `write_bytes`) of this process so far.
fn io() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field =
        |name: &str| text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    (field("wchar:"), field("write_bytes:"))
}

type Failure = Box<dyn std::error::Error>;

/// Runs `append`, then prints its time and bytes written.
fn measure(what: &str, path: &Path, append: impl FnOnce() -> Result<()>) -> Result<(), Failure> {
    let before = (io(), std::fs::metadata(path)?.len());
    let t = Instant::now();
    append()?;
    let secs = t.elapsed().as_secs_f64();
    let after = (io(), std::fs::metadata(path)?.len());
    println!(
        "{what:<28} {:>9.3} s {:>14} {:>14} {:>14}",
        secs,
        after.0 .0 - before.0 .0,
        after.0 .1 - before.0 .1,
        after.1 - before.1
    );
    Ok(())
}

fn main() -> Result<(), Failure> {
    let gib: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("large.tb7");
    let big = (gib * f64::from(1 << 30)) as u64 / FIELDS_RECORD as u64;
    let t = Instant::now();
    let mut w = Tb5Writer::create(&path)?;
    let exe = |pid: u32, base: u64| Module {
        associated_pid: pid,
        flags: ModuleFlags::IS_EXE | ModuleFlags::TSC_USED | ModuleFlags::LOADED,
        load_address: base,
        length: 0x10_0000,
        unload_tsc: NEVER_UNLOADED,
        path: Some(format!("/bin/app{pid}")),
        name: Some(format!("app{pid}")),
        ..Default::default()
    };
    w.write_modules(&[exe(100, 0x40_0000), exe(200, 0x40_0000)])?;
    write_stream(&mut w, 100_000, 200)?;
    write_stream(&mut w, big, 100)?;
    w.close()?;
    let size = std::fs::metadata(&path)?.len();
    println!("{}: {size} bytes, written in {:.1} s", path.display(), t.elapsed().as_secs_f64());
    println!("{:<28} {:>11} {:>14} {:>14} {:>14}", "append", "time", "wchar", "write_bytes", "file grew by");
    measure("a stream of 1 MiB", &path, || {
        let mut w = Tb5Writer::append(&path)?;
        write_stream(&mut w, (1 << 20) / FIELDS_RECORD as u64, 300)?;
        w.close()
    })?;
    measure("a bind of 100,000 records", &path, || bind::dobind(&path, 0))?;
    measure("stored symbols of 64 KiB", &path, || {
        let mut w = Tb5Writer::append(&path)?;
        w.store_symbols(&[0x5a; 64 * 1024])?;
        w.close()
    })?;
    let f = Tb5File::open(&path)?;
    f.verify()?;
    assert!(f.stream(0)?.is_bound(), "stream 0 is bound");
    Ok(())
}
