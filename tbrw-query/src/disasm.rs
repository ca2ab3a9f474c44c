//! A function's machine code for `tbrw annotate`'s instruction view: its
//! bytes read from the module's ELF file (the file the symbolizer placed
//! the module with, [`tbrw_symbols::ModuleInfo::file`]), its extent from
//! the symbol tables, and its instructions disassembled (x86-64 and x86
//! with `iced-x86`, AT&T syntax as `perf annotate` and `objdump` print;
//! other architectures have no disassembler here). Without the crate's
//! `disasm` feature no file is read and [`read_function`] says so
//! ([`NoCode::NotBuilt`]). Imports nothing of the crate.

#[cfg(feature = "disasm")]
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

#[cfg(feature = "disasm")]
use iced_x86::{Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, OpKind, SymbolResolver, SymbolResult};
#[cfg(feature = "disasm")]
use object::read::ReadCache;
#[cfg(feature = "disasm")]
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

/// The most bytes of one function disassembled: a symbol claiming more is
/// read up to here (generated code of that size is not read a line at a time).
pub const MAX_FUNCTION: u64 = 1 << 20;

/// The longest x86 instruction: past the last sampled address, what a
/// function without a symbol size is read to.
#[cfg(feature = "disasm")]
const MAX_INSTRUCTION: u64 = 15;

/// Why a function has no instruction view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoCode {
    /// The module's file is not on this machine (symbols stored with the
    /// profile, or none found): what was found instead.
    NoFile(String),
    /// The file could not be read or is not an ELF file.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// No section of the file holds the function's bytes (a debug file's
    /// `.text` has none).
    NotInFile {
        /// The file.
        path: PathBuf,
        /// The function's start, ELF virtual address.
        start: u64,
    },
    /// The file's architecture has no disassembler here.
    Architecture(String),
    /// This build has no disassembler (the crate's `disasm` feature).
    NotBuilt,
}

impl fmt::Display for NoCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoCode::NoFile(why) => write!(f, "the module's file cannot be read here: {why}"),
            NoCode::Unreadable { path, why } => write!(f, "{}: {why}", path.display()),
            NoCode::NotInFile { path, start } => {
                write!(f, "{}: no section holds the bytes at {start:#x}", path.display())
            }
            NoCode::Architecture(a) => write!(f, "no disassembler for {a} (x86-64 and x86 only)"),
            NoCode::NotBuilt => f.write_str("this build has no disassembler (feature `disasm` of tbrw-query)"),
        }
    }
}

/// A function's bytes and how to decode them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    /// Its start, ELF virtual address.
    pub start: u64,
    /// Its bytes, from `start`.
    pub bytes: Vec<u8>,
    /// 64 or 32 (x86-64 or x86).
    pub bitness: u32,
    /// Whether a symbol gave its size (else it is read to the last
    /// sampled address and one instruction more).
    pub sized: bool,
}

/// Reads the function starting at ELF address `start` from `path`: its
/// size from a function symbol starting there, in `path` or in
/// `debug_file` (a stripped file's separate debug file), else up to
/// `last_sampled` and one instruction more; at most [`MAX_FUNCTION`] bytes.
#[cfg(feature = "disasm")]
pub fn read_function(path: &Path, debug_file: Option<&Path>, start: u64, last_sampled: u64) -> Result<Code, NoCode> {
    let unreadable = |why: String| NoCode::Unreadable { path: path.to_owned(), why };
    let file = std::fs::File::open(path).map_err(|e| unreadable(e.to_string()))?;
    let cache = ReadCache::new(file);
    let obj = object::File::parse(&cache).map_err(|e| unreadable(format!("not an ELF file: {e}")))?;
    let bitness = match obj.architecture() {
        object::Architecture::X86_64 | object::Architecture::X86_64_X32 => 64,
        object::Architecture::I386 => 32,
        a => return Err(NoCode::Architecture(format!("{a:?}"))),
    };
    let mut size = symbol_size(&obj, start);
    if size.is_none() {
        if let Some(d) = debug_file {
            if let Ok(f) = std::fs::File::open(d) {
                let cache = ReadCache::new(f);
                if let Ok(dobj) = object::File::parse(&cache) {
                    size = symbol_size(&dobj, start);
                }
            }
        }
    }
    let sized = size.is_some();
    let want = size.unwrap_or_else(|| last_sampled.saturating_sub(start) + MAX_INSTRUCTION).min(MAX_FUNCTION);
    let section = obj
        .sections()
        .find(|s| s.address() <= start && start < s.address().saturating_add(s.size()))
        .ok_or_else(|| NoCode::NotInFile { path: path.to_owned(), start })?;
    // Not past the section's end (an unsized function at the end of `.text`).
    let n = want.min(section.address().saturating_add(section.size()) - start);
    let bytes = section
        .data_range(start, n)
        .ok()
        .flatten()
        .ok_or_else(|| NoCode::NotInFile { path: path.to_owned(), start })?;
    Ok(Code { start, bytes: bytes.to_vec(), bitness, sized })
}

/// Without the `disasm` feature: no function is read.
#[cfg(not(feature = "disasm"))]
pub fn read_function(_: &Path, _: Option<&Path>, _: u64, _: u64) -> Result<Code, NoCode> {
    Err(NoCode::NotBuilt)
}

/// The size of the function symbol starting at `start` (the largest, when
/// several aliases start there).
#[cfg(feature = "disasm")]
fn symbol_size<'d, O: Object<'d>>(obj: &O, start: u64) -> Option<u64> {
    obj.symbols()
        .chain(obj.dynamic_symbols())
        .filter(|s| s.address() == start && s.size() > 0 && matches!(s.kind(), SymbolKind::Text | SymbolKind::Unknown))
        .map(|s| s.size())
        .max()
}

/// One decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// Its ELF virtual address.
    pub vaddr: u64,
    /// Its length in bytes.
    pub len: usize,
    /// The disassembly, AT&T syntax, branch and call targets named.
    pub text: String,
}

/// Names branch and call targets in the formatted text.
#[cfg(feature = "disasm")]
struct Targets(HashMap<u64, String>);

#[cfg(feature = "disasm")]
impl SymbolResolver for Targets {
    fn symbol(
        &mut self,
        instruction: &iced_x86::Instruction,
        _operand: u32,
        _instruction_operand: Option<u32>,
        address: u64,
        _address_size: u32,
    ) -> Option<SymbolResult<'_>> {
        // Only a branch's own target: not immediates or displacements that
        // happen to equal an address.
        let branch =
            matches!(
                instruction.flow_control(),
                FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch | FlowControl::Call
            ) && matches!(instruction.op0_kind(), OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64);
        if !branch || instruction.near_branch_target() != address {
            return None;
        }
        self.0.get(&address).map(|name| SymbolResult::with_str(address, name.as_str()))
    }
}

/// Disassembles `code`; `name(vaddr)` names a branch or call target
/// outside the function (`sin@plt`, `memcpy+0x10`), `function` names the
/// function itself (targets inside it are `function+0xoff`).
#[cfg(feature = "disasm")]
pub fn disassemble(code: &Code, function: &str, name: &mut dyn FnMut(u64) -> Option<String>) -> Vec<Instruction> {
    let mut decoder = Decoder::with_ip(code.bitness, &code.bytes, code.start, DecoderOptions::NONE);
    let decoded: Vec<iced_x86::Instruction> = decoder.iter().collect();
    let end = code.start + code.bytes.len() as u64;
    let mut targets = HashMap::new();
    for i in &decoded {
        let t = i.near_branch_target();
        if t == 0 || targets.contains_key(&t) {
            continue;
        }
        let label =
            if (code.start..end).contains(&t) { Some(format!("{function}+{:#x}", t - code.start)) } else { name(t) };
        if let Some(l) = label {
            targets.insert(t, l);
        }
    }
    let mut formatter = GasFormatter::with_options(Some(Box::new(Targets(targets))), None);
    // As objdump (and so `perf annotate`) prints them: lowercase hex,
    // `$0x1` not `$1`, RIP-relative operands as `0xe5a(%rip)`.
    let o = formatter.options_mut();
    o.set_space_after_operand_separator(false);
    o.set_uppercase_hex(false);
    o.set_small_hex_numbers_in_decimal(false);
    o.set_rip_relative_addresses(true);
    decoded
        .iter()
        .map(|i| {
            let mut text = String::new();
            if i.is_invalid() {
                text.push_str("(bad)");
            } else {
                formatter.format(i, &mut text);
            }
            Instruction { vaddr: i.ip(), len: i.len(), text }
        })
        .collect()
}

/// Without the `disasm` feature: no instruction ([`read_function`] has
/// given no code to decode).
#[cfg(not(feature = "disasm"))]
pub fn disassemble(_: &Code, _: &str, _: &mut dyn FnMut(u64) -> Option<String>) -> Vec<Instruction> {
    Vec::new()
}

#[cfg(all(test, not(feature = "disasm")))]
mod without {
    use super::*;

    #[test]
    fn a_build_without_the_disassembler_says_so() {
        let e = read_function(Path::new("/bin/sh"), None, 0x1000, 0x1010).unwrap_err();
        assert_eq!(e, NoCode::NotBuilt);
        assert!(e.to_string().contains("feature `disasm`"), "{e}");
    }
}

#[cfg(all(test, feature = "disasm"))]
mod tests {
    use super::*;

    #[test]
    fn branches_are_named_and_att_syntax_is_used() {
        // 0x1000: divsd %xmm2,%xmm1; jne 0x1000; call 0x2000; ret
        let bytes = vec![0xf2, 0x0f, 0x5e, 0xca, 0x75, 0xfa, 0xe8, 0xf5, 0x0f, 0x00, 0x00, 0xc3];
        let code = Code { start: 0x1000, bytes, bitness: 64, sized: true };
        let mut asked = Vec::new();
        let got = disassemble(&code, "hot", &mut |a| {
            asked.push(a);
            Some("sin@plt".to_owned())
        });
        let text: Vec<&str> = got.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(text, ["divsd %xmm2,%xmm1", "jne hot+0x0", "call sin@plt", "ret"]);
        assert_eq!(got.iter().map(|i| i.vaddr).collect::<Vec<_>>(), [0x1000, 0x1004, 0x1006, 0x100b]);
        assert_eq!(asked, [0x2000], "only targets outside the function are asked for");
    }

    #[test]
    fn a_missing_file_says_which() {
        let e = read_function(Path::new("/no/such/file"), None, 0x1000, 0x1010).unwrap_err();
        assert!(matches!(e, NoCode::Unreadable { .. }), "{e}");
    }
}
