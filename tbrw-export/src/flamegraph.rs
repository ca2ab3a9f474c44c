//! `tbrw export flamegraph`: a sample stream as folded stacks (one line per
//! distinct stack, `frame;frame;... count`) and as an interactive SVG flame
//! graph drawn by `inferno`. Frames, outermost first, follow `--by`:
//! process, thread, then per frame of the call chain (the sampled address
//! alone without one) a module frame where the chain enters another module,
//! the function when the module's symbols name it, the address when asked.

use std::collections::HashMap;
use std::io::Write;

use tbrw::Tb5File;

use crate::error::ExportError;
use tbrw_query::names::{self, clean};
use tbrw_query::report::{samples::by_list, By, Weight};
use tbrw_query::stacks::{stacks, Keep, Names, ViewOptions, LEVELS};

/// The flame graph's options beyond the filters.
#[derive(Clone, Debug)]
pub struct FlameOptions {
    /// The frames each stack gets, outermost first: process, thread, module,
    /// function, address.
    pub by: Vec<By>,
    /// Folded-stack text instead of the SVG.
    pub folded: bool,
    /// The SVG's title (default: the file and stream).
    pub title: Option<String>,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions { by: vec![By::Process, By::Module, By::Function], folded: false, title: None }
    }
}

/// The folded stacks of the stream: (stack, count) sorted by stack. The
/// count is the samples, the cputime in ns, or the energy in µJ (`--weight`).
pub fn folded(
    file: &Tb5File,
    opts: &ViewOptions,
    fopts: &FlameOptions,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<(String, u64)>, ExportError> {
    if fopts.by.is_empty() {
        return Err(ExportError::msg("--by names no frame: give some of process, thread, module, function, address"));
    }
    if let Some(b) = fopts.by.iter().find(|b| !LEVELS.contains(b)) {
        return Err(ExportError::msg(format!(
            "--by {} is not a flame graph frame: the frames are {}",
            b.name(),
            by_list(&LEVELS)
        )));
    }
    let has = |b: By| fopts.by.contains(&b);
    let keep = Keep { process: has(By::Process), thread: has(By::Thread), cpu: false };
    let st = stacks(file, opts, keep, "a flame graph", progress)?;
    let mut names = Names::new(file, &st.info.modules, has(By::Function).then_some(&opts.symbols))?;
    let module = |m: Option<u64>| m.and_then(|m| st.info.modules.get(m as usize));
    let module_label = |m: Option<u64>| match module(m) {
        Some(md) => clean(&names::module_label(md)),
        None => names::NO_MODULE.to_owned(),
    };
    let mut out: HashMap<String, u64> = HashMap::new();
    let mut keys: Vec<_> = st.stacks.iter().collect();
    // Symbolize in a stable order: warnings come out the same every time.
    keys.sort_by(|a, b| a.0.cmp(b.0));
    for (key, totals) in keys {
        let mut parts: Vec<String> = Vec::new();
        for b in &fopts.by {
            match b {
                By::Process => {
                    let pr = st.info.processes.get(&key.process).cloned().unwrap_or_default();
                    parts.push(clean(&names::process_label(pr.pid, pr.name.as_deref())));
                }
                By::Thread => {
                    let t = st.info.threads.get(&key.thread).cloned().unwrap_or_default();
                    parts.push(clean(&names::thread_label(t.tid, t.name.as_deref())));
                }
                _ => {}
            }
        }
        let mut previous: Option<Option<u64>> = None;
        for f in key.frames.iter().rev() {
            if has(By::Module) && previous != Some(f.module) {
                parts.push(module_label(f.module));
            }
            previous = Some(f.module);
            let mut named = false;
            if has(By::Function) {
                let n = names.lookup(*f, warn);
                if let Some(func) = &n.function {
                    parts.push(clean(func));
                    named = true;
                }
                // Inlined functions: frames inside it, outermost first.
                parts.extend(n.inlined.iter().map(|i| clean(i)));
            }
            if has(By::Address) {
                parts.push(format!("{:#x}", f.pc));
            } else if has(By::Function) && !named {
                // One spelling for a frame without a function: its module
                // in brackets, `[unknown]` without one.
                let m = module(f.module).map(names::module_label);
                parts.push(clean(&names::unknown_function(m.as_deref())));
            }
        }
        if parts.is_empty() {
            parts.push("all".to_owned());
        }
        let count = match opts.query.weight {
            Weight::Samples => totals.samples,
            Weight::Cputime => totals.weight.round() as u64,
            Weight::Energy => (totals.weight * 1e6).round() as u64,
        };
        if count > 0 {
            *out.entry(parts.join(";")).or_default() += count;
        }
    }
    let mut v: Vec<(String, u64)> = out.into_iter().collect();
    v.sort();
    Ok(v)
}

/// What the flame graph's counts are.
pub fn count_name(w: Weight) -> &'static str {
    match w {
        Weight::Samples => "samples",
        Weight::Cputime => "ns",
        Weight::Energy => "µJ",
    }
}

/// Writes the stream's flame graph, or its folded stacks with `fopts.folded`.
/// Returns the number of distinct stacks.
pub fn write(
    file: &Tb5File,
    opts: &ViewOptions,
    fopts: &FlameOptions,
    out: &mut dyn Write,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<usize, ExportError> {
    let lines = folded(file, opts, fopts, warn, progress)?;
    let io = |e: std::io::Error| ExportError::msg(format!("writing the flame graph: {e}"));
    if lines.is_empty() {
        return Err(ExportError::msg(format!(
            "{}: stream {}: every sample weighs 0 with --weight {}: nothing to draw",
            file.path().display(),
            opts.query.stream,
            opts.query.weight.name()
        )));
    }
    if fopts.folded {
        for (stack, n) in &lines {
            writeln!(out, "{stack} {n}").map_err(io)?;
        }
        return Ok(lines.len());
    }
    let title = fopts.title.clone().unwrap_or_else(|| {
        let name =
            file.path().file_name().map_or_else(|| file.path().display().to_string(), |f| f.to_string_lossy().into());
        format!("{name}, stream {}", opts.query.stream)
    });
    svg(&lines, title, count_name(opts.query.weight), out)?;
    Ok(lines.len())
}

/// Draws folded stacks as inferno's interactive SVG.
#[cfg(feature = "flamegraph")]
fn svg(lines: &[(String, u64)], title: String, count_name: &str, out: &mut dyn Write) -> Result<(), ExportError> {
    let text: Vec<String> = lines.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let mut o = inferno::flamegraph::Options::default();
    o.title = tbrw::text::escape(&title).into_owned();
    o.count_name = count_name.to_owned();
    o.deterministic = true;
    inferno::flamegraph::from_lines(&mut o, text.iter().map(String::as_str), out)
        .map_err(|e| ExportError::msg(format!("writing the flame graph: {e}")))
}

/// Without the `flamegraph` feature there is no SVG, only folded stacks.
#[cfg(not(feature = "flamegraph"))]
fn svg(_: &[(String, u64)], _: String, _: &str, _: &mut dyn Write) -> Result<(), ExportError> {
    Err(ExportError::msg(
        "this build draws no flame graph SVG (feature `flamegraph` of tbrw-export): write folded stacks instead",
    ))
}
