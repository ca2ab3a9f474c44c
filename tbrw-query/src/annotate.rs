//! `tbrw annotate FILE --function NAME`: one function's samples per
//! instruction (disassembled from the module's ELF file, [`crate::disasm`],
//! with the source lines interleaved and the three hottest marked, as
//! `perf annotate --stdio` shows them), per source line (with the source
//! text when the file is readable), or per address when there is neither.
//! [`View::Auto`] shows instructions when the function has fewer sampled
//! source lines than sampled instructions (a hot loop on one line).
//! Percentages are of the function's samples. A sample in inlined code
//! counts on the inlined function's own source line (the address's line,
//! as perf annotate attributes it), and the source view names that
//! function (unless `--no-inline`).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use tbrw_schema::Progress;

use serde::{Deserialize, Serialize};
use tbrw::text::Escaped;
use tbrw::Tb5File;

use crate::disasm::{self, NoCode};
use crate::error::QueryError;
use crate::file_symbols::{FileSymbols, SymbolOptions};
use crate::query::Query;
use crate::report::functions::{function_at, RawKey, Samples};
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
    /// The inlined function the line's code is in (the innermost inlined
    /// function DWARF names at its sampled addresses), when it is not the
    /// annotated function's own code; none with `--no-inline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inlined: Option<String>,
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

/// An instruction of the function (the instruction view).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnnotatedInstruction {
    /// Its ELF virtual address.
    pub vaddr: u64,
    /// Its offset from the function's start.
    pub offset: u64,
    /// The disassembly (AT&T syntax; branch and call targets named).
    pub text: String,
    /// Samples at it.
    pub samples: u64,
    /// Percent of the function's samples.
    pub percent: f64,
    /// 1, 2 or 3 for the three hottest instructions (most samples; the
    /// lower address first on a tie).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot: Option<u32>,
    /// The source file its code comes from (the innermost inlined frame).
    pub file: Option<String>,
    /// The line there.
    pub line: Option<u32>,
    /// That line's text, when the source file could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Which view [`write_text`] shows, and the JSON says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// The instruction view when the function has fewer sampled source
    /// lines than sampled instructions (a hot loop on one line), else the
    /// source lines.
    #[default]
    Auto,
    /// Instructions, with their source lines interleaved.
    Asm,
    /// Source lines.
    Source,
    /// Sampled addresses (no line information and no instructions).
    Addresses,
}

/// What [`annotate`] is asked besides the query.
#[derive(Clone, Debug, Default)]
pub struct AnnotateOptions {
    /// The view (`--asm`, `--source`; default [`View::Auto`]).
    pub view: View,
    /// Where the modules' files are.
    pub symbols: SymbolOptions,
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
    /// The view chosen ([`View::Auto`] resolved).
    pub view: View,
    /// Its source lines from the first to the last sampled one in each file
    /// (lines without samples included, with 0), file by file.
    pub lines: Vec<AnnotatedLine>,
    /// Its sampled addresses, in address order.
    pub addresses: Vec<AnnotatedAddress>,
    /// Its instructions, in address order (empty when they could not be read).
    pub instructions: Vec<AnnotatedInstruction>,
    /// Samples at addresses that are no instruction's start in
    /// `instructions` (or past the bytes read).
    pub off_instructions: u64,
    /// Why there are no instructions, when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_instructions: Option<String>,
    /// Source files its lines come from that could not be read.
    pub sources_missing: Vec<String>,
}

fn same_function(found: &str, wanted: &str) -> bool {
    // A symbol version (`memcpy@GLIBC_2.2.5`) need not be typed.
    found == wanted || found.split_once('@').is_some_and(|(f, _)| f == wanted)
}

/// What one module's samples of the function are.
struct Found {
    function: String,
    /// Per source line (the address's own, in inlined code the inlined
    /// function's): samples, and the innermost inlined function there.
    lines: BTreeMap<(String, u32), (u64, Option<String>)>,
    /// (vaddr, pc) → (`function+0xoff`, samples).
    addresses: BTreeMap<(Option<u64>, u64), (String, u64)>,
    samples: u64,
    /// A module record of the label, and its pc minus ELF address (the
    /// instruction view symbolizes other addresses of the function as pcs).
    module: Option<u64>,
    bias: Option<u64>,
    /// The function's start, ELF address (a sample's address less its offset).
    start: Option<u64>,
}

/// Annotates function `name` in the samples of `query`: one [`Annotation`]
/// per module whose samples name it. Fails when no sample does.
pub fn annotate(
    file: &Tb5File,
    query: &Query,
    name: &str,
    opts: &AnnotateOptions,
    warn: &mut Vec<crate::Warning>,
    progress: &mut dyn Progress,
) -> Result<Vec<Annotation>, QueryError> {
    let samples = Samples::new(file, query)?;
    let modules = samples.walk.modules().to_vec();
    let (counts, total) = samples.count_packed(progress)?;
    let mut syms = FileSymbols::new(file, &modules, &opts.symbols)?.verbose(opts.symbols.verbose);
    // Per module label, in address order already (see `Samples::count_packed`).
    let mut found: BTreeMap<Option<String>, Found> = BTreeMap::new();
    // A module whose file cannot be used names no function: its addresses
    // are passed over without a lookup each (asked once per module).
    let mut uniform: Vec<Option<bool>> = vec![None; modules.len()];
    for c in &counts {
        let (k, n) = (RawKey { process: 0, thread: 0, module: c.module(), pc: c.pc }, c.samples);
        let Some(m) = k.module.and_then(|m| usize::try_from(m).ok()).filter(|&m| m < modules.len()) else { continue };
        if *uniform[m].get_or_insert_with(|| syms.uniform(m as u64)) {
            syms.note_used(k.module);
            continue;
        }
        let s = syms.symbolize_once(k.module, k.pc);
        let Some(f) = s.function.as_deref().filter(|f| same_function(f, name)) else { continue };
        let entry = found.entry(s.module.as_deref().map(str::to_owned)).or_insert_with(|| Found {
            function: f.to_owned(),
            lines: BTreeMap::new(),
            addresses: BTreeMap::new(),
            samples: 0,
            module: k.module,
            bias: None,
            start: None,
        });
        if let Some((file, Some(line))) = s.location().map(|l| (l.file.to_string(), l.line)) {
            let at = entry.lines.entry((file, line)).or_default();
            at.0 += n;
            if at.1.is_none() && !opts.symbols.no_inline {
                at.1 = s.inlined().first().and_then(|i| i.function.as_deref()).map(str::to_owned);
            }
        }
        if let Some(v) = s.vaddr {
            if entry.module == k.module {
                entry.bias.get_or_insert(k.pc.wrapping_sub(v));
            }
            if let Some(off) = s.offset {
                entry.start.get_or_insert(v.wrapping_sub(off));
            }
        }
        let module = k.module.and_then(|m| modules.get(m as usize));
        entry.addresses.entry((s.vaddr, k.pc)).or_insert_with(|| (function_at(&s, module), 0)).1 += n;
        entry.samples += n;
    }
    syms.take_warnings(warn);
    if found.is_empty() {
        return Err(QueryError::NoSampleIn {
            file: file.path().display().to_string(),
            stream: query.stream,
            function: name.to_owned(),
        });
    }
    let mut sources = Sources::default();
    let mut out = Vec::new();
    for (module, f) in found {
        let mut annotated = Vec::new();
        let mut by_file: BTreeMap<&str, BTreeMap<u32, &(u64, Option<String>)>> = BTreeMap::new();
        for ((path, l), n) in &f.lines {
            by_file.entry(path).or_default().insert(*l, n);
        }
        for (path, counts) in by_file {
            let text = sources.get(path);
            let (first, last) =
                (counts.keys().next().copied().unwrap_or(0), counts.keys().last().copied().unwrap_or(0));
            // Without the source, only the sampled lines are worth a row.
            let range: Vec<u32> = match text {
                Some(_) => (first..=last).collect(),
                None => counts.keys().copied().collect(),
            };
            for line in range {
                let (n, inlined) = counts.get(&line).map_or((0, None), |(n, i)| (*n, i.clone()));
                annotated.push(AnnotatedLine {
                    file: path.to_owned(),
                    line,
                    samples: n,
                    percent: percent(n, f.samples),
                    text: sources.line(path, line),
                    inlined,
                });
            }
        }
        let addresses: Vec<AnnotatedAddress> = f
            .addresses
            .iter()
            .map(|((vaddr, _), (function, n))| AnnotatedAddress {
                vaddr: *vaddr,
                function: function.clone(),
                samples: *n,
                percent: percent(*n, f.samples),
            })
            .collect();
        let (instructions, no_instructions) = match instructions(&f, &mut syms, &mut sources) {
            Ok(i) => (i, None),
            Err(why) => (Vec::new(), Some(why.to_string())),
        };
        let on: u64 = instructions.iter().map(|i| i.samples).sum();
        let sampled_instructions = instructions.iter().filter(|i| i.samples > 0).count();
        let sampled_lines = annotated.iter().filter(|l| l.samples > 0).count();
        let view = match opts.view {
            View::Asm | View::Auto
                if !instructions.is_empty() && (opts.view == View::Asm || sampled_lines < sampled_instructions) =>
            {
                View::Asm
            }
            _ if !annotated.is_empty() => View::Source,
            _ => View::Addresses,
        };
        let mut missing: Vec<String> =
            f.lines.keys().map(|(p, _)| p.clone()).filter(|p| sources.get(p).is_none()).collect();
        missing.dedup();
        out.push(Annotation {
            function: f.function,
            module,
            samples: f.samples,
            total,
            view,
            lines: annotated,
            addresses,
            off_instructions: if instructions.is_empty() { 0 } else { f.samples - on },
            instructions,
            no_instructions,
            sources_missing: missing,
        });
    }
    syms.take_warnings(warn);
    Ok(out)
}

/// Source files read once each: their lines, or `None` when not found.
#[derive(Default)]
struct Sources(HashMap<String, Option<Vec<String>>>);

impl Sources {
    fn get(&mut self, path: &str) -> Option<&Vec<String>> {
        self.0
            .entry(path.to_owned())
            .or_insert_with(|| std::fs::read_to_string(path).ok().map(|t| t.lines().map(str::to_owned).collect()))
            .as_ref()
    }

    fn line(&mut self, path: &str, line: u32) -> Option<String> {
        self.get(path).and_then(|t| t.get(line.wrapping_sub(1) as usize).cloned())
    }
}

/// The function's instructions, each with its samples, source line and
/// whether it is among the three hottest; or why they cannot be read.
fn instructions(f: &Found, syms: &mut FileSymbols, sources: &mut Sources) -> Result<Vec<AnnotatedInstruction>, NoCode> {
    let (Some(module), Some(start), Some(bias)) = (f.module, f.start, f.bias) else {
        return Err(NoCode::NoFile("the samples' addresses could not be placed in its file".into()));
    };
    let info = match syms.module_info(module) {
        Some(Ok(i)) if i.symbols != Some(tbrw_symbols::SymbolSource::Stored) => i,
        Some(Ok(_)) => return Err(NoCode::NoFile("only the symbols `tbrw symbolize` stored are here".into())),
        Some(Err(why)) => return Err(NoCode::NoFile(why.to_string())),
        None => return Err(NoCode::NoFile("no module record".into())),
    };
    let last = f.addresses.keys().filter_map(|(v, _)| *v).max().unwrap_or(start);
    let code = disasm::read_function(&info.file, info.debug_file.as_deref(), start, last)?;
    let mut per_vaddr: HashMap<u64, u64> = HashMap::new();
    for ((v, _), (_, n)) in &f.addresses {
        if let Some(v) = v {
            *per_vaddr.entry(*v).or_default() += n;
        }
    }
    let mut name = |vaddr: u64| {
        let s = syms.symbolize(Some(module), vaddr.wrapping_add(bias));
        s.function.as_ref().map(|func| match s.offset {
            Some(0) | None => func.to_string(),
            Some(off) => format!("{func}+{off:#x}"),
        })
    };
    let decoded = disasm::disassemble(&code, &f.function, &mut name);
    let mut rows: Vec<AnnotatedInstruction> = decoded
        .into_iter()
        .map(|i| {
            let s = syms.symbolize(Some(module), i.vaddr.wrapping_add(bias));
            let loc = s.location();
            let (file, line) = (loc.map(|l| l.file.to_string()), loc.and_then(|l| l.line));
            let source = match (&file, line) {
                (Some(p), Some(l)) => sources.line(p, l),
                _ => None,
            };
            let n = per_vaddr.get(&i.vaddr).copied().unwrap_or(0);
            AnnotatedInstruction {
                vaddr: i.vaddr,
                offset: i.vaddr - start,
                text: i.text,
                samples: n,
                percent: percent(n, f.samples),
                hot: None,
                file,
                line,
                source,
            }
        })
        .collect();
    let mut order: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].samples > 0).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(rows[i].samples), rows[i].vaddr));
    for (rank, &i) in order.iter().take(3).enumerate() {
        rows[i].hot = Some(rank as u32 + 1);
    }
    Ok(rows)
}

/// Writes annotations as text: a heading per function, then the view
/// chosen: instructions with their source lines, source lines, or
/// addresses. A source file that could not be read is named once. Names,
/// paths and source text are escaped ([`tbrw::text`]; a source line's
/// tabs first expanded, as a viewer shows them).
pub fn write_text(annotations: &[Annotation], out: &mut dyn Write) -> std::io::Result<()> {
    for (i, a) in annotations.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{} in {}: {} of {} samples ({:.2}%)",
            Escaped(&a.function),
            Escaped(a.module.as_deref().unwrap_or("?")),
            a.samples,
            a.total,
            percent(a.samples, a.total)
        )?;
        for m in &a.sources_missing {
            writeln!(out, "{}: not found (its lines are shown without their text)", Escaped(m))?;
        }
        if let (Some(why), View::Source | View::Addresses) = (&a.no_instructions, a.view) {
            writeln!(out, "no instruction view: {}", Escaped(&why.to_string()))?;
        }
        match a.view {
            View::Asm => write_asm(a, out)?,
            View::Source => write_lines(a, out)?,
            View::Addresses | View::Auto => write_addresses(a, out)?,
        }
    }
    Ok(())
}

fn write_addresses(a: &Annotation, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{:>8} {:>8}  {:<18} function", "percent", "samples", "address")?;
    for x in &a.addresses {
        let v = x.vaddr.map_or("?".to_owned(), |v| format!("{v:#x}"));
        writeln!(out, "{:>7.2}% {:>8}  {v:<18} {}", x.percent, x.samples, Escaped(&x.function))?;
    }
    Ok(())
}

fn write_lines(a: &Annotation, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{:>8} {:>8}  source", "percent", "samples")?;
    let mut file = None;
    for l in &a.lines {
        if file != Some(&l.file) {
            writeln!(out, "{:>18}  {}", "", Escaped(&l.file))?;
            file = Some(&l.file);
        }
        let mut text = source_text(l.text.as_deref().unwrap_or(""));
        if let Some(i) = &l.inlined {
            // Whose code it is, as the flame graph names that frame.
            text = format!("{text}   [inlined: {}]", Escaped(i));
        }
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
    Ok(())
}

/// The instruction view: a source line's `file:line  text` above the
/// instructions that come from it (again whenever it changes, as `perf
/// annotate` interleaves them), then per instruction its percent and
/// samples (blank without), address, hottest mark and disassembly.
fn write_asm(a: &Annotation, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{:>8} {:>8}  {:>10}  {:<3} instruction", "percent", "samples", "address", "hot")?;
    let mut at: Option<(Option<&str>, Option<u32>)> = None;
    for i in &a.instructions {
        let here = (i.file.as_deref(), i.line);
        if at != Some(here) {
            if let (Some(f), Some(l)) = here {
                let base = f.rsplit('/').next().unwrap_or(f);
                let text = i.source.as_deref().map_or(String::new(), |t| format!("  {}", source_text(t.trim())));
                writeln!(out, "{:>31}  {}:{l}{text}", "", Escaped(base))?;
            }
            at = Some(here);
        }
        let mark = i.hot.map_or(String::new(), |h| format!("#{h}"));
        if i.samples == 0 {
            writeln!(out, "{:>17}  {:>10x}  {mark:<3} {}", "", i.vaddr, Escaped(&i.text))?;
        } else {
            writeln!(out, "{:>7.2}% {:>8}  {:>10x}  {mark:<3} {}", i.percent, i.samples, i.vaddr, Escaped(&i.text))?;
        }
    }
    if a.off_instructions > 0 {
        writeln!(
            out,
            "{:>7.2}% {:>8}  (at addresses that start no instruction read from the file)",
            percent(a.off_instructions, a.samples),
            a.off_instructions
        )?;
    }
    Ok(())
}

/// A source line as a text output shows it: tabs expanded to the next
/// multiple of 8 columns, then escaped ([`tbrw::text`]).
fn source_text(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut column = 0;
    for c in line.chars() {
        if c == '\t' {
            let to = (column / 8 + 1) * 8;
            out.extend(std::iter::repeat_n(' ', to - column));
            column = to;
        } else {
            out.push(c);
            column += 1;
        }
    }
    tbrw::text::escape(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_lines_show_tabs_as_columns_and_escape_the_rest() {
        assert_eq!(source_text("\tx = 1;\t// y"), "        x = 1;  // y");
        assert_eq!(source_text("s = \"\x1b[2J\";\x0c"), "s = \"\\x1b[2J\";\\x0c");
    }
}
