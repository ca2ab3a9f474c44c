//! The stream information section (`TBRW_STREAM_INFO`) and stream types.

use super::strings::{MapStrings, Text};

/// `stream_type` values (`TBRW_STREAM_TYPE`).
pub mod stream_type {
    /// `TBRW_SAMPLING_STREAM`.
    pub const SAMPLING: u32 = 1;
    /// `TBRW_AGGREGATED_STREAM`.
    pub const AGGREGATED: u32 = 2;
    /// `TBRW_BOOKMARK_STREAM`.
    pub const BOOKMARK: u32 = 3;
    /// `TBRW_BIND_DATA_INFORMATION_STREAM`.
    pub const BIND_DATA_INFORMATION: u32 = 4;
    /// `TBRW_BIND_MODULE_INFORMATION_STREAM`.
    pub const BIND_MODULE_INFORMATION: u32 = 5;
    /// `TBRW_BIND_PID_INFORMATION_STREAM`.
    pub const BIND_PID_INFORMATION: u32 = 6;
    /// `TBRW_BIND_TID_INFORMATION_STREAM`.
    pub const BIND_TID_INFORMATION: u32 = 7;
    /// `TBRW_CUSTOM_STREAM`.
    pub const CUSTOM: u32 = 8;
}

/// A Windows `FILETIME` (`VTUNE_ANALYZER_FILETIME`): 100 ns ticks since 1601.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FileTime {
    /// `dwLowDateTime`.
    pub low: u32,
    /// `dwHighDateTime`.
    pub high: u32,
}

impl FileTime {
    /// The 64-bit tick count.
    pub fn ticks(self) -> u64 {
        (u64::from(self.high) << 32) | u64::from(self.low)
    }

    /// From a 64-bit tick count.
    pub fn from_ticks(ticks: u64) -> Self {
        FileTime { low: ticks as u32, high: (ticks >> 32) as u32 }
    }
}

/// `TBRW_STREAM_INFO`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamInfo<S = Text> {
    /// `sampling_duration`, in milliseconds.
    pub sampling_duration_ms: u32,
    /// `stream_type`, one of [`stream_type`].
    pub stream_type: u32,
    /// `sampling_interval`, in microseconds.
    pub sampling_interval_us: u32,
    /// `sampling_start_time`.
    pub start_time: FileTime,
    /// `sampling_end_time`.
    pub end_time: FileTime,
    /// `command_line`.
    pub command_line: S,
    /// `cpu_mask`.
    pub cpu_mask: S,
    /// `comment`.
    pub comment: S,
}

impl<S> MapStrings<S> for StreamInfo<S> {
    type Output<T> = StreamInfo<T>;
    fn map_strings<T, E>(self, f: &mut impl FnMut(S) -> Result<T, E>) -> Result<StreamInfo<T>, E> {
        Ok(StreamInfo {
            sampling_duration_ms: self.sampling_duration_ms,
            stream_type: self.stream_type,
            sampling_interval_us: self.sampling_interval_us,
            start_time: self.start_time,
            end_time: self.end_time,
            command_line: f(self.command_line)?,
            cpu_mask: f(self.cpu_mask)?,
            comment: f(self.comment)?,
        })
    }
}
