//! How a long piece of work (an import, a report's walk, an export) tells
//! its caller how far it got: one small trait for every library crate of
//! the project, so that a library user passes a closure (or `()` for
//! nothing) and the command line its progress bar. Imports nothing of the
//! crate.

/// Told the work done so far, now and then, never per record: bytes of
/// input read for an import, records walked for a report or an export
/// (unless the function's doc says otherwise).
pub trait Progress {
    /// The work done so far.
    fn done(&mut self, so_far: u64);
}

/// A closure (or a `&mut dyn FnMut(u64)`) is told the work done.
impl<F: FnMut(u64) + ?Sized> Progress for F {
    fn done(&mut self, so_far: u64) {
        self(so_far)
    }
}

/// No progress wanted.
impl Progress for () {
    fn done(&mut self, _: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(progress: &mut dyn Progress) {
        for n in [10, 20] {
            progress.done(n);
        }
    }

    #[test]
    fn closures_and_unit_take_progress() {
        let mut seen = Vec::new();
        walk(&mut |n| seen.push(n));
        assert_eq!(seen, [10, 20]);
        walk(&mut ());
        let mut last = 0;
        let f: &mut dyn FnMut(u64) = &mut |n| last = n;
        walk(&mut &mut *f);
        assert_eq!(last, 20);
    }
}
