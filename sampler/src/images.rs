//! Modules no file holds, read from the traced process's memory: the
//! kernel's vDSO (`[vdso]`), whose functions (`__vdso_clock_gettime`...)
//! a program calls without a system call. Its image is read once a process
//! maps it (`process_vm_readv`, else `/proc/<pid>/mem`), parsed by
//! `tbrw_symbols::image::from_image` and kept once per distinct image, so
//! the recording can store its symbols (perf stores the vDSO in its
//! build-id cache for the same reason). Its build id goes into the
//! module's note, which is how the symbolizer finds the stored symbols.
//!
//! Imports `procfs`, `sys`.

use std::io::{Read, Seek, SeekFrom};

use tbrw_symbols::stored::StoredFile;

use crate::procfs::Mapping;
use crate::sys;

/// The largest image read: a vDSO is two to a few pages.
const MAX_IMAGE: u64 = 1 << 20;

/// The images seen in a run, and why one could not be used.
#[derive(Debug, Default)]
pub struct Images {
    /// Each distinct image and its stored symbols (`None`: not usable).
    seen: Vec<(Vec<u8>, Option<StoredFile>)>,
    /// What could not be read, said once each.
    pub problems: Vec<String>,
}

impl Images {
    /// Whether mapping `m` is one whose image is read from memory.
    pub fn wanted(m: &Mapping) -> bool {
        m.path == "[vdso]"
    }

    /// Reads the image of mapping `m` of process `pid`; its build id, when
    /// it parses and has one.
    pub fn of(&mut self, pid: i32, m: &Mapping) -> Option<Vec<u8>> {
        let len = m.end.checked_sub(m.start).filter(|&n| n > 0 && n <= MAX_IMAGE)? as usize;
        let mut image = vec![0u8; len];
        let read = sys::read_mem(pid as u32, m.start, &mut image)
            .ok()
            .filter(|&n| n == len)
            .or_else(|| read_proc_mem(pid, m.start, &mut image).ok());
        if read != Some(len) {
            let why = format!("{}: could not read its image from process {pid}'s memory", m.path);
            if !self.problems.contains(&why) {
                self.problems.push(why);
            }
            return None;
        }
        let known = match self.seen.iter().position(|(seen, _)| *seen == image) {
            Some(i) => i,
            None => {
                let parsed = tbrw_symbols::image::from_image(&m.path, &image);
                if let Err(why) = &parsed {
                    self.problems.push(format!("{}: its image does not give its symbols: {why}", m.path));
                }
                self.seen.push((image, parsed.ok()));
                self.seen.len() - 1
            }
        };
        self.seen[known].1.as_ref()?.build_id.as_ref().map(|b| b.0.clone())
    }

    /// The stored symbols of every usable image, for the recording.
    pub fn into_stored(self) -> Vec<StoredFile> {
        self.seen.into_iter().filter_map(|(_, f)| f).collect()
    }
}

/// Reads `buf.len()` bytes at `addr` of process `pid` through `/proc/<pid>/mem`.
fn read_proc_mem(pid: i32, addr: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut f = std::fs::File::open(format!("/proc/{pid}/mem"))?;
    f.seek(SeekFrom::Start(addr))?;
    f.read_exact(buf)?;
    Ok(buf.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's own vDSO, read as a tracee's is: its symbols (the
    /// clock functions) and its build id, one image kept for two reads.
    #[test]
    fn own_vdso() {
        let pid = std::process::id() as i32;
        let maps = crate::procfs::read_maps(pid).unwrap();
        let Some(vdso) = maps.iter().find(|m| Images::wanted(m)) else {
            eprintln!("SKIPPED: no [vdso] mapped here");
            return;
        };
        let mut images = Images::default();
        let id = images.of(pid, vdso);
        assert_eq!(images.of(pid, vdso), id);
        assert!(images.problems.is_empty(), "{:?}", images.problems);
        let files = images.into_stored();
        assert_eq!(files.len(), 1);
        let f = &files[0];
        assert_eq!(f.label, "[vdso]");
        assert_eq!(f.build_id.as_ref().map(|b| b.0.clone()), id);
        let names: Vec<&str> = f.symbols.iter().map(|s| s.name.as_str()).collect();
        assert!(names.iter().any(|n| n.contains("clock_gettime")), "{names:?}");
    }

    #[test]
    fn only_the_vdso_and_sane_sizes() {
        let m = |path: &str, len: u64| Mapping {
            start: 0x1000,
            end: 0x1000 + len,
            offset: 0,
            dev: (0, 0),
            inode: 0,
            path: path.into(),
        };
        assert!(Images::wanted(&m("[vdso]", 0x2000)));
        assert!(!Images::wanted(&m("[vsyscall]", 0x1000)) && !Images::wanted(&m("/usr/lib/libc.so.6", 0x1000)));
        let mut images = Images::default();
        assert_eq!(images.of(std::process::id() as i32, &m("[vdso]", 0)), None);
        assert_eq!(images.of(std::process::id() as i32, &m("[vdso]", MAX_IMAGE + 1)), None);
    }
}
