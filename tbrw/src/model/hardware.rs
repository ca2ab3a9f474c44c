//! The hardware section: system → nodes → cpus → architectures → cpuids
//! (`TBRW_SYSTEM`, `TBRW_NODE`, `TBRW_CPU`, `TBRW_CPU_ARCH`,
//! `TBRW_CPUID_IA32`, `TBRW_CPUID_IA64`). Owned values, no encoding.

/// `cpu_native_arch_type` values (`CPU_ARCHITECTURE_*`).
pub mod native_arch {
    /// `CPU_ARCHITECTURE_NOT_SET`.
    pub const NOT_SET: u32 = 0;
    /// `CPU_ARCHITECTURE_IA32`.
    pub const IA32: u32 = 1;
    /// `CPU_ARCHITECTURE_IA64`.
    pub const IA64: u32 = 2;
}

/// `arch_type` values (`TBRW_GEN_ENTRY_SUBTYPES`).
pub mod arch_type {
    /// `TBRW_GST_UNK`.
    pub const UNK: u16 = 0;
    /// `TBRW_GST_X86`.
    pub const X86: u16 = 1;
    /// `TBRW_GST_ITANIUM`.
    pub const ITANIUM: u16 = 2;
    /// `TBRW_GST_RESERVED1`.
    pub const RESERVED1: u16 = 3;
    /// `TBRW_GST_RESERVED2`.
    pub const RESERVED2: u16 = 4;
    /// `TBRW_GST_EM64T`.
    pub const EM64T: u16 = 5;
    /// `TBRW_GST_RESERVED3`.
    pub const RESERVED3: u16 = 6;
    /// The highest value `tbrw_types.h` defines.
    pub const MAX: u16 = RESERVED3;
}

/// The whole hardware section (`TBRW_SYSTEM`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct System {
    /// The nodes (`node_array`, `system_num_nodes` entries).
    pub nodes: Vec<Node>,
}

/// One node (`TBRW_NODE`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// `node_type_from_shell` (the guide says to set 0).
    pub type_from_shell: u32,
    /// `node_id`.
    pub id: u32,
    /// `node_num_available`: cpus on the node.
    pub num_available: u32,
    /// `node_num_used`: cpus used by the cpu mask of the run.
    pub num_used: u32,
    /// `reserved`.
    pub reserved: u32,
    /// `node_physical_memory`, in MB.
    pub physical_memory_mb: u64,
    /// The cpus (`cpu_array`).
    pub cpus: Vec<Cpu>,
}

/// One logical processor (`TBRW_CPU`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cpu {
    /// `cpu_number`.
    pub number: u32,
    /// `cpu_native_arch_type`, one of [`native_arch`].
    pub native_arch_type: u32,
    /// `cpu_intel_processor_number`.
    pub intel_processor_number: u32,
    /// `cpu_speed_mhz`.
    pub speed_mhz: u32,
    /// `cpu_fsb_mhz`.
    pub fsb_mhz: u32,
    /// `cpu_cache_L2`, in KB.
    pub cache_l2_kb: u32,
    /// `cpu_cache_L3`, in KB.
    pub cache_l3_kb: u32,
    /// `cpu_tsc_offset`: TSC of this cpu minus TSC of cpu 0.
    pub tsc_offset: i64,
    /// `cpu_package_num`.
    pub package_num: u16,
    /// `cpu_core_num`.
    pub core_num: u16,
    /// `cpu_hardware_thread_num`.
    pub hardware_thread_num: u16,
    /// `cpu_threads_per_core`.
    pub threads_per_core: u16,
    /// Bits 16-31 of `num_cpu_arch_array` (the count of [`Cpu::archs`] is
    /// its low 16 bits, as Intel's library reads it): on a hybrid CPU,
    /// VTune 2025 keeps the core type of CPUID leaf 0x1A here (0x40 for a
    /// P-core, 0x20 for an E-core); 0 elsewhere. Kept from Intel's files;
    /// this project's layout stores 0.
    pub core_type: u16,
    /// The 32 bits after `num_cpu_arch_array` (`dummy` in the C
    /// structure). VTune fills them in; kept from Intel's files, this
    /// project's layout stores 0.
    pub dummy: u32,
    /// The architectures this cpu executes (`cpu_arch_array`).
    pub archs: Vec<CpuArch>,
}

/// One architecture of a cpu (`TBRW_CPU_ARCH`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuArch {
    /// `arch_type`, one of [`arch_type`].
    pub arch_type: u16,
    /// The cpuid values, in the form of this architecture.
    pub cpuids: Cpuids,
}

/// The cpuid array of an architecture: the union `cpuid_ia32_array` /
/// `cpuid_ia64_array` of `TBRW_CPU_ARCH`, with its form made explicit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cpuids {
    /// IA-32 / Intel 64 cpuid leaves.
    Ia32(Vec<CpuidIa32>),
    /// IA-64 cpuid registers.
    Ia64(Vec<CpuidIa64>),
}

impl Cpuids {
    /// The number of entries (`arch_num_cpuid`).
    pub fn len(&self) -> usize {
        match self {
            Cpuids::Ia32(v) => v.len(),
            Cpuids::Ia64(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One IA-32 cpuid leaf (`TBRW_CPUID_IA32`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuidIa32 {
    /// `cpuid_eax_input`: the leaf.
    pub eax_input: u32,
    /// `cpuid_eax`.
    pub eax: u32,
    /// `cpuid_ebx`.
    pub ebx: u32,
    /// `cpuid_ecx`.
    pub ecx: u32,
    /// `cpuid_edx`.
    pub edx: u32,
    /// `reserved`.
    pub reserved: u32,
}

/// One IA-64 cpuid register (`TBRW_CPUID_IA64`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuidIa64 {
    /// `cpuid_select`.
    pub select: u64,
    /// `cpuid_val`.
    pub value: u64,
    /// `reserved`.
    pub reserved: u64,
}
