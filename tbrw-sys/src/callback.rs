//! Which calling convention an enumeration's callback argument follows.
//!
//! The guide's examples pass a callback function's name: our header's
//! callback types are function types, so `TBRW_DATA_CALLBACK *` is a
//! pointer to the function. Intel's `tbrw_types.h` declares them as
//! pointer types, so the same prototype takes a pointer to a function
//! pointer: Intel's library calls `(*callback_func)(...)`, and programs
//! built for it (Intel's own `sfdump5` among them) pass the address of a
//! variable holding the function. Both arrive here as one address, and
//! [`code_address`] tells them apart by where it lies. Code is what lies in
//! a mapping that is executable and not writable:
//!
//! 1. when the address is aligned for a pointer and the word there can be
//!    read and is an address of code: a pointer to the function (the
//!    variable lives on the stack, the heap, in data or read-only data);
//! 2. else, when the address is code: the function itself;
//! 3. else it is neither: `TBRW_BAD_PARAMETER`, never a jump.
//!
//! Memory that is writable and executable is not taken for code: valgrind
//! gives the program's heap such a mapping, and a pointer into the heap
//! must be refused, not called. A callback generated at run time into such
//! memory is therefore refused too (generators that keep a writable view
//! and an executable one, as current libffi does, are fine).
//!
//! Rule 1 comes first because a pointer variable may lie in an executable
//! mapping: old linkers put read-only data (a `const` callback variable) in
//! the segment of the code. The other way round, a function would have to
//! begin with eight bytes that form the address of code (two zero bytes
//! after a mapped address) to be taken for a pointer; function prologues
//! do not. The word is read directly when the address is code (readable
//! and not writable: it stays as it was), otherwise with `process_vm_readv`
//! on this process, which fails (`EFAULT`) instead of faulting on memory
//! that is not mapped; where that call is refused (seccomp), only a word
//! the mapping table calls readable is read.
//!
//! The mappings come from `/proc/self/maps`, read once and kept; they are
//! read again when glibc's counts of loaded and unloaded shared objects
//! (`dlpi_adds`, `dlpi_subs`) changed since (a `dlopen` or `dlclose`), and
//! when an argument fits no rule (code mapped since by other means). Without
//! `/proc`, the loaded objects' segments stand in (then code generated at
//! run time is not known). The cost is one lookup per enumerate call, not
//! per callback: a binary search of the table and a `dl_iterate_phdr` that
//! stops at the first object, plus one system call for a pointer argument
//! (README, "The C API", gives the figures).

use std::os::raw::{c_int, c_void};
use std::sync::RwLock;

use tb5::codes::{TBRW_BAD_PARAMETER, TBRW_UNEXPECTED_NULL_PTR};

use crate::handle::{Code, R};

/// One mapping of the process's address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mapping {
    start: usize,
    /// Exclusive.
    end: usize,
    read: bool,
    write: bool,
    exec: bool,
}

/// The mappings, sorted by start, and when they were read.
#[derive(Debug, Default)]
struct Table {
    maps: Vec<Mapping>,
    /// [`object_counts`] when the table was read.
    objects: (u64, u64),
}

impl Table {
    fn read(objects: (u64, u64)) -> Table {
        let mut maps = match std::fs::read_to_string("/proc/self/maps") {
            Ok(text) => parse_maps(&text),
            Err(_) => Vec::new(),
        };
        if maps.is_empty() {
            maps = loaded_segments();
        }
        maps.sort_unstable_by_key(|m| m.start);
        Table { maps, objects }
    }

    fn find(&self, addr: usize) -> Option<&Mapping> {
        let i = self.maps.partition_point(|m| m.start <= addr);
        let m = self.maps.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    /// Whether `addr` is code: in an executable mapping that is not writable.
    fn code(&self, addr: usize) -> bool {
        self.find(addr).is_some_and(|m| m.exec && !m.write)
    }

    /// Whether `len` bytes from `addr` lie in readable mappings.
    fn readable(&self, addr: usize, len: usize) -> bool {
        let Some(last) = addr.checked_add(len - 1) else { return false };
        let mut at = addr;
        while let Some(m) = self.find(at).filter(|m| m.read) {
            if last < m.end {
                return true;
            }
            at = m.end;
        }
        false
    }
}

/// The lines of `/proc/self/maps`: `start-end perms offset dev inode [path]`.
fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_ascii_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let perms = fields.next()?.as_bytes();
            Some(Mapping {
                start: usize::from_str_radix(start, 16).ok()?,
                end: usize::from_str_radix(end, 16).ok()?,
                read: perms.first() == Some(&b'r'),
                write: perms.get(1) == Some(&b'w'),
                exec: perms.get(2) == Some(&b'x'),
            })
        })
        .collect()
}

/// The loaded segments of every shared object and the program (without
/// `/proc`): the code of every object, not what was mapped by other means.
fn loaded_segments() -> Vec<Mapping> {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr hands a valid info whose dlpi_phdr has
        // dlpi_phnum entries; `data` is the Vec below, borrowed for the call.
        unsafe {
            let out = &mut *(data as *mut Vec<Mapping>);
            let info = &*info;
            for i in 0..usize::from(info.dlpi_phnum) {
                let ph = &*info.dlpi_phdr.add(i);
                if ph.p_type != libc::PT_LOAD {
                    continue;
                }
                let start = (info.dlpi_addr as usize).wrapping_add(ph.p_vaddr as usize);
                out.push(Mapping {
                    start,
                    end: start.saturating_add(ph.p_memsz as usize),
                    read: ph.p_flags & libc::PF_R != 0,
                    write: ph.p_flags & libc::PF_W != 0,
                    exec: ph.p_flags & libc::PF_X != 0,
                });
            }
        }
        0
    }
    let mut out: Vec<Mapping> = Vec::new();
    // SAFETY: the callback only pushes to `out`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut Vec<Mapping> as *mut c_void) };
    out
}

/// glibc's counts of shared objects loaded and unloaded so far: they change
/// with every `dlopen` and `dlclose` (0, 0 where the C library has none).
fn object_counts() -> (u64, u64) {
    unsafe extern "C" fn first(info: *mut libc::dl_phdr_info, size: usize, data: *mut c_void) -> c_int {
        // Older C libraries hand a shorter structure without the counts.
        if size >= std::mem::offset_of!(libc::dl_phdr_info, dlpi_subs) + size_of::<u64>() {
            // SAFETY: `info` is valid and long enough (checked); `data` is the tuple below.
            unsafe { *(data as *mut (u64, u64)) = ((*info).dlpi_adds, (*info).dlpi_subs) };
        }
        1 // the first object carries the counts: stop there
    }
    let mut counts = (0u64, 0u64);
    // SAFETY: the callback only writes `counts`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first), &mut counts as *mut (u64, u64) as *mut c_void) };
    counts
}

/// The word at `addr`, when it can be read without a fault.
fn read_word(addr: usize, table: &Table) -> Option<usize> {
    if table.find(addr).is_some_and(|m| m.read && m.exec && !m.write) && table.readable(addr, size_of::<usize>()) {
        // SAFETY: code is mapped readable and never written (see `code`).
        return Some(unsafe { (addr as *const usize).read_volatile() });
    }
    let mut word = 0usize;
    let local = libc::iovec { iov_base: &mut word as *mut usize as *mut c_void, iov_len: size_of::<usize>() };
    let remote = libc::iovec { iov_base: addr as *mut c_void, iov_len: size_of::<usize>() };
    // SAFETY: the kernel writes at most the 8 bytes of `word` and reports
    // unmapped remote memory as EFAULT instead of faulting.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n == size_of::<usize>() as isize {
        return Some(word);
    }
    if n >= 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT) {
        return None;
    }
    // The call is refused here: read only what the table says is mapped readable.
    // SAFETY: the 8 aligned bytes lie in readable mappings of this process.
    table.readable(addr, size_of::<usize>()).then(|| unsafe { (addr as *const usize).read_volatile() })
}

/// The code address `addr` stands for by the rules of the module doc, or
/// `None`; `read` reads the word at an address, if it can.
fn classify(addr: usize, table: &Table, read: impl Fn(usize) -> Option<usize>) -> Option<usize> {
    if addr.is_multiple_of(align_of::<usize>()) {
        if let Some(target) = read(addr).filter(|&w| table.code(w)) {
            return Some(target);
        }
    }
    table.code(addr).then_some(addr)
}

/// The mapping table, read at the first call.
static TABLE: RwLock<Option<Table>> = RwLock::new(None);

/// The address of the function a callback argument names: the argument
/// itself or the function pointer it points to (see the module doc).
/// `TBRW_UNEXPECTED_NULL_PTR` for NULL, `TBRW_BAD_PARAMETER` for neither.
pub(crate) fn code_address(arg: *const c_void) -> R<usize> {
    let addr = arg as usize;
    if addr == 0 {
        return Err(Code(TBRW_UNEXPECTED_NULL_PTR));
    }
    // A successful call leaves errno alone (tbrw.h): a failed read on the
    // way to a match (or glibc's own calls) must not show.
    let saved = errno();
    let objects = object_counts();
    let cached = {
        let table = TABLE.read().unwrap_or_else(|p| p.into_inner());
        table.as_ref().filter(|t| t.objects == objects).and_then(|t| classify(addr, t, |a| read_word(a, t)))
    };
    let found = cached.or_else(|| {
        let fresh = Table::read(objects);
        let found = classify(addr, &fresh, |a| read_word(a, &fresh));
        *TABLE.write().unwrap_or_else(|p| p.into_inner()) = Some(fresh);
        found
    });
    set_errno(saved);
    found.ok_or(Code(TBRW_BAD_PARAMETER))
}

fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() }
}

fn set_errno(v: i32) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = v };
}

/// The callback `arg` names, as the function pointer type `F`.
///
/// # Safety
/// `F` is an `extern "C" fn` type whose signature is the one the C header
/// gives this callback: the caller promised that much by passing it.
pub(crate) unsafe fn resolve<F: Copy>(arg: *const c_void) -> R<F> {
    const { assert!(size_of::<F>() == size_of::<usize>(), "F must be a function pointer") };
    let addr = code_address(arg)?;
    // SAFETY: `addr` lies in executable memory and is what the caller's
    // function pointer holds (directly or behind the pointer it passed).
    Ok(unsafe { std::mem::transmute_copy::<usize, F>(&addr) })
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn probe(x: u32) -> u32 {
        x + 1
    }

    fn table(maps: &[(usize, usize, &str)]) -> Table {
        let maps = maps
            .iter()
            .map(|&(start, end, p)| Mapping {
                start,
                end,
                read: p.contains('r'),
                write: p.contains('w'),
                exec: p.contains('x'),
            })
            .collect();
        Table { maps, objects: (0, 0) }
    }

    #[test]
    fn maps_lines_are_parsed() {
        let text = "55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 123 /usr/bin/x\n\
                    55d0c0a02000-55d0c0a05000 r-xp 00002000 08:01 123 /usr/bin/x\n\
                    7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0 [stack]\n\
                    ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n\
                    garbage\n";
        let m = parse_maps(text);
        assert_eq!(m.len(), 4);
        assert_eq!(m[1], Mapping { start: 0x55d0c0a02000, end: 0x55d0c0a05000, read: true, write: false, exec: true });
        assert!(m[2].read && m[2].write && !m[2].exec);
        assert!(!m[3].read && m[3].exec);
    }

    #[test]
    fn the_rules_in_order() {
        // code r-x, data rw-, read-only data r--, rwx (valgrind's heap, an executable stack), unmapped between
        let t = table(&[
            (0x1000, 0x2000, "r-x"),
            (0x3000, 0x4000, "rw-"),
            (0x4000, 0x5000, "r--"),
            (0x5000, 0x6000, "rwx"),
        ]);
        // Memory that holds `w` wherever the table says it is readable.
        let tr = &t;
        let words = |w: usize| move |a: usize| tr.readable(a, 8).then_some(w);
        let none = |_| None;
        // 1: a variable holding a code address, in data, read-only data, rwx memory, or code.
        assert_eq!(classify(0x3008, &t, words(0x1500)), Some(0x1500));
        assert_eq!(classify(0x4008, &t, words(0x1500)), Some(0x1500));
        assert_eq!(classify(0x5008, &t, words(0x1500)), Some(0x1500));
        assert_eq!(classify(0x1008, &t, words(0x1500)), Some(0x1500));
        // ... but not a misaligned one, nor one holding data, nor an unreadable one.
        assert_eq!(classify(0x3004, &t, words(0x1500)), None);
        assert_eq!(classify(0x3008, &t, words(0x3100)), None);
        assert_eq!(classify(0x3008, &t, words(0)), None);
        assert_eq!(classify(0x3008, &t, none), None);
        // ... nor one holding an address of writable executable memory.
        assert_eq!(classify(0x3008, &t, words(0x5800)), None);
        // 2: code whose bytes are no code address is called as it is.
        assert_eq!(classify(0x1008, &t, words(0xe589_4855_fa1e_0ff3)), Some(0x1008));
        assert_eq!(classify(0x1003, &t, words(0x1500)), Some(0x1003));
        assert_eq!(classify(0x1008, &t, none), Some(0x1008));
        // 3: writable executable memory is not code; nor is unmapped memory.
        assert_eq!(classify(0x5008, &t, words(0x9999)), None);
        assert_eq!(classify(0x5003, &t, words(0x1500)), None);
        assert_eq!(classify(0x2008, &t, words(0x1500)), None);
        assert_eq!(classify(0x7000, &t, words(0x1500)), None);
    }

    #[test]
    fn readable_ranges_may_span_adjacent_mappings() {
        let t = table(&[(0x1000, 0x2000, "r--"), (0x2000, 0x3000, "rw-"), (0x3000, 0x4000, "---")]);
        assert!(t.readable(0x1ffc, 8));
        assert!(t.readable(0x2ff8, 8));
        assert!(!t.readable(0x2ffc, 8));
        assert!(!t.readable(0x0ff8, 8));
        assert!(!t.readable(usize::MAX - 3, 8));
    }

    #[test]
    fn a_function_and_a_pointer_to_it_name_the_same_code() {
        let f: extern "C" fn(u32) -> u32 = probe;
        let direct = code_address(f as *const c_void).unwrap();
        assert_eq!(direct, f as usize);
        // The variable on the stack, on the heap, in a static.
        let on_stack = f;
        assert_eq!(code_address(&on_stack as *const _ as *const c_void).unwrap(), direct);
        let on_heap = Box::new(f);
        assert_eq!(code_address(&*on_heap as *const _ as *const c_void).unwrap(), direct);
        static IN_DATA: extern "C" fn(u32) -> u32 = probe;
        assert_eq!(code_address(&IN_DATA as *const _ as *const c_void).unwrap(), direct);
        // SAFETY: the signature is probe's.
        let g: extern "C" fn(u32) -> u32 = unsafe { resolve(&on_stack as *const _ as *const c_void) }.unwrap();
        assert_eq!(g(41), 42);
    }

    #[test]
    fn neither_is_refused_without_touching_it() {
        let zeros = vec![0usize; 64];
        assert_eq!(code_address(zeros.as_ptr() as *const c_void), Err(Code(TBRW_BAD_PARAMETER)));
        let data = [0x1234usize; 4];
        assert_eq!(code_address(data.as_ptr() as *const c_void), Err(Code(TBRW_BAD_PARAMETER)));
        // Unmapped: the first page, and a token-like address.
        assert_eq!(code_address(16 as *const c_void), Err(Code(TBRW_BAD_PARAMETER)));
        assert_eq!(code_address(0x7B50_0000_0010 as *const c_void), Err(Code(TBRW_BAD_PARAMETER)));
        assert_eq!(code_address(std::ptr::null()), Err(Code(TBRW_UNEXPECTED_NULL_PTR)));
    }

    #[test]
    fn a_success_leaves_errno_alone() {
        let f: extern "C" fn(u32) -> u32 = probe;
        let zeros = [0usize; 2];
        let _ = code_address(zeros.as_ptr() as *const c_void); // a failed read on the way
        set_errno(libc::EINTR);
        code_address(&f as *const _ as *const c_void).unwrap();
        assert_eq!(errno(), libc::EINTR);
    }

    /// The cost per call of each form (README, "The C API"):
    /// `cargo test -p tbrw-sys --release --lib callback::tests::cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement"]
    fn cost() {
        let f: extern "C" fn(u32) -> u32 = probe;
        let on_stack = f;
        let n = 1_000_000u32;
        let time = |arg: *const c_void| {
            let t = std::time::Instant::now();
            for _ in 0..n {
                assert_eq!(code_address(std::hint::black_box(arg)), Ok(f as usize));
            }
            t.elapsed().as_nanos() as f64 / f64::from(n)
        };
        let direct = time(f as *const c_void);
        let pointer = time(&on_stack as *const _ as *const c_void);
        let t = std::time::Instant::now();
        let table = Table::read(object_counts());
        let read = t.elapsed();
        eprintln!(
            "function: {direct:.0} ns, pointer to it: {pointer:.0} ns per call; reading the table ({} mappings): {read:?}",
            table.maps.len()
        );
    }

    #[test]
    fn the_loaded_objects_stand_in_for_proc() {
        let segs = loaded_segments();
        let f: extern "C" fn(u32) -> u32 = probe;
        let mut t = Table { maps: segs, objects: (0, 0) };
        t.maps.sort_unstable_by_key(|m| m.start);
        assert!(t.code(f as usize), "this test's own code is in a loaded segment");
        assert_eq!(classify(f as usize, &t, |_| None), Some(f as usize));
    }
}
