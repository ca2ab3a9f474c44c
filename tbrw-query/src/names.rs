//! How things are named in every output: modules, processes, threads, and
//! the unknowns. One spelling each, so that a report, annotate, a flame
//! graph, pprof, the Firefox Profiler and Parquet say the same:
//!
//! - a sample no module covers: [`NO_MODULE`], `[unknown]` (as perf says);
//! - a sample in a module where no function is known (no symbol at the
//!   address, the file missing or unusable): the module's file name in
//!   brackets, `[libfoo.so]` ([`in_module`]), as perf's flame-graph scripts
//!   and pprof show it; why is said once per module on standard error;
//! - a thread: `NAME (tid N)`, or `tid N` without a name; a process:
//!   `NAME (pid N)`, or `pid N`.
//!
//! The names are the files' own here; each text output escapes their
//! control characters as it writes them ([`tbrw::text`], [`clean`] for
//! folded stacks), and the other formats keep them exact.
//!
//! Imports nothing of the crate.

use tbrw::Module;

/// The label of samples no module covers.
pub const NO_MODULE: &str = "[unknown]";

/// The file name of a module record: its name, else its path's last part.
pub fn module_name(m: &Module) -> Option<String> {
    m.name.clone().or_else(|| m.path.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p).to_owned()))
}

/// A module record's label in stacks: its file name, or `[unnamed module]`.
pub fn module_label(m: &Module) -> String {
    module_name(m).unwrap_or_else(|| "[unnamed module]".to_owned())
}

/// The label of samples in module `module` (a file name) where no function
/// is known: `[module]` (a name in brackets already, `[vdso]` or
/// `[kernel.kallsyms]`, stays as it is).
pub fn in_module(module: &str) -> String {
    if module.starts_with('[') && module.ends_with(']') {
        module.to_owned()
    } else {
        format!("[{module}]")
    }
}

/// The label of samples where no function is known, in module `module`
/// (`None`: no module covers them).
pub fn unknown_function(module: Option<&str>) -> String {
    match module {
        Some(m) => in_module(m),
        None => NO_MODULE.to_owned(),
    }
}

/// A thread's label: `NAME (tid N)`, or `tid N`.
pub fn thread_label(tid: u32, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{n} (tid {tid})"),
        None => format!("tid {tid}"),
    }
}

/// A thread's label with its process: `NAME (tid N, pid P)`, or
/// `tid N (pid P)`; [`thread_label`] without a pid.
pub(crate) fn thread_label_in(tid: u32, pid: Option<u32>, name: Option<&str>) -> String {
    match (name, pid) {
        (_, None) => thread_label(tid, name),
        (Some(n), Some(p)) => format!("{n} (tid {tid}, pid {p})"),
        (None, Some(p)) => format!("tid {tid} (pid {p})"),
    }
}

/// A process's label: `NAME (pid N)`, or `pid N`.
pub fn process_label(pid: u32, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{n} (pid {pid})"),
        None => format!("pid {pid}"),
    }
}

/// A label safe in folded stacks and SVG text: `;` (the frame separator)
/// as `:`, as perf's and inferno's stack collapsers write it, and control
/// characters (line breaks among them) escaped as every text output
/// escapes them ([`tbrw::text`]).
pub fn clean(s: &str) -> String {
    tbrw::text::escape(s).replace(';', ":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_spelling_for_each_unknown() {
        assert_eq!(unknown_function(None), "[unknown]");
        assert_eq!(unknown_function(Some("liba.so")), "[liba.so]");
        assert_eq!(unknown_function(Some("[kernel.kallsyms]")), "[kernel.kallsyms]");
        assert_eq!(thread_label(7, Some("crunch-A")), "crunch-A (tid 7)");
        assert_eq!(thread_label(7, None), "tid 7");
        assert_eq!(thread_label_in(7, Some(3), Some("crunch-A")), "crunch-A (tid 7, pid 3)");
        assert_eq!(thread_label_in(7, Some(3), None), "tid 7 (pid 3)");
        assert_eq!(process_label(3, None), "pid 3");
        let m = Module { path: Some("/usr/lib/libc.so.6".into()), ..Module::default() };
        assert_eq!(module_name(&m).as_deref(), Some("libc.so.6"));
        assert_eq!(clean("a;b\nc\x1b[0m"), "a:b\\nc\\x1b[0m");
    }
}
