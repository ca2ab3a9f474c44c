//! The generator of `examples/data/sample.tb5`: a small, deterministic,
//! realistic file (see `examples/data/README.md` for what it holds).
//! Regenerate with `cargo run -p tbrw-examples --bin make_sample -- examples/data/sample.tb5`.

use std::path::Path;

use tbrw::*;

/// A fixed xorshift generator: the same file on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Legacy samples in stream 0.
pub const SAMPLES: u32 = 3000;
/// Records in the custom stream 1.
pub const CUSTOM_RECORDS: u32 = 200;
const TSC_START: u64 = 0x0000_1972_178D_8F5E;
const TSC_STEP: u64 = 2_900_000; // 1 ms at 2.9 GHz

struct Proc {
    pid: u32,
    tids: [u32; 2],
    modules: Vec<(u64, u64)>, // (load address, length) of its modules
    start: u64,               // TSC its exe was loaded at (0: before collection)
}

fn module(pid: u32, path: &str, addr: u64, len: u64, flags: ModuleFlags, load: u64, selector: u32) -> Module {
    Module {
        associated_pid: pid,
        flags: flags | ModuleFlags::TSC_USED | ModuleFlags::LOADED,
        event_when: load,
        segment_type: processor_mode::BIT64,
        code_selector: selector,
        length: len,
        load_address: addr,
        unload_tsc: NEVER_UNLOADED,
        path: Some(path.into()),
        name: Some(path.rsplit('/').next().unwrap_or(path).into()),
        segment_name: Some(".text".into()),
        ..Default::default()
    }
}

/// Writes the sample file to `path`.
pub fn write_sample(path: &Path) -> Result<()> {
    let mut w = Tb5Writer::create(path)?;
    write_system(&mut w)?;
    let procs = write_modules(&mut w)?;
    let mut rng = Rng(0x7b5_0b5e_5eed);
    write_samples(&mut w, &procs, &mut rng)?;
    write_lock_waits(&mut w, &procs, &mut rng)?;
    w.close()
}

/// The hardware (one node of four Intel 64 cpus), the software and the version info.
fn write_system(w: &mut Tb5Writer) -> Result<()> {
    let cpuids = |apic: u32| {
        Cpuids::Ia32(vec![
            CpuidIa32 { eax_input: 0, eax: 0x16, ebx: 0x756e6547, ecx: 0x6c65746e, edx: 0x49656e69, reserved: 0 },
            CpuidIa32 {
                eax_input: 1,
                eax: 0x000906ea,
                ebx: 0x0010_0800 | (apic << 24),
                ecx: 0x7ffafbff,
                edx: 0xbfebfbff,
                reserved: 0,
            },
        ])
    };
    let cpus = (0..4u32)
        .map(|n| Cpu {
            number: n,
            native_arch_type: native_arch::IA32,
            intel_processor_number: 0,
            speed_mhz: 2900,
            fsb_mhz: 100,
            cache_l2_kb: 256,
            cache_l3_kb: 12288,
            tsc_offset: i64::from(n) * 17,
            package_num: 0,
            core_num: (n / 2) as u16,
            hardware_thread_num: (n % 2) as u16,
            threads_per_core: 2,
            core_type: 0,
            dummy: 0,
            archs: vec![CpuArch { arch_type: arch_type::EM64T, cpuids: cpuids(n) }],
        })
        .collect();
    w.write_hardware(&System {
        nodes: vec![Node {
            id: 0,
            num_available: 4,
            num_used: 4,
            physical_memory_mb: 16384,
            cpus,
            ..Default::default()
        }],
    })?;
    w.write_software(&Software {
        host: Some(Host { reserved: 0, ip_address: Some("10.0.0.7".into()), name: Some("perfbox".into()) }),
        os: Some(Os {
            platform: os_family::LINUX64,
            major: 6,
            minor: 1,
            build: 0,
            extra: 0,
            name: Some("Linux".into()),
            name_extra: Some("6.1.0-18-amd64".into()),
        }),
        application: Some(Application {
            reserved: 0,
            page_size: 4096,
            alloc_granularity: 4096,
            min_app_addr: 0x10000,
            max_app_addr: 0x7fff_ffff_ffff,
        }),
    })?;
    w.write_version_info(&VersionInfo {
        sampling_driver_version: UNKNOWN_DRIVER_VERSION,
        bind_version: 0,
        sample_file_version: 16,
    })
}

/// The kernel, and three processes' modules; the processes.
fn write_modules(w: &mut Tb5Writer) -> Result<[Proc; 3]> {
    // The kernel, and three processes; the third starts during collection.
    let worker_start = TSC_START + u64::from(SAMPLES / 2) * TSC_STEP;
    let procs = [
        Proc {
            pid: 1000,
            tids: [1000, 1003],
            modules: vec![(0x40_0000, 0x2_0000), (0x7f00_0000_0000, 0x1c_0000), (0x7f00_0020_0000, 0x10_0000)],
            start: 0,
        },
        Proc {
            pid: 1001,
            tids: [1001, 1010],
            modules: vec![(0x40_0000, 0x8_0000), (0x7f10_0000_0000, 0x1c_0000), (0x7f10_0040_0000, 0x8_0000)],
            start: 0,
        },
        Proc {
            pid: 1002,
            tids: [1002, 1002],
            modules: vec![(0x55_0000_0000, 0x1_0000), (0x7f20_0000_0000, 0x1c_0000)],
            start: worker_start,
        },
    ];
    let mut modules = vec![module(
        0,
        "/boot/vmlinux-6.1.0-18-amd64",
        0xffff_ffff_8100_0000,
        0x100_0000,
        ModuleFlags::GLOBAL_LOAD,
        0,
        0x10,
    )];
    let paths = [
        &["/usr/bin/app", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"][..],
        &["/usr/sbin/db", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libssl.so.3"][..],
        &["/usr/bin/worker", "/usr/lib/x86_64-linux-gnu/libc.so.6"][..],
    ];
    for (p, names) in procs.iter().zip(paths) {
        for (i, ((addr, len), name)) in p.modules.iter().zip(names).enumerate() {
            let flags = if i == 0 {
                ModuleFlags::IS_EXE | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS
            } else {
                ModuleFlags::empty()
            };
            modules.push(module(p.pid, name, *addr, *len, flags, p.start, 0x33));
        }
    }
    w.write_modules(&modules)?;
    w.write_user_defined_global(b"collector=tbrw make_sample 1\nhost=perfbox\n")?;
    Ok(procs)
}

/// Stream 0: legacy PC + TSC samples, two events.
fn write_samples(w: &mut Tb5Writer, procs: &[Proc], rng: &mut Rng) -> Result<()> {
    let mut s0 = w
        .stream(0)?
        .info(&StreamInfo {
            sampling_duration_ms: SAMPLES,
            stream_type: stream_type::SAMPLING,
            sampling_interval_us: 1000,
            start_time: FileTime::from_ticks(133_500_000_000_000_000),
            end_time: FileTime::from_ticks(133_500_000_000_000_000 + u64::from(SAMPLES) * 10_000),
            command_line: Some("sampler -e cycles,instructions -c 2000003 -- ./run.sh".into()),
            cpu_mask: Some("0-3".into()),
            comment: Some("sample run".into()),
        })?
        .data_descriptor(&legacy_descriptor())?;
    let detail = |value: u64| EventDetail {
        access_size_bits: 64,
        method: access_method::MSR,
        access: 1,
        address: 0x186,
        value,
        ..Default::default()
    };
    s0.events(&[
        Event {
            id: 0,
            flags: EventFlags::EBS,
            sav: 2_000_003,
            name: Some("CPU_CLK_UNHALTED.THREAD".into()),
            arch_name: Some("Intel Core".into()),
            details: vec![detail(0x43003c)],
        },
        Event {
            id: 1,
            flags: EventFlags::EBS,
            sav: 2_000_003,
            name: Some("INST_RETIRED.ANY".into()),
            arch_name: Some("Intel Core".into()),
            details: vec![detail(0x4300c0)],
        },
    ])?;
    let mut data = s0.data()?;
    let mut p = 0usize;
    let mut t = 0usize;
    for i in 0..SAMPLES {
        let tsc = TSC_START + u64::from(i) * TSC_STEP + rng.below(1000);
        // Runs of one thread, as a sampler sees them.
        if rng.below(8) == 0 {
            p = rng.below(3) as usize;
            t = rng.below(2) as usize;
        }
        if procs[p].start > tsc {
            p = 0;
        }
        let pr = &procs[p];
        let ip = match rng.below(100) {
            0..=14 => 0xffff_ffff_8100_0000 + rng.below(0x100_0000),
            15..=17 => 0x1000 + rng.below(0x1000), // unknown: no module there
            _ => {
                let (addr, len) = pr.modules[rng.below(pr.modules.len() as u64) as usize];
                addr + rng.below(len)
            }
        };
        let mut pc = SampleRecordPc::default();
        pc.set_ia64(ip, 0x246);
        // 64-bit ips are recorded as IA64PC records here: the only 64-bit form of TBRW_SampleRecordPC.
        pc.cs = if ip >= 0xffff_0000_0000_0000 { 0x10 } else { 0x33 };
        pc.set_cpu_num((i % 4) as u16);
        pc.set_code_mode(processor_mode::BIT64);
        pc.tid = pr.tids[t];
        pc.pid_rec_index = pr.pid;
        pc.set_pid_rec_index_raw(true);
        pc.set_tid_is_raw(true);
        pc.set_event_index((i % 2) as u8);
        data.add(&pc.to_bytes())?;
        data.add(&tsc.to_le_bytes())?;
    }
    data.done()?;
    s0.finish()
}

/// Stream 1: a custom stream of lock waits, with its own descriptor.
fn write_lock_waits(w: &mut Tb5Writer, procs: &[Proc], rng: &mut Rng) -> Result<()> {
    let mut s1 = w
        .stream(1)?
        .info(&StreamInfo {
            stream_type: stream_type::CUSTOM,
            comment: Some("lock waits".into()),
            command_line: Some("lockstat".into()),
            ..Default::default()
        })?
        .data_descriptor(&[
            DescEntry {
                desc_type: desc_type::IP,
                subtype: desc_subtype::EIP,
                data_size: 8,
                name: Some("ip".into()),
                ..Default::default()
            },
            DescEntry { desc_type: desc_type::PID, data_size: 4, name: Some("pid".into()), ..Default::default() },
            DescEntry { desc_type: desc_type::TID, data_size: 4, name: Some("tid".into()), ..Default::default() },
            DescEntry {
                desc_type: desc_type::TIME_STAMP,
                subtype: desc_subtype::TS_NANOSECONDS,
                data_size: 8,
                name: Some("time_ns".into()),
                ..Default::default()
            },
            DescEntry { desc_type: 0x4001, data_size: 4, name: Some("wait_us".into()), ..Default::default() },
            DescEntry { desc_type: 0x4002, data_size: 4, name: Some("lock_id".into()), ..Default::default() },
        ])?;
    s1.events(&[])?;
    s1.user_defined(b"lockstat v2")?;
    let mut data = s1.data()?;
    for i in 0..u64::from(CUSTOM_RECORDS) {
        let pr = &procs[(i % 2) as usize];
        let (addr, len) = pr.modules[1];
        let mut rec = Vec::with_capacity(32);
        rec.extend_from_slice(&(addr + rng.below(len)).to_le_bytes());
        rec.extend_from_slice(&pr.pid.to_le_bytes());
        rec.extend_from_slice(&pr.tids[(i % 2) as usize].to_le_bytes());
        rec.extend_from_slice(&(1_000_000 * i + rng.below(1000)).to_le_bytes());
        rec.extend_from_slice(&(rng.below(5000) as u32).to_le_bytes());
        rec.extend_from_slice(&(rng.below(8) as u32).to_le_bytes());
        data.add(&rec)?;
    }
    data.done()?;
    s1.finish()
}
