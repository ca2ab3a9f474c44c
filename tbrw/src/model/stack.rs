//! Call stacks stored once each: the stack table of a stream (section kind
//! 0x0500, docs/FORMAT.md "Stack table") and the field of a sample record
//! that names its stack.
//!
//! A stack table is a prefix tree: node `i` is one frame, its address and
//! the node of its caller (`None` for the outermost frame). A stack is
//! named by the node of its innermost frame, its **stack id**; its frames
//! are that node, its parent, its parent's parent... up to the root. Every
//! parent comes before its children (`parent < i`), so a walk up always
//! ends, and a stack has at most [`MAX_STACK_DEPTH`] frames.

use crate::model::descriptor::{desc_subtype, DescEntry};

/// The user-defined descriptor field type of a sample's stack id (4 bytes,
/// little-endian: a node index of the stream's stack table, or
/// [`NO_STACK`]). Registered with this project's other field types in
/// `tbrw-import`'s `fields` as `STACK_ID`.
pub const STACK_ID_FIELD: u16 = 0x4503;

/// The user-defined field type of a stack table node's parent (4 bytes: a
/// node index, or 0xFFFFFFFF for an outermost frame), in the records of
/// the custom stream that holds a stack table in Intel's layout
/// (docs/FORMAT.md, "This project's sections in Intel's layout").
pub const STACK_PARENT_FIELD: u16 = 0x4504;

/// The user-defined field type of a stack table node's frame address (8
/// bytes), beside [`STACK_PARENT_FIELD`].
pub const STACK_ADDRESS_FIELD: u16 = 0x4505;

/// The stack id of a sample that has no call stack.
pub const NO_STACK: u32 = u32::MAX;

/// The most frames a stack may have: a deeper node is refused by the
/// writer and is damage to readers and `verify`. (perf's own limit,
/// `kernel.perf_event_max_stack`, is at most 65,535 frames.) It bounds the
/// work and memory one sample's stack takes, whatever the file says.
pub const MAX_STACK_DEPTH: usize = 1 << 16;

/// One node of a stack table: a frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackNode {
    /// The node of the caller's frame; `None` for the outermost frame.
    pub parent: Option<u32>,
    /// The frame's address: the sampled instruction pointer for the
    /// innermost frame, a return address for its callers.
    pub address: u64,
}

/// The data descriptor entry of the stack id field ([`STACK_ID_FIELD`], 4
/// bytes) named `name`, to add to a stream's descriptor.
pub fn stack_id_entry(name: &str) -> DescEntry {
    DescEntry {
        desc_type: STACK_ID_FIELD,
        subtype: desc_subtype::NONE,
        data_size: 4,
        name: Some(name.to_owned()),
        ..Default::default()
    }
}
