//! Shared test support: a complete file content model, a writer and a
//! reader for it, and proptest strategies that cover every field.
#![allow(dead_code)]

use std::path::Path;

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use tbrw::*;

/// Everything a TB5 file can hold, with text resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Content {
    pub hardware: Option<System>,
    pub software: Option<Software>,
    pub version: Option<VersionInfo>,
    pub processes: Option<(Vec<Pid>, Vec<Tid>)>,
    pub modules: Option<Vec<Module>>,
    pub user: Option<Vec<u8>>,
    pub streams: Vec<StreamContent>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StreamContent {
    pub info: StreamInfo,
    pub events: Option<Vec<Event>>,
    pub descs: Vec<DescEntry>,
    /// Whole records.
    pub data: Option<Vec<u8>>,
    pub user: Option<Vec<u8>>,
}

/// The descriptor as a reader sees it: offsets made effective.
pub fn normalized(descs: &[DescEntry]) -> Vec<DescEntry> {
    let layout = RecordLayout::from_entries(descs).unwrap();
    descs.iter().enumerate().map(|(i, d)| DescEntry { offset: layout.offset_of(i).unwrap(), ..d.clone() }).collect()
}

pub fn write_streams(w: &mut Tb5Writer, streams: &[StreamContent]) -> Result<()> {
    for s in streams {
        let mut sw = w.next_stream()?.info(&s.info)?.data_descriptor(&s.descs)?;
        if let Some(ev) = &s.events {
            sw.events(ev)?;
        }
        if let Some(u) = &s.user {
            sw.user_defined(u)?;
        }
        if let Some(d) = &s.data {
            let mut data = sw.data()?;
            // Odd-sized batches of whole records, so chunking is exercised.
            let rs = data.layout().unwrap().record_size() as usize;
            for chunk in d.chunks(rs * 7) {
                data.add(chunk)?;
            }
            data.done()?;
        }
        sw.finish()?;
    }
    Ok(())
}

pub fn write_content(path: &Path, c: &Content) -> Result<()> {
    write_content_as(path, c, WriteLayout::Intel)
}

/// [`write_content`] in `layout`.
pub fn write_content_as(path: &Path, c: &Content, layout: WriteLayout) -> Result<()> {
    let mut w = Tb5Writer::create_as(path, Durability::from_env(), layout)?;
    write_globals(&mut w, c)?;
    write_streams(&mut w, &c.streams)?;
    w.close()
}

pub fn write_globals(w: &mut Tb5Writer, c: &Content) -> Result<()> {
    if let Some(h) = &c.hardware {
        w.write_hardware(h)?;
    }
    if let Some(s) = &c.software {
        w.write_software(s)?;
    }
    if let Some(v) = &c.version {
        w.write_version_info(v)?;
    }
    if let Some((p, t)) = &c.processes {
        w.write_process_threads(p, t)?;
    }
    if let Some(m) = &c.modules {
        w.write_modules(m)?;
    }
    if let Some(u) = &c.user {
        w.write_user_defined_global(u)?;
    }
    Ok(())
}

pub fn read_content(f: &Tb5File) -> Result<Content> {
    let processes = match f.processes()? {
        Some(pt) => Some((
            pt.pids().map(|p| f.resolve(p)).collect::<Result<_>>()?,
            pt.tids().map(|t| f.resolve(t)).collect::<Result<_>>()?,
        )),
        None => None,
    };
    let modules = match f.modules()? {
        Some(mt) => Some(mt.iter().map(|m| f.resolve(m?)).collect::<Result<_>>()?),
        None => None,
    };
    let mut streams = Vec::new();
    for n in 0..f.stream_count() {
        let s = f.stream(n)?;
        streams.push(StreamContent {
            info: f.resolve(s.info()?.expect("stream info"))?,
            events: s.events()?.map(|v| v.into_iter().map(|e| f.resolve(e)).collect::<Result<_>>()).transpose()?,
            descs: s.descriptor()?.expect("descriptor").into_iter().map(|d| f.resolve(d)).collect::<Result<_>>()?,
            data: s.data()?.map(|d| d.as_bytes().to_vec()),
            user: s.user_defined()?.map(<[u8]>::to_vec),
        });
    }
    Ok(Content {
        hardware: f.hardware()?,
        software: f.software()?.map(|s| f.resolve(s)).transpose()?,
        version: f.version_info()?,
        processes,
        modules,
        user: f.user_defined_global()?.map(<[u8]>::to_vec),
        streams,
    })
}

/// What reading back `c` written in Intel's layout must give.
pub fn expected(c: &Content) -> Content {
    expected_in(c, WriteLayout::Intel)
}

/// What reading back `c` written in `layout` must give. Intel's layout
/// (docs/FORMAT.md, "What Intel's layout cannot hold") has no section of
/// no bytes (user-defined bytes and records: an empty one reads as none),
/// no software section of no part, a node's cpu count in its
/// `num_available`, and a cpu architecture's cpuid form given by its type.
pub fn expected_in(c: &Content, layout: WriteLayout) -> Content {
    let mut e = c.clone();
    for s in &mut e.streams {
        s.descs = normalized(&s.descs);
    }
    if layout == WriteLayout::Tb5 {
        return e;
    }
    let nonempty = |b: &mut Option<Vec<u8>>| {
        if b.as_ref().is_some_and(Vec::is_empty) {
            *b = None;
        }
    };
    nonempty(&mut e.user);
    for s in &mut e.streams {
        nonempty(&mut s.user);
        // No records: no data section, read as an empty one where a descriptor defines records.
        if s.descs.is_empty() {
            nonempty(&mut s.data);
        } else if s.data.is_none() {
            s.data = Some(Vec::new());
        }
    }
    if e.software.as_ref().is_some_and(|s| s.host.is_none() && s.os.is_none() && s.application.is_none()) {
        e.software = None;
    }
    // A software section has a host and an application, zeros where none was set.
    if let Some(s) = &mut e.software {
        s.host.get_or_insert_with(Default::default);
        s.application.get_or_insert_with(Default::default);
    }
    // A system of no nodes is not written.
    if e.hardware.as_ref().is_some_and(|h| h.nodes.is_empty()) {
        e.hardware = None;
    }
    for n in e.hardware.iter_mut().flat_map(|h| h.nodes.iter_mut()) {
        n.num_available = n.cpus.len() as u32;
        for a in n.cpus.iter_mut().flat_map(|c| c.archs.iter_mut()) {
            a.cpuids = intel_cpuids(a.arch_type, &a.cpuids);
        }
    }
    e
}

/// The cpuid leaves as Intel's layout stores them (six words each) and
/// reads them back: IA-64 leaves for an Itanium architecture, IA-32 for any other.
fn intel_cpuids(arch_type: u16, c: &Cpuids) -> Cpuids {
    let words: Vec<[u32; 6]> = match c {
        Cpuids::Ia32(v) => v.iter().map(|l| [l.eax_input, l.eax, l.ebx, l.ecx, l.edx, l.reserved]).collect(),
        Cpuids::Ia64(v) => v
            .iter()
            .map(|l| {
                let w = |x: u64| [x as u32, (x >> 32) as u32];
                let ([a, b], [c, d], [e, f]) = (w(l.select), w(l.value), w(l.reserved));
                [a, b, c, d, e, f]
            })
            .collect(),
    };
    let q = |lo: u32, hi: u32| u64::from(lo) | u64::from(hi) << 32;
    if arch_type == arch_type::ITANIUM {
        Cpuids::Ia64(
            words
                .iter()
                .map(|w| CpuidIa64 { select: q(w[0], w[1]), value: q(w[2], w[3]), reserved: q(w[4], w[5]) })
                .collect(),
        )
    } else {
        Cpuids::Ia32(
            words
                .iter()
                .map(|w| CpuidIa32 { eax_input: w[0], eax: w[1], ebx: w[2], ecx: w[3], edx: w[4], reserved: w[5] })
                .collect(),
        )
    }
}

// ------------------------------------------------------------ strategies

pub fn text() -> impl Strategy<Value = Text> {
    // Any text but a NUL, which Intel's layout cannot store (docs/FORMAT.md).
    let any_text = any::<String>().prop_map(|s| s.replace('\0', ""));
    option::of(prop_oneof![Just(String::new()), "[a-zA-Z0-9_./-]{1,20}", any_text, Just("共有 🦀".to_string())])
}

pub fn system() -> impl Strategy<Value = System> {
    let cpuids = prop_oneof![
        vec(any::<[u32; 6]>(), 0..4).prop_map(|v| Cpuids::Ia32(
            v.into_iter()
                .map(|a| CpuidIa32 { eax_input: a[0], eax: a[1], ebx: a[2], ecx: a[3], edx: a[4], reserved: a[5] })
                .collect()
        )),
        vec(any::<[u64; 3]>(), 0..3).prop_map(|v| Cpuids::Ia64(
            v.into_iter().map(|a| CpuidIa64 { select: a[0], value: a[1], reserved: a[2] }).collect()
        )),
    ];
    let arch = (any::<u16>(), cpuids).prop_map(|(arch_type, cpuids)| CpuArch { arch_type, cpuids });
    let cpu =
        (any::<[u32; 8]>(), any::<i64>(), any::<[u16; 5]>(), vec(arch, 0..3)).prop_map(|(a, tsc, b, archs)| Cpu {
            number: a[0],
            native_arch_type: a[1],
            intel_processor_number: a[2],
            speed_mhz: a[3],
            fsb_mhz: a[4],
            cache_l2_kb: a[5],
            cache_l3_kb: a[6],
            tsc_offset: tsc,
            package_num: b[0],
            core_num: b[1],
            hardware_thread_num: b[2],
            threads_per_core: b[3],
            core_type: b[4],
            dummy: a[7],
            archs,
        });
    let node = (any::<[u32; 5]>(), any::<u64>(), vec(cpu, 0..4)).prop_map(|(a, mem, cpus)| Node {
        type_from_shell: a[0],
        id: a[1],
        num_available: a[2],
        num_used: a[3],
        reserved: a[4],
        physical_memory_mb: mem,
        cpus,
    });
    vec(node, 0..3).prop_map(|nodes| System { nodes })
}

pub fn software() -> impl Strategy<Value = Software> {
    let host =
        (any::<u32>(), text(), text()).prop_map(|(reserved, ip_address, name)| Host { reserved, ip_address, name });
    let os = (any::<[u32; 5]>(), text(), text()).prop_map(|(a, name, name_extra)| Os {
        platform: a[0],
        major: a[1],
        minor: a[2],
        build: a[3],
        extra: a[4],
        name,
        name_extra,
    });
    let app = (any::<[u32; 3]>(), any::<[u64; 2]>()).prop_map(|(a, b)| Application {
        reserved: a[0],
        page_size: a[1],
        alloc_granularity: a[2],
        min_app_addr: b[0],
        max_app_addr: b[1],
    });
    (host, option::of(os), option::of(app)).prop_map(|(h, os, application)| Software { host: Some(h), os, application })
}

pub fn pid() -> impl Strategy<Value = Pid> {
    (any::<[u32; 5]>(), any::<u64>(), text(), text()).prop_map(|(a, when, path, name)| Pid {
        id: a[0],
        flags: PidTidFlags::from_bits_retain(a[1]),
        reserved: a[2],
        event_when: when,
        reserved_for_legacy: a[3],
        reserved1: a[4],
        path,
        name,
    })
}

pub fn tid() -> impl Strategy<Value = Tid> {
    (any::<[u32; 5]>(), any::<u64>(), text()).prop_map(|(a, when, name)| Tid {
        associated_pid: a[0],
        id: a[1],
        flags: PidTidFlags::from_bits_retain(a[2]),
        event_when: when,
        reserved_for_legacy: a[3],
        reserved: a[4],
        name,
    })
}

pub fn module() -> impl Strategy<Value = Module> {
    (any::<[u32; 10]>(), any::<[u64; 4]>(), 0u8..4, (text(), text(), text())).prop_map(
        |(a, b, seg, (path, name, sn))| Module {
            reserved: a[0],
            associated_pid: a[1],
            flags: ModuleFlags::from_bits_retain(a[2]),
            event_when: b[0],
            segment_number: a[3],
            segment_type: seg,
            code_selector: a[4],
            reserved2: a[5],
            length: b[1],
            load_address: b[2],
            reserved_for_legacy: a[6],
            reserved_for_legacy2: a[7],
            reserved_for_legacy_flags: a[8],
            reserved1: a[9],
            unload_tsc: b[3],
            path,
            name,
            segment_name: sn,
        },
    )
}

pub fn event() -> impl Strategy<Value = Event> {
    let detail = (any::<u16>(), any::<[u8; 4]>(), any::<[u64; 2]>(), any::<u16>(), any::<u32>()).prop_map(
        |(size, b, c, r2, r3)| EventDetail {
            access_size_bits: size,
            method: b[0],
            access: b[1],
            address: c[0],
            value: c[1],
            legacy_command: b[2],
            reserved1: b[3],
            reserved2: r2,
            reserved3: r3,
        },
    );
    (any::<[u32; 2]>(), any::<u64>(), text(), text(), vec(detail, 0..3)).prop_map(
        |(a, sav, name, arch_name, details)| Event {
            id: a[0],
            flags: EventFlags::from_bits_retain(a[1]),
            sav,
            name,
            arch_name,
            details,
        },
    )
}

pub fn desc() -> impl Strategy<Value = DescEntry> {
    let t = prop_oneof![
        Just(desc_type::NONE),
        Just(desc_type::IP),
        Just(desc_type::PID),
        Just(desc_type::TID),
        Just(desc_type::TIME_STAMP),
        0x4000u16..0x8000
    ];
    (t, any::<u16>(), 1u32..17, any::<u64>(), any::<[u8; 4]>(), any::<u32>(), text()).prop_map(
        |(desc_type, subtype, data_size, access_offset, b, reserved1, name)| DescEntry {
            offset: 0,
            desc_type,
            subtype,
            data_size,
            access_offset,
            access_type: b[0],
            access_method: b[1],
            sample_flag: b[2],
            reserved0: b[3],
            reserved1,
            name,
        },
    )
}

pub fn stream_info() -> impl Strategy<Value = StreamInfo> {
    (any::<[u32; 3]>(), any::<[u64; 2]>(), text(), text(), text()).prop_map(
        |(a, t, command_line, cpu_mask, comment)| StreamInfo {
            sampling_duration_ms: a[0],
            stream_type: a[1],
            sampling_interval_us: a[2],
            start_time: FileTime::from_ticks(t[0]),
            end_time: FileTime::from_ticks(t[1]),
            command_line,
            cpu_mask,
            comment,
        },
    )
}

pub fn stream() -> impl Strategy<Value = StreamContent> {
    (
        stream_info(),
        option::of(vec(event(), 0..4)),
        vec(desc(), 1..5),
        option::of(0usize..40),
        option::of(vec(any::<u8>(), 0..64)),
    )
        .prop_flat_map(|(info, events, descs, records, user)| {
            let rs = RecordLayout::from_entries(&descs).unwrap().record_size() as usize;
            let data = match records {
                Some(n) => vec(any::<u8>(), n * rs).prop_map(Some).boxed(),
                None => Just(None).boxed(),
            };
            data.prop_map(move |data| StreamContent {
                info: info.clone(),
                events: events.clone(),
                descs: descs.clone(),
                data,
                user: user.clone(),
            })
        })
}

pub fn content() -> impl Strategy<Value = Content> {
    (
        option::of(system()),
        option::of(software()),
        option::of(any::<[u32; 3]>().prop_map(|a| VersionInfo {
            sampling_driver_version: a[0],
            bind_version: a[1],
            sample_file_version: a[2],
        })),
        option::of((vec(pid(), 0..5), vec(tid(), 0..5))),
        option::of(vec(module(), 0..6)),
        option::of(vec(any::<u8>(), 0..100)),
        vec(stream(), 0..4),
    )
        .prop_map(|(hardware, software, version, processes, modules, user, streams)| Content {
            hardware,
            software,
            version,
            processes,
            modules,
            user,
            streams,
        })
}

/// A small but complete file in the guide's shape: every global section,
/// stream 0 with legacy PC+TSC samples, and a custom stream 1.
pub fn guide_content(samples: u32) -> Content {
    let mut data = Vec::new();
    for i in 0..samples {
        let mut pc = SampleRecordPc::default();
        pc.set_ia32(0x400000 + (i % 0x2000), 0x246, CodeDescriptor { low_word: 0xffff, high_word: 0xcf9b00 });
        pc.cs = 0x1B;
        pc.set_code_mode(processor_mode::BIT32);
        pc.set_event_index((i % 2) as u8);
        pc.set_tid_is_raw(true);
        pc.set_pid_rec_index_raw(true);
        pc.pid_rec_index = 0x1000;
        pc.tid = 7;
        data.extend_from_slice(&pc.to_bytes());
        data.extend_from_slice(&(0x1972178D8F5Eu64 + u64::from(i) * 1000).to_le_bytes());
    }
    let custom_descs = vec![
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
            name: Some("ns".into()),
            ..Default::default()
        },
    ];
    let mut custom = Vec::new();
    for i in 0..50u64 {
        custom.extend_from_slice(&(0x400000 + i).to_le_bytes());
        custom.extend_from_slice(&0x1000u32.to_le_bytes());
        custom.extend_from_slice(&(7u32 + i as u32 % 3).to_le_bytes());
        custom.extend_from_slice(&(i * 1_000_000).to_le_bytes());
    }
    Content {
        hardware: Some(guide_system()),
        software: Some(guide_software()),
        version: Some(VersionInfo {
            sampling_driver_version: UNKNOWN_DRIVER_VERSION,
            bind_version: 0,
            sample_file_version: MIN_SAMPLE_FILE_VERSION,
        }),
        processes: Some((
            vec![Pid {
                id: 0x1000,
                path: Some("/usr/bin/sample".into()),
                name: Some("sample".into()),
                ..Default::default()
            }],
            vec![Tid { associated_pid: 0x1000, id: 7, name: Some("main".into()), ..Default::default() }],
        )),
        modules: Some(vec![Module {
            associated_pid: 0x1000,
            flags: ModuleFlags::TSC_USED
                | ModuleFlags::LOADED
                | ModuleFlags::IS_EXE
                | ModuleFlags::FIRST_MODULE_REC_IN_PROCESS,
            segment_type: processor_mode::BIT32,
            code_selector: 0x1B,
            length: 0x2000,
            load_address: 0x400000,
            unload_tsc: NEVER_UNLOADED,
            path: Some("/usr/bin/sample".into()),
            name: Some("sample".into()),
            segment_name: Some(String::new()),
            ..Default::default()
        }]),
        user: Some(b"collector private bytes".to_vec()),
        streams: vec![
            StreamContent {
                info: StreamInfo {
                    sampling_duration_ms: 20000,
                    stream_type: stream_type::SAMPLING,
                    sampling_interval_us: 1000,
                    command_line: Some("unknown".into()),
                    cpu_mask: Some("none".into()),
                    comment: Some("sample_comment".into()),
                    ..Default::default()
                },
                events: Some(vec![
                    Event {
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
                    },
                    Event {
                        id: 1,
                        flags: EventFlags::EBS,
                        sav: 100_000,
                        name: Some("Second".into()),
                        ..Default::default()
                    },
                ]),
                descs: legacy_descriptor(),
                data: Some(data),
                user: None,
            },
            StreamContent {
                info: StreamInfo {
                    stream_type: stream_type::CUSTOM,
                    comment: Some("custom".into()),
                    ..Default::default()
                },
                events: Some(vec![]),
                descs: custom_descs,
                data: Some(custom),
                user: Some(vec![1, 2, 3]),
            },
        ],
    }
}

/// The guide content's hardware: one node of one IA-32 cpu.
fn guide_system() -> System {
    System {
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
                archs: vec![CpuArch {
                    arch_type: arch_type::X86,
                    cpuids: Cpuids::Ia32(vec![CpuidIa32 {
                        eax_input: 0,
                        eax: 0xa,
                        ebx: 0x756e6547,
                        ecx: 0x6c65746e,
                        edx: 0x49656e69,
                        reserved: 0,
                    }]),
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// The guide content's host, OS and application.
fn guide_software() -> Software {
    Software {
        host: Some(Host { reserved: 0, ip_address: Some("10.10.10.10".into()), name: Some("testhost".into()) }),
        os: Some(Os {
            platform: os_family::LINUX64,
            major: 6,
            minor: 1,
            build: 0,
            extra: 0,
            name: Some("Linux".into()),
            name_extra: Some("6.1.0".into()),
        }),
        application: Some(Application {
            reserved: 0,
            page_size: 4096,
            alloc_granularity: 4096,
            min_app_addr: 0x10000,
            max_app_addr: 0x7fff_ffff_ffff,
        }),
    }
}
