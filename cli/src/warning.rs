//! The libraries' warnings ([`tbrw_query::Warning`]) on standard error,
//! one `tbrw: warning: ...` line each, escaped, with the command line's
//! hints added (the libraries name no option).

use std::io::Write;

use tbrw_query::Warning;
use tbrw_query::{Unknown, UnusableModule, UnusableModules};

/// Writes `warnings`. A failed write of a warning does not stop the
/// command: its output matters more.
pub fn show(warnings: &[Warning], err: &mut dyn Write) {
    for w in warnings {
        // Labels, paths and reasons come from files: escaped.
        let _ = writeln!(err, "tbrw: warning: {}", tbrw::text::Escaped(&in_options(w)));
    }
}

/// A warning's line with the options that change it.
pub fn in_options(w: &Warning) -> String {
    match w {
        Warning::ModuleUnusable(m) => module(m),
        Warning::ModulesUnusable(s) => format!("{s}; {}", summary_hint(s)),
        w => w.to_string(),
    }
}

/// One module's line: a perf map refused names the option that takes it.
fn module(m: &UnusableModule) -> String {
    let hint = match m.why {
        Unknown::LinkRefused { .. } => " (--trust-jit-maps follows it)",
        Unknown::Untrusted { .. } => " (--trust-jit-maps uses it)",
        _ => "",
    };
    format!("{}: {}{hint}; {}", m.module, m.why, m.effect)
}

/// Where to point for files not found or of other builds, and `--verbose`.
fn summary_hint(s: &UnusableModules) -> &'static str {
    if s.not_found() {
        "--symfs or --search-path to point at them; --verbose lists them"
    } else if s.other_builds() {
        "--symfs or --debug-dir to point at the profiled ones; --verbose lists them"
    } else {
        "--verbose lists them"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing(module: &str) -> UnusableModule {
        let why = Unknown::NotFound { tried: vec![module.into()] };
        UnusableModule { module: module.into(), why, effect: "its samples are reported unresolved" }
    }

    #[test]
    fn the_command_adds_its_hints() {
        let two = UnusableModules {
            kind: "file not found",
            modules: vec![missing("/a/x.so"), missing("/b/y.so")],
            effect: "e",
        };
        assert_eq!(
            in_options(&Warning::ModulesUnusable(two)),
            "2 modules' files not found, e.g. x.so, y.so; --symfs or --search-path to point at them; --verbose lists them"
        );
        let link = UnusableModule { why: Unknown::LinkRefused { path: "/tmp/perf-1.map".into() }, ..missing("m") };
        assert_eq!(
            in_options(&Warning::ModuleUnusable(link)),
            "m: cannot read /tmp/perf-1.map: a symbolic link, not followed (--trust-jit-maps follows it); \
             its samples are reported unresolved"
        );
        let mut err = Vec::new();
        show(&[Warning::StoredSymbols { problem: "a\x1b.tb5: stored symbols: short".into() }], &mut err);
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "tbrw: warning: a\\x1b.tb5: stored symbols: short; they are not used\n"
        );
    }
}
