//! [`Warning`]: what a report, annotate or export could do only in part
//! (module files that cannot be symbolized, stored symbols that cannot be
//! read, files used in part), as values a caller collects in a
//! `Vec<Warning>` and shows as it likes. Their `Display` says what is
//! wrong in the library's words and names no option of a front end: the
//! `tbrw` command adds its own hints (`--symfs`, `--verbose`). Imports
//! `tbrw-symbols`' reasons only; no other module of the crate.

use std::fmt;

use tbrw_symbols::Unknown;

/// Module files named as examples in a [`UnusableModules`] summary, at most.
pub const EXAMPLES: usize = 3;

/// Something a result lacks, said once: one value per kind of reason,
/// never one per module unless the caller asked for the list
/// ([`crate::file_symbols::SymbolOptions::verbose`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// The symbols stored in the file (`tbrw symbolize`) could not be
    /// read: they are not used.
    StoredSymbols {
        /// Why, naming the file.
        problem: String,
    },
    /// One module's file cannot be symbolized.
    ModuleUnusable(UnusableModule),
    /// Two or more modules' files cannot be symbolized for one kind of
    /// reason: how many, the first few, and the whole list.
    ModulesUnusable(UnusableModules),
    /// A module's file used in part (a perf map cut at its bound, a
    /// compressed section skipped).
    Symbols(tbrw_symbols::Warning),
}

/// A module whose file cannot be symbolized, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnusableModule {
    /// The module's path (or name) as the profile records it.
    pub module: String,
    /// Why its file cannot be used.
    pub why: Unknown,
    /// What that means for the result ("its samples are reported unresolved").
    pub effect: &'static str,
}

/// Modules whose files cannot be symbolized for one kind of reason
/// ([`Unknown::summary`]), sorted by module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnusableModules {
    /// The kind of reason they share (`file not found`, `build id mismatch`, ...).
    pub kind: &'static str,
    /// Every module of the kind, with its own reason.
    pub modules: Vec<UnusableModule>,
    /// What that means for the result.
    pub effect: &'static str,
}

impl UnusableModules {
    /// How many modules.
    pub fn count(&self) -> usize {
        self.modules.len()
    }

    /// The base names of the first [`EXAMPLES`] modules.
    pub fn examples(&self) -> impl Iterator<Item = &str> {
        self.modules.iter().take(EXAMPLES).map(|m| base_name(&m.module))
    }

    /// Whether their files were not found (a root or a search path would find them).
    pub fn not_found(&self) -> bool {
        self.modules.first().is_some_and(|m| matches!(m.why, Unknown::NotFound { .. }))
    }

    /// Whether the files found are other builds than the profiled ones.
    pub fn other_builds(&self) -> bool {
        self.modules.first().is_some_and(|m| matches!(m.why, Unknown::BuildIdMismatch { .. }))
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::StoredSymbols { problem } => write!(f, "{problem}; they are not used"),
            Warning::ModuleUnusable(m) => m.fmt(f),
            Warning::ModulesUnusable(m) => m.fmt(f),
            Warning::Symbols(w) => w.fmt(f),
        }
    }
}

impl fmt::Display for UnusableModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}; {}", self.module, self.why, self.effect)
    }
}

/// `10,000 modules' files not found, e.g. libN.so, ...`: the count and
/// the first few, the effect when the kind does not say it.
impl fmt::Display for UnusableModules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = thousands(self.count());
        let more = if self.count() > EXAMPLES { ", ..." } else { "" };
        let named = format!("e.g. {}{more}", self.examples().collect::<Vec<_>>().join(", "));
        if self.not_found() {
            write!(f, "{n} modules' files not found, {named}")
        } else if self.other_builds() {
            write!(f, "{n} modules' files here are other builds than the profile's, {named}")
        } else {
            write!(f, "{n} modules' files: {}, {named}; {}", self.kind, self.effect)
        }
    }
}

/// A path's last part (the whole label when it has no `/`).
fn base_name(label: &str) -> &str {
    label.rsplit('/').next().filter(|b| !b.is_empty()).unwrap_or(label)
}

/// `n` with a comma every three digits (`10,000`).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing(module: &str) -> UnusableModule {
        let why = Unknown::NotFound { tried: vec![module.into()] };
        UnusableModule { module: module.into(), why, effect: "its samples are reported unresolved" }
    }

    #[test]
    fn a_summary_holds_the_count_the_examples_and_the_list() {
        let modules: Vec<UnusableModule> = (0..10_000).map(|i| missing(&format!("/lib/lib{i}.so"))).collect();
        let s = UnusableModules { kind: "file not found", modules, effect: "unused" };
        assert_eq!(s.count(), 10_000);
        assert_eq!(s.to_string(), "10,000 modules' files not found, e.g. lib0.so, lib1.so, lib2.so, ...");
        let mismatch = UnusableModule {
            module: "/a/libx.so".into(),
            why: Unknown::BuildIdMismatch {
                path: "/a/libx.so".into(),
                expected: tbrw_symbols::BuildId(vec![1]),
                found: None,
            },
            effect: "e",
        };
        let two = UnusableModules { kind: "build id mismatch", modules: vec![mismatch.clone(), mismatch], effect: "e" };
        assert_eq!(two.to_string(), "2 modules' files here are other builds than the profile's, e.g. libx.so, libx.so");
    }

    /// The library's words: no warning names an option of the command line.
    #[test]
    fn no_warning_names_a_command_line_option() {
        let one = missing("/lib/libc.so.6");
        let link = UnusableModule { why: Unknown::LinkRefused { path: "/tmp/perf-1.map".into() }, ..one.clone() };
        let untrusted = UnusableModule {
            why: Unknown::Untrusted { path: "/tmp/perf-1.map".into(), owner: 7, user: 8 },
            ..one.clone()
        };
        let other = UnusableModules { kind: "no symbols", modules: vec![one.clone(), one.clone()], effect: "e" };
        let all = [
            Warning::StoredSymbols { problem: "a.tb5: stored symbols: truncated".into() },
            Warning::ModuleUnusable(one.clone()),
            Warning::ModuleUnusable(link),
            Warning::ModuleUnusable(untrusted),
            Warning::ModulesUnusable(UnusableModules {
                kind: "file not found",
                modules: vec![one.clone(), one],
                effect: "e",
            }),
            Warning::ModulesUnusable(other),
        ];
        for w in all {
            assert!(!w.to_string().contains("--"), "{w}");
        }
    }
}
