//! `tbrw report --by address` (without a weight), in what it costs per
//! distinct address: the samples counted per (module, address) in 24
//! bytes ([`Samples::count_packed`]: 48 while the parts' lists merge),
//! ordered in place as every report's rows are (most samples first, then
//! by label), and each row made only when it is written or asked for
//! ([`AddressRows`]), its address symbolized then without the symbolizer
//! keeping it (a module whose file cannot be used names all its addresses
//! alike, with nothing per address). The rows are those the grouping by
//! address of `functions.rs` gives: addresses of module records of one
//! file name, with the same ELF address and function, are one row.
//!
//! Imports `raw` and the report's types; `functions.rs` and `mod.rs` use it.

use std::cmp::Ordering;
use std::collections::HashMap;
use tbrw_schema::Progress;

use tbrw::{Module, Tb5File};

use super::raw::{function_at, module_name, PackedCount, Samples};
use super::{percent, By, Key, Report, ReportOptions, Row};
use crate::error::QueryError;
use crate::file_symbols::FileSymbols;

/// The rows of a report by address, made one at a time; see the module's doc.
pub struct AddressRows {
    /// The report without its rows: file, stream, counts.
    header: Report,
    /// The rows' (module, address, samples), in row order.
    counts: Vec<PackedCount>,
    syms: FileSymbols,
    modules: Vec<Module>,
    /// Per module record, its file name (`module_name`).
    names: Vec<Option<String>>,
}

/// The module records' file names, and per record an id of its name
/// (equal names, equal ids; records without one share the id of no
/// module, which is `names.len()`).
fn name_ids(modules: &[Module]) -> (Vec<Option<String>>, Vec<usize>) {
    let names: Vec<Option<String>> = modules.iter().map(module_name).collect();
    let mut ids: HashMap<Option<&str>, usize> = HashMap::new();
    ids.insert(None, modules.len());
    let per = names.iter().enumerate().map(|(i, n)| *ids.entry(n.as_deref()).or_insert(i)).collect();
    (names, per)
}

/// The order of hexadecimal `{:#x}` texts, from the number: its digits
/// left-aligned, then the shorter first (a prefix sorts first).
fn hex_order(v: u64) -> (u64, u32) {
    let digits = (64 - v.leading_zeros()).div_ceil(4).max(1);
    (v << (4 * (16 - digits)), digits)
}

impl AddressRows {
    /// Counts the samples of `opts.query` per address (see the module's doc).
    /// Warnings about module files that cannot be symbolized go to `warn`
    /// now; `progress` gets records done.
    pub fn new(
        file: &Tb5File,
        opts: &ReportOptions,
        warn: &mut Vec<crate::Warning>,
        progress: &mut dyn Progress,
    ) -> Result<AddressRows, QueryError> {
        let samples = Samples::new(file, &opts.query)?;
        let modules = samples.walk.modules().to_vec();
        let config = tbrw_symbols::Config { lines: false, ..opts.symbols.config() };
        let mut syms = FileSymbols::with_config(file, &modules, config)?.verbose(opts.symbols.verbose);
        let (mut counts, total) = samples.count_packed(progress)?;
        if total == 0 && samples.records() > 0 {
            return Err(samples.walk.nothing_matches());
        }
        // Every module's file tried once, so that the warnings are whole now.
        let mut tried = vec![false; modules.len() + 1];
        for c in &counts {
            let at = c.module().map_or(modules.len(), |m| m as usize);
            if !std::mem::replace(&mut tried[at], true) {
                syms.note_used(c.module());
            }
        }
        syms.take_warnings(warn);
        let (names, ids) = name_ids(&modules);
        let mut rows = AddressRows {
            header: Report {
                file: file.path().display().to_string(),
                stream: opts.query.stream,
                by: By::Address,
                records: samples.records(),
                samples: total,
                weight: None,
                rows: Vec::new(),
                totals: Vec::new(),
                auto: None,
            },
            counts: Vec::new(),
            syms,
            modules,
            names,
        };
        rows.merge_shared_names(&mut counts, &ids);
        rows.sort(&mut counts);
        if let Some(k) = opts.top {
            counts.truncate(k);
        }
        counts.shrink_to_fit();
        rows.counts = counts;
        Ok(rows)
    }

    /// The rows: how many.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The report without its rows.
    pub fn header(&self) -> &Report {
        &self.header
    }

    fn key(&mut self, c: PackedCount) -> Key {
        let module = c.module().and_then(|m| self.modules.get(m as usize));
        let s = self.syms.symbolize_once(c.module(), c.pc);
        Key::Address {
            module: c.module().and_then(|m| self.names.get(m as usize).cloned().flatten()),
            address: c.pc,
            vaddr: s.vaddr,
            function: function_at(&s, module),
        }
    }

    /// Row `i`, made now.
    ///
    /// # Panics
    /// When `i` is not below [`AddressRows::len`].
    pub fn row(&mut self, i: usize) -> Row {
        let c = self.counts[i];
        Row {
            key: self.key(c),
            samples: c.samples,
            percent: percent(c.samples, self.header.samples),
            weight: None,
            task: None,
            children: None,
        }
    }

    /// The rows, each made as it is taken.
    pub fn rows(&mut self) -> impl Iterator<Item = Row> + '_ {
        (0..self.len()).map(move |i| self.row(i))
    }

    /// The whole report, every row made.
    pub fn into_report(mut self) -> Report {
        let rows: Vec<Row> = self.rows().collect();
        Report { rows, ..self.header }
    }

    /// Merges the counts of module records of one file name at one
    /// address whose ELF address and function are the same too (they are
    /// one row, as the grouping by address keys rows by name).
    fn merge_shared_names(&mut self, counts: &mut Vec<PackedCount>, ids: &[usize]) {
        let no_module = self.modules.len();
        let id = |c: &PackedCount| c.module().map_or(no_module, |m| ids[m as usize]);
        // The name ids more than one source (a module record, or no module) has.
        let mut sources = vec![0u32; no_module + 1];
        for &i in ids {
            sources[i] += 1;
        }
        sources[no_module] += 1;
        let mut shared: Vec<(usize, u64, u32)> = (0..counts.len() as u32)
            .map(|i| (id(&counts[i as usize]), counts[i as usize].pc, i))
            .filter(|&(n, _, _)| sources[n] > 1)
            .collect();
        if shared.is_empty() {
            return;
        }
        shared.sort_unstable();
        const GONE: u64 = u64::MAX;
        for run in shared.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            if run.len() < 2 {
                continue;
            }
            let mut kept: Vec<(Key, u32)> = Vec::new();
            for &(_, _, i) in run {
                let key = self.key(counts[i as usize]);
                match kept.iter().find(|(k, _)| *k == key) {
                    Some(&(_, into)) => {
                        let n = counts[i as usize].samples;
                        counts[into as usize].samples += n;
                        counts[i as usize].module = GONE;
                    }
                    None => kept.push((key, i)),
                }
            }
        }
        counts.retain(|c| c.module != GONE);
    }

    /// Orders `counts` as rows are: most samples first, then by label (as
    /// printed: the address's hexadecimal text, then the module's name,
    /// then the whole label where those are the same).
    fn sort(&mut self, counts: &mut [PackedCount]) {
        let names = self.names.clone();
        let name = |c: &PackedCount| c.module().and_then(|m| names[m as usize].as_deref()).unwrap_or("-");
        counts.sort_unstable_by(|a, b| {
            b.samples
                .cmp(&a.samples)
                .then_with(|| hex_order(a.pc).cmp(&hex_order(b.pc)))
                .then_with(|| name(a).cmp(name(b)))
                .then_with(|| {
                    if a == b {
                        return Ordering::Equal;
                    }
                    self.key(*a).to_string().cmp(&self.key(*b).to_string())
                })
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_order_is_the_order_of_the_text() {
        let values = [0u64, 1, 2, 9, 0xa, 0xf, 0x10, 0x11, 0x1f, 0x100, 0x7f00_0000_0010, 0x07f0_0000_0001, u64::MAX];
        for &a in &values {
            for &b in &values {
                let text = format!("{a:#x} ").cmp(&format!("{b:#x} "));
                assert_eq!(hex_order(a).cmp(&hex_order(b)), text, "{a:#x} {b:#x}");
            }
        }
    }
}
