//! The machine a run happens on, for the hardware and software sections:
//! CPUs from `/proc/cpuinfo`, NUMA nodes from `/sys/devices/system/node`,
//! host name, OS and page size from `uname`/`sysconf`.

use tbrw::*;

/// One `processor` block of `/proc/cpuinfo`, the fields used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuInfo {
    /// `processor`.
    pub number: u32,
    /// `physical id`.
    pub package: u16,
    /// `core id`.
    pub core: u16,
    /// `cpu MHz`.
    pub mhz: f64,
    /// `cache size`, KB.
    pub cache_kb: u32,
    /// `siblings` / `cpu cores`.
    pub threads_per_core: u16,
}

/// The processors of a `/proc/cpuinfo` text.
pub fn parse_cpuinfo(text: &str) -> Vec<CpuInfo> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let get = |k: &str| {
            block.lines().find_map(|l| {
                let (a, b) = l.split_once(':')?;
                (a.trim() == k).then(|| b.trim().to_owned())
            })
        };
        let Some(number) = get("processor").and_then(|v| v.parse().ok()) else { continue };
        let num = |k: &str| get(k).and_then(|v| v.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()));
        let siblings = num("siblings").unwrap_or(1.0);
        let cores = num("cpu cores").unwrap_or(1.0).max(1.0);
        out.push(CpuInfo {
            number,
            package: num("physical id").unwrap_or(0.0) as u16,
            core: num("core id").unwrap_or(0.0) as u16,
            mhz: num("cpu MHz").unwrap_or(0.0),
            cache_kb: num("cache size").unwrap_or(0.0) as u32,
            threads_per_core: (siblings / cores).round().max(1.0) as u16,
        });
    }
    out
}

/// Expands a `cpulist` (`0-3,6`).
pub fn parse_cpulist(s: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    v.extend(a..=b);
                }
            }
            None => v.extend(part.parse::<u32>().ok()),
        }
    }
    v
}

#[cfg(target_arch = "x86_64")]
fn archs() -> Vec<CpuArch> {
    let leaves = (0..2u32)
        .map(|leaf| {
            #[allow(unused_unsafe)]
            // SAFETY: cpuid exists on every x86_64 processor.
            let r = unsafe { std::arch::x86_64::__cpuid(leaf) };
            CpuidIa32 { eax_input: leaf, eax: r.eax, ebx: r.ebx, ecx: r.ecx, edx: r.edx, reserved: 0 }
        })
        .collect();
    vec![CpuArch { arch_type: arch_type::EM64T, cpuids: Cpuids::Ia32(leaves) }]
}

#[cfg(not(target_arch = "x86_64"))]
fn archs() -> Vec<CpuArch> {
    Vec::new()
}

fn node_memory_mb(text: &str) -> u64 {
    // "Node 0 MemTotal:  24684092 kB" or "MemTotal:  24684092 kB"
    text.lines()
        .find(|l| l.contains("MemTotal:"))
        .and_then(|l| l.split("MemTotal:").nth(1))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

/// The hardware section of this machine.
pub fn system() -> System {
    let cpus = parse_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default());
    let archs = archs();
    let native = if cfg!(target_arch = "x86_64") { native_arch::IA32 } else { native_arch::NOT_SET };
    let to_cpu = |c: &CpuInfo| Cpu {
        number: c.number,
        native_arch_type: native,
        speed_mhz: c.mhz.round() as u32,
        cache_l2_kb: c.cache_kb,
        package_num: c.package,
        core_num: c.core,
        hardware_thread_num: 0,
        threads_per_core: c.threads_per_core,
        archs: archs.clone(),
        ..Default::default()
    };
    let mut nodes = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") {
        let mut ids: Vec<u32> =
            dir.flatten().filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok()).collect();
        ids.sort_unstable();
        for id in ids {
            let base = format!("/sys/devices/system/node/node{id}");
            let list = parse_cpulist(&std::fs::read_to_string(format!("{base}/cpulist")).unwrap_or_default());
            let node_cpus: Vec<Cpu> = cpus.iter().filter(|c| list.contains(&c.number)).map(to_cpu).collect();
            nodes.push(Node {
                id,
                num_available: node_cpus.len() as u32,
                num_used: node_cpus.len() as u32,
                physical_memory_mb: node_memory_mb(
                    &std::fs::read_to_string(format!("{base}/meminfo")).unwrap_or_default(),
                ),
                cpus: node_cpus,
                ..Default::default()
            });
        }
    }
    if nodes.is_empty() {
        nodes.push(Node {
            id: 0,
            num_available: cpus.len() as u32,
            num_used: cpus.len() as u32,
            physical_memory_mb: node_memory_mb(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default()),
            cpus: cpus.iter().map(to_cpu).collect(),
            ..Default::default()
        });
    }
    System { nodes }
}

/// The software section of this machine.
pub fn software() -> Software {
    let (sysname, release, version) = crate::sys::os_release();
    let nums: Vec<u32> =
        release.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).filter_map(|s| s.parse().ok()).collect();
    let page = crate::sys::page_size();
    Software {
        host: Some(Host { reserved: 0, ip_address: None, name: Some(crate::sys::hostname()) }),
        os: Some(Os {
            platform: if cfg!(target_pointer_width = "64") { os_family::LINUX64 } else { os_family::LINUX32 },
            major: nums.first().copied().unwrap_or(0),
            minor: nums.get(1).copied().unwrap_or(0),
            build: nums.get(2).copied().unwrap_or(0),
            extra: 0,
            name: Some(format!("{sysname} {release}")),
            name_extra: Some(version),
        }),
        application: Some(Application {
            reserved: 0,
            page_size: page as u32,
            alloc_granularity: page as u32,
            min_app_addr: page,
            max_app_addr: if cfg!(target_pointer_width = "64") { 0x7fff_ffff_ffff } else { 0xbfff_ffff },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_and_cpulists() {
        let text = "processor\t: 0\nphysical id\t: 0\ncore id\t: 1\ncpu MHz\t\t: 1996.248\ncache size\t: 512 KB\nsiblings\t: 2\ncpu cores\t: 1\n\nprocessor\t: 1\n";
        let c = parse_cpuinfo(text);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].core, c[0].cache_kb, c[0].threads_per_core), (1, 512, 2));
        assert_eq!(c[0].mhz, 1996.248);
        assert_eq!(c[1].number, 1);
        assert_eq!(parse_cpulist("0-3,6\n"), vec![0, 1, 2, 3, 6]);
        assert_eq!(node_memory_mb("Node 0 MemTotal:       24684092 kB\n"), 24105);
        let s = system();
        assert!(s.nodes.iter().map(|n| n.cpus.len()).sum::<usize>() >= 1);
    }
}
