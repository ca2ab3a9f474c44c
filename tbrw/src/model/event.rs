//! The event description section: `TBRW_EVENT`, each with its array of
//! `TBRW_EVENT_DETAIL` (how the counter was programmed).

use bitflags::bitflags;

use super::strings::{MapStrings, Text};

bitflags! {
    /// `event_flags` (`TBRW_EVENT_*`). Unknown bits are kept.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct EventFlags: u32 {
        /// `TBRW_EVENT_EBS`: event-based sampling (else time-based, `TBRW_EVENT_TBS` = 0).
        const EBS = 0x1;
        /// `TBRW_EVENT_MODE_MASK`.
        const MODE_MASK = 0x1;
        const _ = !0;
    }
}

impl EventFlags {
    /// `TBRW_EVENT_TBS` (0): time-based sampling.
    pub const TBS: EventFlags = EventFlags::empty();
}

/// `detail_method` values (`TBRW_ACCESS_METHOD`).
pub mod access_method {
    /// `TBRW_MSR`.
    pub const MSR: u8 = 0;
    /// `TBRW_PMC`.
    pub const PMC: u8 = 1;
    /// `TBRW_PMD`.
    pub const PMD: u8 = 2;
    /// `TBRW_TBS_VTD`.
    pub const TBS_VTD: u8 = 3;
    /// `TBRW_TBS_RTC`.
    pub const TBS_RTC: u8 = 4;
    /// `TBRW_TBS_STATCARD`.
    pub const TBS_STATCARD: u8 = 5;
    /// `TBRW_OS_EVENT`.
    pub const OS_EVENT: u8 = 6;
}

/// One event (`TBRW_EVENT`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event<S = Text> {
    /// `event_id`: the value samples carry in `eventIndex`.
    pub id: u32,
    /// `event_flags`.
    pub flags: EventFlags,
    /// `event_sav`: the sample-after value.
    pub sav: u64,
    /// `event_name`.
    pub name: S,
    /// `event_arch_name`: the cpu type, e.g. "Core 2".
    pub arch_name: S,
    /// `event_detail_array` (`event_num_details` entries).
    pub details: Vec<EventDetail>,
}

/// One register access that programmed an event (`TBRW_EVENT_DETAIL`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventDetail {
    /// `detail_access_size`, in bits (8, 16, 32, 64).
    pub access_size_bits: u16,
    /// `detail_method`, one of [`access_method`].
    pub method: u8,
    /// `detail_access`: 0 read, 1 write.
    pub access: u8,
    /// `detail_address`.
    pub address: u64,
    /// `detail_value`.
    pub value: u64,
    /// `legacy_command`.
    pub legacy_command: u8,
    /// `reserved1`.
    pub reserved1: u8,
    /// `reserved2`.
    pub reserved2: u16,
    /// `reserved3`.
    pub reserved3: u32,
}

impl<S> MapStrings<S> for Event<S> {
    type Output<T> = Event<T>;
    fn map_strings<T, E>(self, f: &mut impl FnMut(S) -> Result<T, E>) -> Result<Event<T>, E> {
        Ok(Event {
            id: self.id,
            flags: self.flags,
            sav: self.sav,
            name: f(self.name)?,
            arch_name: f(self.arch_name)?,
            details: self.details,
        })
    }
}
