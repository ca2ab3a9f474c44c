//! The module section: `TBRW_MODULE` records (what was loaded where, in
//! which process, from when to when).

use bitflags::bitflags;

use super::strings::{MapStrings, Text};

bitflags! {
    /// `module_flags` (`TBRW_MODULE_*`). Unknown bits are kept.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct ModuleFlags: u32 {
        /// `TBRW_MODULE_TSC_USED`: load and unload times are TSC values.
        const TSC_USED = 0x10000;
        /// `TBRW_MODULE_LOADED`: a load notification.
        const LOADED = 0x8000;
        /// `TBRW_MODULE_UNLOADED`: an unload notification.
        const UNLOADED = 0x4000;
        /// `TBRW_MODULE_LOADED_MASK`.
        const LOADED_MASK = 0x2000;
        /// `TBRW_MODULE_IS_EXE`: the module is the process's executable.
        const IS_EXE = 0x1000;
        /// `TBRW_MODULE_GLOBAL_LOAD`: a global (kernel) module, seen by every process.
        const GLOBAL_LOAD = 0x800;
        /// `TBRW_MODULE_1ST_MODULE_REC_IN_PROCESS`.
        const FIRST_MODULE_REC_IN_PROCESS = 0x400;
        const _ = !0;
    }
}

/// Processor modes (`TBRW_MODE_*`), used by `module_segment_type` and by
/// the `codeMode` bits of a sample record.
pub mod processor_mode {
    /// `TBRW_MODE_V86`.
    pub const V86: u8 = 0;
    /// `TBRW_MODE_16BIT`.
    pub const BIT16: u8 = 1;
    /// `TBRW_MODE_32BIT`.
    pub const BIT32: u8 = 2;
    /// `TBRW_MODE_64BIT`.
    pub const BIT64: u8 = 3;
}

/// `module_unload_tsc` of a module that was never unloaded.
pub const NEVER_UNLOADED: u64 = u64::MAX;

/// One module (`TBRW_MODULE`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Module<S = Text> {
    /// `module_reserved`.
    pub reserved: u32,
    /// `module_associated_pid`: the OS pid that loaded it.
    pub associated_pid: u32,
    /// `module_flags`.
    pub flags: ModuleFlags,
    /// `module_event_when`: load time (0: loaded before collection started).
    pub event_when: u64,
    /// `module_segment_number`.
    pub segment_number: u32,
    /// `module_segment_type`: two bits, one of [`processor_mode`]. Values
    /// above 3 are rejected when written.
    pub segment_type: u8,
    /// `module_code_selector`.
    pub code_selector: u32,
    /// `reserved` (offset 36).
    pub reserved2: u32,
    /// `module_length`.
    pub length: u64,
    /// `module_load_address`.
    pub load_address: u64,
    /// `reserved_for_legacy`.
    pub reserved_for_legacy: u32,
    /// `reserved_for_legacy2`.
    pub reserved_for_legacy2: u32,
    /// `reserved_for_legacy_flags`.
    pub reserved_for_legacy_flags: u32,
    /// `reserved1`.
    pub reserved1: u32,
    /// `module_unload_tsc`: unload time ([`NEVER_UNLOADED`]: never).
    pub unload_tsc: u64,
    /// `module_path`.
    pub path: S,
    /// `module_name`.
    pub name: S,
    /// `module_segment_name`.
    pub segment_name: S,
}

impl<S> MapStrings<S> for Module<S> {
    type Output<T> = Module<T>;
    fn map_strings<T, E>(self, f: &mut impl FnMut(S) -> Result<T, E>) -> Result<Module<T>, E> {
        Ok(Module {
            reserved: self.reserved,
            associated_pid: self.associated_pid,
            flags: self.flags,
            event_when: self.event_when,
            segment_number: self.segment_number,
            segment_type: self.segment_type,
            code_selector: self.code_selector,
            reserved2: self.reserved2,
            length: self.length,
            load_address: self.load_address,
            reserved_for_legacy: self.reserved_for_legacy,
            reserved_for_legacy2: self.reserved_for_legacy2,
            reserved_for_legacy_flags: self.reserved_for_legacy_flags,
            reserved1: self.reserved1,
            unload_tsc: self.unload_tsc,
            path: f(self.path)?,
            name: f(self.name)?,
            segment_name: f(self.segment_name)?,
        })
    }
}

/// The bind engine's view of a module record (`tbrw_bind`, docs/BIND.md):
/// its pid, addresses, times and flags. A record flagged unloaded and not
/// loaded is an unload notification (guide 6.6). The path and name are
/// left `None`: in the engine they are identities of texts among all the
/// records of a file (consulted only by an unload record without an
/// address), which one record cannot give; set them when such records
/// are bound.
impl<S> From<&Module<S>> for tbrw_bind::ModuleSpec {
    fn from(m: &Module<S>) -> tbrw_bind::ModuleSpec {
        let unload = m.flags.contains(ModuleFlags::UNLOADED) && !m.flags.contains(ModuleFlags::LOADED);
        tbrw_bind::ModuleSpec {
            pid: m.associated_pid,
            load_address: m.load_address,
            length: m.length,
            load_time: m.event_when,
            unload_time: m.unload_tsc,
            global: m.flags.contains(ModuleFlags::GLOBAL_LOAD),
            exe: m.flags.contains(ModuleFlags::IS_EXE),
            tsc_time: m.flags.contains(ModuleFlags::TSC_USED),
            kind: if unload { tbrw_bind::ModuleKind::Unload } else { tbrw_bind::ModuleKind::Load },
            first_in_process: m.flags.contains(ModuleFlags::FIRST_MODULE_REC_IN_PROCESS),
            path: None,
            name: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tbrw_bind::{ModuleKind, ModuleSpec};

    /// Every field the engine reads comes from its field of the record,
    /// and the flags from their bits; an unload notification is one.
    #[test]
    fn a_module_is_the_bind_engines_spec() {
        let m: Module<()> = Module {
            associated_pid: 428,
            flags: ModuleFlags::LOADED | ModuleFlags::IS_EXE | ModuleFlags::TSC_USED,
            event_when: 7,
            length: 0x27000,
            load_address: 0x630E_0000,
            unload_tsc: 90,
            ..Default::default()
        };
        let s = ModuleSpec::from(&m);
        let want = ModuleSpec {
            pid: 428,
            load_address: 0x630E_0000,
            length: 0x27000,
            load_time: 7,
            unload_time: 90,
            exe: true,
            tsc_time: true,
            ..Default::default()
        };
        assert_eq!(s, want);
        let both = |flags| ModuleSpec::from(&Module::<()> { flags, ..Default::default() });
        assert_eq!(both(ModuleFlags::UNLOADED).kind, ModuleKind::Unload);
        assert_eq!(both(ModuleFlags::UNLOADED | ModuleFlags::LOADED).kind, ModuleKind::Load);
        assert!(both(ModuleFlags::GLOBAL_LOAD).global);
        assert!(both(ModuleFlags::FIRST_MODULE_REC_IN_PROCESS).first_in_process);
    }
}
