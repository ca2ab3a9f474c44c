//! The document's parts built from the file: nodes, architectures,
//! modules, streams with their records (made while written), binds.

use tbrw::*;

use super::shapes::Field;
use super::shapes::*;
use crate::print::{bind_for, module_counts, type_name, Options, Records, R};

pub(super) fn node_json(n: &Node) -> NodeJson {
    NodeJson {
        id: n.id,
        type_from_shell: n.type_from_shell,
        num_available: n.num_available,
        num_used: n.num_used,
        reserved: n.reserved,
        physical_memory_mb: n.physical_memory_mb,
        cpus: n
            .cpus
            .iter()
            .map(|c| CpuJson {
                number: c.number,
                native_arch_type: c.native_arch_type,
                intel_processor_number: c.intel_processor_number,
                speed_mhz: c.speed_mhz,
                fsb_mhz: c.fsb_mhz,
                cache_l2_kb: c.cache_l2_kb,
                cache_l3_kb: c.cache_l3_kb,
                tsc_offset: c.tsc_offset,
                package_num: c.package_num,
                core_num: c.core_num,
                hardware_thread_num: c.hardware_thread_num,
                threads_per_core: c.threads_per_core,
                archs: c.archs.iter().map(arch_json).collect(),
            })
            .collect(),
    }
}

pub(super) fn arch_json(a: &CpuArch) -> ArchJson {
    let (cpuid_form, cpuids) = match &a.cpuids {
        Cpuids::Ia32(v) => (
            "ia32",
            CpuidsJson::Ia32(
                v.iter()
                    .map(|x| CpuidIa32Json {
                        eax_input: x.eax_input,
                        eax: x.eax,
                        ebx: x.ebx,
                        ecx: x.ecx,
                        edx: x.edx,
                        reserved: x.reserved,
                    })
                    .collect(),
            ),
        ),
        Cpuids::Ia64(v) => (
            "ia64",
            CpuidsJson::Ia64(
                v.iter().map(|x| CpuidIa64Json { select: x.select, value: x.value, reserved: x.reserved }).collect(),
            ),
        ),
    };
    ArchJson { arch_type: a.arch_type, cpuid_form, cpuids }
}

pub(super) fn module_json<'a>(file: &'a Tb5File, m: &Module<StringId>) -> Result<ModuleJson<'a>> {
    Ok(ModuleJson {
        associated_pid: m.associated_pid,
        flags: m.flags.bits(),
        load_address: m.load_address,
        length: m.length,
        event_when: m.event_when,
        unload_tsc: m.unload_tsc,
        segment_type: m.segment_type,
        segment_number: m.segment_number,
        code_selector: m.code_selector,
        path: file.string_opt(m.path)?,
        name: file.string_opt(m.name)?,
        segment_name: file.string_opt(m.segment_name)?,
        reserved: m.reserved,
        reserved2: m.reserved2,
        reserved_for_legacy: m.reserved_for_legacy,
        reserved_for_legacy2: m.reserved_for_legacy2,
        reserved_for_legacy_flags: m.reserved_for_legacy_flags,
        reserved1: m.reserved1,
    })
}

pub(super) fn stream_json<'a>(
    file: &'a Tb5File,
    n: u32,
    modules: &'a [Module<StringId>],
    opts: Options,
    failed: &'a Failed,
) -> R<StreamJson<'a>> {
    let s = file.stream(n)?;
    let descs = s.descriptor()?.unwrap_or_default();
    let layout = s.layout()?;
    let mut stream = StreamJson {
        index: n,
        info: s.info()?.map(|i| info_json(file, &i)).transpose()?,
        events: s.events()?.map(|ev| ev.iter().map(|e| event_json(file, e)).collect::<Result<_>>()).transpose()?,
        descriptor: layout.as_ref().map(|l| descriptor_json(file, l, &descs)).transpose()?,
        user_defined: s.user_defined()?.map(Hex),
        record_count: None,
        records: None,
        samples_by_module: None,
    };
    let Some(data) = s.data()? else {
        return Ok(stream);
    };
    let bound = bind_for(file, n)?;
    if let Some(b) = &bound {
        let counts = module_counts(&b.view());
        stream.samples_by_module = Some(
            counts
                .into_iter()
                .map(|(m, samples)| {
                    let name = match m {
                        Some(m) => file.string_opt(modules[m as usize].name)?,
                        None => None,
                    };
                    Ok(ModuleCountJson { module_index: m, name, samples })
                })
                .collect::<Result<_>>()?,
        );
    }
    let show = match opts.records {
        Records::All => data.len(),
        Records::First(k) => k.min(data.len()),
    };
    stream.record_count = Some(data.len());
    let names: Vec<String> = match &layout {
        None => Vec::new(),
        Some(l) => l
            .fields()
            .iter()
            .map(|f| {
                descs
                    .get(f.entry)
                    .and_then(|d| file.string_opt(d.name).ok().flatten())
                    .map_or_else(|| type_name(f.desc_type), str::to_owned)
            })
            .collect(),
    };
    stream.records = Some(Lazy {
        len: show,
        item: Box::new(move |i| {
            let body = record_body(data.record(i).unwrap_or_default(), layout.as_ref(), &names);
            let bind = match &bound {
                None => None,
                Some(b) => bind_json(file, &b.view(), modules, i)?,
            };
            Ok(RecordJson { index: i, body, bind })
        }),
        failed,
    });
    Ok(stream)
}

fn info_json<'a>(file: &'a Tb5File, i: &StreamInfo<StringId>) -> Result<StreamInfoJson<'a>> {
    Ok(StreamInfoJson {
        stream_type: i.stream_type,
        sampling_duration_ms: i.sampling_duration_ms,
        sampling_interval_us: i.sampling_interval_us,
        start_time: i.start_time.ticks(),
        end_time: i.end_time.ticks(),
        command_line: file.string_opt(i.command_line)?,
        cpu_mask: file.string_opt(i.cpu_mask)?,
        comment: file.string_opt(i.comment)?,
    })
}

fn event_json<'a>(file: &'a Tb5File, e: &Event<StringId>) -> Result<EventJson<'a>> {
    Ok(EventJson {
        id: e.id,
        flags: e.flags.bits(),
        sav: e.sav,
        name: file.string_opt(e.name)?,
        arch_name: file.string_opt(e.arch_name)?,
        details: e
            .details
            .iter()
            .map(|d| EventDetailJson {
                access_size_bits: d.access_size_bits,
                method: d.method,
                access: d.access,
                address: d.address,
                value: d.value,
                legacy_command: d.legacy_command,
                reserved1: d.reserved1,
                reserved2: d.reserved2,
                reserved3: d.reserved3,
            })
            .collect(),
    })
}

fn descriptor_json<'a>(
    file: &'a Tb5File,
    l: &RecordLayout,
    descs: &[DescEntry<StringId>],
) -> Result<DescriptorJson<'a>> {
    Ok(DescriptorJson {
        record_size: l.record_size(),
        entries: descs
            .iter()
            .map(|d| {
                Ok(DescEntryJson {
                    offset: d.offset,
                    data_size: d.data_size,
                    desc_type: d.desc_type,
                    type_name: desc_type::name(d.desc_type),
                    subtype: d.subtype,
                    name: file.string_opt(d.name)?,
                    access_offset: d.access_offset,
                    access_type: d.access_type,
                    access_method: d.access_method,
                    sample_flag: d.sample_flag,
                    reserved0: d.reserved0,
                    reserved1: d.reserved1,
                })
            })
            .collect::<Result<_>>()?,
    })
}

/// One record: a legacy sample decoded, fields by the descriptor, or bytes.
fn record_body<'r>(rec: &'r [u8], layout: Option<&RecordLayout>, names: &[String]) -> RecordBody<'r> {
    match (layout.and_then(|l| l.legacy_pc_offset()), layout) {
        (Some(at), _) => {
            let tsc_at = layout.and_then(|l| l.tsc_offset()).map(|x| x as usize);
            RecordBody::Legacy(legacy_json(rec, at as usize, tsc_at))
        }
        (None, Some(l)) => RecordBody::Fields {
            fields: Fields(
                l.fields()
                    .iter()
                    .zip(names)
                    .map(|(f, name)| {
                        let bytes = &rec[f.offset as usize..(f.offset + f.size) as usize];
                        let v = match bytes.len() {
                            1 | 2 | 4 | 8 => {
                                let mut b = [0u8; 8];
                                b[..bytes.len()].copy_from_slice(bytes);
                                Field::Int(u64::from_le_bytes(b))
                            }
                            _ => Field::Bytes(Hex(bytes)),
                        };
                        (name.clone(), v)
                    })
                    .collect(),
            ),
        },
        (None, None) => RecordBody::Bytes { bytes: Hex(rec) },
    }
}

pub(super) fn legacy_json(rec: &[u8], pc_at: usize, tsc_at: Option<usize>) -> LegacyJson {
    let pc = SampleRecordPc::from_slice(&rec[pc_at..]).unwrap_or_default();
    LegacyJson {
        ip: pc.ip(),
        word0: pc.word0,
        word1: pc.word1,
        cs: pc.cs,
        cpu: pc.cpu_num(),
        not_vmid0: pc.not_vmid0(),
        code_mode: pc.code_mode(),
        tid: pc.tid,
        pid_rec_index: pc.pid_rec_index,
        mr_index: pc.mr_index(),
        event_index: pc.event_index(),
        tid_is_raw: pc.tid_is_raw(),
        ia64_pc: pc.ia64_pc(),
        pid_rec_index_raw: pc.pid_rec_index_raw(),
        mr_index_none: pc.mr_index_none(),
        tsc: tsc_at.map(|t| u64::from_le_bytes(rec[t..t + 8].try_into().unwrap_or_default())),
    }
}

pub(super) fn bind_json<'a>(
    file: &'a Tb5File,
    v: &tbrw::BindView<'_>,
    modules: &[Module<StringId>],
    i: u64,
) -> R<Option<BindJson<'a>>> {
    let Some(d) = v.data_bind(i) else { return Ok(None) };
    let p = v.process(d.pid_index).unwrap_or_default();
    let t = v.thread(d.tid_index).unwrap_or_default();
    let known = d.module_index != UNKNOWN_MODULE;
    Ok(Some(BindJson {
        module_index: known.then_some(d.module_index),
        module_name: if known { file.string_opt(modules[d.module_index as usize].name)? } else { None },
        pid_index: d.pid_index,
        pid: p.id,
        process_name: file.string_opt(p.name)?,
        tid_index: d.tid_index,
        tid: t.id,
    }))
}
