//! `tbrw symbolize`: resolves the function symbols the samples of every
//! stream hit and stores them in the TB5 file (section 0x0400), so that
//! reports by function still name them where the modules' files are
//! absent (another machine, a rebuilt program). What is stored per file:
//! its label and build id as recorded, its `PT_LOAD` layout, and the hit
//! functions' symbols (`tbrw_symbols::stored`); no source lines.

use std::io::Write;
use std::path::Path;

use tbrw::desc_type;

use crate::error::CliError;
use crate::output::check_input;
use tbrw_query::file_symbols::{FileSymbols, SymbolOptions};
use tbrw_query::report::functions;

/// What [`symbolize`] stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stored {
    /// Streams whose samples were symbolized.
    pub streams: u32,
    /// Their samples.
    pub samples: u64,
    /// Samples in a function whose symbol is now stored.
    pub named: u64,
    /// Files with stored symbols.
    pub files: usize,
    /// Function symbols stored.
    pub functions: usize,
}

/// Symbolizes the samples of every stream of `path` with an instruction
/// pointer (symbols searched as `opts` says, warnings on `warn`) and
/// stores the function symbols they hit in the file, replacing any stored
/// before. Symbols stored before stand in for files still missing, so a
/// file symbolized again elsewhere keeps its names.
pub fn symbolize(path: &Path, opts: &SymbolOptions, warn: &mut Vec<tbrw_query::Warning>) -> Result<Stored, CliError> {
    check_input(path, "a TB5 file")?;
    // The appending writer first: a file another writer holds (its lock),
    // or one that cannot be written, is refused before the symbol work,
    // with the messages `bind` gives. Its committed content is what is read.
    let mut w = tbrw::Tb5Writer::append(path)?;
    let (done, bytes) = {
        let file =
            w.existing().ok_or_else(|| CliError::msg(format!("{}: nothing committed to read", path.display())))?;
        symbols_of(path, file, opts, warn)?
    };
    w.store_symbols(&bytes)?;
    w.close()?;
    Ok(done)
}

/// What [`symbolize`] stores for `file`: the counts and the encoded section.
fn symbols_of(
    path: &Path,
    file: &tbrw::Tb5File,
    opts: &SymbolOptions,
    warn: &mut Vec<tbrw_query::Warning>,
) -> Result<(Stored, Vec<u8>), CliError> {
    let modules = tbrw_query::stream::modules(file)?;
    // Function symbols only: no DWARF is read (nor warned about).
    let config = tbrw_symbols::Config { lines: false, ..opts.config() };
    let mut syms = FileSymbols::with_config(file, &modules, config)?.verbose(opts.verbose);
    syms.set_unusable_note("none of its functions is stored");
    let mut done = Stored::default();
    let mut hit = Vec::new();
    for n in 0..file.stream_count() {
        let s = file.stream(n)?;
        let has_ip =
            s.layout()?.is_some_and(|l| l.legacy_pc_offset().is_some() || l.find(desc_type::IP, None).is_some());
        if !has_ip || s.data()?.is_none() {
            continue;
        }
        let (symbols, samples, named) = functions::symbols_hit(file, n, &modules, &mut syms, warn)?;
        hit.extend(symbols);
        done.streams += 1;
        done.samples += samples;
        done.named += named;
    }
    if done.streams == 0 {
        return Err(CliError::msg(format!(
            "{}: no stream has samples with an instruction pointer: nothing to symbolize",
            path.display()
        )));
    }
    let stored = syms.stored_files(hit);
    done.files = stored.len();
    done.functions = stored.iter().map(|f| f.symbols.len()).sum();
    Ok((done, tbrw_symbols::stored::encode(&stored)))
}

/// `tbrw symbolize`: [`symbolize`], then one line saying what was stored.
pub fn command(path: &Path, opts: &SymbolOptions, out: &mut dyn Write, warn: &mut dyn Write) -> Result<(), CliError> {
    let mut warnings = Vec::new();
    let s = symbolize(path, opts, &mut warnings);
    crate::warning::show(&warnings, warn);
    let s = s?;
    let percent = if s.samples == 0 { 0.0 } else { s.named as f64 * 100.0 / s.samples as f64 };
    writeln!(
        out,
        "{}: stored {} functions of {} files, naming {} of {} samples ({percent:.2} %) in {} streams",
        path.display(),
        s.functions,
        s.files,
        s.named,
        s.samples,
        s.streams
    )
    .map_err(CliError::Output)
}
