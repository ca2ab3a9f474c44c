//! The global sections of the dump, each written from a TB5 file beside
//! its reading back into a writer (docs/DAT.md): hardware, software,
//! version, processes and threads, modules.

use tbrw::*;

use super::codec::{Dec, Enc};
use super::R;

/// The hardware record's payload.
pub(super) fn encode_system(sys: &System) -> Vec<u8> {
    let mut e = Enc::default();
    e.u32(sys.nodes.len() as u32);
    for n in &sys.nodes {
        for v in [n.type_from_shell, n.id, n.num_available, n.num_used, n.reserved] {
            e.u32(v);
        }
        e.u64(n.physical_memory_mb);
        e.u32(n.cpus.len() as u32);
        for c in &n.cpus {
            for v in [
                c.number,
                c.native_arch_type,
                c.intel_processor_number,
                c.speed_mhz,
                c.fsb_mhz,
                c.cache_l2_kb,
                c.cache_l3_kb,
            ] {
                e.u32(v);
            }
            e.i64(c.tsc_offset);
            for v in [c.package_num, c.core_num, c.hardware_thread_num, c.threads_per_core] {
                e.u16(v);
            }
            e.u32(c.archs.len() as u32);
            for a in &c.archs {
                e.u16(a.arch_type);
                e.u16(a.cpuids.len() as u16);
                match &a.cpuids {
                    Cpuids::Ia32(v) => {
                        e.u8(0);
                        for x in v {
                            for w in [x.eax_input, x.eax, x.ebx, x.ecx, x.edx, x.reserved] {
                                e.u32(w);
                            }
                        }
                    }
                    Cpuids::Ia64(v) => {
                        e.u8(1);
                        for x in v {
                            for w in [x.select, x.value, x.reserved] {
                                e.u64(w);
                            }
                        }
                    }
                }
            }
        }
    }
    e.0
}

/// The hardware record read back.
pub(super) fn read_system(d: &mut Dec<'_>) -> R<System> {
    let nn = d.u32("node count")?;
    let nn = d.count(nn.into(), 32, "nodes")?;
    let mut nodes = Vec::with_capacity(nn);
    for _ in 0..nn {
        let (type_from_shell, id, num_available, num_used, reserved) =
            (d.u32("type")?, d.u32("id")?, d.u32("available")?, d.u32("used")?, d.u32("reserved")?);
        let physical_memory_mb = d.u64("memory")?;
        let nc = d.u32("cpu count")?;
        let nc = d.count(nc.into(), 48, "cpus")?;
        let mut cpus = Vec::with_capacity(nc);
        for _ in 0..nc {
            let mut v = [0u32; 7];
            for x in &mut v {
                *x = d.u32("cpu field")?;
            }
            let tsc_offset = d.i64("tsc offset")?;
            let mut h = [0u16; 4];
            for x in &mut h {
                *x = d.u16("cpu field")?;
            }
            let na = d.u32("arch count")?;
            let na = d.count(na.into(), 5, "architectures")?;
            let mut archs = Vec::with_capacity(na);
            for _ in 0..na {
                let arch_type = d.u16("arch type")?;
                let k = d.u16("cpuid count")?;
                let form = d.u8("cpuid form")?;
                let k = d.count(k.into(), 24, "cpuids")?;
                let cpuids = match form {
                    0 => Cpuids::Ia32(
                        (0..k)
                            .map(|_| {
                                Ok(CpuidIa32 {
                                    eax_input: d.u32("cpuid")?,
                                    eax: d.u32("cpuid")?,
                                    ebx: d.u32("cpuid")?,
                                    ecx: d.u32("cpuid")?,
                                    edx: d.u32("cpuid")?,
                                    reserved: d.u32("cpuid")?,
                                })
                            })
                            .collect::<R<_>>()?,
                    ),
                    1 => Cpuids::Ia64(
                        (0..k)
                            .map(|_| {
                                Ok(CpuidIa64 {
                                    select: d.u64("cpuid")?,
                                    value: d.u64("cpuid")?,
                                    reserved: d.u64("cpuid")?,
                                })
                            })
                            .collect::<R<_>>()?,
                    ),
                    f => return Err(d.err(format!("unknown cpuid form {f}"))),
                };
                archs.push(CpuArch { arch_type, cpuids });
            }
            cpus.push(Cpu {
                number: v[0],
                native_arch_type: v[1],
                intel_processor_number: v[2],
                speed_mhz: v[3],
                fsb_mhz: v[4],
                cache_l2_kb: v[5],
                cache_l3_kb: v[6],
                tsc_offset,
                package_num: h[0],
                core_num: h[1],
                hardware_thread_num: h[2],
                threads_per_core: h[3],
                // The .dat format (docs/DAT.md) does not carry these.
                core_type: 0,
                dummy: 0,
                archs,
            });
        }
        nodes.push(Node { type_from_shell, id, num_available, num_used, reserved, physical_memory_mb, cpus });
    }
    d.done()?;
    Ok(System { nodes })
}

/// The software record's payload.
pub(super) fn encode_software(file: &Tb5File, sw: &Software<StringId>) -> R<Vec<u8>> {
    let mut e = Enc::default();
    e.u32(u32::from(sw.host.is_some()) | u32::from(sw.os.is_some()) << 1 | u32::from(sw.application.is_some()) << 2);
    if let Some(h) = &sw.host {
        e.u32(h.reserved);
        e.str(file, h.ip_address)?;
        e.str(file, h.name)?;
    }
    if let Some(o) = &sw.os {
        for v in [o.platform, o.major, o.minor, o.build, o.extra] {
            e.u32(v);
        }
        e.str(file, o.name)?;
        e.str(file, o.name_extra)?;
    }
    if let Some(a) = &sw.application {
        for v in [a.reserved, a.page_size, a.alloc_granularity] {
            e.u32(v);
        }
        e.u64(a.min_app_addr);
        e.u64(a.max_app_addr);
    }
    Ok(e.0)
}

/// The software record read back.
pub(super) fn read_software(d: &mut Dec<'_>) -> R<Software> {
    let present = d.u32("present")?;
    if present & !7 != 0 {
        return Err(d.err(format!("unknown software parts {present:#x}")));
    }
    let host = if present & 1 != 0 {
        Some(Host { reserved: d.u32("reserved")?, ip_address: d.str("ip")?, name: d.str("host name")? })
    } else {
        None
    };
    let os = if present & 2 != 0 {
        Some(Os {
            platform: d.u32("platform")?,
            major: d.u32("major")?,
            minor: d.u32("minor")?,
            build: d.u32("build")?,
            extra: d.u32("extra")?,
            name: d.str("os name")?,
            name_extra: d.str("os name extra")?,
        })
    } else {
        None
    };
    let application = if present & 4 != 0 {
        Some(Application {
            reserved: d.u32("reserved")?,
            page_size: d.u32("page size")?,
            alloc_granularity: d.u32("granularity")?,
            min_app_addr: d.u64("min")?,
            max_app_addr: d.u64("max")?,
        })
    } else {
        None
    };
    d.done()?;
    Ok(Software { host, os, application })
}

/// The version record's payload.
pub(super) fn encode_version(v: &VersionInfo) -> Vec<u8> {
    let mut e = Enc::default();
    for x in [v.sampling_driver_version, v.bind_version, v.sample_file_version] {
        e.u32(x);
    }
    e.0
}

/// The version record read back.
pub(super) fn read_version(d: &mut Dec<'_>) -> R<VersionInfo> {
    let v = VersionInfo {
        sampling_driver_version: d.u32("driver")?,
        bind_version: d.u32("bind")?,
        sample_file_version: d.u32("file")?,
    };
    d.done()?;
    Ok(v)
}

/// The process and thread record's payload.
pub(super) fn encode_processes(file: &Tb5File, pt: &ProcessTable<'_>) -> R<Vec<u8>> {
    let mut e = Enc::default();
    e.u64(pt.pid_count());
    for p in pt.pids() {
        for v in [p.id, p.flags.bits(), p.reserved] {
            e.u32(v);
        }
        e.u64(p.event_when);
        e.u32(p.reserved_for_legacy);
        e.u32(p.reserved1);
        e.str(file, p.path)?;
        e.str(file, p.name)?;
    }
    e.u64(pt.tid_count());
    for t in pt.tids() {
        for v in [t.associated_pid, t.id, t.flags.bits()] {
            e.u32(v);
        }
        e.u64(t.event_when);
        e.u32(t.reserved_for_legacy);
        e.u32(t.reserved);
        e.str(file, t.name)?;
    }
    Ok(e.0)
}

/// The process and thread record read back into `w`.
pub(super) fn add_processes(d: &mut Dec<'_>, w: &mut Tb5Writer) -> R {
    let mut sec = w.process_threads()?;
    let np = d.u64("process count")?;
    let np = d.count(np, 36, "processes")?;
    for _ in 0..np {
        let p = Pid {
            id: d.u32("pid")?,
            flags: PidTidFlags::from_bits_retain(d.u32("flags")?),
            reserved: d.u32("reserved")?,
            event_when: d.u64("event_when")?,
            reserved_for_legacy: d.u32("reserved_for_legacy")?,
            reserved1: d.u32("reserved1")?,
            path: d.str("path")?,
            name: d.str("name")?,
        };
        sec.add_process(&p)?;
    }
    let nt = d.u64("thread count")?;
    let nt = d.count(nt, 32, "threads")?;
    for _ in 0..nt {
        let t = Tid {
            associated_pid: d.u32("associated pid")?,
            id: d.u32("tid")?,
            flags: PidTidFlags::from_bits_retain(d.u32("flags")?),
            event_when: d.u64("event_when")?,
            reserved_for_legacy: d.u32("reserved_for_legacy")?,
            reserved: d.u32("reserved")?,
            name: d.str("name")?,
        };
        sec.add_thread(&t)?;
    }
    d.done()?;
    sec.done()?;
    Ok(())
}

/// The module record's payload.
pub(super) fn encode_modules(file: &Tb5File, mt: &ModuleTable<'_>) -> R<Vec<u8>> {
    let mut e = Enc::default();
    e.u64(mt.len());
    for m in mt.iter() {
        let m = m?;
        for v in [m.reserved, m.associated_pid, m.flags.bits()] {
            e.u32(v);
        }
        e.u64(m.event_when);
        e.u32(m.segment_number);
        e.u8(m.segment_type);
        e.u32(m.code_selector);
        e.u32(m.reserved2);
        e.u64(m.length);
        e.u64(m.load_address);
        for v in [m.reserved_for_legacy, m.reserved_for_legacy2, m.reserved_for_legacy_flags, m.reserved1] {
            e.u32(v);
        }
        e.u64(m.unload_tsc);
        e.str(file, m.path)?;
        e.str(file, m.name)?;
        e.str(file, m.segment_name)?;
    }
    Ok(e.0)
}

/// The module record read back into `w`.
pub(super) fn add_modules(d: &mut Dec<'_>, w: &mut Tb5Writer) -> R {
    let mut sec = w.modules()?;
    let n = d.u64("module count")?;
    let n = d.count(n, 85, "modules")?;
    for _ in 0..n {
        let m = Module {
            reserved: d.u32("reserved")?,
            associated_pid: d.u32("pid")?,
            flags: ModuleFlags::from_bits_retain(d.u32("flags")?),
            event_when: d.u64("event_when")?,
            segment_number: d.u32("segment_number")?,
            segment_type: d.u8("segment_type")?,
            code_selector: d.u32("code_selector")?,
            reserved2: d.u32("reserved2")?,
            length: d.u64("length")?,
            load_address: d.u64("load_address")?,
            reserved_for_legacy: d.u32("reserved_for_legacy")?,
            reserved_for_legacy2: d.u32("reserved_for_legacy2")?,
            reserved_for_legacy_flags: d.u32("reserved_for_legacy_flags")?,
            reserved1: d.u32("reserved1")?,
            unload_tsc: d.u64("unload_tsc")?,
            path: d.str("path")?,
            name: d.str("name")?,
            segment_name: d.str("segment_name")?,
        };
        sec.add_module(&m)?;
    }
    d.done()?;
    sec.done()?;
    Ok(())
}
