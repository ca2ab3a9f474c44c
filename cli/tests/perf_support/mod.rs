//! What the perf tests share: perf's own counts (`perf report`, `perf
//! script`, `perf evlist`), the same counts from an imported TB5 file, and
//! recording with perf. Every comparison is per event, perf run with
//! `--no-branch-stack --no-group --no-itrace` so that it counts the
//! samples the file holds, each once per event.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Counts per event name, then per key.
pub type PerEvent = BTreeMap<String, BTreeMap<String, u64>>;

pub fn tbrw() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tbrw"))
}

/// Whether `perf` runs here; a note when it does not.
pub fn have_perf() -> bool {
    match Command::new("perf").arg("--version").output() {
        Ok(o) if o.status.success() => true,
        _ => {
            eprintln!("note: skipped: perf is not installed");
            false
        }
    }
}

/// perf's options for counting what the file holds, once per event.
const FAIR: [&str; 3] = ["--no-branch-stack", "--no-group", "--no-itrace"];

/// An event name as both sides are compared: perf's modifiers (`:u`,
/// `:HG`) dropped.
pub fn event_key(name: &str) -> String {
    name.split(':').next().unwrap_or(name).to_owned()
}

/// `perf report --sort KEY` as event → key → samples (`dso`: the module's
/// name; `pid`: the thread id, perf's "pid" key being the thread;
/// `dso,sym`: "DSO\tSYMBOL" with perf's `[.] `/`[k] ` prefix dropped), or
/// `None` when perf cannot read the file (with its message).
pub fn perf_counts(data: &Path, key: &str) -> Result<PerEvent, String> {
    let run = || {
        let o = Command::new("perf")
            .args(["report", "--stdio", "--no-children", "-g", "none", "-t", "\t"])
            .args(FAIR)
            .arg("-i")
            .arg(data)
            .args(["--sort", key, "-F", &format!("sample,{key}")])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&o.stderr);
        if !o.status.success() || stderr.contains("Error:") {
            let tail: Vec<&str> = stdout.lines().rev().take(5).collect();
            return Err(format!("{} (stderr: {stderr:?}; last lines of stdout: {tail:?})", o.status));
        }
        Ok(stdout)
    };
    // perf is the reference here, not what is tested: once (CI, under
    // load) its report of a piped recording ended in failure with nothing
    // on stderr, and the same file read fine afterwards. A second failure
    // fails the test.
    let stdout = run().or_else(|first| {
        eprintln!("note: perf report -i {} failed ({first}); run again", data.display());
        run().map_err(|second| format!("{first}; again: {second}"))
    })?;
    let mut all = PerEvent::new();
    let mut event = String::new();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("# Samples: ") {
            event = event_key(rest.split('\'').nth(1).unwrap_or(""));
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').map(str::trim).collect();
        let Some(n) = cols.first().and_then(|n| n.parse::<u64>().ok()) else { continue };
        let k = match key {
            "pid" | "tid" => cols[1].split(':').next().unwrap_or("").to_owned(),
            "dso,sym" => {
                let sym = cols.get(2).copied().unwrap_or("");
                let sym = sym.get(4..).filter(|_| sym.starts_with('[')).unwrap_or(sym);
                format!("{}\t{sym}", cols[1])
            }
            _ => cols[1].to_owned(),
        };
        *all.entry(event.clone()).or_default().entry(k).or_default() += n;
    }
    Ok(all)
}

/// Samples per event and process id, from `perf script -F pid,event`.
pub fn perf_script_pids(data: &Path) -> PerEvent {
    let o = Command::new("perf").args(["script", "--no-itrace", "-F", "pid,event", "-i"]).arg(data).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut m = PerEvent::new();
    for line in String::from_utf8_lossy(&o.stdout).lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (pid, event) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let event = event_key(event.trim().trim_end_matches(':'));
        *m.entry(event).or_default().entry(pid.to_owned()).or_default() += 1;
    }
    m
}

/// perf's names of the file's events, in the file's order (`perf evlist`).
pub fn perf_event_names(data: &Path) -> Vec<String> {
    let o = Command::new("perf").args(["evlist", "-i"]).arg(data).output().unwrap();
    String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.starts_with('#')).map(event_key).collect()
}

/// `tbrw import perf DATA -o DATA.tb5`, checked with `tbrw verify`; its
/// standard error.
pub fn import(data: &Path) -> (PathBuf, String) {
    let out = data.with_extension("tb5");
    let o = tbrw().args(["import", "perf"]).arg(data).arg("-o").arg(&out).arg("--force").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = tbrw().arg("verify").arg(&out).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    (out, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// What [`tbrw_counts`] counts by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// The module's name (`[unknown]` where none covers the address).
    Module,
    /// The thread id.
    Thread,
    /// The process id.
    Process,
}

/// The imported file's counts per event and `key`, from its records and
/// the in-memory bind; events named by perf's names of the file's
/// events in order (`names`, from [`perf_event_names`]; the TB5 event id
/// is the attribute's index), so that events a pipe file leaves unnamed
/// compare too.
pub fn tbrw_counts(file: &Path, key: Key, names: &[String]) -> PerEvent {
    use tbrw::*;
    let f = Tb5File::open(file).unwrap();
    let s = f.stream(0).unwrap();
    let layout = s.layout().unwrap().unwrap();
    let ev = layout.find(0x4402, None);
    let pid = layout.find(desc_type::PID, None).unwrap();
    let tid = layout.find(desc_type::TID, None).unwrap();
    let modules: Vec<Module> = f.modules().unwrap().unwrap().iter().map(|m| f.resolve(m.unwrap()).unwrap()).collect();
    let bind = tbrw::bind::bind_in_memory(&f, 0).unwrap();
    let data = s.data().unwrap().unwrap();
    let u32_at = |rec: &[u8], at: usize| u32::from_le_bytes(rec[at..at + 4].try_into().unwrap());
    let mut all = PerEvent::new();
    for (rec, b) in data.records().zip(&bind.to_vec()) {
        let id = ev.map_or(0, |e| u32_at(rec, e.offset as usize));
        let name = names.get(id as usize).cloned().unwrap_or_else(|| format!("event{id}"));
        let k = match key {
            Key::Module => {
                modules.get(b.module_index as usize).and_then(|m| m.name.clone()).unwrap_or("[unknown]".into())
            }
            Key::Thread => u32_at(rec, tid.offset as usize).to_string(),
            Key::Process => u32_at(rec, pid.offset as usize).to_string(),
        };
        *all.entry(name).or_default().entry(k).or_default() += 1;
    }
    all
}

/// `tbrw report --by module,function --json` as "MODULE\tFUNCTION" →
/// samples, spelled as perf spells them: an unknown function as perf's
/// address-less `[unknown]`-style rows cannot be matched, so both sides'
/// unknown functions become `?`.
pub fn tbrw_functions(file: &Path) -> BTreeMap<String, u64> {
    let o = tbrw().arg("report").arg(file).args(["--by", "module,function", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut m = BTreeMap::new();
    for row in v["rows"].as_array().unwrap() {
        let parts = row["key"]["parts"].as_array().unwrap();
        let module = match &parts[0] {
            p if p["kind"] == "unknown_module" => "[unknown]".to_owned(),
            p => p["name"].as_str().unwrap_or("?").to_owned(),
        };
        let f = &parts[1];
        let function =
            if f["unknown"].is_null() { f["name"].as_str().unwrap_or("?").to_owned() } else { "?".to_owned() };
        *m.entry(format!("{module}\t{function}")).or_default() += row["samples"].as_u64().unwrap();
    }
    m
}

/// perf's `--sort dso,sym` rows of a single-event file as
/// [`tbrw_functions`] spells them: perf shows an unresolved address as
/// its hex value, which becomes `?`.
pub fn perf_functions(data: &Path) -> BTreeMap<String, u64> {
    let all = perf_counts(data, "dso,sym").unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    let mut m = BTreeMap::new();
    for (k, n) in all.into_values().next().unwrap() {
        let (dso, sym) = k.split_once('\t').unwrap();
        let sym = if sym.starts_with("0x") { "?" } else { sym };
        *m.entry(format!("{dso}\t{sym}")).or_default() += n;
    }
    m
}

/// A C program built in `dir` with `flags` (and `-lm -lpthread`), or
/// `None` (with a note) without a compiler.
pub fn build(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Option<PathBuf> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let ok = Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(["-lm", "-lpthread"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("note: skipped: cc cannot build the test program");
        return None;
    }
    Some(exe)
}

/// `perf record ARGS -o OUT COMMAND...`, or `None` (with a note) where perf
/// cannot record.
pub fn record(out: &Path, args: &[&str], command: &[&Path]) -> Option<PathBuf> {
    let r = Command::new("perf").args(["record", "-N"]).args(args).arg("-o").arg(out).args(command).output();
    match r {
        Ok(o) if o.status.success() && out.exists() => Some(out.to_path_buf()),
        Ok(o) => {
            eprintln!("note: skipped: perf record failed: {}", String::from_utf8_lossy(&o.stderr));
            None
        }
        Err(e) => {
            eprintln!("note: skipped: perf cannot run: {e}");
            None
        }
    }
}

/// Checks that the imported `data` gives perf's counts per event and
/// module, thread and process; the number of samples compared.
pub fn check_counts(data: &Path) -> u64 {
    let (tb5, _) = import(data);
    let theirs = perf_counts(data, "dso").unwrap_or_else(|e| panic!("perf cannot read {}: {e}", data.display()));
    let mut names = perf_event_names(data);
    if names.is_empty() || names.iter().any(|n| n == "unknown tracepoint") {
        // `perf evlist` names no event of a pipe file whose attributes
        // carry no ids, nor a tracepoint it would name from the tracing
        // data; its report does, in the file's order.
        names = theirs.keys().cloned().collect();
    }
    let total = theirs.values().flat_map(|m| m.values()).sum();
    assert_eq!(tbrw_counts(&tb5, Key::Module, &names), theirs, "{}: per module", data.display());
    // perf's `--sort pid` key is the thread ("tid:comm").
    assert_eq!(
        tbrw_counts(&tb5, Key::Thread, &names),
        perf_counts(data, "pid").unwrap(),
        "{}: per thread",
        data.display()
    );
    assert_eq!(tbrw_counts(&tb5, Key::Process, &names), perf_script_pids(data), "{}: per process", data.display());
    total
}

/// `perf report`'s events: each name (modifiers included) → samples,
/// the names from its headers ("# Samples: 10K of event 'cycles:HG'",
/// whose count is rounded), the counts from its rows.
pub fn perf_events(data: &Path) -> BTreeMap<String, u64> {
    let o = Command::new("perf")
        .args(["report", "--stdio", "--no-children", "--no-group", "--no-itrace", "--no-branch-stack", "-i"])
        .arg(data)
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("# Samples: ").map(|r| r.split('\'').nth(1).unwrap().to_owned()))
        .collect::<Vec<_>>();
    let counts = perf_counts(data, "pid").unwrap();
    names.into_iter().map(|n| (n.clone(), counts[&event_key(&n)].values().sum())).collect()
}

/// `tbrw report --by event`: each event's name → samples.
pub fn tbrw_events(tb5: &Path) -> BTreeMap<String, u64> {
    let o = tbrw().arg("report").arg(tb5).args(["--by", "event", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut m = BTreeMap::new();
    for row in v["rows"].as_array().unwrap() {
        *m.entry(row["key"]["name"].as_str().unwrap().to_owned()).or_default() += row["samples"].as_u64().unwrap();
    }
    m
}
