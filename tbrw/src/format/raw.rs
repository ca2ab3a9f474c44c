//! The on-disk structures of this project's TB5 layout, all in one place.
//!
//! Every structure here is fixed-size, little-endian and declared with
//! `binrw`; padding fields are written as zero and ignored on read. What the
//! fields mean and why the layout is what it is: docs/FORMAT.md. The rules
//! that tie them together (checksums, ranges, commits) are in `container`;
//! `codec` converts between these and the model types.

use std::io::Cursor;

use binrw::{binrw, BinRead, BinWrite};

/// A fixed-size little-endian on-disk structure.
pub(crate) trait Raw:
    for<'a> BinRead<Args<'a> = ()> + binrw::meta::ReadEndian + for<'a> BinWrite<Args<'a> = ()> + binrw::meta::WriteEndian
{
    /// Its size in bytes.
    const SIZE: usize;

    /// Decodes it from the first `SIZE` bytes of `bytes`; the caller has
    /// checked that there are that many. Only asserts of the structure can
    /// fail, and none of these structures has one.
    fn decode(bytes: &[u8]) -> Option<Self> {
        Self::read(&mut Cursor::new(bytes.get(..Self::SIZE)?)).ok()
    }

    /// Appends its encoding to `out`.
    fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let mut c = Cursor::new(std::mem::take(out));
        c.set_position(start as u64);
        // Writing into a Vec cannot fail.
        let _ = self.write(&mut c);
        *out = c.into_inner();
        debug_assert_eq!(out.len() - start, Self::SIZE);
    }

    /// Its encoding.
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        self.encode_into(&mut v);
        v
    }
}

macro_rules! raw_struct {
    ($(#[$m:meta])* $name:ident = $size:literal { $($(#[$fm:meta])* $f:ident : $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[binrw]
        #[brw(little)]
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub(crate) struct $name { $($(#[$fm])* pub $f: $t),* }
        impl Raw for $name { const SIZE: usize = $size; }
    };
}
pub(crate) use raw_struct;

raw_struct!(
    /// Bytes 0-63 of the file.
    FileHeaderRaw = 64 {
        magic: [u8; 8],
        format_version: u32,
        min_reader_version: u32,
        header_size: u32,
        flags: u32,
        reserved: [u32; 9],
        /// CRC-32 of bytes 0-59.
        crc: u32,
    }
);

raw_struct!(
    /// A commit slot: where the directory of one commit is.
    SlotRaw = 32 {
        /// 0: empty slot. The valid slot with the highest generation wins.
        generation: u64,
        dir_offset: u64,
        dir_length: u32,
        dir_entries: u32,
        dir_crc: u32,
        /// CRC-32 of bytes 0-27 of the slot.
        crc: u32,
    }
);

raw_struct!(
    /// One section in the directory.
    DirEntryRaw = 48 {
        kind: u16,
        flags: u16,
        stream: u32,
        offset: u64,
        length: u64,
        /// Entries (records, modules, events, strings ...) in the section.
        count: u64,
        /// Data sections: bytes per record; else 0.
        record_size: u32,
        /// CRC-32 of the section's bytes.
        crc: u32,
        reserved: u64,
    }
);

raw_struct!(SystemRaw = 8 { num_nodes: u32, reserved: u32 });
raw_struct!(NodeRaw = 32 {
    type_from_shell: u32, id: u32, num_available: u32, num_used: u32,
    reserved: u32, num_cpus: u32, physical_memory_mb: u64,
});
raw_struct!(CpuRaw = 56 {
    number: u32, native_arch_type: u32, intel_processor_number: u32, speed_mhz: u32,
    fsb_mhz: u32, cache_l2_kb: u32, cache_l3_kb: u32, num_archs: u32,
    tsc_offset: i64,
    package_num: u16, core_num: u16, hardware_thread_num: u16, threads_per_core: u16,
    /// `Cpu::dummy` (0 in files written before it was kept).
    dummy: u32,
    /// `Cpu::core_type` (0 likewise).
    core_type: u16,
    pad: u16,
});
raw_struct!(ArchRaw = 8 {
    arch_type: u16,
    /// 0: IA-32 cpuid leaves follow; 1: IA-64 cpuid registers follow.
    form: u8,
    pad: u8,
    num_cpuids: u32,
});
raw_struct!(CpuidIa32Raw = 24 { eax_input: u32, eax: u32, ebx: u32, ecx: u32, edx: u32, reserved: u32 });
raw_struct!(CpuidIa64Raw = 24 { select: u64, value: u64, reserved: u64 });

raw_struct!(SoftwareRaw = 8 {
    /// Bit 0: host follows; bit 1: OS follows; bit 2: application follows.
    present: u32,
    pad: u32,
});
raw_struct!(HostRaw = 24 { reserved: u32, pad: u32, ip_address: u64, name: u64 });
raw_struct!(OsRaw = 40 {
    platform: u32, major: u32, minor: u32, build: u32, extra: u32, pad: u32,
    name: u64, name_extra: u64,
});
raw_struct!(ApplicationRaw = 32 {
    reserved: u32, page_size: u32, alloc_granularity: u32, pad: u32,
    min_app_addr: u64, max_app_addr: u64,
});
raw_struct!(VersionInfoRaw = 16 {
    sampling_driver_version: u32, bind_version: u32, sample_file_version: u32, pad: u32,
});

raw_struct!(ProcessThreadRaw = 16 { pid_count: u64, tid_count: u64 });
raw_struct!(PidRaw = 48 {
    id: u32, flags: u32, reserved: u32, reserved_for_legacy: u32, reserved1: u32, pad: u32,
    event_when: u64, path: u64, name: u64,
});
raw_struct!(TidRaw = 40 {
    associated_pid: u32, id: u32, flags: u32, reserved_for_legacy: u32, reserved: u32, pad: u32,
    event_when: u64, name: u64,
});
raw_struct!(ModuleRaw = 104 {
    reserved: u32, associated_pid: u32, flags: u32, segment_number: u32,
    segment_type: u32, code_selector: u32, reserved2: u32, reserved_for_legacy: u32,
    reserved_for_legacy2: u32, reserved_for_legacy_flags: u32, reserved1: u32, pad: u32,
    event_when: u64, length: u64, load_address: u64, unload_tsc: u64,
    path: u64, name: u64, segment_name: u64,
});

raw_struct!(EventRaw = 40 {
    id: u32, flags: u32, num_details: u32, pad: u32,
    sav: u64, name: u64, arch_name: u64,
});
raw_struct!(EventDetailRaw = 32 {
    access_size_bits: u16, method: u8, access: u8, reserved3: u32,
    address: u64, value: u64,
    legacy_command: u8, reserved1: u8, reserved2: u16, pad: u32,
});
raw_struct!(DescEntryRaw = 40 {
    offset: u32, desc_type: u16, subtype: u16,
    data_size: u32, access_type: u8, access_method: u8, sample_flag: u8, reserved0: u8,
    access_offset: u64,
    reserved1: u32, pad: u32,
    name: u64,
});
raw_struct!(StreamInfoRaw = 56 {
    sampling_duration_ms: u32, stream_type: u32, sampling_interval_us: u32, pad: u32,
    start_low: u32, start_high: u32, end_low: u32, end_high: u32,
    command_line: u64, cpu_mask: u64, comment: u64,
});
raw_struct!(
    /// One `DATA_BIND_STRUCT` in a bind data section.
    DataBindRaw = 24 { module_index: u64, pid_index: u64, tid_index: u64 }
);

raw_struct!(
    /// Head of a string block: `count + 1` u32 offsets (relative to the
    /// first string byte) follow, then the UTF-8 bytes.
    StringBlockRaw = 16 { first_id: u64, count: u64 }
);

#[cfg(test)]
mod tests {
    use super::*;

    fn size_of_encoding<T: Raw + Default>() -> usize {
        T::default().encode().len()
    }

    #[test]
    fn declared_sizes_match_encodings() {
        assert_eq!(size_of_encoding::<FileHeaderRaw>(), FileHeaderRaw::SIZE);
        assert_eq!(size_of_encoding::<SlotRaw>(), SlotRaw::SIZE);
        assert_eq!(size_of_encoding::<DirEntryRaw>(), DirEntryRaw::SIZE);
        assert_eq!(size_of_encoding::<SystemRaw>(), SystemRaw::SIZE);
        assert_eq!(size_of_encoding::<NodeRaw>(), NodeRaw::SIZE);
        assert_eq!(size_of_encoding::<CpuRaw>(), CpuRaw::SIZE);
        assert_eq!(size_of_encoding::<ArchRaw>(), ArchRaw::SIZE);
        assert_eq!(size_of_encoding::<CpuidIa32Raw>(), CpuidIa32Raw::SIZE);
        assert_eq!(size_of_encoding::<CpuidIa64Raw>(), CpuidIa64Raw::SIZE);
        assert_eq!(size_of_encoding::<SoftwareRaw>(), SoftwareRaw::SIZE);
        assert_eq!(size_of_encoding::<HostRaw>(), HostRaw::SIZE);
        assert_eq!(size_of_encoding::<OsRaw>(), OsRaw::SIZE);
        assert_eq!(size_of_encoding::<ApplicationRaw>(), ApplicationRaw::SIZE);
        assert_eq!(size_of_encoding::<VersionInfoRaw>(), VersionInfoRaw::SIZE);
        assert_eq!(size_of_encoding::<ProcessThreadRaw>(), ProcessThreadRaw::SIZE);
        assert_eq!(size_of_encoding::<PidRaw>(), PidRaw::SIZE);
        assert_eq!(size_of_encoding::<TidRaw>(), TidRaw::SIZE);
        assert_eq!(size_of_encoding::<ModuleRaw>(), ModuleRaw::SIZE);
        assert_eq!(size_of_encoding::<EventRaw>(), EventRaw::SIZE);
        assert_eq!(size_of_encoding::<EventDetailRaw>(), EventDetailRaw::SIZE);
        assert_eq!(size_of_encoding::<DescEntryRaw>(), DescEntryRaw::SIZE);
        assert_eq!(size_of_encoding::<StreamInfoRaw>(), StreamInfoRaw::SIZE);
        assert_eq!(size_of_encoding::<StringBlockRaw>(), StringBlockRaw::SIZE);
    }

    #[test]
    fn little_endian_field_order() {
        let d = DirEntryRaw { kind: 0x0102, stream: 3, offset: 0x1122334455667788, ..Default::default() };
        let b = d.encode();
        assert_eq!(&b[0..2], &[0x02, 0x01]);
        assert_eq!(&b[4..8], &[3, 0, 0, 0]);
        assert_eq!(&b[8..16], &0x1122334455667788u64.to_le_bytes());
        assert_eq!(DirEntryRaw::decode(&b), Some(d));
        assert_eq!(DirEntryRaw::decode(&b[..47]), None);
    }
}
