//! `tbrw annotate FILE --function NAME`: one function's samples per source
//! line (with the source text when the file is readable), or per address
//! when there is no line information, as `perf annotate --stdio` shows
//! them in its simplest form. Percentages are of the function's samples.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use serde::{Deserialize, Serialize};
use tbrw::Tb5File;

use crate::error::QueryError;
use crate::file_symbols::{FileSymbols, SymbolOptions};
use crate::query::Query;
use crate::report::functions::{count, function_at};
use crate::report::percent;

/// A source line of the function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnnotatedLine {
    /// The source file.
    pub file: String,
    /// The line.
    pub line: u32,
    /// Samples whose address's code comes from this line.
    pub samples: u64,
    /// Percent of the function's samples.
    pub percent: f64,
    /// The line's text, when the source file could be read.
    pub text: Option<String>,
}

/// An address of the function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnnotatedAddress {
    /// The ELF virtual address.
    pub vaddr: Option<u64>,
    /// `function+0xoffset`.
    pub function: String,
    /// Samples at it.
    pub samples: u64,
    /// Percent of the function's samples.
    pub percent: f64,
}

/// One function of one module, annotated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    /// The function.
    pub function: String,
    /// The module's label.
    pub module: Option<String>,
    /// The function's samples.
    pub samples: u64,
    /// Samples that passed the filters, in all functions.
    pub total: u64,
    /// Its source lines from the first to the last sampled one in each file
    /// (lines without samples included, with 0), file by file.
    pub lines: Vec<AnnotatedLine>,
    /// Its sampled addresses, in address order.
    pub addresses: Vec<AnnotatedAddress>,
}

fn same_function(found: &str, wanted: &str) -> bool {
    // A symbol version (`memcpy@GLIBC_2.2.5`) need not be typed.
    found == wanted || found.split_once('@').is_some_and(|(f, _)| f == wanted)
}

/// Annotates function `name` in the samples of `query`: one [`Annotation`] per module whose samples name it.
/// Fails when no sample does.
pub fn annotate(
    file: &Tb5File,
    query: &Query,
    name: &str,
    symbols: &SymbolOptions,
    warn: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<Annotation>, QueryError> {
    let counted = count(file, query, false, false, progress)?;
    let mut syms = FileSymbols::new(file, &counted.modules, symbols)?;
    // In address order already (see `Counted::counts`).
    let raw = counted.counts.iter().map(|(k, n)| (k, n));
    // Per module label: lines, addresses, samples.
    type Lines = BTreeMap<(String, u32), u64>;
    type Addresses = BTreeMap<(Option<u64>, u64), (String, u64)>;
    let mut found: BTreeMap<Option<String>, (String, Lines, Addresses, u64)> = BTreeMap::new();
    for (k, &n) in raw {
        let s = syms.symbolize(k.module, k.pc, warn);
        let Some(f) = s.function.as_deref().filter(|f| same_function(f, name)) else { continue };
        let entry = found
            .entry(s.module.as_deref().map(str::to_owned))
            .or_insert_with(|| (f.to_owned(), Lines::new(), Addresses::new(), 0));
        if let Some((file, Some(line))) = s.location().map(|l| (l.file.to_string(), l.line)) {
            *entry.1.entry((file, line)).or_default() += n;
        }
        let module = k.module.and_then(|m| counted.modules.get(m as usize));
        entry.2.entry((s.vaddr, k.pc)).or_insert_with(|| (function_at(&s, module), 0)).1 += n;
        entry.3 += n;
    }
    if found.is_empty() {
        return Err(QueryError::msg(format!(
            "{}: no sample of stream {} is in a function named {name:?}",
            file.path().display(),
            query.stream
        )));
    }
    let mut sources: HashMap<String, Option<Vec<String>>> = HashMap::new();
    let mut out = Vec::new();
    for (module, (function, lines, addresses, samples)) in found {
        let mut annotated = Vec::new();
        let mut by_file: BTreeMap<&str, BTreeMap<u32, u64>> = BTreeMap::new();
        for ((f, l), n) in &lines {
            by_file.entry(f).or_default().insert(*l, *n);
        }
        for (f, counts) in by_file {
            let text = sources
                .entry(f.to_owned())
                .or_insert_with(|| std::fs::read_to_string(f).ok().map(|t| t.lines().map(str::to_owned).collect()));
            let (first, last) =
                (counts.keys().next().copied().unwrap_or(0), counts.keys().last().copied().unwrap_or(0));
            // Without the source, only the sampled lines are worth a row.
            let range: Vec<u32> = match text {
                Some(_) => (first..=last).collect(),
                None => counts.keys().copied().collect(),
            };
            for line in range {
                let n = counts.get(&line).copied().unwrap_or(0);
                annotated.push(AnnotatedLine {
                    file: f.to_owned(),
                    line,
                    samples: n,
                    percent: percent(n, samples),
                    text: text.as_ref().and_then(|t| t.get(line.wrapping_sub(1) as usize).cloned()),
                });
            }
        }
        let addresses = addresses
            .into_iter()
            .map(|((vaddr, _), (function, n))| AnnotatedAddress {
                vaddr,
                function,
                samples: n,
                percent: percent(n, samples),
            })
            .collect();
        out.push(Annotation { function, module, samples, total: counted.total, lines: annotated, addresses });
    }
    Ok(out)
}

/// Writes annotations as text: a heading per function, then its source
/// lines, or its addresses when no line information covers it.
pub fn write_text(annotations: &[Annotation], out: &mut dyn Write) -> std::io::Result<()> {
    for (i, a) in annotations.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{} in {}: {} of {} samples ({:.2}%)",
            a.function,
            a.module.as_deref().unwrap_or("?"),
            a.samples,
            a.total,
            percent(a.samples, a.total)
        )?;
        if a.lines.is_empty() {
            writeln!(out, "{:>8} {:>8}  {:<18} function", "percent", "samples", "address")?;
            for x in &a.addresses {
                let v = x.vaddr.map_or("?".to_owned(), |v| format!("{v:#x}"));
                writeln!(out, "{:>7.2}% {:>8}  {v:<18} {}", x.percent, x.samples, x.function)?;
            }
            continue;
        }
        writeln!(out, "{:>8} {:>8}  source", "percent", "samples")?;
        let mut file = None;
        for l in &a.lines {
            if file != Some(&l.file) {
                writeln!(out, "{:>18}  {}", "", l.file)?;
                file = Some(&l.file);
            }
            let text = l.text.as_deref().unwrap_or("");
            if l.samples == 0 {
                writeln!(out, "{:>18}  {:>5}: {text}", "", l.line)?;
            } else {
                writeln!(out, "{:>7.2}% {:>8}  {:>5}: {text}", l.percent, l.samples, l.line)?;
            }
        }
        let unlined: u64 = a.samples - a.lines.iter().map(|l| l.samples).sum::<u64>();
        if unlined > 0 {
            writeln!(out, "{:>7.2}% {:>8}  (no line information)", percent(unlined, a.samples), unlined)?;
        }
    }
    Ok(())
}
