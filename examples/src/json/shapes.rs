//! The shapes of `print_tb5 --json`'s document as serde types, and the
//! helpers they are made of: hex byte blocks, arrays made while written
//! ([`Lazy`]), named fields in their order.

use std::cell::RefCell;
use std::fmt;

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::print::{PrintError, R};

/// Bytes written as one lowercase hex string.
pub(super) struct Hex<'a>(pub(super) &'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl Serialize for Hex<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where the first TB5 error met while serializing is kept: serde carries
/// only an error's text, and the caller wants the error itself.
pub(super) type Failed = RefCell<Option<PrintError>>;

/// A JSON array whose items are made while it is written.
pub(super) struct Lazy<'a, T> {
    pub(super) len: u64,
    pub(super) item: Box<dyn Fn(u64) -> R<T> + 'a>,
    pub(super) failed: &'a Failed,
}

impl<T: Serialize> Serialize for Lazy<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(usize::try_from(self.len).ok())?;
        for i in 0..self.len {
            match (self.item)(i) {
                Ok(v) => seq.serialize_element(&v)?,
                Err(e) => {
                    let text = e.to_string();
                    self.failed.borrow_mut().get_or_insert(e);
                    return Err(S::Error::custom(text));
                }
            }
        }
        seq.end()
    }
}

/// Named values in their order, as one object (names may repeat: a
/// descriptor may give two fields the same name, and both are shown).
pub(super) struct Fields<'a>(pub(super) Vec<(String, Field<'a>)>);

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A field of a non-legacy record: 1/2/4/8-byte little-endian integers
/// as numbers, other sizes as hex.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Field<'a> {
    Int(u64),
    Bytes(Hex<'a>),
}

// ---------------------------------------------------------------- shapes

#[derive(Serialize)]
pub(super) struct Doc<'a> {
    pub(super) streams: u32,
    pub(super) hardware: Option<Vec<NodeJson>>,
    pub(super) software: Option<SoftwareJson<'a>>,
    pub(super) version_info: Option<VersionJson>,
    pub(super) processes: Option<ProcessesJson<'a>>,
    pub(super) modules: Option<Vec<ModuleJson<'a>>>,
    pub(super) user_defined: Option<Hex<'a>>,
    pub(super) stream_list: Lazy<'a, StreamJson<'a>>,
}

#[derive(Serialize)]
pub(super) struct NodeJson {
    pub(super) id: u32,
    pub(super) type_from_shell: u32,
    pub(super) num_available: u32,
    pub(super) num_used: u32,
    pub(super) reserved: u32,
    pub(super) physical_memory_mb: u64,
    pub(super) cpus: Vec<CpuJson>,
}

#[derive(Serialize)]
pub(super) struct CpuJson {
    pub(super) number: u32,
    pub(super) native_arch_type: u32,
    pub(super) intel_processor_number: u32,
    pub(super) speed_mhz: u32,
    pub(super) fsb_mhz: u32,
    pub(super) cache_l2_kb: u32,
    pub(super) cache_l3_kb: u32,
    pub(super) tsc_offset: i64,
    pub(super) package_num: u16,
    pub(super) core_num: u16,
    pub(super) hardware_thread_num: u16,
    pub(super) threads_per_core: u16,
    pub(super) archs: Vec<ArchJson>,
}

#[derive(Serialize)]
pub(super) struct ArchJson {
    pub(super) arch_type: u16,
    pub(super) cpuid_form: &'static str,
    pub(super) cpuids: CpuidsJson,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum CpuidsJson {
    Ia32(Vec<CpuidIa32Json>),
    Ia64(Vec<CpuidIa64Json>),
}

#[derive(Serialize)]
pub(super) struct CpuidIa32Json {
    pub(super) eax_input: u32,
    pub(super) eax: u32,
    pub(super) ebx: u32,
    pub(super) ecx: u32,
    pub(super) edx: u32,
    pub(super) reserved: u32,
}

#[derive(Serialize)]
pub(super) struct CpuidIa64Json {
    pub(super) select: u64,
    pub(super) value: u64,
    pub(super) reserved: u64,
}

#[derive(Serialize)]
pub(super) struct SoftwareJson<'a> {
    pub(super) host: Option<HostJson<'a>>,
    pub(super) os: Option<OsJson<'a>>,
    pub(super) application: Option<ApplicationJson>,
}

#[derive(Serialize)]
pub(super) struct HostJson<'a> {
    pub(super) ip_address: Option<&'a str>,
    pub(super) name: Option<&'a str>,
    pub(super) reserved: u32,
}

#[derive(Serialize)]
pub(super) struct OsJson<'a> {
    pub(super) platform: u32,
    pub(super) major: u32,
    pub(super) minor: u32,
    pub(super) build: u32,
    pub(super) extra: u32,
    pub(super) name: Option<&'a str>,
    pub(super) name_extra: Option<&'a str>,
}

#[derive(Serialize)]
pub(super) struct ApplicationJson {
    pub(super) page_size: u32,
    pub(super) alloc_granularity: u32,
    pub(super) min_app_addr: u64,
    pub(super) max_app_addr: u64,
    pub(super) reserved: u32,
}

#[derive(Serialize)]
pub(super) struct VersionJson {
    pub(super) sampling_driver_version: u32,
    pub(super) bind_version: u32,
    pub(super) sample_file_version: u32,
}

#[derive(Serialize)]
pub(super) struct ProcessesJson<'a> {
    pub(super) processes: Vec<PidJson<'a>>,
    pub(super) threads: Vec<TidJson<'a>>,
}

#[derive(Serialize)]
pub(super) struct PidJson<'a> {
    pub(super) id: u32,
    pub(super) flags: u32,
    pub(super) event_when: u64,
    pub(super) path: Option<&'a str>,
    pub(super) name: Option<&'a str>,
    pub(super) reserved: u32,
    pub(super) reserved_for_legacy: u32,
    pub(super) reserved1: u32,
}

#[derive(Serialize)]
pub(super) struct TidJson<'a> {
    pub(super) id: u32,
    pub(super) associated_pid: u32,
    pub(super) flags: u32,
    pub(super) event_when: u64,
    pub(super) name: Option<&'a str>,
    pub(super) reserved_for_legacy: u32,
    pub(super) reserved: u32,
}

#[derive(Serialize)]
pub(super) struct ModuleJson<'a> {
    pub(super) associated_pid: u32,
    pub(super) flags: u32,
    pub(super) load_address: u64,
    pub(super) length: u64,
    pub(super) event_when: u64,
    pub(super) unload_tsc: u64,
    pub(super) segment_type: u8,
    pub(super) segment_number: u32,
    pub(super) code_selector: u32,
    pub(super) path: Option<&'a str>,
    pub(super) name: Option<&'a str>,
    pub(super) segment_name: Option<&'a str>,
    pub(super) reserved: u32,
    pub(super) reserved2: u32,
    pub(super) reserved_for_legacy: u32,
    pub(super) reserved_for_legacy2: u32,
    pub(super) reserved_for_legacy_flags: u32,
    pub(super) reserved1: u32,
}

#[derive(Serialize)]
pub(super) struct StreamJson<'a> {
    pub(super) index: u32,
    pub(super) info: Option<StreamInfoJson<'a>>,
    pub(super) events: Option<Vec<EventJson<'a>>>,
    pub(super) descriptor: Option<DescriptorJson<'a>>,
    pub(super) user_defined: Option<Hex<'a>>,
    pub(super) record_count: Option<u64>,
    #[serde(serialize_with = "empty_if_none")]
    pub(super) records: Option<Lazy<'a, RecordJson<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) samples_by_module: Option<Vec<ModuleCountJson<'a>>>,
}

/// A stream without a data section still has a (empty) record list.
pub(super) fn empty_if_none<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => v.serialize(s),
        None => s.collect_seq(std::iter::empty::<()>()),
    }
}

#[derive(Serialize)]
pub(super) struct StreamInfoJson<'a> {
    pub(super) stream_type: u32,
    pub(super) sampling_duration_ms: u32,
    pub(super) sampling_interval_us: u32,
    pub(super) start_time: u64,
    pub(super) end_time: u64,
    pub(super) command_line: Option<&'a str>,
    pub(super) cpu_mask: Option<&'a str>,
    pub(super) comment: Option<&'a str>,
}

#[derive(Serialize)]
pub(super) struct EventJson<'a> {
    pub(super) id: u32,
    pub(super) flags: u32,
    pub(super) sav: u64,
    pub(super) name: Option<&'a str>,
    pub(super) arch_name: Option<&'a str>,
    pub(super) details: Vec<EventDetailJson>,
}

#[derive(Serialize)]
pub(super) struct EventDetailJson {
    pub(super) access_size_bits: u16,
    pub(super) method: u8,
    pub(super) access: u8,
    pub(super) address: u64,
    pub(super) value: u64,
    pub(super) legacy_command: u8,
    pub(super) reserved1: u8,
    pub(super) reserved2: u16,
    pub(super) reserved3: u32,
}

#[derive(Serialize)]
pub(super) struct DescriptorJson<'a> {
    pub(super) record_size: u32,
    pub(super) entries: Vec<DescEntryJson<'a>>,
}

#[derive(Serialize)]
pub(super) struct DescEntryJson<'a> {
    pub(super) offset: u32,
    pub(super) data_size: u32,
    #[serde(rename = "type")]
    pub(super) desc_type: u16,
    pub(super) type_name: Option<&'static str>,
    pub(super) subtype: u16,
    pub(super) name: Option<&'a str>,
    pub(super) access_offset: u64,
    pub(super) access_type: u8,
    pub(super) access_method: u8,
    pub(super) sample_flag: u8,
    pub(super) reserved0: u8,
    pub(super) reserved1: u32,
}

#[derive(Serialize)]
pub(super) struct RecordJson<'a> {
    pub(super) index: u64,
    #[serde(flatten)]
    pub(super) body: RecordBody<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) bind: Option<BindJson<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum RecordBody<'a> {
    /// A legacy sample record, decoded.
    Legacy(LegacyJson),
    /// Fields laid out by the stream's descriptor.
    Fields { fields: Fields<'a> },
    /// No descriptor: the raw record.
    Bytes { bytes: Hex<'a> },
}

#[derive(Serialize)]
pub(super) struct LegacyJson {
    pub(super) ip: u64,
    pub(super) word0: u64,
    pub(super) word1: u64,
    pub(super) cs: u16,
    pub(super) cpu: u16,
    pub(super) not_vmid0: bool,
    pub(super) code_mode: u8,
    pub(super) tid: u32,
    pub(super) pid_rec_index: u32,
    pub(super) mr_index: u32,
    pub(super) event_index: u8,
    pub(super) tid_is_raw: bool,
    pub(super) ia64_pc: bool,
    pub(super) pid_rec_index_raw: bool,
    pub(super) mr_index_none: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tsc: Option<u64>,
}

#[derive(Serialize)]
pub(super) struct BindJson<'a> {
    pub(super) module_index: Option<u64>,
    pub(super) module_name: Option<&'a str>,
    pub(super) pid_index: u64,
    pub(super) pid: u32,
    pub(super) process_name: Option<&'a str>,
    pub(super) tid_index: u64,
    pub(super) tid: u32,
}

#[derive(Serialize)]
pub(super) struct ModuleCountJson<'a> {
    pub(super) module_index: Option<u64>,
    pub(super) name: Option<&'a str>,
    pub(super) samples: u64,
}
