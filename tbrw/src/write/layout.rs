//! [`WriteLayout`]: which on-disk layout a new file is written in
//! (docs/FORMAT.md, "Which layout this project writes").

/// The on-disk layout of a new file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WriteLayout {
    /// Intel's layout (`"Sample6 "`), which Intel's TBRW library and VTune
    /// read: what every writer of this project writes.
    #[default]
    Intel,
    /// This project's earlier `\x89TB5` layout (commit slots, checksums),
    /// which Intel's library does not read. Still written on request: an
    /// append to such a file keeps it, and the tests of its promises write
    /// it.
    Tb5,
}
