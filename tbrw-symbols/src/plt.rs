//! Names for PLT stubs, `name@plt` as perf and objdump spell them: no
//! symbol table names the stubs a program calls imported functions
//! through, so each stub is matched to the GOT slot it jumps through, and
//! the slot to the dynamic relocation (`JUMP_SLOT`, `GLOB_DAT`) that fills
//! it with the imported symbol.
//!
//! The stubs are read from `.plt` (lazy binding), `.plt.sec` (x86-64 with
//! IBT: calls go there, `.plt` holds the lazy halves), `.plt.got` (non-lazy
//! stubs) and `.plt.bnd` (MPX). The relocations and dynamic symbols come
//! from `object`; only the stub's own jump is decoded, as it names the slot:
//!
//! - x86-64: `jmp *disp32(%rip)` (`ff 25`), alone or after `endbr64`
//!   and/or a `bnd` prefix, one stub per `sh_entsize` bytes (8 or 16);
//! - aarch64: `adrp x16, page; ldr x17, [x16, #off]` (then `add`, `br
//!   x17`), from a `bti c` before the `adrp` when there is one, up to the
//!   next stub.
//!
//! A stub whose slot an `IRELATIVE` relocation fills (a call to an IFUNC
//! of the file itself: libc's `memcpy`, a static executable's) is named
//! after the function at the relocation's addend, the IFUNC resolver, whose
//! symbol is the IFUNC's: `memmove@plt` (objdump says `*ABS*+0xa0be0@plt`,
//! perf 6.1 `@plt`); `*ABS*+0x…@plt` when no symbol is there. The PLT
//! header's slot has no relocation: it gets no name.

use std::collections::HashMap;

use object::elf::{
    FileHeader64, R_AARCH64_GLOB_DAT, R_AARCH64_IRELATIVE, R_AARCH64_JUMP_SLOT, R_X86_64_GLOB_DAT, R_X86_64_IRELATIVE,
    R_X86_64_JUMP_SLOT,
};
use object::read::elf::{ElfFile, SectionHeader};
use object::{
    Architecture, Endianness, Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationFlags, RelocationTarget,
};

/// One PLT stub with a name: `[start, start + size)` in ELF virtual
/// addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PltEntry {
    pub(crate) start: u64,
    pub(crate) size: u64,
    pub(crate) target: PltTarget,
}

/// What a PLT stub calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PltTarget {
    /// An imported symbol, named as `.dynsym` spells it.
    Import(String),
    /// An IFUNC of the file itself, by its resolver's address.
    Resolver(u64),
}

impl PltEntry {
    /// `name@plt`, with `resolver_name` naming the function at an IFUNC
    /// resolver's address.
    pub(crate) fn name(&self, resolver_name: impl FnOnce(u64) -> Option<String>) -> String {
        match &self.target {
            PltTarget::Import(name) => format!("{name}@plt"),
            PltTarget::Resolver(at) => match resolver_name(*at) {
                Some(name) => format!("{name}@plt"),
                None => format!("*ABS*+{at:#x}@plt"),
            },
        }
    }
}

/// A stub found in a PLT section, before it is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stub {
    start: u64,
    size: u64,
    /// The GOT slot the stub jumps through.
    slot: u64,
}

/// The named PLT stubs of an ELF file (x86-64 and aarch64; none for other
/// machines, and none when the file has no dynamic relocations).
pub(crate) fn plt_entries(obj: &object::File<'_>) -> Vec<PltEntry> {
    match obj {
        object::File::Elf64(f) => entries(f),
        _ => Vec::new(),
    }
}

fn entries(file: &ElfFile<'_, FileHeader64<Endianness>>) -> Vec<PltEntry> {
    let arch = file.architecture();
    let (slot_types, irelative) = match arch {
        Architecture::X86_64 => ([R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT], R_X86_64_IRELATIVE),
        Architecture::Aarch64 => ([R_AARCH64_JUMP_SLOT, R_AARCH64_GLOB_DAT], R_AARCH64_IRELATIVE),
        _ => return Vec::new(),
    };
    let dynsyms = file.dynamic_symbol_table();
    // GOT slot -> what the stub jumping through it calls. A static
    // executable's `.rela.plt` (no `.dynsym`) holds `IRELATIVE` slots only.
    let mut slots: HashMap<u64, PltTarget> = HashMap::new();
    for (offset, reloc) in file.dynamic_relocations().into_iter().flatten() {
        let RelocationFlags::Elf { r_type } = reloc.flags() else { continue };
        let target = if r_type == irelative {
            match u64::try_from(reloc.addend()) {
                Ok(at) => PltTarget::Resolver(at),
                Err(_) => continue,
            }
        } else if slot_types.contains(&r_type) {
            let RelocationTarget::Symbol(index) = reloc.target() else { continue };
            let sym = dynsyms.as_ref().and_then(|t| t.symbol_by_index(index).ok());
            match sym.and_then(|s| s.name().ok()) {
                Some(name) if !name.is_empty() => PltTarget::Import(name.to_owned()),
                _ => continue,
            }
        } else {
            continue;
        };
        slots.entry(offset).or_insert(target);
    }
    if slots.is_empty() {
        return Vec::new();
    }
    let endian = file.endian();
    let mut out = Vec::new();
    for section in file.sections() {
        if !matches!(section.name(), Ok(".plt" | ".plt.sec" | ".plt.got" | ".plt.bnd")) {
            continue;
        }
        // `SHT_NOBITS` (a debug file's copy) has no bytes.
        let Ok(data) = section.data() else { continue };
        let stubs = match arch {
            Architecture::X86_64 => {
                let entsize = section.elf_section_header().sh_entsize(endian);
                x86_64_stubs(section.address(), data, entsize)
            }
            _ => aarch64_stubs(section.address(), data),
        };
        for stub in stubs {
            if let Some(target) = slots.get(&stub.slot) {
                out.push(PltEntry { start: stub.start, size: stub.size, target: target.clone() });
            }
        }
    }
    out
}

/// `endbr64`.
const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];

/// The stubs of an x86-64 PLT section at `address`: one per `entsize`
/// bytes (8 or 16; anything else is taken as 16), each jumping through its
/// slot with `jmp *disp32(%rip)` at its start, after `endbr64`, after a
/// `bnd` prefix, or after both.
fn x86_64_stubs(address: u64, data: &[u8], entsize: u64) -> Vec<Stub> {
    let size = if matches!(entsize, 8 | 16) { entsize as usize } else { 16 };
    let mut out = Vec::new();
    for (i, entry) in data.chunks_exact(size).enumerate() {
        let after_endbr = if entry.starts_with(&ENDBR64) { 4 } else { 0 };
        let after_bnd = after_endbr + usize::from(entry.get(after_endbr) == Some(&0xf2));
        let jmp = after_bnd;
        let Some(disp) = entry.get(jmp..jmp + 6).filter(|b| b[..2] == [0xff, 0x25]) else { continue };
        let disp = i64::from(i32::from_le_bytes([disp[2], disp[3], disp[4], disp[5]]));
        let start = address.wrapping_add((i * size) as u64);
        let next = start.wrapping_add((jmp + 6) as u64);
        out.push(Stub { start, size: size as u64, slot: next.wrapping_add_signed(disp) });
    }
    out
}

/// `bti c`.
const BTI_C: u32 = 0xd503_245f;

/// The stubs of an aarch64 PLT section at `address`: each `adrp x16` whose
/// next instruction is `ldr x17, [x16, #off]` loads slot `page + off`. A
/// stub starts at its `adrp` (at the `bti c` before it, if any) and ends
/// where the next one starts, or at the end of the section.
fn aarch64_stubs(address: u64, data: &[u8]) -> Vec<Stub> {
    let words: Vec<u32> = data.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    let mut found: Vec<(u64, u64)> = Vec::new();
    for (i, pair) in words.windows(2).enumerate() {
        let (adrp, ldr) = (pair[0], pair[1]);
        if adrp & 0x9f00_001f != 0x9000_0010 || ldr & 0xffc0_03ff != 0xf940_0211 {
            continue;
        }
        let pc = address.wrapping_add(4 * i as u64);
        let imm = ((adrp >> 5) & 0x7_ffff) << 2 | (adrp >> 29) & 3;
        // Sign-extend the 21-bit page count.
        let pages = i64::from((imm << 11) as i32 >> 11);
        let page = (pc & !0xfff).wrapping_add_signed(pages << 12);
        let slot = page.wrapping_add(u64::from((ldr >> 10) & 0xfff) * 8);
        let start = if i > 0 && words[i - 1] == BTI_C { pc - 4 } else { pc };
        found.push((start, slot));
    }
    let end = address.wrapping_add(4 * words.len() as u64);
    (0..found.len())
        .map(|k| {
            let (start, slot) = found[k];
            let stop = found.get(k + 1).map_or(end, |n| n.0);
            Stub { start, size: stop.saturating_sub(start), slot }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_64_lazy_ibt_and_got_stubs() {
        // A lazy `.plt` at 0x1020: the header (push/jmp through GOT+8/+16),
        // then `jmp *0x2fca(%rip); push $0; jmp header`.
        let mut plt = vec![0xff, 0x35, 0xca, 0x2f, 0, 0, 0xff, 0x25, 0xcc, 0x2f, 0, 0, 0x0f, 0x1f, 0x40, 0];
        plt.extend_from_slice(&[0xff, 0x25, 0xca, 0x2f, 0, 0, 0x68, 0, 0, 0, 0, 0xe9, 0xe0, 0xff, 0xff, 0xff]);
        let stubs = x86_64_stubs(0x1020, &plt, 16);
        // The header's jump is not at a stub's start: only the stub.
        assert_eq!(stubs, vec![Stub { start: 0x1030, size: 16, slot: 0x1030 + 6 + 0x2fca }]);
        // `.plt.sec` with IBT: `endbr64; bnd jmp *0x2f6e(%rip); nop`.
        let sec = [0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0x6e, 0x2f, 0, 0, 0x0f, 0x1f, 0x44, 0, 0];
        assert_eq!(x86_64_stubs(0x1090, &sec, 16), vec![Stub { start: 0x1090, size: 16, slot: 0x1090 + 11 + 0x2f6e }]);
        // `.plt.got`, 8-byte entries: `jmp *0x2f6a(%rip); xchg %ax,%ax`, and
        // a negative displacement.
        let got = [0xff, 0x25, 0x6a, 0x2f, 0, 0, 0x66, 0x90, 0xff, 0x25, 0xf0, 0xff, 0xff, 0xff, 0x66, 0x90];
        assert_eq!(
            x86_64_stubs(0x1070, &got, 8),
            vec![
                Stub { start: 0x1070, size: 8, slot: 0x1070 + 6 + 0x2f6a },
                Stub { start: 0x1078, size: 8, slot: 0x1078 + 6 - 16 }
            ]
        );
        // Garbage and short sections: nothing, no panic.
        assert!(x86_64_stubs(0, &[0xff, 0x25, 1], 16).is_empty());
        assert!(x86_64_stubs(u64::MAX - 4, &[0xff; 64], 0).is_empty());
    }

    /// `adrp x16, #pages` at any pc (the page count as the instruction
    /// encodes it).
    fn adrp_x16(pages: i32) -> u32 {
        let imm = (pages as u32) & 0x1f_ffff;
        0x9000_0010 | (imm & 3) << 29 | (imm >> 2) << 5
    }

    fn ldr_x17_x16(offset: u32) -> u32 {
        0xf940_0211 | (offset / 8) << 10
    }

    #[test]
    fn aarch64_stubs_with_and_without_bti() {
        const ADD: u32 = 0x9100_0210; // add x16, x16, #0 (the offset does not matter)
        const BR_X17: u32 = 0xd61f_0220;
        const NOP: u32 = 0xd503_201f;
        const STP: u32 = 0xa9bf_7bf0; // stp x16, x30, [sp, #-16]!
                                      // The header (32 bytes), two classic 16-byte stubs, then two BTI
                                      // stubs (`bti c` + 4 instructions + nop = 24 bytes), at 0x5000.
        let words = [
            STP,
            adrp_x16(0x10),
            ldr_x17_x16(0x10),
            ADD,
            BR_X17,
            NOP,
            NOP,
            NOP,
            adrp_x16(0x10),
            ldr_x17_x16(0x18),
            ADD,
            BR_X17,
            adrp_x16(-1),
            ldr_x17_x16(0xff8),
            ADD,
            BR_X17,
            BTI_C,
            adrp_x16(0x10),
            ldr_x17_x16(0x28),
            ADD,
            BR_X17,
            NOP,
            BTI_C,
            adrp_x16(0x10),
            ldr_x17_x16(0x30),
            ADD,
            BR_X17,
            NOP,
        ];
        let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let stubs = aarch64_stubs(0x5000, &data);
        let got = 0x15000;
        assert_eq!(
            stubs,
            vec![
                Stub { start: 0x5004, size: 28, slot: got + 0x10 },
                Stub { start: 0x5020, size: 16, slot: got + 0x18 },
                Stub { start: 0x5030, size: 16, slot: 0x4ff8 },
                Stub { start: 0x5040, size: 24, slot: got + 0x28 },
                Stub { start: 0x5058, size: 24, slot: got + 0x30 },
            ]
        );
        assert!(aarch64_stubs(0, &[0x10, 0, 0, 0x90, 1]).is_empty());
    }
}
