//! Writes the TB5 file that chapter 6 of the TBRW guide builds, step by
//! step (hardware, software, version info, a module, an event, stream info,
//! the two sample descriptors and PC + TSC samples), verifies it, and
//! prints its summary.
//!
//! `cargo run -p tbrw --example guide_example [OUT.tb5] [SAMPLES]`
//!
//! OUT.tb5 defaults to `guide_example.tb5` in the system's temporary
//! folder, so that a run leaves nothing in the working tree; the last
//! line printed says where the file went.

use std::io::Write;

use tbrw::*;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(default_path);
    let samples: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let mut out = std::io::stdout().lock();
    if let Err(e) = run(&path, samples, &mut out) {
        eprintln!("guide_example: {e}");
        std::process::exit(1);
    }
    if let Err(e) = writeln!(out, "wrote {path}") {
        eprintln!("guide_example: writing the output: {e}");
        std::process::exit(1);
    }
}

/// Where the file goes when no path is given: never the working tree.
fn default_path() -> String {
    std::env::temp_dir().join("guide_example.tb5").to_string_lossy().into_owned()
}

fn run(path: &str, samples: u32, out: &mut dyn Write) -> Result<()> {
    write_guide_file(path, samples)?;
    let file = Tb5File::open(path)?;
    file.verify()?;
    summary::write_summary(&file, out)
}

/// The guide's example values (6.3 to 6.10).
fn write_guide_file(path: &str, samples: u32) -> Result<()> {
    let mut w = Tb5Writer::create(path)?;
    let cpuid = CpuidIa32 { eax_input: 0, eax: 0xa, ebx: 0x756e6547, ecx: 0x6c65746e, edx: 0x49656e69, reserved: 0 };
    w.write_hardware(&System {
        nodes: vec![Node {
            id: 1,
            num_available: 1,
            num_used: 1,
            physical_memory_mb: 1024,
            cpus: vec![Cpu {
                native_arch_type: native_arch::IA32,
                intel_processor_number: 8086,
                speed_mhz: 3000,
                fsb_mhz: 1333,
                cache_l2_kb: 4096,
                cache_l3_kb: 128,
                threads_per_core: 1,
                core_type: 0,
                dummy: 0,
                archs: vec![CpuArch { arch_type: arch_type::X86, cpuids: Cpuids::Ia32(vec![cpuid]) }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    })?;
    w.write_software(&Software {
        host: Some(Host {
            reserved: 0,
            ip_address: Some("10.10.10.10".into()),
            name: Some("testhost.intel.com".into()),
        }),
        os: Some(Os {
            platform: os_family::WIN32,
            major: 5,
            minor: 1,
            build: 0xa28,
            extra: 0,
            name: Some("Windows XP".into()),
            name_extra: Some("32-bit".into()),
        }),
        application: Some(Application {
            reserved: 0,
            page_size: 1024,
            alloc_granularity: 2048,
            min_app_addr: 0xfffff,
            max_app_addr: 0xffffffff,
        }),
    })?;
    w.write_version_info(&VersionInfo {
        sampling_driver_version: UNKNOWN_DRIVER_VERSION,
        bind_version: 0,
        sample_file_version: 0x10,
    })?;
    w.write_modules(&[Module {
        associated_pid: 0x1000,
        flags: ModuleFlags::TSC_USED
            | ModuleFlags::LOADED
            | ModuleFlags::IS_EXE
            | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS,
        event_when: 0,
        segment_type: processor_mode::BIT32,
        code_selector: 0x8,
        length: 0x2000,
        load_address: 0x400000,
        unload_tsc: NEVER_UNLOADED,
        path: Some("C:\\sample\\sample.exe".into()),
        name: Some("sample.exe".into()),
        segment_name: Some(String::new()),
        ..Default::default()
    }])?;

    let mut stream = w
        .stream(0)?
        .info(&StreamInfo {
            sampling_duration_ms: 20000,
            stream_type: stream_type::SAMPLING,
            sampling_interval_us: 1000,
            start_time: FileTime { low: 1526932352, high: 29849313 },
            end_time: FileTime { low: 1566932352, high: 29849313 },
            command_line: Some("unknown".into()),
            cpu_mask: Some("none".into()),
            comment: Some("sample_comment".into()),
        })?
        .data_descriptor(&legacy_descriptor())?;
    stream.events(&[Event {
        id: 0,
        flags: EventFlags::EBS,
        sav: 2_000_000,
        name: Some("SampleEvent".into()),
        arch_name: Some("Core 2".into()),
        details: vec![EventDetail {
            access_size_bits: 32,
            method: access_method::MSR,
            access: 1,
            address: 0x21,
            value: 0xffe17b80,
            ..Default::default()
        }],
    }])?;
    let mut data = stream.data()?;
    for i in 0..samples {
        let mut pc = SampleRecordPc::default();
        pc.set_code_mode(processor_mode::BIT32);
        pc.set_ia32(0x400000 + (i * 4) % 0x2000, 0x246, CodeDescriptor { low_word: 0xffff, high_word: 0xcf9b00 });
        pc.cs = 0x1B;
        pc.set_event_index(0);
        pc.set_tid_is_raw(true);
        pc.set_pid_rec_index_raw(true);
        pc.pid_rec_index = 0x1000;
        // As in the guide: the PC record and its TSC in two calls.
        data.add(&pc.to_bytes())?;
        data.add(&(0x00001972178D8F5E + u64::from(i) * 3000).to_le_bytes())?;
    }
    data.done()?;
    stream.finish()?;
    w.close()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_file_goes_to_the_temporary_folder() {
        let p = std::path::PathBuf::from(super::default_path());
        assert_eq!(p.parent(), Some(std::env::temp_dir().as_path()));
    }

    #[test]
    fn prints_the_guide_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.tb5");
        let mut out = Vec::new();
        super::run(p.to_str().unwrap(), 10, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let body: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            body,
            [
                "global sections: TBRW_HARDWARE_SECTION, TBRW_SOFTWARE_SECTION, TBRW_MODULE_SECTION, TBRW_VERSION_INFO_SECTION",
                "modules: 1",
                "streams: 1",
                "  stream 0: type 1 \"sample_comment\", 10 records of 40 bytes",
                "    field   0..32  ST_LEGACY_SAMPLE_RECORD \"SampleRecord\"",
                "    field  32..40  ST_TIME_STAMP \"TimeStamp\"",
                "    event 0 (0x0) \"SampleEvent\" sav 2000000",
            ]
        );
    }
}
