//! The GNU build id (`NT_GNU_BUILD_ID`) of each mapped file, read when the
//! module is first seen, so that a symbolizer can tell the file it finds
//! later from the one that ran (a rebuilt binary at the same path).
//!
//! The file is opened through `/proc/<pid>/map_files/<start>-<end>`, which
//! is the mapped file itself even when the path now names another file or
//! none. The kernel lets only a caller with `CAP_CHECKPOINT_RESTORE` (or
//! `CAP_SYS_ADMIN`) open those links; without it the path is opened and used
//! only when its device and inode are those `maps` gives for the mapping.
//! A build id that cannot be read from the very file that was mapped is not
//! recorded: none is better than a wrong one.
//!
//! Only the note is read (program headers, then note segments; the section
//! headers when no segment has it), through `object`'s read cache: a large
//! binary costs a few small reads, not its size.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::read::ReadCache;
use object::{Endianness, ReadRef};

use crate::procfs::Mapping;

/// Notes larger than this are not read: a build id note is 36 bytes, and a
/// damaged header must not make the sampler read (or allocate) gigabytes.
const MAX_NOTE_BYTES: u64 = 1 << 20;

/// A file as `maps` names it: its device (major, minor) and inode.
type FileKey = ((u32, u32), u64);

/// The build ids read so far, by the (device, inode) of the mapped file: a
/// library mapped in many processes, or in several segments, is read once.
#[derive(Debug, Default)]
pub struct BuildIds {
    cache: HashMap<FileKey, Option<Vec<u8>>>,
    /// Files whose build id could not be read, and why (for the summary).
    pub problems: Vec<String>,
}

impl BuildIds {
    /// The build id of the file that `m` (a mapping of process `pid`) maps;
    /// `None` for pseudo mappings, files without the note, and files that
    /// cannot be read as the mapped one.
    pub fn of(&mut self, pid: i32, m: &Mapping) -> Option<Vec<u8>> {
        if !m.path.starts_with('/') || m.inode == 0 {
            return None;
        }
        let key = (m.dev, m.inode);
        if let Some(id) = self.cache.get(&key) {
            return id.clone();
        }
        let id = match open_mapped(pid, m).and_then(|f| read_build_id(f).map_err(|e| format!("{}: {e}", m.path))) {
            Ok(id) => id,
            Err(why) => {
                if self.problems.len() < 8 {
                    self.problems.push(why);
                }
                None
            }
        };
        self.cache.insert(key, id.clone());
        id
    }
}

/// Opens the file `m` maps: through `map_files`, else by path when the path
/// still names that file.
fn open_mapped(pid: i32, m: &Mapping) -> Result<File, String> {
    if let Ok(f) = File::open(format!("/proc/{pid}/map_files/{:x}-{:x}", m.start, m.end)) {
        return Ok(f);
    }
    let f = File::open(&m.path).map_err(|e| format!("{}: {e}", m.path))?;
    let md = f.metadata().map_err(|e| format!("{}: {e}", m.path))?;
    let dev = (libc::major(md.dev()), libc::minor(md.dev()));
    if (dev, md.ino()) != (m.dev, m.inode) {
        return Err(format!(
            "{}: the file at this path is not the one mapped (replaced since it was loaded); no build id recorded",
            m.path
        ));
    }
    Ok(f)
}

/// The GNU build id note of an ELF file; `Ok(None)` when it has none.
pub fn read_build_id(file: File) -> Result<Option<Vec<u8>>, String> {
    let cache = ReadCache::new(file);
    let data = &cache;
    // Anything executable may be mapped (a script's interpreter is, but
    // not the script): no ELF magic, no note.
    if data.read_bytes_at(0, 4).ok() != Some(&elf::ELFMAG[..]) {
        return Ok(None);
    }
    match object::FileKind::parse(data).map_err(|e| e.to_string())? {
        object::FileKind::Elf32 => note::<elf::FileHeader32<Endianness>>(data),
        object::FileKind::Elf64 => note::<elf::FileHeader64<Endianness>>(data),
        _ => Ok(None),
    }
    .map_err(|e| format!("not a readable ELF file: {e}"))
}

fn note<H: FileHeader<Endian = Endianness>>(data: &ReadCache<File>) -> object::read::Result<Option<Vec<u8>>> {
    let header = H::parse(data)?;
    let endian = header.endian()?;
    let is_build_id = |name: &[u8], kind: elf::NoteType| name == elf::ELF_NOTE_GNU && kind == elf::NT_GNU_BUILD_ID;
    for seg in header.program_headers(endian, data)? {
        if seg.p_type(endian) != elf::PT_NOTE || seg.p_filesz(endian).into() > MAX_NOTE_BYTES {
            continue;
        }
        if let Some(mut notes) = seg.notes(endian, data)? {
            while let Some(n) = notes.next()? {
                if is_build_id(n.name(), n.n_type(endian)) {
                    return Ok(Some(n.desc().to_vec()));
                }
            }
        }
    }
    // A file without program headers (a separate debug file, say) may
    // still have the note as a section.
    for sec in header.sections(endian, data)?.iter() {
        if sec.sh_type(endian) != elf::SHT_NOTE || sec.sh_size(endian).into() > MAX_NOTE_BYTES {
            continue;
        }
        if let Some(mut notes) = sec.notes(endian, data)? {
            while let Some(n) = notes.next()? {
                if is_build_id(n.name(), n.n_type(endian)) {
                    return Ok(Some(n.desc().to_vec()));
                }
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The build id `file` prints for the running test binary (the linker
    /// adds one by default on Linux), compared with what is read here.
    #[test]
    fn own_build_id_and_the_maps_path() {
        let exe = std::env::current_exe().unwrap();
        let id = read_build_id(File::open(&exe).unwrap()).unwrap();
        let pid = std::process::id() as i32;
        let maps = crate::procfs::read_maps(pid).unwrap();
        let m = maps.iter().find(|m| m.path == exe.to_str().unwrap()).expect("the test binary is mapped");
        let mut ids = BuildIds::default();
        assert_eq!(ids.of(pid, m), id);
        assert_eq!(ids.cache.len(), 1);
        // A mapping whose inode is not the file's: map_files still opens the
        // mapped file; the path alone would be refused.
        let other = Mapping { inode: m.inode + 1, start: 1, end: 2, ..m.clone() };
        assert!(open_mapped(pid, &other).unwrap_err().contains("not the one mapped"));
        assert_eq!(ids.of(0, &Mapping { path: "[vdso]".into(), ..m.clone() }), None);
    }

    /// A build id chosen at link time is the one read back.
    #[test]
    fn the_linked_note() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("a.c");
        std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
        let bin = dir.path().join("a");
        let ok = std::process::Command::new("cc")
            .arg(&src)
            .arg("-o")
            .arg(&bin)
            .arg("-Wl,--build-id=0x0123456789abcdef")
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("SKIPPED: no C compiler that takes --build-id");
            return;
        }
        let id = read_build_id(File::open(&bin).unwrap()).unwrap();
        assert_eq!(id, Some(vec![0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]));
    }

    #[test]
    fn files_that_are_not_elf() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"#!/bin/sh\necho\n").unwrap();
        assert_eq!(read_build_id(File::open(&p).unwrap()), Ok(None));
        // An ELF header cut short: an error, not a panic.
        std::fs::write(&p, b"\x7fELF\x02\x01\x01\0\0\0").unwrap();
        assert!(read_build_id(File::open(&p).unwrap()).is_err());
    }
}
