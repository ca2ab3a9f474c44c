//! The stack table section (kind 0x0500, docs/FORMAT.md "Stack table"):
//! an 8-byte head (u16 layout version 1, u16 node size 12, four zero
//! bytes), then per node its parent (u32, [`NO_PARENT`] for an outermost
//! frame) and its address (u64), little-endian. Fixed-size nodes are read
//! in place from the mapping: node `i` is a multiplication away, so a
//! reader walks a stack without decoding the table first.

use crate::model::stack::StackNode;

/// Bytes of the head.
pub(crate) const HEAD_SIZE: usize = 8;
/// Bytes per node.
pub(crate) const NODE_SIZE: usize = 12;
/// The layout version this reader knows.
pub(crate) const VERSION: u16 = 1;
/// The parent of an outermost frame.
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// The head of a table of nodes.
pub(crate) fn head() -> [u8; HEAD_SIZE] {
    let mut h = [0u8; HEAD_SIZE];
    h[0..2].copy_from_slice(&VERSION.to_le_bytes());
    h[2..4].copy_from_slice(&(NODE_SIZE as u16).to_le_bytes());
    h
}

/// Appends node `n` to `out`.
pub(crate) fn encode_node(n: StackNode, out: &mut Vec<u8>) {
    out.extend_from_slice(&n.parent.unwrap_or(NO_PARENT).to_le_bytes());
    out.extend_from_slice(&n.address.to_le_bytes());
}

/// The nodes of a section's bytes that the directory says hold `count`
/// nodes; the error says what does not fit (its offset in the section is
/// the second value).
pub(crate) fn nodes(bytes: &[u8], count: u64) -> Result<&[u8], (String, u64)> {
    if bytes.len() < HEAD_SIZE {
        return Err((format!("{} bytes cannot hold the {HEAD_SIZE}-byte head", bytes.len()), 0));
    }
    let version = u16::from_le_bytes([bytes[0], bytes[1]]);
    let size = u16::from_le_bytes([bytes[2], bytes[3]]);
    if version != VERSION || usize::from(size) != NODE_SIZE {
        return Err((
            format!(
                "layout version {version} with {size}-byte nodes; this reader knows version {VERSION} with {NODE_SIZE}-byte nodes"
            ),
            0,
        ));
    }
    let body = &bytes[HEAD_SIZE..];
    if Some(body.len() as u64) != count.checked_mul(NODE_SIZE as u64) {
        return Err((
            format!("{} bytes of nodes where the directory counts {count} nodes of {NODE_SIZE} bytes", body.len()),
            HEAD_SIZE as u64,
        ));
    }
    Ok(body)
}

/// Node `i` of `nodes` (the bytes [`nodes`] returned), if there is one.
#[inline]
pub(crate) fn node(nodes: &[u8], i: u64) -> Option<StackNode> {
    let at = usize::try_from(i).ok()?.checked_mul(NODE_SIZE)?;
    let b = nodes.get(at..at.checked_add(NODE_SIZE)?)?;
    let parent = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let address = u64::from_le_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]);
    Some(StackNode { parent: (parent != NO_PARENT).then_some(parent), address })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any nodes encode and decode back to themselves, in place.
        #[test]
        fn nodes_round_trip(ns in proptest::collection::vec((proptest::option::of(0u32..u32::MAX), any::<u64>()), 0..200)) {
            let ns: Vec<StackNode> = ns.into_iter().map(|(parent, address)| StackNode { parent, address }).collect();
            let mut bytes = head().to_vec();
            for n in &ns {
                encode_node(*n, &mut bytes);
            }
            let body = nodes(&bytes, ns.len() as u64).unwrap();
            for (i, n) in ns.iter().enumerate() {
                prop_assert_eq!(node(body, i as u64), Some(*n));
            }
            prop_assert_eq!(node(body, ns.len() as u64), None);
            // A count the bytes do not hold is an error, never a read past them.
            prop_assert!(nodes(&bytes, ns.len() as u64 + 1).is_err());
            prop_assert!(nodes(&bytes, u64::MAX).is_err());
        }

        /// Any bytes at all: an error or nodes, never a panic.
        #[test]
        fn any_bytes_decode_or_fail(bytes in proptest::collection::vec(any::<u8>(), 0..64), count in any::<u64>()) {
            if let Ok(body) = nodes(&bytes, count) {
                for i in 0..count.min(8) {
                    prop_assert!(node(body, i).is_some());
                }
            }
        }
    }

    #[test]
    fn an_unknown_version_or_node_size_is_refused() {
        let mut bytes = head().to_vec();
        encode_node(StackNode { parent: None, address: 1 }, &mut bytes);
        assert!(nodes(&bytes, 1).is_ok());
        let mut v2 = bytes.clone();
        v2[0] = 2;
        assert!(nodes(&v2, 1).unwrap_err().0.contains("version 2"));
        let mut wide = bytes;
        wide[2] = 16;
        assert!(nodes(&wide, 1).unwrap_err().0.contains("16-byte"));
    }
}
