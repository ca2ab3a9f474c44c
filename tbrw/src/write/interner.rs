//! The writer's string interner: every distinct text of a writing session
//! gets one id, after the ids of the file being appended to.

use std::collections::HashMap;

use crate::model::strings::StringId;

/// Assigns ids to distinct strings, in order of first use, from a start id.
#[derive(Debug, Default)]
pub(crate) struct StringInterner {
    ids: HashMap<String, u64>,
    /// Strings added since the last commit, in id order.
    new: Vec<String>,
    /// The id the first new string gets.
    first_new_id: u64,
}

impl StringInterner {
    /// An interner whose new ids start after `existing` strings.
    pub(crate) fn new(existing_count: u64) -> Self {
        StringInterner { ids: HashMap::new(), new: Vec::new(), first_new_id: existing_count + 1 }
    }

    /// Makes a string of the existing file known, so that it is not stored twice.
    pub(crate) fn add_existing(&mut self, s: &str, id: u64) {
        self.ids.entry(s.to_owned()).or_insert(id);
    }

    pub(crate) fn intern(&mut self, text: Option<&str>) -> StringId {
        let Some(s) = text else { return StringId::NONE };
        if let Some(&id) = self.ids.get(s) {
            return StringId(id);
        }
        let id = self.first_new_id + self.new.len() as u64;
        self.ids.insert(s.to_owned(), id);
        self.new.push(s.to_owned());
        StringId(id)
    }

    pub(crate) fn first_new_id(&self) -> u64 {
        self.first_new_id
    }

    pub(crate) fn new_strings(&self) -> &[String] {
        &self.new
    }

    /// The text of a new string's id (`None` for any other id).
    pub(crate) fn new_text(&self, id: StringId) -> Option<&str> {
        let i = id.0.checked_sub(self.first_new_id)?;
        self.new.get(usize::try_from(i).ok()?).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interner_dedups_and_numbers_after_existing() {
        let mut i = StringInterner::new(5);
        i.add_existing("old", 3);
        assert_eq!(i.intern(None), StringId::NONE);
        assert_eq!(i.intern(Some("old")), StringId(3));
        assert_eq!(i.intern(Some("a")), StringId(6));
        assert_eq!(i.intern(Some("b")), StringId(7));
        assert_eq!(i.intern(Some("a")), StringId(6));
        assert_eq!(i.intern(Some("")), StringId(8));
        assert_eq!(i.new_strings(), ["a", "b", ""]);
        assert_eq!((i.new_text(StringId(6)), i.new_text(StringId(8))), (Some("a"), Some("")));
        assert_eq!((i.new_text(StringId(3)), i.new_text(StringId(9)), i.new_text(StringId::NONE)), (None, None, None));
    }
}
