//! The system section (0x19): the hardware tree, stored depth first.
//!
//! Intel writes the `TBRW_SYSTEM`, its node, then each cpu followed by its
//! architectures, each followed by its cpuid leaves; every pointer of the
//! C structures becomes the offset (from the section start) of what it
//! points to. Intel's reader refuses a file whose offsets do not match
//! that order (error 84); this one reads the tree in that order and
//! requires every offset to name the place the walk reaches, so a damaged
//! offset is an error naming it rather than a jump elsewhere.

use std::path::Path;

use crate::format::cursor::SectionCursor;
use crate::format::intel::raw::{ArchRaw, CpuRaw, CpuidRaw, NodeRaw, Raw, SystemRaw};
use crate::model::error::Result;
use crate::model::hardware::{arch_type, Cpu, CpuArch, CpuidIa32, CpuidIa64, Cpuids, Node, System};
use crate::model::section::{GlobalSection, SectionRef};

/// Checks that the offset `at` (from the section start) names where the walk is.
fn expect_at(c: &SectionCursor<'_>, pos: usize, at: u64, what: &str) -> Result<()> {
    if at != pos as u64 {
        return Err(c.error(format!("{what} is said to be at section byte {at}, but it follows at byte {pos}")));
    }
    Ok(())
}

/// The hardware tree of the system section `bytes` (at file offset `base`).
pub(crate) fn decode_system(path: &Path, bytes: &[u8], base: u64) -> Result<System> {
    let mut c = SectionCursor::new(bytes, base, path, SectionRef::Global(GlobalSection::Hardware));
    let sys: SystemRaw = c.read("TBRW_SYSTEM")?;
    // Each node takes at least its own 40 bytes: this bounds the allocation.
    let n_nodes = c.check_count(sys.num_nodes.into(), NodeRaw::SIZE, "nodes")?;
    let mut nodes = Vec::with_capacity(n_nodes);
    for ni in 0..n_nodes {
        c.at_record(ni as u64);
        if ni == 0 {
            expect_at(&c, c.position(), sys.nodes_at, "the node array")?;
        }
        let n: NodeRaw = c.read("TBRW_NODE")?;
        let n_cpus = c.check_count(n.num_available.into(), CpuRaw::SIZE, "cpus")?;
        let mut cpus = Vec::with_capacity(n_cpus);
        for ci in 0..n_cpus {
            if ci == 0 {
                expect_at(&c, c.position(), n.cpus_at, "the node's cpu array")?;
            }
            cpus.push(decode_cpu(&mut c)?);
        }
        nodes.push(Node {
            type_from_shell: n.type_from_shell,
            id: n.id,
            num_available: n.num_available,
            num_used: n.num_used,
            reserved: n.reserved,
            physical_memory_mb: n.physical_memory,
            cpus,
        });
    }
    Ok(System { nodes })
}

fn decode_cpu(c: &mut SectionCursor<'_>) -> Result<Cpu> {
    let cr: CpuRaw = c.read("TBRW_CPU")?;
    // The count is the low 16 bits, as Intel's reader takes it.
    let n_arch = c.check_count(u64::from(cr.num_archs & 0xFFFF), ArchRaw::SIZE, "architectures")?;
    let mut archs = Vec::with_capacity(n_arch);
    for ai in 0..n_arch {
        let pos = c.position();
        let a: ArchRaw = c.read("TBRW_CPU_ARCH")?;
        if ai == 0 {
            expect_at(c, pos, cr.archs_at, "the cpu's architecture array")?;
        }
        let k = c.check_count(a.num_cpuids.into(), CpuidRaw::SIZE, "cpuid leaves")?;
        if k > 0 {
            expect_at(c, c.position(), a.cpuids_at, "the architecture's cpuid leaves")?;
        }
        let mut leaves = Vec::with_capacity(k);
        for _ in 0..k {
            leaves.push(c.read::<CpuidRaw>("cpuid leaf")?.words);
        }
        let cpuids = if a.arch_type == arch_type::ITANIUM {
            let word = |w: [u32; 6], i: usize| u64::from(w[2 * i]) | u64::from(w[2 * i + 1]) << 32;
            Cpuids::Ia64(
                leaves
                    .iter()
                    .map(|&w| CpuidIa64 { select: word(w, 0), value: word(w, 1), reserved: word(w, 2) })
                    .collect(),
            )
        } else {
            Cpuids::Ia32(
                leaves
                    .iter()
                    .map(|&w| CpuidIa32 { eax_input: w[0], eax: w[1], ebx: w[2], ecx: w[3], edx: w[4], reserved: w[5] })
                    .collect(),
            )
        };
        archs.push(CpuArch { arch_type: a.arch_type, cpuids });
    }
    Ok(Cpu {
        number: cr.number,
        native_arch_type: cr.native_arch_type,
        intel_processor_number: cr.intel_processor_number,
        speed_mhz: cr.speed_mhz,
        fsb_mhz: cr.fsb_mhz,
        cache_l2_kb: cr.cache_l2,
        cache_l3_kb: cr.cache_l3,
        tsc_offset: cr.tsc_offset,
        package_num: cr.package_num,
        core_num: cr.core_num,
        hardware_thread_num: cr.hardware_thread_num,
        threads_per_core: cr.threads_per_core,
        core_type: (cr.num_archs >> 16) as u16,
        dummy: cr.dummy,
        archs,
    })
}
