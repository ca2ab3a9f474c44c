//! The on-disk structures of Intel's layout, all in one place: the section
//! tables, the TBRW sections (the API's structures as Intel stores them,
//! pointers turned into offsets) and the legacy sections the API exposes
//! (VTune's events). Field names and offsets: docs/FORMAT.md "Intel's
//! layout", with the evidence for each.

use binrw::binrw;

use crate::format::raw::raw_struct;
pub(crate) use crate::format::raw::Raw;

raw_struct!(
    /// Bytes 0-15 of every Intel file; the section table follows at 16.
    FileStartRaw = 16 {
        eye_catcher: [u8; 8],
        /// Not checked by Intel's reader (26 and 27 in the files at hand).
        version: u32,
        num_sections: u32,
    }
);

raw_struct!(
    /// A section entry of a TB6/TB7 file (`SampleFileSections_tb6_s`), in
    /// the file header and in the TBRW tables.
    SectionTb6Raw = 40 {
        length: u64,
        file_offset: u64,
        /// Entries in the section (records, modules...): a data section's
        /// can be wrong (docs/FORMAT.md, "Intel's writer's count").
        number_entries: u64,
        /// Bytes per entry; a data section's holds its whole length.
        entry_length: u32,
        section_type: u32,
        /// Not read: a stream's sections are the ones of its table.
        stream_number: u32,
        desc_entry_id: i32,
    }
);

raw_struct!(
    /// A section entry of a TB5 file's header (`SampleFileSections_s`).
    FileSectionTb5Raw = 20 {
        length: u32,
        file_offset: u32,
        number_entries: u32,
        entry_length: u16,
        section_type: u16,
        stream_number: u32,
    }
);

raw_struct!(
    /// A TBRW table entry of a TB5 file (`__TBRW_sample_file_section`).
    TbrwSectionTb5Raw = 32 {
        length: u64,
        file_offset: u64,
        number_entries: u32,
        entry_length: u32,
        section_type: u32,
        stream_number: u32,
    }
);

raw_struct!(
    /// The private-use section (0x23, `__tbrw_code_info`): "TBRW code
    /// version 3.0" (no API function reads it; a writer writes it).
    #[allow(dead_code)]
    PrivateInfoRaw = 72 {
        major: u32,
        minor: u32,
        comment: [[u8; 32]; 2],
    }
);

raw_struct!(
    /// `TBRW_SYSTEM` in the system section (0x19): Intel's 48 bytes, the
    /// node array's offset (from the section start) at 40.
    SystemRaw = 48 {
        system_size: u32,
        num_nodes: u32,
        reserved: [u32; 8],
        nodes_at: u64,
    }
);

raw_struct!(
    /// `TBRW_NODE`: its cpus' offset (from the section start) at 32.
    NodeRaw = 40 {
        node_size: u32,
        type_from_shell: u32,
        id: u32,
        /// Intel's count of the cpus that follow.
        num_available: u32,
        num_used: u32,
        reserved: u32,
        physical_memory: u64,
        cpus_at: u64,
    }
);

raw_struct!(
    /// `TBRW_CPU`: its architectures' offset (from the section start) at 56.
    CpuRaw = 64 {
        cpu_size: u32,
        number: u32,
        native_arch_type: u32,
        intel_processor_number: u32,
        speed_mhz: u32,
        fsb_mhz: u32,
        cache_l2: u32,
        cache_l3: u32,
        tsc_offset: i64,
        package_num: u16,
        core_num: u16,
        hardware_thread_num: u16,
        threads_per_core: u16,
        /// The count is the low 16 bits; VTune 2025 keeps the core type above them.
        num_archs: u32,
        dummy: u32,
        archs_at: u64,
    }
);

raw_struct!(
    /// `TBRW_CPU_ARCH`: its cpuids' offset (from the section start) at 8.
    ArchRaw = 16 {
        arch_size: u32,
        arch_type: u16,
        num_cpuids: u16,
        cpuids_at: u64,
    }
);

raw_struct!(
    /// One cpuid leaf (`TBRW_CPUID_IA32`; the IA-64 form has the same 24 bytes).
    CpuidRaw = 24 {
        words: [u32; 6],
    }
);

raw_struct!(
    /// `TBRW_HOST` (0x1A).
    HostRaw = 24 {
        host_size: u32,
        reserved: u32,
        ip_address: u64,
        name: u64,
    }
);

raw_struct!(
    /// `TBRW_OS` (0x1B).
    OsRaw = 40 {
        os_size: u32,
        platform: u32,
        major: u32,
        minor: u32,
        build: u32,
        extra: u32,
        name: u64,
        name_extra: u64,
    }
);

raw_struct!(
    /// `TBRW_APPLICATION` (0x1C).
    ApplicationRaw = 32 {
        app_size: u32,
        reserved: u32,
        page_size: u32,
        alloc_granularity: u32,
        min_app_addr: u64,
        max_app_addr: u64,
    }
);

raw_struct!(
    /// `TBRW_PID` (0x1D); Intel keeps the process's index in
    /// `reserved_for_legacy` and a parent index in `reserved1`.
    PidRaw = 48 {
        pid_size: u32,
        id: u32,
        flags: u32,
        reserved: u32,
        event_when: u64,
        reserved_for_legacy: u32,
        reserved1: u32,
        path: u64,
        name: u64,
    }
);

raw_struct!(
    /// `TBRW_TID` (0x1E).
    TidRaw = 40 {
        tid_size: u32,
        associated_pid: u32,
        id: u32,
        flags: u32,
        event_when: u64,
        reserved_for_legacy: u32,
        reserved: u32,
        name: u64,
    }
);

raw_struct!(
    /// `TBRW_MODULE` (0x1F): the guide's 104 bytes, then 40 of Intel's own
    /// (zero in every file seen).
    ModuleRaw = 104 {
        module_size: u32,
        reserved: u32,
        associated_pid: u32,
        flags: u32,
        event_when: u64,
        segment_number: u32,
        /// Bits 0-1: the processor mode.
        segment_type: u32,
        code_selector: u32,
        reserved2: u32,
        length: u64,
        load_address: u64,
        reserved_for_legacy: u32,
        reserved_for_legacy2: u32,
        reserved_for_legacy_flags: u32,
        reserved1: u32,
        unload_tsc: u64,
        path: u64,
        name: u64,
        segment_name: u64,
    }
);

/// Bytes of a module record in the files of Intel's 2020 library.
pub(crate) const MODULE_RECORD_SIZE: usize = 144;

raw_struct!(
    /// `TBRW_EVENT` (0x24); its details follow it, `details_at` bytes from
    /// its start.
    EventRaw = 48 {
        event_size: u32,
        /// Intel's `group_id` (low half) and `event_id` (high half).
        id: u32,
        num_details: u32,
        flags: u32,
        sav: u64,
        name: u64,
        arch_name: u64,
        details_at: u64,
    }
);

raw_struct!(
    /// `TBRW_EVENT_DETAIL`.
    EventDetailRaw = 32 {
        detail_size: u32,
        access_size_bits: u16,
        method: u8,
        access: u8,
        address: u64,
        value: u64,
        legacy_command: u8,
        reserved1: u8,
        reserved2: u16,
        reserved3: u32,
    }
);

raw_struct!(
    /// `TBRW_SAMPREC_DESC_ENTRY` (0x25, and the global descriptor 0x2E).
    DescEntryRaw = 72 {
        desc_size: u32,
        offset: u32,
        desc_type: u16,
        subtype: u16,
        data_size: u32,
        access_offset: u64,
        access_type: u8,
        access_method: u8,
        sample_flag: u8,
        reserved0: u8,
        reserved1: u32,
        name: u64,
        padding: [u8; 32],
    }
);

raw_struct!(
    /// `TBRW_VERSION_INFO` (0x21).
    VersionInfoRaw = 16 {
        version_info_size: u32,
        sampling_driver_version: u32,
        bind_version: u32,
        sample_file_version: u32,
    }
);

raw_struct!(
    /// `TBRW_STREAM_INFO_EX` (0x28): the API's 56 bytes, Intel's run mode,
    /// a user name and reserved words.
    StreamInfoRaw = 128 {
        stream_info_size: u32,
        sampling_duration: u32,
        stream_type: u32,
        sampling_interval: u32,
        start_low: u32,
        start_high: u32,
        end_low: u32,
        end_high: u32,
        command_line: u64,
        cpu_mask: u64,
        comment: u64,
        run_mode: u64,
        user_name: u64,
        reserved: [u64; 7],
    }
);

/// The smallest stream information Intel's reader takes (the 2.3 API's structure).
pub(crate) const STREAM_INFO_MIN: usize = 56;

raw_struct!(
    /// The head of VTune's legacy events section (0x0E, `Events16_s`):
    /// `EventInfoRaw` entries follow at 16.
    LegacyEventsRaw = 16 {
        num_events: u32,
        ei_array_position: u32,
        reserved: [u32; 2],
    }
);

raw_struct!(
    /// One legacy event (`EventInfo_s`); offsets are from the section start.
    LegacyEventRaw = 64 {
        name_offset: u32,
        name_length: u32,
        object_name_offset: u32,
        object_name_length: u32,
        help_id: u32,
        help_file_name_offset: u32,
        help_file_name_length: u32,
        num_instances: u32,
        num_reg_sets: u32,
        first_reg_set_offset: u32,
        flags: u32,
        interrupt_method: u32,
        total_samples: u32,
        event_index: u8,
        group_num: u8,
        reserved: u16,
        event_rate: u64,
    }
);

raw_struct!(
    /// One register set of a legacy event (`EventRegSetEx_s`).
    LegacyRegSetRaw = 24 {
        register: u32,
        event_id: u32,
        bits: u8,
        reserved1: u8,
        ext_esr_low16: u16,
        esr_value: u32,
        esr_count: u64,
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    fn size_of_encoding<T: Raw + Default>() -> usize {
        T::default().encode().len()
    }

    #[test]
    fn declared_sizes_match_encodings() {
        assert_eq!(size_of_encoding::<FileStartRaw>(), FileStartRaw::SIZE);
        assert_eq!(size_of_encoding::<SectionTb6Raw>(), SectionTb6Raw::SIZE);
        assert_eq!(size_of_encoding::<FileSectionTb5Raw>(), FileSectionTb5Raw::SIZE);
        assert_eq!(size_of_encoding::<TbrwSectionTb5Raw>(), TbrwSectionTb5Raw::SIZE);
        assert_eq!(size_of_encoding::<PrivateInfoRaw>(), PrivateInfoRaw::SIZE);
        assert_eq!(size_of_encoding::<SystemRaw>(), SystemRaw::SIZE);
        assert_eq!(size_of_encoding::<NodeRaw>(), NodeRaw::SIZE);
        assert_eq!(size_of_encoding::<CpuRaw>(), CpuRaw::SIZE);
        assert_eq!(size_of_encoding::<ArchRaw>(), ArchRaw::SIZE);
        assert_eq!(size_of_encoding::<CpuidRaw>(), CpuidRaw::SIZE);
        assert_eq!(size_of_encoding::<HostRaw>(), HostRaw::SIZE);
        assert_eq!(size_of_encoding::<OsRaw>(), OsRaw::SIZE);
        assert_eq!(size_of_encoding::<ApplicationRaw>(), ApplicationRaw::SIZE);
        assert_eq!(size_of_encoding::<PidRaw>(), PidRaw::SIZE);
        assert_eq!(size_of_encoding::<TidRaw>(), TidRaw::SIZE);
        assert_eq!(size_of_encoding::<ModuleRaw>(), ModuleRaw::SIZE);
        assert_eq!(size_of_encoding::<EventRaw>(), EventRaw::SIZE);
        assert_eq!(size_of_encoding::<EventDetailRaw>(), EventDetailRaw::SIZE);
        assert_eq!(size_of_encoding::<DescEntryRaw>(), DescEntryRaw::SIZE);
        assert_eq!(size_of_encoding::<VersionInfoRaw>(), VersionInfoRaw::SIZE);
        assert_eq!(size_of_encoding::<StreamInfoRaw>(), StreamInfoRaw::SIZE);
        assert_eq!(size_of_encoding::<LegacyEventsRaw>(), LegacyEventsRaw::SIZE);
        assert_eq!(size_of_encoding::<LegacyEventRaw>(), LegacyEventRaw::SIZE);
        assert_eq!(size_of_encoding::<LegacyRegSetRaw>(), LegacyRegSetRaw::SIZE);
    }
}
