//! [`TableStacks`]: a stream's stacks read from its stack table
//! (docs/FORMAT.md "Stack table") into a walk's [`StackTree`], each frame
//! bound to its module with its sample's pid and time (docs/FORMAT.md
//! "Binding frames") and kept as the walk's [`Resolution`] says. A table
//! node bound for a pid is remembered with its tree node, over the span of
//! times the bind's answer holds: a sample whose stack was seen costs one
//! lookup, and a new stack only the nodes it does not share with one seen
//! (a stack 65,535 frames deep whose callers were seen costs one node, not
//! 65,535 frames).
//!
//! Imports `tree`, `names` (the resolution) and the walk's stream helpers.

use tbrw::MAX_STACK_DEPTH;
use tbrw::*;
use tbrw_schema::fields;

use super::names::Resolution;
use super::tree::{NodeId, StackTree};
use super::{Frame, IdMap};
use crate::error::QueryError;
use crate::stream;

/// (pid, table node) pairs a [`TableStacks`] remembers, at most: past it,
/// new ones are bound sample by sample (a hostile table, every sample a
/// new deep stack in a new process, cannot make the memory grow without
/// end). About 40 bytes each.
const REMEMBERED: usize = 1 << 22;

/// What a bound (pid, table node) became.
#[derive(Clone, Copy, Debug)]
struct Bound {
    /// The times over which every frame from the node out binds the same.
    span: bind::Span,
    /// The tree node of the stack from the node out.
    node: NodeId,
    /// Its frames (the table's, before a resolution collapses any).
    depth: u32,
}

/// A stream's stacks from its stack table; see the module's doc.
pub struct TableStacks<'f> {
    file: &'f Tb5File,
    stream: u32,
    table: Option<StackTableView<'f>>,
    field: Field,
    binder: bind::FrameBinder,
    remembered: IdMap<(u32, u32), Bound>,
    /// The table nodes of the stack being bound, innermost first, with
    /// their addresses.
    scratch: Vec<(u32, u64)>,
}

impl<'f> TableStacks<'f> {
    /// The stacks of stream `n`, when its records have a stack id field
    /// (4 bytes; a stream with the field and no table is read, and each of
    /// its records naming a stack is damage).
    pub fn of(file: &'f Tb5File, n: u32) -> Result<Option<TableStacks<'f>>, QueryError> {
        let s = stream::open_stream(file, n)?;
        let Some(layout) = s.layout()? else { return Ok(None) };
        let Some(field) = layout.find(fields::STACK_ID, None).copied() else { return Ok(None) };
        if field.size != 4 {
            return Err(QueryError::Damaged {
                file: file.path().display().to_string(),
                stream: n,
                what: format!("its stack id field is {} bytes, not 4", field.size),
            });
        }
        Ok(Some(TableStacks {
            file,
            stream: n,
            table: s.stack_table()?,
            field,
            binder: bind::FrameBinder::of(file, n)?,
            remembered: IdMap::default(),
            scratch: Vec::new(),
        }))
    }

    /// The stack id of record `rec`, if it has a stack.
    #[inline]
    pub fn stack_id(&self, rec: &[u8]) -> Option<u32> {
        Some(fields::read(rec, &self.field) as u32).filter(|&id| id != NO_STACK)
    }

    /// The number of nodes of the table.
    pub fn nodes(&self) -> u64 {
        self.table.map_or(0, |t| t.len())
    }

    /// The stack of record `rec` (record `k` of the stream) as a node of
    /// `tree`, its frames bound and kept as `res` says; `None` when the
    /// record has no stack.
    pub fn resolve(
        &mut self,
        rec: &[u8],
        k: u64,
        tree: &mut StackTree,
        res: &mut Resolution<'_>,
    ) -> Result<Option<NodeId>, QueryError> {
        let Some(id) = self.stack_id(rec) else { return Ok(None) };
        let key = self.binder.key(rec);
        // Records without a time stamp bind alike at every index, or are
        // not remembered (the bind's span says which).
        let t = key.tsc.unwrap_or(0);
        let seen =
            |r: &IdMap<(u32, u32), Bound>, node: u32| r.get(&(key.pid, node)).copied().filter(|b| b.span.holds(t));
        if let Some(b) = seen(&self.remembered, id) {
            return Ok(Some(b.node));
        }
        let table = self.table.as_ref().ok_or_else(|| QueryError::Damaged {
            file: self.file.path().display().to_string(),
            stream: self.stream,
            what: format!("record {k} names stack {id}, and the stream has no stack table"),
        })?;
        // Out from the stack's node to the first one bound before (or the
        // outermost). Whatever the table's damage, the walk ends: each
        // parent must come before its child, and the depth is bounded.
        self.scratch.clear();
        let mut i = id;
        let mut top = None;
        loop {
            let Some(n) = table.node(u64::from(i)) else { return Err(damage(table, id)) };
            self.scratch.push((i, n.address));
            let Some(p) = n.parent else { break };
            if p >= i || self.scratch.len() >= MAX_STACK_DEPTH {
                return Err(damage(table, id));
            }
            if let Some(b) = seen(&self.remembered, p) {
                top = Some(b);
                break;
            }
            i = p;
        }
        if top.map_or(0, |b| b.depth as usize) + self.scratch.len() > MAX_STACK_DEPTH {
            return Err(damage(table, id));
        }
        // Back in: each frame bound, kept, interned; each (pid, node)
        // remembered while its whole stack binds over a span of times.
        let mut parent = top.map(|b| b.node);
        let mut span = Some(top.map_or(bind::Span::ALWAYS, |b| b.span));
        let outer = top.map_or(0, |b| b.depth);
        for (depth, &(tn, pc)) in (outer + 1..).zip(self.scratch.iter().rev()) {
            let (module, s) = self.binder.module_of(&key, k, pc);
            let node = res.push(tree, parent, Frame { module, pc })?;
            parent = Some(node);
            span = span.zip(s).map(|(a, b)| a.and(b));
            if let Some(span) = span.filter(|_| self.remembered.len() < REMEMBERED) {
                self.remembered.insert((key.pid, tn), Bound { span, node, depth });
            }
        }
        Ok(parent)
    }
}

/// The table's own error for stack `id` (the node missing, a parent after
/// its child, a stack too deep), naming the section and byte offset.
#[cold]
fn damage(table: &StackTableView<'_>, id: u32) -> QueryError {
    let mut frames = Vec::new();
    match table.frames(id, &mut frames) {
        Err(e) => e.into(),
        // Only a stack whose frames bound before add up past the limit.
        Ok(()) => QueryError::StackTooDeep { stack: id, limit: MAX_STACK_DEPTH },
    }
}
