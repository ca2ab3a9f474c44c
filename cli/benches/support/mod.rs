//! Shared by the benches: reading this process's memory figures.

/// A `/proc/self/status` figure in KiB (`VmRSS:`, `VmHWM:`), 0 where there is none.
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}
