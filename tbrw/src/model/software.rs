//! The software section: host, OS and application (`TBRW_HOST`, `TBRW_OS`,
//! `TBRW_APPLICATION`). Each part is set on its own; any may be absent.

use super::strings::{MapStrings, Text};

/// `os_platform` values (`TBRW_OSFAMILY_*`). 0x100-0x1FF are free for
/// platforms the header does not name; other values are reserved.
pub mod os_family {
    /// `TBRW_OSFAMILY_WIN32`.
    pub const WIN32: u32 = 1;
    /// `TBRW_OSFAMILY_WIN64`.
    pub const WIN64: u32 = 2;
    /// `TBRW_OSFAMILY_WINCE`.
    pub const WINCE: u32 = 3;
    /// `TBRW_OSFAMILY_XOS`.
    pub const XOS: u32 = 4;
    /// `TBRW_OSFAMILY_LINUX32`.
    pub const LINUX32: u32 = 5;
    /// `TBRW_OSFAMILY_LINUX64`.
    pub const LINUX64: u32 = 6;
    /// First value free for other platforms.
    pub const USER_FIRST: u32 = 0x100;
    /// Last value free for other platforms.
    pub const USER_LAST: u32 = 0x1FF;
}

/// The software section: what was set of host, OS and application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Software<S = Text> {
    /// `TBRW_set_host`.
    pub host: Option<Host<S>>,
    /// `TBRW_set_os`.
    pub os: Option<Os<S>>,
    /// `TBRW_set_application`.
    pub application: Option<Application>,
}

impl<S> Default for Software<S> {
    fn default() -> Self {
        Software { host: None, os: None, application: None }
    }
}

/// `TBRW_HOST`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Host<S = Text> {
    /// `reserved`.
    pub reserved: u32,
    /// `host_ip_address`.
    pub ip_address: S,
    /// `host_name`.
    pub name: S,
}

/// `TBRW_OS`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Os<S = Text> {
    /// `os_platform`, one of [`os_family`].
    pub platform: u32,
    /// `os_major`.
    pub major: u32,
    /// `os_minor`.
    pub minor: u32,
    /// `os_build`.
    pub build: u32,
    /// `os_extra`: service pack, errata, ...
    pub extra: u32,
    /// `os_name`.
    pub name: S,
    /// `os_name_extra` (for example the output of `uname -r`).
    pub name_extra: S,
}

/// `TBRW_APPLICATION`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Application {
    /// `app_reserved`.
    pub reserved: u32,
    /// `app_page_size`.
    pub page_size: u32,
    /// `app_alloc_granularity`.
    pub alloc_granularity: u32,
    /// `app_min_app_addr`.
    pub min_app_addr: u64,
    /// `app_max_app_addr`.
    pub max_app_addr: u64,
}

impl<S> MapStrings<S> for Host<S> {
    type Output<T> = Host<T>;
    fn map_strings<T, E>(self, f: &mut impl FnMut(S) -> Result<T, E>) -> Result<Host<T>, E> {
        Ok(Host { reserved: self.reserved, ip_address: f(self.ip_address)?, name: f(self.name)? })
    }
}

impl<S> MapStrings<S> for Os<S> {
    type Output<T> = Os<T>;
    fn map_strings<T, E>(self, f: &mut impl FnMut(S) -> Result<T, E>) -> Result<Os<T>, E> {
        Ok(Os {
            platform: self.platform,
            major: self.major,
            minor: self.minor,
            build: self.build,
            extra: self.extra,
            name: f(self.name)?,
            name_extra: f(self.name_extra)?,
        })
    }
}

impl<S> MapStrings<S> for Software<S> {
    type Output<T> = Software<T>;
    fn map_strings<T, E>(self, f: &mut impl FnMut(S) -> Result<T, E>) -> Result<Software<T>, E> {
        Ok(Software {
            host: self.host.map(|h| h.map_strings(f)).transpose()?,
            os: self.os.map(|o| o.map_strings(f)).transpose()?,
            application: self.application,
        })
    }
}
