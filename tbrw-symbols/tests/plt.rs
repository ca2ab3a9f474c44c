//! PLT stubs named `name@plt`: programs and a library built here calling
//! libm through their PLT (lazy `.plt`, IBT `.plt.sec`, `-z now`), each
//! stub's address read independently of the crate (from `objdump -d`, else
//! from `.rela.plt`'s order with `object`).

mod common;

use std::path::Path;
use std::process::Command;

use common::{compile, have, is_exec};
use object::read::elf::SectionHeader;
use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable};
use tbrw_symbols::{Config, KernelSymbols, Mapping, ModuleSpec, SymbolSource, Symbolizer, Unknown};

const CALLS_LIBM: &str = "#include <math.h>
volatile double in = 0.5;
__attribute__((noinline)) double twice(double x) { return sin(x) + cos(x) * sin(x + 1); }
int main(void) { return (int)twice(in); }
";

const LIBRARY: &str = "#include <math.h>
double lib_call(double x) { return sin(x) * cos(x); }
";

fn config() -> Config {
    Config { debug_dirs: Vec::new(), kernel: KernelSymbols::Off, ..Config::default() }
}

/// The address of stub `want` (such as `sin@plt`) of `path`: objdump's
/// label for it, else the slot of `want`'s relocation in `.rela.plt` (16
/// bytes a stub, after `.plt`'s 16-byte header unless `.plt.sec` holds them).
fn stub_address(path: &Path, want: &str) -> u64 {
    if have("objdump") {
        let out = Command::new("objdump").args(["-d", "--no-show-raw-insn"]).arg(path).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let label = format!(" <{want}>:");
        let line = text.lines().find(|l| l.ends_with(&label)).unwrap_or_else(|| panic!("{want} in objdump -d"));
        return u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap();
    }
    eprintln!("note: no objdump, placing {want} from .rela.plt's order");
    let data = std::fs::read(path).unwrap();
    let object::File::Elf64(file) = object::File::parse(&*data).unwrap() else { panic!("x86-64 fixtures") };
    let dynsyms = file.dynamic_symbol_table().unwrap();
    let base = want.strip_suffix("@plt").unwrap();
    let rela = file.section_by_name(".rela.plt").unwrap();
    let relocs: &[object::elf::Rela64<object::Endianness>] =
        rela.elf_section_header().data_as_array(file.endian(), &*data).unwrap();
    let index = relocs
        .iter()
        .position(|r| {
            let sym = object::SymbolIndex(r.r_sym(file.endian(), false) as usize);
            dynsyms.symbol_by_index(sym).unwrap().name() == Ok(base)
        })
        .unwrap();
    match file.section_by_name(".plt.sec") {
        Some(sec) => sec.address() + 16 * index as u64,
        None => file.section_by_name(".plt").unwrap().address() + 16 + 16 * index as u64,
    }
}

/// Builds `source` with `flags`, and checks that each of `stubs` is named
/// at its address, with offsets inside it, and that the byte before it is
/// not it.
fn check(name: &str, source: &str, flags: &[&str], stubs: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let Some(path) = compile(dir.path(), name, source, flags) else { return };
    let base = if is_exec(&path) { 0 } else { 0x7f55_0000_0000u64 };
    let mut s = Symbolizer::new(config());
    let id = s.add_module(ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: base }));
    for stub in stubs {
        let at = stub_address(&path, stub);
        for offset in [0, 1, 6, 15] {
            let r = s.symbolize(id, base + at + offset);
            assert_eq!(r.function.as_deref(), Some(*stub), "{name} {flags:?}: {stub}+{offset} at {at:#x}: {r}");
            assert_eq!(r.offset, Some(offset));
        }
        let before = s.symbolize(id, base + at - 1);
        assert_ne!(before.function.as_deref(), Some(*stub), "{name}: the byte before {stub}");
    }
}

#[test]
fn lazy_plt_of_a_pie() {
    check("lazy", CALLS_LIBM, &["-O2", "-fPIE", "-pie", "-fno-builtin", "-lm"], &["sin@plt", "cos@plt"]);
}

#[test]
fn ibt_plt_sec() {
    // `-z ibtplt`: `.plt.sec` stubs (`endbr64; bnd jmp`) even when the
    // C runtime's objects lack the IBT property; calls go there.
    let flags = ["-O2", "-fcf-protection=full", "-Wl,-z,ibtplt", "-fno-builtin", "-lm"];
    check("ibt", CALLS_LIBM, &flags, &["sin@plt", "cos@plt"]);
}

#[test]
fn bind_now_and_non_pie() {
    check("now", CALLS_LIBM, &["-O2", "-fno-pie", "-no-pie", "-Wl,-z,now", "-fno-builtin", "-lm"], &["sin@plt"]);
}

#[test]
fn shared_library() {
    check("libplt.so", LIBRARY, &["-O2", "-fPIC", "-shared", "-fno-builtin", "-lm"], &["sin@plt", "cos@plt"]);
}

/// A call to an IFUNC of the program itself goes through a stub whose slot
/// an `IRELATIVE` relocation fills: named after the IFUNC (the symbol at
/// the resolver's address), where objdump says `*ABS*+0xRESOLVER@plt`.
#[test]
fn ifunc_stub() {
    if !have("objdump") {
        eprintln!("note: no objdump, skipping the IFUNC stub test");
        return;
    }
    let source = "static int one(void) { return 1; }
static int (*resolve_pick(void))(void) { return one; }
int pick(void) __attribute__((ifunc(\"resolve_pick\")));
int main(void) { return pick(); }
";
    let dir = tempfile::tempdir().unwrap();
    let Some(path) = compile(dir.path(), "ifunc", source, &["-O1", "-fPIE", "-pie"]) else { return };
    let out = Command::new("objdump").args(["-d", "--no-show-raw-insn"]).arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains(" <*ABS*+0x") && l.ends_with("@plt>:")).expect("an IRELATIVE stub");
    let at = u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap();
    let resolver = line.split("<*ABS*+0x").nth(1).unwrap().trim_end_matches("@plt>:");
    let resolver = u64::from_str_radix(resolver, 16).unwrap();
    let data = std::fs::read(&path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let pick = file.symbols().find(|s| s.name() == Ok("pick")).unwrap();
    assert_eq!(pick.address(), resolver, "the IFUNC symbol sits at its resolver");
    let mut s = Symbolizer::new(config());
    let id = s.add_module(ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: 0x4000_0000 }));
    let r = s.symbolize(id, 0x4000_0000 + at + 2);
    assert_eq!(r.function.as_deref(), Some("pick@plt"), "{r}");
    assert_eq!(r.offset, Some(2));
}

/// A stripped program names its stubs from `.dynsym`; its other code
/// still has no symbols.
#[test]
fn stripped_program() {
    let dir = tempfile::tempdir().unwrap();
    let Some(path) = compile(dir.path(), "stripped", CALLS_LIBM, &["-O2", "-s", "-fno-builtin", "-lm"]) else { return };
    let at = stub_address(&path, "sin@plt");
    let data = std::fs::read(&path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    assert!(file.symbols().next().is_none(), "stripped");
    let text = file.section_by_name(".text").unwrap().address();
    let mut s = Symbolizer::new(config());
    let id = s.add_module(ModuleSpec::new(path.to_str().unwrap(), Mapping::LoadBase { load_base: 0x1000_0000 }));
    assert_eq!(s.symbolize(id, 0x1000_0000 + at).function.as_deref(), Some("sin@plt"));
    let info = s.module_info(id).unwrap();
    assert_eq!(info.symbols, Some(SymbolSource::Dynsym));
    assert!(info.symbol_count >= 2, "{info:?}");
    let code = s.symbolize(id, 0x1000_0000 + text + 4);
    assert_eq!(code.unknown, Some(Unknown::NoSymbols), "{code:?}");
}
