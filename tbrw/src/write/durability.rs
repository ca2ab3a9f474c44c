//! [`Durability`]: what a commit waits for before it returns. Holds the
//! setting and how the environment chooses it; the waiting itself is the
//! output's (`output`, `sink`, `work_file`).

/// What a writer's commit (close) makes sure of before it returns.
///
/// Either way the commit writes in the order that makes it atomic (the
/// sections, then the string block and the directory, then the slot that
/// points at them, then the rename of a new file into place), and nothing
/// at the target path is ever partly written by this writer: a crash of
/// the writing process at any moment leaves the old commit or the new one.
/// What differs is a crash of the whole system (power loss) soon after.
///
/// The default is [`Durability::Ordered`], what `fwrite`-based writers
/// and `perf record` (no `fsync`, `fdatasync` or `sync_file_range`: traced
/// with `strace`) give; [`Durability::from_env`]
/// reads `TBRW_DURABLE=1` to choose [`Durability::Synced`] for programs
/// that cannot pass a setting (the C library, the command line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// No `fsync`: the kernel writes the pages out in its own time. After a
    /// power loss within that time (seconds), the newest commit may not
    /// match what reached the disk: the slot's and directory's checksums are
    /// checked on open, a section's when it is read, and a data section's
    /// by [`crate::Tb5File::verify`].
    #[default]
    Ordered,
    /// The commit `fsync`s the file before and after writing its slot, and
    /// the folder after renaming a new file into place, and a large data
    /// section's write-out is started as it is written: the commit survives
    /// a power loss once the call returns. Costs the time the disk takes
    /// to take every byte (for a file of hundreds of megabytes, longer than
    /// writing it).
    Synced,
}

impl Durability {
    /// The environment variable [`Durability::from_env`] reads.
    pub const ENV: &'static str = "TBRW_DURABLE";

    /// [`Durability::Synced`] when `TBRW_DURABLE` is `1` (or `true`, `yes`,
    /// `on`, in any case), else [`Durability::Ordered`].
    pub fn from_env() -> Durability {
        Durability::from_setting(std::env::var_os(Durability::ENV).as_deref().and_then(|v| v.to_str()))
    }

    fn from_setting(value: Option<&str>) -> Durability {
        match value.map(|v| v.trim().to_ascii_lowercase()) {
            Some(v) if matches!(v.as_str(), "1" | "true" | "yes" | "on") => Durability::Synced,
            _ => Durability::Ordered,
        }
    }

    /// Whether commits `fsync`.
    pub(crate) fn syncs(self) -> bool {
        self == Durability::Synced
    }
}

#[cfg(test)]
mod tests {
    use super::Durability;

    #[test]
    fn the_setting_is_read_as_documented() {
        for on in ["1", "true", "YES", " on "] {
            assert_eq!(Durability::from_setting(Some(on)), Durability::Synced, "{on}");
        }
        for off in [None, Some(""), Some("0"), Some("false"), Some("synced")] {
            assert_eq!(Durability::from_setting(off), Durability::Ordered, "{off:?}");
        }
    }
}
