//! How an import tells its caller how far it got: a small trait, so that a
//! library user passes a closure (or `()` for nothing) and the command line
//! a progress bar.

/// Told the work done so far (bytes of input read, unless an importer's
/// doc says otherwise), now and then; never per record.
pub trait Progress {
    /// The work done so far.
    fn done(&mut self, so_far: u64);
}

impl<F: FnMut(u64)> Progress for F {
    fn done(&mut self, so_far: u64) {
        self(so_far)
    }
}

/// No progress wanted.
impl Progress for () {
    fn done(&mut self, _: u64) {}
}
