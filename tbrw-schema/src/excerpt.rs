//! How much of an offending input a message quotes: importers' errors,
//! and the exports' about names taken from files. A leaf.

/// The longest piece of offending input an error message quotes.
pub const EXCERPT_CHARS: usize = 80;

/// `text` as an error message quotes it: whole when short, otherwise its
/// first [`EXCERPT_CHARS`] characters and its length, so a 100 MB line never
/// becomes a 100 MB message.
pub fn excerpt(text: &str) -> String {
    let mut chars = text.char_indices();
    match chars.nth(EXCERPT_CHARS) {
        None => format!("{text:?}"),
        Some((cut, _)) => format!("{:?}... ({} bytes)", &text[..cut], text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_keeps_short_text_and_cuts_long_text() {
        assert_eq!(excerpt("12,ab"), "\"12,ab\"");
        let long = "7".repeat(100_000_000 / 1000);
        let e = excerpt(&long);
        assert!(e.len() < EXCERPT_CHARS + 40, "{e}");
        assert!(e.ends_with("... (100000 bytes)"), "{e}");
        // A cut never splits a character.
        let wide = "é".repeat(200);
        assert!(excerpt(&wide).starts_with("\"éé"));
    }
}
