//! Writing a stream's stack table (section kind 0x0500, docs/FORMAT.md
//! "Stack table"): [`StackTable`] interns stacks as they come, each
//! distinct (caller node, address) once, and
//! [`StreamWriter::stack_table`](super::writer::StreamWriter::stack_table)
//! stores it with the stream. Every importer or collector that has call
//! stacks calls the same two: intern each sample's stack, put the id in the
//! sample's stack id field ([`crate::stack_id_entry`]), store the
//! table before finishing the stream.

use hashbrown::HashTable;

use super::engine::Engine;
use super::output::{Part, Pending};
use crate::format::kind::SectionKind;
use crate::format::stack_table::{self, NODE_SIZE, NO_PARENT};
use crate::model::error::{Error, Result};
use crate::model::stack::{StackNode, MAX_STACK_DEPTH, NO_STACK};

/// Stacks interned as a prefix tree of (caller node, address) nodes: a
/// stack shared by a million samples is stored once, and stacks sharing
/// their outer frames share those nodes.
///
/// ```
/// let mut t = tbrw::StackTable::new();
/// // Innermost frame first, as perf and unwinders give them.
/// let a = t.intern_innermost_first(&[0x30, 0x20, 0x10])?;
/// let b = t.intern_innermost_first(&[0x31, 0x20, 0x10])?;
/// assert_eq!(t.intern_innermost_first(&[0x30, 0x20, 0x10])?, a);
/// assert_eq!(t.len(), 4); // 0x10 and 0x20 are shared
/// assert_ne!(a, b);
/// assert_eq!(t.intern_innermost_first(&[])?, tbrw::NO_STACK);
/// # Ok::<(), tbrw::Error>(())
/// ```
///
/// Memory: 12 bytes a node, plus about 5 bytes a node of index (a hash
/// table of node numbers, hashed from the nodes themselves): it grows with
/// the distinct frames, never with the samples.
#[derive(Default)]
pub struct StackTable {
    /// The nodes, encoded as the section stores them.
    nodes: Vec<u8>,
    /// Node numbers, hashed by (parent, address).
    index: HashTable<u32>,
    /// Each node's depth (0 for an outermost frame), to refuse a stack
    /// deeper than [`MAX_STACK_DEPTH`] where it is made.
    depth: Vec<u16>,
}

impl std::fmt::Debug for StackTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackTable").field("nodes", &self.len()).finish()
    }
}

#[inline]
fn hash(parent: u32, address: u64) -> u64 {
    // A multiply spreads the bits into the high ones the table's control
    // bytes take; the keys are addresses, not an attacker's choice of
    // collisions (and a collision costs time, never correctness).
    let h = (address ^ u64::from(parent).rotate_left(40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 31)
}

impl StackTable {
    /// An empty table.
    pub fn new() -> StackTable {
        StackTable::default()
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len() / NODE_SIZE
    }

    /// Whether no stack was interned.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `i`.
    pub fn node(&self, i: u32) -> Option<StackNode> {
        stack_table::node(&self.nodes, u64::from(i))
    }

    /// The node of frame `address` called from node `parent` (`None`: an
    /// outermost frame): the existing one, else a new one. Errors when the
    /// parent is not a node, the stack would be deeper than
    /// [`MAX_STACK_DEPTH`], or the table is full (2^32 - 1 nodes).
    pub fn node_of(&mut self, parent: Option<u32>, address: u64) -> Result<u32> {
        let p = parent.unwrap_or(NO_PARENT);
        let depth = match parent {
            None => 0,
            Some(p) => {
                let d = self.depth.get(p as usize).copied().ok_or_else(|| Error::BadParameter {
                    what: format!("stack node {p} is not in the table ({} nodes)", self.len()),
                })?;
                // A node of depth d is the (d + 1)th frame of its stacks.
                if usize::from(d) + 1 >= MAX_STACK_DEPTH {
                    return Err(Error::BadParameter { what: format!("a stack deeper than {MAX_STACK_DEPTH} frames") });
                }
                d + 1
            }
        };
        let h = hash(p, address);
        let nodes = &self.nodes;
        let same = |&i: &u32| {
            stack_table::node(nodes, u64::from(i))
                .is_some_and(|n| n.parent.unwrap_or(NO_PARENT) == p && n.address == address)
        };
        if let Some(&i) = self.index.find(h, same) {
            return Ok(i);
        }
        let i = u32::try_from(self.len())
            .ok()
            .filter(|&i| i != NO_STACK)
            .ok_or_else(|| Error::BadParameter { what: "a stack table of more than 2^32 - 1 nodes".into() })?;
        stack_table::encode_node(StackNode { parent, address }, &mut self.nodes);
        self.depth.push(depth);
        let nodes = &self.nodes;
        self.index.insert_unique(h, i, |&j| {
            let n = stack_table::node(nodes, u64::from(j)).unwrap_or_default();
            hash(n.parent.unwrap_or(NO_PARENT), n.address)
        });
        Ok(i)
    }

    /// The id of the stack of `frames`, innermost (the sampled address)
    /// first; [`NO_STACK`] when there are none.
    pub fn intern_innermost_first(&mut self, frames: &[u64]) -> Result<u32> {
        let mut at = None;
        for &a in frames.iter().rev() {
            at = Some(self.node_of(at, a)?);
        }
        Ok(at.unwrap_or(NO_STACK))
    }

    /// The id of the stack of `frames`, outermost first; [`NO_STACK`] when
    /// there are none.
    pub fn intern_outermost_first(&mut self, frames: impl IntoIterator<Item = u64>) -> Result<u32> {
        let mut at = None;
        for a in frames {
            at = Some(self.node_of(at, a)?);
        }
        Ok(at.unwrap_or(NO_STACK))
    }

    /// The section's bytes: head, then the nodes.
    fn into_parts(self) -> (Vec<Part>, u64) {
        let count = self.len() as u64;
        (vec![Part::Bytes(stack_table::head().to_vec()), Part::Bytes(self.nodes)], count)
    }
}

impl Engine {
    /// Stores `table` as the stack table of stream `n`, which this session
    /// is writing (not finished yet); a second call replaces the first.
    pub fn set_stack_table(&mut self, n: u32, table: StackTable) -> Result<()> {
        if !self.stream_open_for_writing(n) {
            return Err(Error::InvalidStream {
                stream: n,
                why: "a stack table goes with a stream being written in this session, before it is finished".into(),
            });
        }
        let mode = self.mode();
        let out = self
            .output_mut()
            .ok_or(Error::InvalidAccess { mode, what: "writing a stack table in a file opened read-only" })?;
        out.remove(|kind, stream| kind == SectionKind::StackTable && stream == n);
        let (parts, count) = table.into_parts();
        out.submit(Pending::new(SectionKind::StackTable, n, parts, count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stack::stack_id_entry;
    use crate::read::Tb5File;
    use crate::write::writer::Tb5Writer;
    use crate::{desc_subtype, desc_type, DescEntry, StreamInfo};

    proptest::proptest! {
        /// Any stacks intern and read back: a stack's id walks back to its
        /// frames, equal stacks get one id and different ones two, parents
        /// come before children, and the section's bytes decode to the
        /// same nodes.
        #[test]
        fn interned_stacks_read_back(stacks in proptest::collection::vec(proptest::collection::vec(0u64..40, 0..10), 0..60)) {
            let mut t = StackTable::new();
            let ids: Vec<u32> = stacks.iter().map(|f| t.intern_innermost_first(f).unwrap()).collect();
            for (f, &id) in stacks.iter().zip(&ids) {
                let mut walked = Vec::new();
                let mut at = (id != NO_STACK).then_some(id);
                while let Some(i) = at {
                    let n = t.node(i).unwrap();
                    proptest::prop_assert!(n.parent.is_none_or(|p| p < i));
                    walked.push(n.address);
                    at = n.parent;
                }
                proptest::prop_assert_eq!(&walked, f);
            }
            for (a, fa) in ids.iter().zip(&stacks) {
                for (b, fb) in ids.iter().zip(&stacks) {
                    proptest::prop_assert_eq!(a == b, fa == fb);
                }
            }
            let n = t.len() as u64;
            let (parts, count) = t.into_parts();
            let mut bytes = Vec::new();
            for p in parts {
                if let Part::Bytes(b) = p {
                    bytes.extend_from_slice(&b);
                }
            }
            proptest::prop_assert_eq!(count, n);
            let body = stack_table::nodes(&bytes, count).unwrap();
            proptest::prop_assert!(stack_table::node(body, count).is_none());
        }
    }

    #[test]
    fn interning_shares_prefixes_and_refuses_what_cannot_be_a_stack() {
        let mut t = StackTable::new();
        let a = t.intern_innermost_first(&[3, 2, 1]).unwrap();
        let b = t.intern_outermost_first([1, 2, 4]).unwrap();
        assert_eq!((a, b, t.len()), (2, 3, 4));
        assert_eq!(t.node(3), Some(StackNode { parent: Some(1), address: 4 }));
        assert_eq!(t.intern_outermost_first([1, 2, 3]).unwrap(), a);
        // The same address under another caller is another node.
        assert_eq!(t.intern_innermost_first(&[2]).unwrap(), 4);
        assert!(t.node_of(Some(99), 5).is_err());
        let mut deep = StackTable::new();
        let mut at = None;
        for i in 0..MAX_STACK_DEPTH as u64 {
            at = Some(deep.node_of(at, i).unwrap());
        }
        assert!(deep.node_of(at, 0).unwrap_err().to_string().contains("deeper than"));
    }

    /// A file of one stream: one record per id (ip = its index), with the
    /// stacks of `stacks` interned, and `extra` ids written as they are.
    fn file(path: &std::path::Path, stacks: &[&[u64]], extra: &[u32], table: bool) -> Vec<u32> {
        let mut w = Tb5Writer::create(path).unwrap();
        w.write_hardware(&Default::default()).unwrap();
        w.write_software(&crate::Software { os: Some(Default::default()), ..Default::default() }).unwrap();
        w.write_modules(&[]).unwrap();
        w.write_version_info(&crate::VersionInfo { sample_file_version: 16, ..Default::default() }).unwrap();
        let mut t = StackTable::new();
        let mut ids: Vec<u32> = stacks.iter().map(|f| t.intern_innermost_first(f).unwrap()).collect();
        ids.extend_from_slice(extra);
        let mut st = w
            .stream(0)
            .unwrap()
            .info(&StreamInfo::default())
            .unwrap()
            .data_descriptor(&[
                DescEntry { desc_type: desc_type::IP, subtype: desc_subtype::NONE, data_size: 8, ..Default::default() },
                stack_id_entry("stack_id"),
            ])
            .unwrap();
        let mut d = st.data().unwrap();
        for (k, id) in ids.iter().enumerate() {
            d.add(&(k as u64).to_le_bytes()).unwrap();
            d.add(&id.to_le_bytes()).unwrap();
        }
        d.done().unwrap();
        st.events(&[]).unwrap();
        if table {
            st.stack_table(t).unwrap();
        }
        st.finish().unwrap();
        // A finished stream takes no stack table.
        assert!(w.engine_mut().set_stack_table(0, StackTable::new()).is_err());
        w.close().unwrap();
        ids
    }

    #[test]
    fn a_stack_table_is_stored_with_its_stream_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.tb5");
        let ids = file(&path, &[&[0x30u64, 0x20, 0x10][..], &[0x31, 0x20, 0x10], &[]], &[], true);

        let f = Tb5File::open(&path).unwrap();
        f.verify().unwrap();
        let v = f.stream(0).unwrap().stack_table().unwrap().unwrap();
        assert_eq!(v.len(), 4);
        let mut out = Vec::new();
        v.frames(ids[1], &mut out).unwrap();
        assert_eq!(out, [0x31, 0x20, 0x10]);
        assert_eq!(ids[2], NO_STACK);
    }

    #[test]
    fn verify_names_a_record_whose_stack_id_names_no_node() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.tb5");
        file(&path, &[&[0x30u64, 0x20][..]], &[2], true);
        let e = Tb5File::open(&path).unwrap().verify().unwrap_err().to_string();
        assert!(e.contains("stack id 2 names no node") && e.contains("record 1") && e.contains("bad.tb5"), "{e}");
        // Ids without a table: every one that is not NO_STACK is damage.
        let path = dir.path().join("none.tb5");
        file(&path, &[], &[NO_STACK, 0], false);
        let e = Tb5File::open(&path).unwrap().verify().unwrap_err().to_string();
        assert!(e.contains("stack id 0, and the stream has no stack table"), "{e}");
        file(&path, &[], &[NO_STACK], false);
        Tb5File::open(&path).unwrap().verify().unwrap();
    }
}
