//! DWARF line tables and inlined-function chains of one ELF file, through
//! `addr2line` over readers that share the file's mapping (compressed
//! sections are decompressed once, within their bound, into owned buffers:
//! `sections`).

use std::collections::HashMap;
use std::sync::Arc;

use gimli::{EndianReader, RunTimeEndian, SectionId};
use object::{Object, ObjectSection};

use crate::demangle::{shown, Names};
use crate::elf::{Bytes, ElfFile};
use crate::frame::{Frame, SourceLocation};
use crate::sections::{section_data, SectionData};
use crate::warning::Warning;

type Reader = EndianReader<RunTimeEndian, Bytes>;

/// The parsed DWARF of one file.
pub(crate) struct Dwarf {
    ctx: addr2line::Context<Reader>,
    /// Function names (raw → as shown) and source paths, shared by every
    /// address that mentions them: the cache holds one copy of each, and a
    /// name is demangled once.
    names: HashMap<Box<str>, Arc<str>>,
    files: HashMap<Box<str>, Arc<str>>,
}

fn intern(map: &mut HashMap<Box<str>, Arc<str>>, key: &str, make: impl FnOnce(&str) -> Arc<str>) -> Arc<str> {
    if let Some(v) = map.get(key) {
        return v.clone();
    }
    let v = make(key);
    map.insert(key.into(), v.clone());
    v
}

impl Dwarf {
    /// Reads the DWARF sections of `file`; `Err` carries gimli's reason. A
    /// compressed section beyond what the file can justify, or damaged, is
    /// left out (read as empty) with a warning in `warnings`.
    pub(crate) fn load(file: &ElfFile, warnings: &mut Vec<Warning>) -> Result<Dwarf, String> {
        let obj = file.object().ok_or_else(|| "the file no longer parses".to_owned())?;
        let endian = if obj.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
        let whole = Reader::new(file.bytes.clone(), endian);
        let empty = Reader::new(Bytes::owned(Vec::new()), endian);
        let load = |id: SectionId| -> Result<Reader, String> {
            // `section_by_name` finds the `.zdebug_*` form too.
            let Some(section) = obj.section_by_name(id.name()) else { return Ok(empty.clone()) };
            match section_data(&section, file.bytes.len()) {
                Ok(Some(SectionData::InPlace(range))) => Ok(whole.range(range)),
                Ok(Some(SectionData::Owned(data))) => Ok(Reader::new(Bytes::owned(data), endian)),
                Ok(None) => Ok(empty.clone()),
                Err(problem) => {
                    let section = section.name().unwrap_or(id.name()).to_owned();
                    warnings.push(Warning::SectionSkipped { path: file.path.to_path_buf(), section, problem });
                    Ok(empty.clone())
                }
            }
        };
        let dwarf = gimli::Dwarf::load(load)?;
        let ctx = addr2line::Context::from_dwarf(dwarf).map_err(|e| e.to_string())?;
        Ok(Dwarf { ctx, names: HashMap::new(), files: HashMap::new() })
    }

    /// The inline chain at `vaddr`, innermost first; empty when DWARF does
    /// not cover the address.
    pub(crate) fn frames(&mut self, vaddr: u64, names: Names) -> Vec<Frame> {
        let mut out = Vec::new();
        let Ok(mut iter) = self.ctx.find_frames(vaddr).skip_all_loads() else { return out };
        // A corrupt chain could in principle be long: cap it.
        while out.len() < 256 {
            let Ok(Some(frame)) = iter.next() else { break };
            let function = frame
                .function
                .as_ref()
                .and_then(|f| f.raw_name().ok())
                .map(|raw| intern(&mut self.names, &raw, |raw| Arc::from(shown(raw, names))));
            let location = frame.location.and_then(|l| {
                let file = intern(&mut self.files, l.file?, |f| Arc::from(f));
                Some(SourceLocation { file, line: l.line, column: l.column })
            });
            out.push(Frame { function, location });
        }
        out
    }
}
