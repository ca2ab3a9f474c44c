//! The layering of docs/LAYOUT.md, checked on the sources: no module of the
//! library crates and the command line imports, through a chain, a module
//! that imports it, and no crate depends on one the table does not allow.
//! Module paths are read from `crate::`, `super::` and `self::` paths as
//! text (`use` lines and paths in code alike), each resolved to the
//! deepest module file that exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A file's module path inside its crate (`report/functions.rs` is
/// `["report", "functions"]`; `mod.rs`, `lib.rs`, `main.rs` name their folder).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts
}

/// The modules of `files` each module refers to (itself and its ancestors left out).
fn graph(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges = BTreeMap::new();
    for f in &files {
        let me = module_of(src, f);
        let text = std::fs::read_to_string(f).unwrap();
        // Test modules may import anything of their parent; comments name
        // modules without importing them.
        let text = text.split("#[cfg(test)]").next().unwrap();
        let text: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
        let mut to = BTreeSet::new();
        for (at, _) in
            text.match_indices("crate::").chain(text.match_indices("super::")).chain(text.match_indices("self::"))
        {
            let before = &text[..at];
            if before.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let path: String =
                text[at..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let mut words: Vec<&str> = path.split("::").filter(|w| !w.is_empty()).collect();
            let mut base: Vec<String> = match words.first().copied() {
                Some("crate") => Vec::new(),
                // `super` of a `mod.rs` file is its folder's parent.
                Some("super") => me[..me.len().saturating_sub(1)].to_vec(),
                _ => me.clone(),
            };
            words.remove(0);
            while words.first() == Some(&"super") {
                words.remove(0);
                base.pop();
            }
            // The deepest module the path names.
            let mut found = None;
            for w in words {
                base.push(w.to_owned());
                if modules.contains(&base) {
                    found = Some(base.clone());
                } else {
                    break;
                }
            }
            if let Some(m) = found.filter(|m| !me.starts_with(m) && !m.starts_with(&me)) {
                to.insert(m);
            }
        }
        edges.insert(me, to);
    }
    edges
}

/// A cycle of `edges`, if there is one.
fn cycle(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        n: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|x| x == m).unwrap();
                    return Some(stack[from..].to_vec());
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_module_imports_one_that_imports_it() {
    for krate in [
        "tbrw",
        "tbrw-sys",
        "tbrw-elf-profile",
        "tbrw-schema",
        "tbrw-import",
        "tbrw-query",
        "tbrw-export",
        "tbrw-symbols",
        "tbrw-bind",
        "tbrw-output",
        "cli",
        "sampler",
    ] {
        let g = graph(&root().join(krate).join("src"));
        if let Some(c) = cycle(&g) {
            let names: Vec<String> = c.iter().map(|m| m.join("::")).collect();
            panic!("{krate}: modules import each other: {}", names.join(" -> "));
        }
    }
}

#[test]
fn the_checker_finds_a_cycle() {
    let a = vec!["a".to_owned()];
    let b = vec!["b".to_owned()];
    let mut g = BTreeMap::new();
    g.insert(a.clone(), BTreeSet::from([b.clone()]));
    g.insert(b.clone(), BTreeSet::new());
    assert!(cycle(&g).is_none());
    g.insert(b.clone(), BTreeSet::from([a.clone()]));
    assert_eq!(cycle(&g), Some(vec![a, b]));
}

#[test]
fn crates_import_only_what_the_layout_allows() {
    let allowed: &[(&str, &[&str])] = &[
        ("tbrw-bind", &[]),
        ("tbrw-symbols", &[]),
        ("tbrw-output", &[]),
        ("tbrw-elf-profile", &[]),
        ("tbrw", &["tbrw-bind", "tbrw-output"]),
        ("tbrw-schema", &["tbrw", "tbrw-elf-profile"]),
        ("tbrw-import", &["tbrw", "tbrw-schema", "tbrw-elf-profile", "tbrw-symbols"]),
        // Readers and the collector share the vocabulary, never an importer.
        ("tbrw-query", &["tbrw", "tbrw-schema", "tbrw-symbols"]),
        ("tbrw-export", &["tbrw", "tbrw-schema", "tbrw-elf-profile", "tbrw-query", "tbrw-symbols", "tbrw-output"]),
        ("tbrw-sys", &["tbrw"]),
        ("sampler", &["tbrw", "tbrw-output", "tbrw-schema", "tbrw-elf-profile", "tbrw-symbols"]),
    ];
    for (krate, may) in allowed {
        for name in workspace_deps(krate) {
            assert!(may.contains(&name), "{krate} depends on {name}, which docs/LAYOUT.md does not allow");
        }
    }
}

const WORKSPACE: [&str; 13] = [
    "tbrw",
    "tbrw-bind",
    "tbrw-output",
    "tbrw-symbols",
    "tbrw-sys",
    "tbrw-elf-profile",
    "tbrw-schema",
    "tbrw-import",
    "tbrw-query",
    "tbrw-export",
    "sampler",
    "cli",
    "examples",
];

/// The workspace crates in `krate`'s `[dependencies]` (tests and benches
/// may use more), optional ones included.
fn workspace_deps(krate: &str) -> Vec<&'static str> {
    let manifest = std::fs::read_to_string(root().join(krate).join("Cargo.toml")).unwrap();
    let deps = manifest.split("[dependencies]").nth(1).unwrap_or("").split("\n[").next().unwrap();
    let mut out = Vec::new();
    for line in deps.lines() {
        let name = line.split(['=', ' ']).next().unwrap().trim();
        let name = if line.contains("package = \"tbrw\"") { "tbrw" } else { name };
        if let Some(w) = WORKSPACE.iter().find(|w| **w == name) {
            out.push(*w);
        }
    }
    out
}

/// The readers of TB5 and the collector share the vocabulary crate
/// (`tbrw-schema`), and reach no importer through any chain of crates.
#[test]
fn readers_and_the_collector_reach_no_importer() {
    for krate in ["tbrw-query", "tbrw-export", "sampler"] {
        let mut seen = vec![krate];
        let mut todo = vec![krate];
        while let Some(k) = todo.pop() {
            for d in workspace_deps(k) {
                assert_ne!(d, "tbrw-import", "{krate} reaches tbrw-import (through {k})");
                if !seen.contains(&d) {
                    seen.push(d);
                    todo.push(d);
                }
            }
        }
        assert!(seen.contains(&"tbrw-schema"), "{krate} does not use tbrw-schema");
    }
}
