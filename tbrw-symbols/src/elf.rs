//! One ELF file opened for symbolization: the shared bytes ([`Bytes`], mapped
//! or owned), the header facts the search and the address translation need
//! ([`ElfFile`], [`Layout`], [`Segment`], [`BuildId`]), and why a file could
//! not be used ([`OpenError`]). Parses nothing beyond headers, notes and the
//! section table: symbol tables live in `symtab`, DWARF in `dwarf`.

use std::fmt;
use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use object::{Object, ObjectKind, ObjectSection, ObjectSegment, SectionFlags, SectionKind, SegmentFlags};

/// A GNU build id (the `NT_GNU_BUILD_ID` note), as raw bytes.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BuildId(pub Vec<u8>);

impl BuildId {
    /// Parses the usual lower- or upper-case hex spelling; `None` when `hex` is
    /// empty, has an odd length or a non-hex digit.
    pub fn from_hex(hex: &str) -> Option<BuildId> {
        if hex.is_empty() || !hex.len().is_multiple_of(2) {
            return None;
        }
        let digits = hex.as_bytes();
        let mut out = Vec::with_capacity(digits.len() / 2);
        for pair in digits.chunks_exact(2) {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            out.push((hi * 16 + lo) as u8);
        }
        Some(BuildId(out))
    }

    /// The lower-case hex spelling, as `readelf -n` and `.build-id/` paths use it.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Display for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BuildId({})", self.to_hex())
    }
}

/// The ELF file type, as far as address translation cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfKind {
    /// `ET_EXEC`: linked at fixed addresses, a sampled pc is already a vaddr.
    Executable,
    /// `ET_DYN`: a shared library or a PIE executable, relocated as a whole.
    Dynamic,
    /// Anything else (relocatable objects, core files): treated like `ET_DYN`.
    Other,
}

/// One `PT_LOAD` program header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_offset`.
    pub offset: u64,
    /// `p_filesz`.
    pub filesz: u64,
    /// `p_align`.
    pub align: u64,
    /// Whether `PF_X` is set.
    pub executable: bool,
}

/// The loadable layout of an ELF file: its type and `PT_LOAD` segments in
/// program-header order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `e_type`.
    pub kind: ElfKind,
    /// The `PT_LOAD` segments.
    pub segments: Vec<Segment>,
    /// Whether `p_offset` is the binary's. `objcopy --only-keep-debug`
    /// rewrites it (the contents are gone), so a debug file standing in for
    /// a missing binary cannot translate file offsets exactly.
    pub offsets_known: bool,
}

impl Layout {
    /// Whether `vaddr` falls inside the memory image of a `PT_LOAD` segment.
    pub fn contains(&self, vaddr: u64) -> bool {
        self.segments.iter().any(|s| vaddr >= s.vaddr && vaddr - s.vaddr < s.memsz)
    }
}

/// Bytes shared between the parsed tables and the DWARF reader: a read-only
/// mapping of a whole file, or an owned buffer (a decompressed section).
#[derive(Clone)]
pub(crate) struct Bytes(Arc<Backing>);

enum Backing {
    Map(Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    pub(crate) fn owned(bytes: Vec<u8>) -> Bytes {
        Bytes(Arc::new(Backing::Owned(bytes)))
    }

    fn map(file: &File) -> io::Result<Bytes> {
        // SAFETY: the mapping is read-only. Like every profiler reading
        // binaries in place, this relies on nobody truncating the file while
        // it is mapped; the alternative (reading whole debug files into
        // memory) costs gigabytes on large programs.
        let map = unsafe { Mmap::map(file)? };
        Ok(Bytes(Arc::new(Backing::Map(map))))
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &*self.0 {
            Backing::Map(m) => m,
            Backing::Owned(v) => v,
        }
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({} bytes)", self.len())
    }
}

// SAFETY: the bytes behind the `Arc` are either a mapping, whose address is
// fixed until it is dropped, or a `Vec` that is never touched again after
// construction; clones share the same allocation, so the slice a clone
// dereferences to is the same and does not move.
unsafe impl stable_deref_trait::StableDeref for Bytes {}
// SAFETY: as above; cloning only bumps the reference count.
unsafe impl stable_deref_trait::CloneStableDeref for Bytes {}

/// Why a candidate file could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OpenError {
    NotFound,
    Directory,
    Unreadable(String),
    Malformed(String),
}

/// An ELF file that parsed: its bytes and the facts read from its headers.
#[derive(Debug)]
pub(crate) struct ElfFile {
    pub(crate) path: Arc<Path>,
    pub(crate) bytes: Bytes,
    pub(crate) build_id: Option<BuildId>,
    pub(crate) debuglink: Option<(String, u32)>,
    pub(crate) layout: Layout,
    /// A non-empty `.debug_info` with file contents (not `SHT_NOBITS`).
    pub(crate) has_dwarf: bool,
    /// A `.symtab` with at least one entry.
    pub(crate) has_symtab: bool,
}

impl ElfFile {
    /// A file known only from symbols stored with a profile: its layout,
    /// no bytes. Its path says so.
    pub(crate) fn stored(label: &str, layout: Layout, build_id: Option<BuildId>) -> ElfFile {
        ElfFile {
            path: Arc::from(Path::new(&format!("{label} (stored symbols)"))),
            bytes: Bytes::owned(Vec::new()),
            build_id,
            debuglink: None,
            layout,
            has_dwarf: false,
            has_symtab: true,
        }
    }

    /// Opens, maps and checks `path`.
    pub(crate) fn open(path: &Path) -> Result<ElfFile, OpenError> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(OpenError::NotFound),
            Err(e) if e.raw_os_error() == Some(20) => return Err(OpenError::NotFound), // ENOTDIR in the path
            Err(e) => return Err(OpenError::Unreadable(e.to_string())),
        };
        if meta.is_dir() {
            return Err(OpenError::Directory);
        }
        if !meta.is_file() {
            return Err(OpenError::Malformed("not a regular file".into()));
        }
        if meta.len() == 0 {
            return Err(OpenError::Malformed("empty file".into()));
        }
        let file = File::open(path).map_err(|e| OpenError::Unreadable(e.to_string()))?;
        let bytes = Bytes::map(&file).map_err(|e| OpenError::Unreadable(e.to_string()))?;
        Self::parse(Arc::from(path), bytes)
    }

    pub(crate) fn parse(path: Arc<Path>, bytes: Bytes) -> Result<ElfFile, OpenError> {
        if !bytes.starts_with(b"\x7fELF") {
            return Err(OpenError::Malformed("not an ELF file".into()));
        }
        let obj =
            object::File::parse(&*bytes).map_err(|e| OpenError::Malformed(format!("truncated or corrupt: {e}")))?;
        let len = bytes.len() as u64;
        for section in obj.sections() {
            // Sections without file contents (`SHT_NOBITS`) have no range; a
            // range past the end means the file was cut short.
            if let Some((offset, size)) = section.file_range() {
                if offset.checked_add(size).is_none_or(|end| end > len) {
                    let name = section.name().unwrap_or("?");
                    return Err(OpenError::Malformed(format!(
                        "truncated: section {name} ends past the end of the {len}-byte file"
                    )));
                }
            }
        }
        let kind = match obj.kind() {
            ObjectKind::Executable => ElfKind::Executable,
            ObjectKind::Dynamic => ElfKind::Dynamic,
            _ => ElfKind::Other,
        };
        let segments: Vec<Segment> = obj
            .segments()
            .map(|s| {
                let (offset, filesz) = s.file_range();
                let (executable, align) = match s.flags() {
                    SegmentFlags::Elf { p_flags, .. } => (p_flags.contains(object::elf::PF_X), s.align()),
                    _ => (false, s.align()),
                };
                Segment { vaddr: s.address(), memsz: s.size(), offset, filesz, align, executable }
            })
            .collect();
        let build_id = obj.build_id().ok().flatten().filter(|b| !b.is_empty()).map(|b| BuildId(b.to_vec()));
        let debuglink = obj
            .gnu_debuglink()
            .ok()
            .flatten()
            .and_then(|(name, crc)| std::str::from_utf8(name).ok().map(|n| (n.to_owned(), crc)))
            .filter(|(name, _)| !name.is_empty() && !name.contains('/'));
        let has_dwarf =
            obj.section_by_name(".debug_info").is_some_and(|s| s.file_range().is_some_and(|(_, size)| size > 0));
        let has_symtab = obj.symbols().next().is_some();
        let offsets_known = !segments.iter().any(|s| s.executable && s.memsz > 0 && s.filesz == 0);
        let layout = Layout { kind, segments, offsets_known };
        Ok(ElfFile { path, bytes, build_id, debuglink, layout, has_dwarf, has_symtab })
    }

    /// Parses the headers again (cheap: no table is read until asked for).
    pub(crate) fn object(&self) -> Option<object::File<'_>> {
        object::File::parse(&*self.bytes).ok()
    }

    /// The CRC-32 that `.gnu_debuglink` records for a debug file.
    pub(crate) fn crc32(&self) -> u32 {
        crc32fast::hash(&self.bytes)
    }
}

/// Whether a section holds code (symbols elsewhere are not functions). The
/// flag, not the kind: in a debug file `.text` is `SHT_NOBITS`, which `object`
/// reports as uninitialized data.
pub(crate) fn is_code(section: &object::Section<'_, '_>) -> bool {
    match section.flags() {
        SectionFlags::Elf { sh_flags, .. } => sh_flags.contains(object::elf::SHF_EXECINSTR),
        _ => section.kind() == SectionKind::Text,
    }
}

/// Path of a build-id file under a debug directory: `.build-id/xx/rest` plus `suffix`.
pub(crate) fn build_id_path(dir: &Path, id: &BuildId, suffix: &str) -> Option<PathBuf> {
    let hex = id.to_hex();
    if hex.len() < 3 {
        return None;
    }
    Some(dir.join(".build-id").join(&hex[..2]).join(format!("{}{suffix}", &hex[2..])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_id_hex_round_trip() {
        let id = BuildId::from_hex("0aFF10").unwrap();
        assert_eq!(id.0, vec![0x0a, 0xff, 0x10]);
        assert_eq!(id.to_hex(), "0aff10");
        assert_eq!(BuildId::from_hex("abc"), None);
        assert_eq!(BuildId::from_hex("zz"), None);
        assert_eq!(BuildId::from_hex(""), None);
    }

    #[test]
    fn build_id_paths_split_after_two_digits() {
        let id = BuildId::from_hex("abcdef01").unwrap();
        assert_eq!(
            build_id_path(Path::new("/usr/lib/debug"), &id, ".debug").unwrap(),
            Path::new("/usr/lib/debug/.build-id/ab/cdef01.debug")
        );
    }

    #[test]
    fn garbage_and_truncated_headers_are_malformed() {
        let path: Arc<Path> = Arc::from(Path::new("x"));
        let garbage = ElfFile::parse(path.clone(), Bytes::owned(vec![0x55; 4096])).unwrap_err();
        assert_eq!(garbage, OpenError::Malformed("not an ELF file".into()));
        let mut header = b"\x7fELF\x02\x01\x01".to_vec();
        header.resize(20, 0);
        assert!(matches!(ElfFile::parse(path, Bytes::owned(header)), Err(OpenError::Malformed(_))));
    }
}
