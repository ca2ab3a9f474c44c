//! The process/thread section: `TBRW_PID` and `TBRW_TID` records.

use bitflags::bitflags;

use super::strings::{MapStrings, Text};

bitflags! {
    /// `pid_flags` / `tid_flags` (`TBRW_PIDTID_*`). Unknown bits are kept.
    ///
    /// `CREATED` and `WHEN_SAMP_COUNT` are the zero values of their fields:
    /// test them with [`PidTidFlags::is_destroyed`] and [`PidTidFlags::when_is_tsc`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct PidTidFlags: u32 {
        /// `TBRW_PIDTID_DESTROYED`: a termination event (else a creation event).
        const DESTROYED = 0x1;
        /// `TBRW_PIDTID_WHEN_TSC`: `event_when` is a TSC (else a sample count).
        const WHEN_TSC = 0x10;
        /// `TBRW_PIDTID_CREATION_MASK`.
        const CREATION_MASK = 0x1;
        /// `TBRW_PIDTID_WHEN_MASK`.
        const WHEN_MASK = 0x110;
        const _ = !0;
    }
}

impl PidTidFlags {
    /// `TBRW_PIDTID_CREATED` (0).
    pub const CREATED: PidTidFlags = PidTidFlags::empty();
    /// `TBRW_PIDTID_WHEN_SAMP_COUNT` (0).
    pub const WHEN_SAMP_COUNT: PidTidFlags = PidTidFlags::empty();

    /// Whether this is a termination event.
    pub fn is_destroyed(self) -> bool {
        self.contains(PidTidFlags::DESTROYED)
    }

    /// Whether `event_when` is a TSC value.
    pub fn when_is_tsc(self) -> bool {
        self.contains(PidTidFlags::WHEN_TSC)
    }
}

/// One process (`TBRW_PID`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pid<S = Text> {
    /// `pid_id`: the OS process id.
    pub id: u32,
    /// `pid_flags`.
    pub flags: PidTidFlags,
    /// `reserved` (offset 12).
    pub reserved: u32,
    /// `pid_event_when`: TSC or sample count of the event.
    pub event_when: u64,
    /// `reserved_for_legacy`.
    pub reserved_for_legacy: u32,
    /// `reserved1`.
    pub reserved1: u32,
    /// `pid_path`: path of the executable.
    pub path: S,
    /// `pid_name`: name of the process.
    pub name: S,
}

/// One thread (`TBRW_TID`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tid<S = Text> {
    /// `tid_associated_pid`: the OS pid of its process.
    pub associated_pid: u32,
    /// `tid_id`: the OS thread id.
    pub id: u32,
    /// `tid_flags`.
    pub flags: PidTidFlags,
    /// `tid_event_when`.
    pub event_when: u64,
    /// `reserved_for_legacy`.
    pub reserved_for_legacy: u32,
    /// `reserved`.
    pub reserved: u32,
    /// `tid_name`.
    pub name: S,
}

impl<S> MapStrings<S> for Pid<S> {
    type Output<T> = Pid<T>;
    fn map_strings<T, E>(self, f: &mut impl FnMut(S) -> Result<T, E>) -> Result<Pid<T>, E> {
        Ok(Pid {
            id: self.id,
            flags: self.flags,
            reserved: self.reserved,
            event_when: self.event_when,
            reserved_for_legacy: self.reserved_for_legacy,
            reserved1: self.reserved1,
            path: f(self.path)?,
            name: f(self.name)?,
        })
    }
}

impl<S> MapStrings<S> for Tid<S> {
    type Output<T> = Tid<T>;
    fn map_strings<T, E>(self, f: &mut impl FnMut(S) -> Result<T, E>) -> Result<Tid<T>, E> {
        Ok(Tid {
            associated_pid: self.associated_pid,
            id: self.id,
            flags: self.flags,
            event_when: self.event_when,
            reserved_for_legacy: self.reserved_for_legacy,
            reserved: self.reserved,
            name: f(self.name)?,
        })
    }
}
