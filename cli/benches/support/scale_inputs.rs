//! TB5 files written straight with the `tbrw` writer for the scale benches
//! and tests, the same bytes every time (fixed xorshift streams):
//!
//! - [`other_machine`]: a file like one from another machine (issue #40):
//!   10,000 modules (100 processes × 100 libraries, each library a file of
//!   its own, `/opt/remote/libN.so`, none of them on this machine), samples
//!   at random addresses inside the modules, records of `ST_IP`, `ST_PID`
//!   and `ST_TID` (16 bytes). With a pool, the samples are drawn from that
//!   many distinct addresses (20 M samples over 5 M addresses, say).
//! - [`deep_stacks`]: samples on distinct stacks of one depth (issue #38,
//!   "Deep stacks"): every stack is one shared chain of `depth - 1` frames
//!   and a leaf frame of its own, in the stream's stack table, so that the
//!   file holds `depth - 1 + samples` nodes while the stacks, written out
//!   frame by frame, are `samples × depth` frames.
//!
//! Included by `cli/benches/memory.rs` (through `support`), by
//! `cli/examples/make_scale_inputs.rs` and by `cli/tests/scale.rs`.

use std::path::Path;

use tbrw::*;

/// Processes of [`other_machine`].
pub const PROCESSES: u64 = 100;
/// Libraries per process of [`other_machine`].
pub const LIBRARIES: u64 = 100;
/// Each library's length (1 MiB) and the distance between two.
pub const LIBRARY_SIZE: u64 = 0x10_0000;
/// Where a process's first library is loaded.
pub const FIRST_LOAD: u64 = 0x7f00_0000_0000;

/// A fixed xorshift64 stream.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// The `k`th address of the pool: (process, address).
fn pooled(k: u64) -> (u64, u64) {
    // A multiply-xorshift hash of k: spread, and the same for every run.
    let mut h = (k ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 31;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 29;
    let p = h % PROCESSES;
    let l = (h >> 8) % LIBRARIES;
    let off = (h >> 24) % LIBRARY_SIZE;
    (p, FIRST_LOAD + l * LIBRARY_SIZE + off)
}

fn module(pid: u32, path: String, load_address: u64, length: u64, first: bool) -> Module {
    let mut flags = ModuleFlags::LOADED;
    if first {
        flags |= ModuleFlags::FIRST_MODULE_REC_IN_PROCESS;
    }
    Module {
        associated_pid: pid,
        flags,
        segment_type: processor_mode::BIT64,
        load_address,
        length,
        unload_tsc: NEVER_UNLOADED,
        name: Some(path.rsplit('/').next().unwrap_or_default().to_owned()),
        path: Some(path),
        ..Default::default()
    }
}

fn entry(desc_type: u16, data_size: u32, name: &str) -> DescEntry {
    DescEntry { desc_type, subtype: desc_subtype::NONE, data_size, name: Some(name.into()), ..Default::default() }
}

fn globals(w: &mut Tb5Writer) -> Result<()> {
    w.write_hardware(&System::default())?;
    let os = Os { platform: os_family::LINUX64, name: Some("Linux".into()), ..Default::default() };
    w.write_software(&Software {
        host: Some(Host { name: Some("remote".into()), ..Default::default() }),
        os: Some(os),
        application: None,
    })?;
    w.write_version_info(&VersionInfo {
        sampling_driver_version: UNKNOWN_DRIVER_VERSION,
        bind_version: 0,
        sample_file_version: MIN_SAMPLE_FILE_VERSION,
    })
}

/// Writes [`other_machine`]'s file of `samples` samples to `path`: at
/// random addresses of the 10,000 modules, or, with `pool`, at addresses
/// drawn from that many distinct ones.
pub fn other_machine(path: &Path, samples: u64, pool: Option<u64>) -> Result<()> {
    let mut w = Tb5Writer::create(path)?;
    globals(&mut w)?;
    let mut modules = Vec::with_capacity((PROCESSES * LIBRARIES) as usize);
    for p in 0..PROCESSES {
        for l in 0..LIBRARIES {
            let path = format!("/opt/remote/lib{}.so", p * LIBRARIES + l);
            modules.push(module(1000 + p as u32, path, FIRST_LOAD + l * LIBRARY_SIZE, LIBRARY_SIZE, l == 0));
        }
    }
    w.write_modules(&modules)?;
    let mut st =
        w.stream(0)?.info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })?.data_descriptor(
            &[entry(desc_type::IP, 8, "pc"), entry(desc_type::PID, 4, "pid"), entry(desc_type::TID, 4, "tid")],
        )?;
    st.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some("cpu-clock".into()), ..Default::default() }])?;
    let mut data = st.data()?;
    let mut bytes = Vec::with_capacity(16 << 16);
    let mut random = Random(0x2545_F491_4F6C_DD1D);
    for _ in 0..samples {
        let (p, pc) = match pool {
            Some(n) => pooled(random.next() % n.max(1)),
            None => {
                let r = random.next();
                (r % PROCESSES, FIRST_LOAD + (r >> 8) % LIBRARIES * LIBRARY_SIZE + (r >> 24) % LIBRARY_SIZE)
            }
        };
        let pid = 1000 + p as u32;
        bytes.extend_from_slice(&pc.to_le_bytes());
        bytes.extend_from_slice(&pid.to_le_bytes());
        bytes.extend_from_slice(&pid.to_le_bytes());
        if bytes.len() >= 16 << 16 {
            data.add(&bytes)?;
            bytes.clear();
        }
    }
    data.add(&bytes)?;
    data.done()?;
    st.finish()?;
    w.close()
}

/// Where [`deep_stacks`]' program is loaded, and its length.
pub const DEEP_LOAD: u64 = 0x40_0000;
/// See [`DEEP_LOAD`].
pub const DEEP_LENGTH: u64 = 0x1000_0000;

/// Writes [`deep_stacks`]' file to `path`: `samples` samples of one
/// process, each on a stack of `depth` frames of its own (a shared chain
/// of `depth - 1` frames, then a leaf of its own), in the module
/// `program` (`/opt/remote/deep`, not on this machine, in the file;
/// a file that is here makes every frame a function's address).
pub fn deep_stacks(path: &Path, samples: u64, depth: usize, program: &str) -> Result<()> {
    let mut w = Tb5Writer::create(path)?;
    globals(&mut w)?;
    w.write_modules(&[module(4242, program.into(), DEEP_LOAD, DEEP_LENGTH, true)])?;
    let mut st = w
        .stream(0)?
        .info(&StreamInfo { stream_type: stream_type::SAMPLING, ..Default::default() })?
        .data_descriptor(&[
            entry(desc_type::IP, 8, "pc"),
            entry(desc_type::PID, 4, "pid"),
            entry(desc_type::TID, 4, "tid"),
            stack_id_entry("stack_id"),
        ])?;
    st.events(&[Event { id: 0, flags: EventFlags::TBS, name: Some("cpu-clock".into()), ..Default::default() }])?;
    let mut table = StackTable::new();
    // The shared chain, outermost first: 16 bytes a frame.
    let mut chain = None;
    for i in 0..depth.saturating_sub(1) as u64 {
        chain = Some(table.node_of(chain, DEEP_LOAD + 0x1000 + i * 16)?);
    }
    let mut bytes = Vec::new();
    for s in 0..samples {
        let leaf_pc = DEEP_LOAD + 0x100_0000 + s * 16;
        let id = table.node_of(chain, leaf_pc)?;
        bytes.extend_from_slice(&leaf_pc.to_le_bytes());
        bytes.extend_from_slice(&4242u32.to_le_bytes());
        bytes.extend_from_slice(&4242u32.to_le_bytes());
        bytes.extend_from_slice(&id.to_le_bytes());
    }
    let mut data = st.data()?;
    data.add(&bytes)?;
    data.done()?;
    st.stack_table(table)?;
    st.finish()?;
    w.close()
}
