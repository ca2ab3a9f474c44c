//! [`StackTableView`]: a stream's stack table (docs/FORMAT.md "Stack
//! table") read in place from the mapping, and the walk from a stack id up
//! to its outermost frame.
//!
//! Nothing here trusts the file: a parent that does not come before its
//! child, a node past the table, a stack deeper than [`MAX_STACK_DEPTH`]
//! are errors naming the node and its byte offset, so a damaged table can
//! neither loop nor make a reader allocate beyond what its bytes hold.

use std::path::Path;

use super::file::Tb5File;
use super::intel::{self, IntelIndex};
use crate::format::stack_table;
use crate::model::error::{Error, Location, Result};
use crate::model::section::{SectionRef, StreamSection};
use crate::model::stack::{StackNode, MAX_STACK_DEPTH};

/// The stack table of a stream, read in place.
#[derive(Clone, Copy, Debug)]
pub struct StackTableView<'f> {
    path: &'f Path,
    stream: u32,
    /// Absolute offset of the first node.
    at: u64,
    nodes: &'f [u8],
}

impl<'f> StackTableView<'f> {
    /// The stack table of stream `stream` of `file`, checksum and head
    /// checked; `None` when the stream has none.
    pub(crate) fn of(file: &'f Tb5File, stream: u32) -> Result<Option<StackTableView<'f>>> {
        if let Some(i) = file.intel() {
            return Self::of_intel(file, i, stream);
        }
        let Some(e) = file.stack_table_entry(stream) else { return Ok(None) };
        let bytes = file.checked_bytes(e)?;
        let nodes = stack_table::nodes(bytes, e.raw.count).map_err(|(what, at)| {
            Error::malformed(
                Location {
                    file: file.path().to_owned(),
                    section: SectionRef::StackTable(stream),
                    record: None,
                    offset: e.raw.offset + at,
                },
                what,
            )
        })?;
        Ok(Some(StackTableView { path: file.path(), stream, at: e.raw.offset + stack_table::HEAD_SIZE as u64, nodes }))
    }

    /// The stack table of stream `stream` of an Intel file: the records of
    /// the custom stream that names it, 12-byte nodes (docs/FORMAT.md,
    /// "This project's sections in Intel's layout").
    fn of_intel(file: &'f Tb5File, i: &IntelIndex, stream: u32) -> Result<Option<StackTableView<'f>>> {
        let Some(s) = intel::stream_in(i, intel::Role::StackTable(stream)) else { return Ok(None) };
        let Some(e) = i.stream_entry(s, StreamSection::Data) else {
            return Ok(Some(StackTableView { path: file.path(), stream, at: 0, nodes: &[] }));
        };
        let nodes = &file.bytes()[e.range()];
        if !nodes.len().is_multiple_of(stack_table::NODE_SIZE) {
            return Err(Error::malformed(
                Location {
                    file: file.path().to_owned(),
                    section: SectionRef::StackTable(stream),
                    record: None,
                    offset: e.offset,
                },
                format!(
                    "the stack table (stream {s}) is {} bytes, not a whole number of {}-byte nodes",
                    nodes.len(),
                    stack_table::NODE_SIZE
                ),
            ));
        }
        Ok(Some(StackTableView { path: file.path(), stream, at: e.offset, nodes }))
    }

    /// The number of nodes.
    pub fn len(&self) -> u64 {
        (self.nodes.len() / stack_table::NODE_SIZE) as u64
    }

    /// Whether the table has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `i`, if the table has it (its parent unchecked: see [`StackTableView::check`]).
    #[inline]
    pub fn node(&self, i: u64) -> Option<StackNode> {
        stack_table::node(self.nodes, i)
    }

    /// Where node `i` is, for errors.
    fn at(&self, i: u64, what: String) -> Error {
        Error::malformed(
            Location {
                file: self.path.to_owned(),
                section: SectionRef::StackTable(self.stream),
                record: Some(i),
                offset: self.at.saturating_add(i.saturating_mul(stack_table::NODE_SIZE as u64)),
            },
            what,
        )
    }

    /// Appends the frame addresses of stack `id` to `out`, innermost (the
    /// node `id`) first; an error when `id` is not a node, a parent does not
    /// come before its child, or the stack is deeper than [`MAX_STACK_DEPTH`].
    /// `out` keeps what was appended before an error.
    #[inline]
    pub fn frames(&self, id: u32, out: &mut Vec<u64>) -> Result<()> {
        let mut i = u64::from(id);
        let Some(mut n) = self.node(i) else {
            return Err(self.at(i, format!("stack id {id} names no node of the {} in the table", self.len())));
        };
        let mut depth = 1usize;
        loop {
            out.push(n.address);
            let Some(p) = n.parent else { return Ok(()) };
            // Parents come before their children: the walk always ends, and
            // within the table.
            if u64::from(p) >= i {
                return Err(self.at(i, format!("node {i}'s parent {p} does not come before it")));
            }
            depth += 1;
            if depth > MAX_STACK_DEPTH {
                return Err(self.at(u64::from(id), format!("stack {id} has more than {MAX_STACK_DEPTH} frames")));
            }
            i = u64::from(p);
            n = self.node(i).ok_or_else(|| self.at(i, "a parent past the table".into()))?;
        }
    }

    /// The depth of every node (0 for an outermost frame), checking what
    /// `verify` checks: every parent before its child (so no cycle and every
    /// index in range) and no stack deeper than [`MAX_STACK_DEPTH`]. One u16
    /// per node: bounded by the table's own bytes.
    pub fn depths(&self) -> Result<Vec<u16>> {
        let mut depth: Vec<u16> = Vec::with_capacity(self.len() as usize);
        for i in 0..self.len() {
            let n = self.node(i).ok_or_else(|| self.at(i, "a node past the table".into()))?;
            let d = match n.parent {
                None => 0,
                Some(p) if u64::from(p) < i => {
                    let d = u32::from(depth[p as usize]) + 1;
                    if d as usize >= MAX_STACK_DEPTH {
                        return Err(self.at(i, format!("the stack of node {i} has more than {MAX_STACK_DEPTH} frames")));
                    }
                    d as u16
                }
                Some(p) => return Err(self.at(i, format!("node {i}'s parent {p} does not come before it"))),
            };
            depth.push(d);
        }
        Ok(depth)
    }

    /// Checks the whole table (see [`StackTableView::depths`]).
    pub fn check(&self) -> Result<()> {
        self.depths().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(nodes: &[u8]) -> StackTableView<'_> {
        StackTableView { path: Path::new("t.tb5"), stream: 0, at: 1000, nodes }
    }

    fn table(ns: &[(Option<u32>, u64)]) -> Vec<u8> {
        let mut b = Vec::new();
        for &(parent, address) in ns {
            stack_table::encode_node(StackNode { parent, address }, &mut b);
        }
        b
    }

    #[test]
    fn a_stack_is_walked_innermost_first_and_damage_is_named() {
        let t = table(&[(None, 10), (Some(0), 20), (Some(1), 30), (Some(0), 21)]);
        let v = view(&t);
        let mut out = Vec::new();
        v.frames(2, &mut out).unwrap();
        assert_eq!(out, [30, 20, 10]);
        out.clear();
        v.frames(3, &mut out).unwrap();
        assert_eq!(out, [21, 10]);
        assert_eq!(v.depths().unwrap(), [0, 1, 2, 1]);
        let e = v.frames(4, &mut out).unwrap_err().to_string();
        assert!(e.contains("stack id 4 names no node") && e.contains("stream 0 stack table"), "{e}");

        // A cycle (a node its own parent, a parent after its child) is an
        // error, not an endless walk.
        for bad in [table(&[(None, 1), (Some(1), 2)]), table(&[(Some(1), 1), (Some(0), 2)])] {
            let v = view(&bad);
            assert!(v.frames(1, &mut out).unwrap_err().to_string().contains("does not come before"));
            let e = v.check().unwrap_err().to_string();
            assert!(e.contains("does not come before") && e.contains("t.tb5"), "{e}");
        }
    }

    #[test]
    fn a_stack_deeper_than_the_limit_is_damage() {
        let ns: Vec<(Option<u32>, u64)> =
            (0..=MAX_STACK_DEPTH as u32).map(|i| (i.checked_sub(1), u64::from(i))).collect();
        let t = table(&ns);
        let v = view(&t);
        let mut out = Vec::new();
        v.frames(MAX_STACK_DEPTH as u32 - 1, &mut out).unwrap();
        assert_eq!(out.len(), MAX_STACK_DEPTH);
        assert!(v.frames(MAX_STACK_DEPTH as u32, &mut out).unwrap_err().to_string().contains("more than"));
        assert!(v.check().unwrap_err().to_string().contains("more than"));
    }
}
