//! Finding the files of a module: the ELF file itself (its path, under
//! `symfs`, by build id in the debug directories, by base name in the search
//! paths) and its separate debug file (by build id, by `.gnu_debuglink`).
//! The order and the checks are those of docs/SYMBOLS.md.

use std::path::{Component, Path, PathBuf};

use crate::elf::{build_id_path, BuildId, ElfFile, OpenError};
use crate::frame::Unknown;
use crate::Config;

/// The files found for one module.
pub(crate) struct Located {
    /// The file whose program headers place the module (it may itself be a
    /// debug file found by build id when the binary is nowhere).
    pub(crate) main: ElfFile,
    /// A separate debug file matching `main`, when `main` lacks DWARF or `.symtab`.
    pub(crate) debug: Option<ElfFile>,
}

/// Whether a module label names no file: kernel-made maps (`[vdso]`,
/// `[heap]`), anonymous memory, memfd and anon inodes.
pub(crate) fn is_pseudo(label: &str) -> bool {
    label.is_empty()
        || label.starts_with('[')
        || label.starts_with("//anon")
        || label.starts_with("anon_inode:")
        || label.starts_with("/memfd:")
        || label.starts_with("/dev/zero")
        || label.starts_with("/SYSV")
}

/// `path` re-rooted under `root` (`/usr/lib/x` under `/sysroot` is
/// `/sysroot/usr/lib/x`); `..` components are dropped so the result stays
/// under `root`.
pub(crate) fn under(root: &Path, path: &Path) -> PathBuf {
    let mut out = root.to_path_buf();
    for c in path.components() {
        if let Component::Normal(part) = c {
            out.push(part);
        }
    }
    out
}

/// The debug directories, each under `symfs` first when one is set.
fn debug_dirs(config: &Config) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for d in &config.debug_dirs {
        if let Some(root) = &config.symfs {
            dirs.push(under(root, d));
        }
        dirs.push(d.clone());
    }
    dirs
}

fn push_unique(list: &mut Vec<PathBuf>, p: PathBuf) {
    if !list.contains(&p) {
        list.push(p);
    }
}

/// Finds the module labelled `label` (its path as the profile recorded it),
/// and its debug file.
pub(crate) fn locate(label: &str, expected: Option<&BuildId>, config: &Config) -> Result<Located, Unknown> {
    let label = label.strip_suffix(" (deleted)").unwrap_or(label);
    if is_pseudo(label) {
        return Err(Unknown::NotAFile);
    }
    let path = Path::new(label);
    let dirs = debug_dirs(config);
    let mut candidates = Vec::new();
    // With a symfs the user says the target's files live there: a host file of
    // the same path is a different build more often than not.
    if let Some(root) = &config.symfs {
        push_unique(&mut candidates, under(root, path));
    }
    push_unique(&mut candidates, path.to_path_buf());
    if let Some(id) = expected {
        for d in &dirs {
            // `.build-id/xx/yyyy` is usually a link to the binary itself,
            // `.build-id/xx/yyyy.debug` the debug file (its program headers
            // are kept, so it can place the module too).
            candidates.extend(build_id_path(d, id, ""));
            candidates.extend(build_id_path(d, id, ".debug"));
        }
    }
    if let Some(name) = path.file_name() {
        for s in &config.search_paths {
            push_unique(&mut candidates, s.join(name));
            if path.is_relative() && path.components().count() > 1 {
                push_unique(&mut candidates, s.join(path));
            }
        }
    }

    let mut tried = Vec::new();
    let mut first_error = None;
    for candidate in candidates {
        match ElfFile::open(&candidate) {
            Ok(file) => {
                if let Some(want) = expected {
                    if file.build_id.as_ref() != Some(want) {
                        first_error.get_or_insert(Unknown::BuildIdMismatch {
                            path: candidate,
                            expected: want.clone(),
                            found: file.build_id.clone(),
                        });
                        continue;
                    }
                }
                let debug =
                    if file.has_dwarf && file.has_symtab { None } else { find_debug(&file, path, expected, &dirs) };
                return Ok(Located { main: file, debug });
            }
            Err(OpenError::NotFound) => tried.push(candidate),
            Err(OpenError::Directory) => {
                first_error.get_or_insert(Unknown::Directory { path: candidate });
            }
            Err(OpenError::Unreadable(message)) => {
                first_error.get_or_insert(Unknown::Unreadable { path: candidate, message });
            }
            Err(OpenError::Malformed(message)) => {
                first_error.get_or_insert(Unknown::Malformed { path: candidate, message });
            }
        }
    }
    Err(first_error.unwrap_or(Unknown::NotFound { tried }))
}

/// A separate debug file for `main`, as gdb finds it: by build id under each
/// debug directory, then by `.gnu_debuglink` next to the file, in its
/// `.debug/` and under each debug directory plus the file's directory.
fn find_debug(main: &ElfFile, label: &Path, expected: Option<&BuildId>, dirs: &[PathBuf]) -> Option<ElfFile> {
    let id = main.build_id.as_ref().or(expected);
    let mut by_id = Vec::new();
    if let Some(id) = id {
        for d in dirs {
            by_id.extend(build_id_path(d, id, ".debug"));
        }
    }
    let mut by_link = Vec::new();
    if let Some((name, _)) = &main.debuglink {
        let mut parents: Vec<&Path> = main.path.parent().into_iter().collect();
        if let Some(p) = label.parent() {
            if !parents.contains(&p) {
                parents.push(p);
            }
        }
        for parent in &parents {
            push_unique(&mut by_link, parent.join(name));
            push_unique(&mut by_link, parent.join(".debug").join(name));
        }
        for d in dirs {
            for parent in &parents {
                push_unique(&mut by_link, under(d, parent).join(name));
            }
        }
    }
    let useful = |f: &ElfFile| f.has_dwarf || f.has_symtab;
    for candidate in by_id {
        if candidate.as_path() == &*main.path {
            continue;
        }
        if let Ok(f) = ElfFile::open(&candidate) {
            if f.build_id.as_ref() == id && useful(&f) {
                return Some(f);
            }
        }
    }
    let crc = main.debuglink.as_ref().map(|l| l.1);
    for candidate in by_link {
        if candidate.as_path() == &*main.path {
            continue;
        }
        if let Ok(f) = ElfFile::open(&candidate) {
            // Both build ids present: they decide. Otherwise the link's CRC does.
            let matches = match (&f.build_id, id) {
                (Some(a), Some(b)) => a == b,
                _ => Some(f.crc32()) == crc,
            };
            if matches && useful(&f) {
                return Some(f);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_keeps_paths_inside_the_root() {
        assert_eq!(under(Path::new("/sys"), Path::new("/usr/lib/x.so")), Path::new("/sys/usr/lib/x.so"));
        assert_eq!(under(Path::new("/sys"), Path::new("../../etc/x")), Path::new("/sys/etc/x"));
        assert_eq!(under(Path::new("r"), Path::new("a/b")), Path::new("r/a/b"));
    }

    #[test]
    fn pseudo_labels() {
        for l in ["", "[vdso]", "[heap]", "//anon", "anon_inode:[perf_event]", "/memfd:jit (deleted)"] {
            assert!(is_pseudo(l), "{l}");
        }
        assert!(!is_pseudo("/usr/lib/libc.so.6"));
        assert!(!is_pseudo("libfoo.so"));
    }
}
