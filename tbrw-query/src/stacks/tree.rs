//! [`StackTree`]: the distinct stacks of a walk as a prefix tree of
//! (parent, frame) nodes, as a file's stack table stores them, with the
//! distinct frames numbered once. A stack is its innermost node; its
//! frames are that node's frame, its parent's, and so on. Memory grows with
//! the distinct frames and nodes, never with the depth times the distinct
//! stacks: 16 bytes a frame and 8 a node, plus their indexes (hash tables
//! of 4-byte numbers, at most 7/8 full; an outermost node is found from
//! its frame, 4 bytes a frame).
//!
//! A leaf of `stacks`: imports nothing of the crate but the error.

use hashbrown::HashTable;

use super::Frame;
use crate::error::QueryError;

/// A node of a [`StackTree`]: its index.
pub type NodeId = u32;

/// "No node" in the tree's columns.
const NONE: u32 = u32::MAX;

#[inline]
fn mix(a: u64, b: u64) -> u64 {
    // A multiply spreads the bits into the high ones the tables' control
    // bytes take (a collision costs time, never correctness).
    let h = (a ^ b.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 31)
}

/// Distinct stacks as (parent, frame) nodes; see the module's doc.
#[derive(Default)]
pub struct StackTree {
    /// Per distinct frame: its module record + 1 (0: none) and address.
    frames: Vec<(u64, u64)>,
    frame_index: HashTable<u32>,
    /// Per node: its parent ([`NONE`] for an outermost frame) and frame.
    nodes: Vec<(u32, u32)>,
    /// The nodes with a parent, hashed.
    node_index: HashTable<u32>,
    /// Per distinct frame, its outermost node ([`NONE`]: none yet): most
    /// stacks are a sampled address alone, found without a hash.
    roots: Vec<u32>,
    /// The frames in `frame_index`: `frames[..indexed]` (those appended by
    /// [`StackTree::push_new_root`] are indexed when one is next looked up).
    indexed: usize,
}

impl std::fmt::Debug for StackTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StackTree").field("frames", &self.frames.len()).field("nodes", &self.nodes.len()).finish()
    }
}

fn packed(f: Frame) -> (u64, u64) {
    (f.module.map_or(0, |m| m.wrapping_add(1)), f.pc)
}

fn full() -> QueryError {
    QueryError::msg("more than 2^32 - 1 distinct frames or stack nodes in one walk".to_owned())
}

impl StackTree {
    /// An empty tree.
    pub fn new() -> StackTree {
        StackTree::default()
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there is no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The number of distinct frames.
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// Distinct frame `id` (ids are `0..frame_count()`, in the order first met).
    ///
    /// # Panics
    /// When `id` is not below [`StackTree::frame_count`].
    #[inline]
    pub fn frame(&self, id: u32) -> Frame {
        let (m, pc) = self.frames[id as usize];
        Frame { module: m.checked_sub(1), pc }
    }

    /// The number of distinct frame `f`, numbering it if it is new.
    pub fn frame_id(&mut self, f: Frame) -> Result<u32, QueryError> {
        self.index_frames();
        let key = packed(f);
        let h = mix(key.0, key.1);
        let frames = &self.frames;
        if let Some(&id) = self.frame_index.find(h, |&i| frames[i as usize] == key) {
            return Ok(id);
        }
        let id = u32::try_from(self.frames.len()).ok().filter(|&i| i != NONE).ok_or_else(full)?;
        self.frames.push(key);
        self.indexed = self.frames.len();
        let frames = &self.frames;
        self.frame_index.insert_unique(h, id, |&i| {
            let (m, pc) = frames[i as usize];
            mix(m, pc)
        });
        Ok(id)
    }

    /// Indexes the frames [`StackTree::push_new_root`] appended.
    fn index_frames(&mut self) {
        while self.indexed < self.frames.len() {
            let i = self.indexed;
            let (m, pc) = self.frames[i];
            let frames = &self.frames;
            self.frame_index.insert_unique(mix(m, pc), i as u32, |&j| {
                let (m, pc) = frames[j as usize];
                mix(m, pc)
            });
            self.indexed += 1;
        }
    }

    /// Appends frame `f`, which the tree does not have yet (the caller
    /// knows: its frames come in order, each once), and its outermost
    /// node: no lookup, and the index is made only if a frame is looked up
    /// later. For stacks of one frame counted apart (`flat.rs`).
    pub fn push_new_root(&mut self, f: Frame) -> Result<NodeId, QueryError> {
        let id = u32::try_from(self.frames.len()).ok().filter(|&i| i != NONE).ok_or_else(full)?;
        self.frames.push(packed(f));
        self.node(None, id)
    }

    /// Room for `frames` more frames and their outermost nodes.
    pub fn reserve_roots(&mut self, frames: usize) {
        self.frames.reserve_exact(frames);
        self.roots.reserve_exact(frames);
        self.nodes.reserve_exact(frames);
    }

    /// The node of frame `frame` (a number of [`StackTree::frame_id`])
    /// called from `parent` (`None`: an outermost frame), made if new.
    /// A parent always has a lower number than its children.
    pub fn node(&mut self, parent: Option<NodeId>, frame: u32) -> Result<NodeId, QueryError> {
        let Some(parent) = parent else {
            let f = frame as usize;
            if f >= self.roots.len() {
                self.roots.resize(f + 1, NONE);
            }
            if self.roots[f] == NONE {
                let id = u32::try_from(self.nodes.len()).ok().filter(|&i| i != NONE).ok_or_else(full)?;
                self.nodes.push((NONE, frame));
                self.roots[f] = id;
            }
            return Ok(self.roots[f]);
        };
        let key = (parent, frame);
        let h = mix(u64::from(key.0), u64::from(key.1));
        let nodes = &self.nodes;
        if let Some(&id) = self.node_index.find(h, |&i| nodes[i as usize] == key) {
            return Ok(id);
        }
        let id = u32::try_from(self.nodes.len()).ok().filter(|&i| i != NONE).ok_or_else(full)?;
        self.nodes.push(key);
        let nodes = &self.nodes;
        self.node_index.insert_unique(h, id, |&i| {
            let (p, f) = nodes[i as usize];
            mix(u64::from(p), u64::from(f))
        });
        Ok(id)
    }

    /// The node of `f` called from `parent`: [`StackTree::frame_id`], then [`StackTree::node`].
    pub fn push(&mut self, parent: Option<NodeId>, f: Frame) -> Result<NodeId, QueryError> {
        let id = self.frame_id(f)?;
        self.node(parent, id)
    }

    /// The stack of `frames`, innermost first: its innermost node.
    /// `None` for no frames.
    pub fn intern_innermost_first(&mut self, frames: &[Frame]) -> Result<Option<NodeId>, QueryError> {
        let mut at = None;
        for &f in frames.iter().rev() {
            at = Some(self.push(at, f)?);
        }
        Ok(at)
    }

    /// Node `n`'s parent.
    #[inline]
    pub fn parent(&self, n: NodeId) -> Option<NodeId> {
        Some(self.nodes[n as usize].0).filter(|&p| p != NONE)
    }

    /// Node `n`'s frame number.
    #[inline]
    pub fn frame_id_of(&self, n: NodeId) -> u32 {
        self.nodes[n as usize].1
    }

    /// Node `n`'s frame.
    #[inline]
    pub fn node_frame(&self, n: NodeId) -> Frame {
        self.frame(self.frame_id_of(n))
    }

    /// The nodes of the stack ending at `leaf`, innermost (`leaf`) first.
    pub fn path(&self, leaf: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        std::iter::successors(Some(leaf), move |&n| self.parent(n))
    }

    /// The frames of the stack ending at `leaf`, innermost first.
    pub fn frames_of(&self, leaf: NodeId) -> impl Iterator<Item = Frame> + '_ {
        self.path(leaf).map(move |n| self.node_frame(n))
    }

    /// Per node, its children's numbers, as one list: node `n`'s are
    /// `children[start[n]..start[n + 1]]`, in increasing order.
    pub fn children(&self) -> (Vec<u32>, Vec<u32>) {
        let mut start = vec![0u32; self.nodes.len() + 1];
        for &(p, _) in &self.nodes {
            if p != NONE {
                start[p as usize + 1] += 1;
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut next = start.clone();
        let mut children = vec![0u32; self.nodes.iter().filter(|(p, _)| *p != NONE).count()];
        for (i, &(p, _)) in self.nodes.iter().enumerate() {
            if p != NONE {
                children[next[p as usize] as usize] = i as u32;
                next[p as usize] += 1;
            }
        }
        (start, children)
    }

    /// The outermost nodes, in increasing order.
    pub fn roots(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes.iter().enumerate().filter(|(_, (p, _))| *p == NONE).map(|(i, _)| i as NodeId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(module: Option<u64>, pc: u64) -> Frame {
        Frame { module, pc }
    }

    #[test]
    fn stacks_share_their_outer_nodes_and_frames_are_numbered_once() {
        let mut t = StackTree::new();
        let a = t.intern_innermost_first(&[f(Some(1), 30), f(Some(0), 20), f(None, 10)]).unwrap().unwrap();
        let b = t.intern_innermost_first(&[f(Some(1), 31), f(Some(0), 20), f(None, 10)]).unwrap().unwrap();
        assert_eq!(t.intern_innermost_first(&[f(Some(1), 30), f(Some(0), 20), f(None, 10)]).unwrap(), Some(a));
        assert_eq!(t.len(), 4);
        assert_eq!(t.frame_count(), 4);
        // Recursion: the same frame twice in a stack is two nodes, one frame.
        let r = t.intern_innermost_first(&[f(None, 10), f(None, 10)]).unwrap().unwrap();
        assert_eq!((t.len(), t.frame_count()), (5, 4));
        assert_eq!(t.frames_of(a).collect::<Vec<_>>(), [f(Some(1), 30), f(Some(0), 20), f(None, 10)]);
        assert_eq!(t.frames_of(r).collect::<Vec<_>>(), [f(None, 10), f(None, 10)]);
        assert_eq!(t.path(b).count(), 3);
        assert_eq!(t.intern_innermost_first(&[]).unwrap(), None);
        // Module u64::MAX - 1 and none stay apart.
        let x = t.push(None, f(Some(u64::MAX - 1), 10)).unwrap();
        assert_eq!(t.node_frame(x), f(Some(u64::MAX - 1), 10));
        assert_ne!(t.frame_id_of(x), t.frame_id_of(t.path(a).last().unwrap()));
        let (start, children) = t.children();
        let root = t.path(a).last().unwrap();
        let kids = &children[start[root as usize] as usize..start[root as usize + 1] as usize];
        assert_eq!(kids.len(), 2, "{kids:?}");
        assert_eq!(t.roots().count(), 2);
        // Frames appended unlooked-up are found afterwards all the same.
        let n = t.push_new_root(f(Some(7), 70)).unwrap();
        let m = t.push_new_root(f(None, 71)).unwrap();
        assert_eq!(t.push(None, f(Some(7), 70)).unwrap(), n);
        assert_eq!(t.push(None, f(None, 71)).unwrap(), m);
        assert_eq!(t.frame_count(), 7);
    }
}
