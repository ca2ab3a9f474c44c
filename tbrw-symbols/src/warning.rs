//! [`Warning`]: what a module's files lacked or held beyond a bound while
//! they were still used (a perf map cut at [`crate::perf_map::JitMaps`]'s
//! bounds, a compressed section skipped), for the caller to print once
//! per module ([`crate::ModuleInfo::warnings`],
//! [`crate::unwind::Unwinder::take_warnings`]). Imports only the section
//! problems and the map bounds.

use std::fmt;
use std::path::PathBuf;

use crate::perf_map::MapLimit;
pub use crate::sections::SectionProblem;

/// A file used only in part.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// A perf map longer than its bounds: read up to there.
    PerfMapCut {
        /// The map.
        path: PathBuf,
        /// The bound it reached.
        limit: MapLimit,
        /// The symbols read before it.
        symbols: usize,
    },
    /// A compressed section left out: what it holds is missing (source
    /// lines for a DWARF section, unwind rules for `.eh_frame`).
    SectionSkipped {
        /// The ELF file.
        path: PathBuf,
        /// The section's name in the file.
        section: String,
        /// Why.
        problem: SectionProblem,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::PerfMapCut { path, limit, symbols } => {
                write!(f, "{}: {limit}: cut there, the {symbols} symbols before used", path.display())
            }
            Warning::SectionSkipped { path, section, problem } => {
                write!(f, "{}: section {section} skipped: {problem}", path.display())
            }
        }
    }
}
