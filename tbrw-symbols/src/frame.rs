//! What symbolizing one address yields: [`Symbolized`] (function, offset,
//! source position, inline chain, the file used), its [`Frame`]s and
//! [`SourceLocation`]s, and, when something is missing, the [`Unknown`]
//! reason with its display form.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::elf::BuildId;

/// A position in a source file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceLocation {
    /// The file, joined with the compilation directory as DWARF records it.
    pub file: Arc<str>,
    /// The line (`None`: DWARF names the file only).
    pub line: Option<u32>,
    /// The column, when the compiler recorded one (`Some(0)`: the left edge).
    pub column: Option<u32>,
}

impl fmt::Display for SourceLocation {
    /// `file:line`, or `file` alone; the column is left out (alternate form
    /// `{:#}` adds it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let (true, Some(col)) = (f.alternate(), self.column) {
                write!(f, ":{col}")?;
            }
        }
        Ok(())
    }
}

/// One level of the inline chain at an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The function of this level (demangled when the symbolizer demangles).
    pub function: Option<Arc<str>>,
    /// Where in that function: for the innermost frame, the source line of the
    /// address itself; for each outer frame, the call site of the frame before.
    pub location: Option<SourceLocation>,
}

/// Why an address has no function name. Its `Display` names no option
/// of a front end: a caller that can change the outcome (trusting perf
/// maps, say) adds its own hint.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unknown {
    /// The address lies in no module the caller knows of.
    NoModule,
    /// A kernel address, and no kallsyms could be read (the reason says why).
    Kernel {
        /// Why there are no kernel symbols.
        reason: String,
    },
    /// The module's label names no file (`[vdso]`, `[heap]`, `//anon`, empty).
    NotAFile,
    /// No candidate file exists.
    NotFound {
        /// Every path tried, in order.
        tried: Vec<PathBuf>,
    },
    /// The path given (or found) is a directory.
    Directory {
        /// The directory.
        path: PathBuf,
    },
    /// The file exists but could not be opened or mapped.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// The file is not ELF, or is truncated or corrupt.
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A perf map reached through a symbolic link: not followed unless
    /// trusted (`Config::jit_maps`), so that a planted link cannot point
    /// the reader at another file.
    LinkRefused {
        /// The map's path (the link).
        path: PathBuf,
    },
    /// A perf map owned by a user other than the one reading it and root:
    /// not used unless trusted (`Config::jit_maps`), as perf refuses it.
    Untrusted {
        /// The map.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// The effective uid reading it.
        user: u32,
    },
    /// The profile recorded a build id and the only file found has another
    /// (or none): it is a different build and was not used.
    BuildIdMismatch {
        /// The file rejected.
        path: PathBuf,
        /// The build id the profile recorded.
        expected: BuildId,
        /// The file's own build id.
        found: Option<BuildId>,
    },
    /// The address, translated with the module's mapping, falls outside every
    /// `PT_LOAD` segment of the file (a wrong mapping, or a wrong file).
    OutsideSegments,
    /// The file has neither `.symtab`, `.dynsym` functions nor DWARF.
    NoSymbols,
    /// The file has symbols, but none covers the address (padding, the PLT
    /// header, code from a stripped local function).
    NoSymbolAt,
}

impl Unknown {
    /// A few words for labels (the details stay in [`Unknown`]'s `Display`).
    pub fn summary(&self) -> &'static str {
        match self {
            Unknown::NoModule => "no module",
            Unknown::Kernel { .. } => "no kernel symbols",
            Unknown::NotAFile => "not a file",
            Unknown::NotFound { .. } => "file not found",
            Unknown::Directory { .. } => "a directory, not a file",
            Unknown::Unreadable { .. } | Unknown::LinkRefused { .. } => "unreadable file",
            Unknown::Malformed { .. } => "not a valid ELF file",
            Unknown::Untrusted { .. } => "owned by another user",
            Unknown::BuildIdMismatch { .. } => "build id mismatch",
            Unknown::OutsideSegments => "address outside the file's segments",
            Unknown::NoSymbols => "no symbols",
            Unknown::NoSymbolAt => "no symbol at address",
        }
    }
}

impl fmt::Display for Unknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unknown::Kernel { reason } => write!(f, "no kernel symbols: {reason}"),
            Unknown::NotFound { tried } => {
                f.write_str("file not found (tried ")?;
                for (i, p) in tried.iter().enumerate() {
                    write!(f, "{}{}", if i > 0 { ", " } else { "" }, p.display())?;
                }
                f.write_str(")")
            }
            Unknown::Directory { path } => write!(f, "{} is a directory, not a file", path.display()),
            Unknown::Unreadable { path, message } => write!(f, "cannot read {}: {message}", path.display()),
            Unknown::LinkRefused { path } => {
                write!(f, "cannot read {}: a symbolic link, not followed", path.display())
            }
            Unknown::Malformed { path, message } => write!(f, "{} is not a valid ELF file: {message}", path.display()),
            Unknown::Untrusted { path, owner, user } => write!(
                f,
                "{} belongs to uid {owner}, neither this user (uid {user}) nor root: not trusted, as perf does not \
                 trust it",
                path.display()
            ),
            Unknown::BuildIdMismatch { path, expected, found } => {
                write!(f, "build id mismatch: the profile recorded {expected}, {} has ", path.display())?;
                match found {
                    Some(id) => write!(f, "{id}"),
                    None => f.write_str("none"),
                }
            }
            other => f.write_str(other.summary()),
        }
    }
}

impl std::error::Error for Unknown {}

/// The result of symbolizing one address of one module.
///
/// `function` and `offset` come from the symbol table (the function that
/// holds the code, as perf reports it); the source position and the inline
/// chain come from DWARF. Either side may be missing; when there is no
/// function at all, `unknown` says why.
/// `Symbolized::default()` is a result with nothing known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Symbolized {
    /// The module's label as given to the symbolizer (`None` for [`Unknown::NoModule`]).
    pub module: Option<Arc<str>>,
    /// The ELF virtual address the sampled address translated to.
    pub vaddr: Option<u64>,
    /// The file the names came from: the separate debug file when one was
    /// used, else the module's file (`/proc/kallsyms` or the given kallsyms
    /// file for the kernel).
    pub file_used: Option<Arc<Path>>,
    /// The function holding the address, demangled (from `.symtab`/`.dynsym`,
    /// else from the outermost DWARF frame).
    pub function: Option<Arc<str>>,
    /// The address's offset from the start of `function` (symbol tables only).
    pub offset: Option<u64>,
    /// The inline chain, innermost first; the last frame is the function the
    /// code was compiled into. Empty without DWARF for the address.
    pub frames: Vec<Frame>,
    /// Why `function` is `None`.
    pub unknown: Option<Unknown>,
}

impl Symbolized {
    pub(crate) fn missing(module: Option<Arc<str>>, vaddr: Option<u64>, why: Unknown) -> Symbolized {
        Symbolized {
            module,
            vaddr,
            file_used: None,
            function: None,
            offset: None,
            frames: Vec::new(),
            unknown: Some(why),
        }
    }

    /// The source position of the address itself (innermost frame).
    pub fn location(&self) -> Option<&SourceLocation> {
        self.frames.first()?.location.as_ref()
    }

    /// The source file of the address.
    pub fn file(&self) -> Option<&str> {
        self.location().map(|l| &*l.file)
    }

    /// The source line of the address.
    pub fn line(&self) -> Option<u32> {
        self.location()?.line
    }

    /// The inlined levels only (innermost first), without the function they
    /// were inlined into; empty when the address is not in inlined code.
    pub fn inlined(&self) -> &[Frame] {
        match self.frames.len() {
            0 => &[],
            n => &self.frames[..n - 1],
        }
    }

    /// The inline chain as frames of a stack: each function inlined at the
    /// address, outermost first, with the source position in it (the
    /// innermost's is the address's own, each other's the call site of the
    /// next); empty when the address is not in inlined code or DWARF does
    /// not cover it. The function the code was compiled into, the
    /// symbol's, is not in it.
    pub fn inline_chain(&self) -> impl Iterator<Item = &Frame> {
        self.inlined().iter().rev()
    }

    /// The module's file name without directories, for labels.
    pub fn module_name(&self) -> &str {
        let label = self.module.as_deref().unwrap_or("");
        label.rsplit('/').find(|s| !s.is_empty()).unwrap_or(label)
    }

    /// A label to group samples by function: the function's name, or for
    /// unknown functions the bracketed form [`Symbolized`]'s `Display` prints
    /// (`[unknown in libfoo.so: no symbols]`, `[no module]`, `[kernel]`).
    pub fn function_label(&self) -> String {
        match &self.function {
            Some(f) => f.to_string(),
            None => self.unknown_label(),
        }
    }

    /// A label to group samples by source line: `file:line` of the address, or
    /// `[unknown in libfoo.so: no line information]` without DWARF for it.
    pub fn line_label(&self) -> String {
        match self.location() {
            Some(loc) => loc.to_string(),
            None if self.unknown.is_some() => self.unknown_label(),
            None => format!("[unknown in {}: no line information]", self.module_name()),
        }
    }

    fn unknown_label(&self) -> String {
        match &self.unknown {
            Some(Unknown::NoModule) => "[no module]".into(),
            Some(Unknown::Kernel { .. }) => "[kernel]".into(),
            Some(why) => format!("[unknown in {}: {}]", self.module_name(), why.summary()),
            None => format!("[unknown in {}]", self.module_name()),
        }
    }
}

impl fmt::Display for Symbolized {
    /// Known function: `function+0x1a`, then ` at file:line` when DWARF has the
    /// address; inlined code reads innermost first,
    /// `inner at a.h:3 inlined into outer+0x1a at a.c:10`.
    /// Unknown: `[unknown in libfoo.so: no symbols]`, `[no module]`, `[kernel]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(function) = &self.function else { return f.write_str(&self.unknown_label()) };
        let offset = |f: &mut fmt::Formatter<'_>| match self.offset {
            Some(off) => write!(f, "+{off:#x}"),
            None => Ok(()),
        };
        if self.frames.is_empty() {
            f.write_str(function)?;
            return offset(f);
        }
        for (i, frame) in self.frames.iter().enumerate() {
            let outer = i + 1 == self.frames.len();
            if i > 0 {
                f.write_str(" inlined into ")?;
            }
            if outer {
                f.write_str(function)?;
                offset(f)?;
            } else {
                f.write_str(frame.function.as_deref().unwrap_or("??"))?;
            }
            if let Some(loc) = &frame.location {
                write!(f, " at {loc}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(file: &str, line: u32) -> Option<SourceLocation> {
        Some(SourceLocation { file: file.into(), line: Some(line), column: Some(7) })
    }

    #[test]
    fn display_forms() {
        let mut s = Symbolized::missing(Some("/usr/lib/libfoo.so".into()), Some(0x10), Unknown::NoSymbols);
        assert_eq!(s.to_string(), "[unknown in libfoo.so: no symbols]");
        assert_eq!(s.function_label(), "[unknown in libfoo.so: no symbols]");
        assert_eq!(Symbolized::missing(None, None, Unknown::NoModule).to_string(), "[no module]");
        let k = Symbolized::missing(Some("[kernel]".into()), None, Unknown::Kernel { reason: "x".into() });
        assert_eq!(k.to_string(), "[kernel]");

        s.unknown = None;
        s.function = Some("outer".into());
        s.offset = Some(0x1a);
        assert_eq!(s.to_string(), "outer+0x1a");
        assert_eq!(s.line_label(), "[unknown in libfoo.so: no line information]");
        s.frames = vec![
            Frame { function: Some("inner".into()), location: loc("a.h", 3) },
            Frame { function: Some("outer".into()), location: loc("a.c", 10) },
        ];
        assert_eq!(s.to_string(), "inner at a.h:3 inlined into outer+0x1a at a.c:10");
        assert_eq!(s.line_label(), "a.h:3");
        assert_eq!(format!("{:#}", s.location().unwrap()), "a.h:3:7");
        assert_eq!(s.inlined().len(), 1);
        assert_eq!(s.line(), Some(3));
        assert_eq!(s.file(), Some("a.h"));
    }

    #[test]
    fn unknown_details() {
        let id = BuildId(vec![1, 2]);
        let e = Unknown::BuildIdMismatch { path: "/x".into(), expected: id, found: None };
        assert_eq!(e.to_string(), "build id mismatch: the profile recorded 0102, /x has none");
        let nf = Unknown::NotFound { tried: vec!["/a".into(), "/b".into()] };
        assert_eq!(nf.to_string(), "file not found (tried /a, /b)");
    }

    /// Every reason and warning this crate gives, in its own words: none
    /// names an option of a front end (`--trust-jit-maps`), which would be
    /// wrong for a caller that is not the command line.
    #[test]
    fn no_reason_names_a_command_line_option() {
        use crate::perf_map::MapLimit;
        use crate::sections::SectionProblem;
        let path = || std::path::PathBuf::from("/tmp/perf-7.map");
        let reasons = [
            Unknown::NoModule,
            Unknown::Kernel { reason: "no kallsyms".into() },
            Unknown::NotAFile,
            Unknown::NotFound { tried: vec![path()] },
            Unknown::Directory { path: path() },
            Unknown::Unreadable { path: path(), message: "denied".into() },
            Unknown::LinkRefused { path: path() },
            Unknown::Malformed { path: path(), message: "short".into() },
            Unknown::Untrusted { path: path(), owner: 65534, user: 1000 },
            Unknown::BuildIdMismatch { path: path(), expected: BuildId(vec![1]), found: None },
            Unknown::OutsideSegments,
            Unknown::NoSymbols,
            Unknown::NoSymbolAt,
        ];
        let mut said: Vec<String> = reasons.iter().map(|u| u.to_string()).collect();
        said.extend(reasons.iter().map(|u| crate::unwind::UnwindError::File(u.clone()).to_string()));
        said.push(crate::Warning::PerfMapCut { path: path(), limit: MapLimit::Lines(4), symbols: 3 }.to_string());
        let problem = SectionProblem::TooLarge { format: "zlib", compressed: 1, claimed: 1 << 40, bound: 1 << 30 };
        said.push(crate::Warning::SectionSkipped { path: path(), section: ".debug_info".into(), problem }.to_string());
        for s in said {
            assert!(!s.contains("--"), "{s}");
        }
    }
}
