//! A minimal JSON value and writer: enough for `print_tb5 --json`, without
//! a dependency. Bytes are written as lowercase hex strings.

use std::fmt;
use std::io::{self, Write};

/// A JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An unsigned integer.
    U(u64),
    /// A signed integer.
    I(i64),
    /// A string.
    Str(String),
    /// Bytes, written as a hex string.
    Bytes(Vec<u8>),
    /// An array.
    Arr(Vec<Json>),
    /// An object, keys in the given order.
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// An object from `(&str, value)` pairs.
    pub fn obj(fields: Vec<(&str, Json)>) -> Json {
        Json::Obj(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// Writes the value, compact.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        write!(out, "{self}")
    }
}

fn escape(s: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::U(v) => write!(f, "{v}"),
            Json::I(v) => write!(f, "{v}"),
            Json::Str(s) => escape(s, f),
            Json::Bytes(b) => {
                f.write_str("\"")?;
                for x in b {
                    write!(f, "{x:02x}")?;
                }
                f.write_str("\"")
            }
            Json::Arr(v) => {
                f.write_str("[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            Json::Obj(v) => {
                f.write_str("{")?;
                for (i, (k, x)) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    escape(k, f)?;
                    write!(f, ":{x}")?;
                }
                f.write_str("}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_valid_json() {
        let v = Json::obj(vec![
            ("a", Json::Arr(vec![Json::U(1), Json::I(-2), Json::Null, Json::Bool(true)])),
            ("s", Json::Str("q\"\\\n\u{1}é".into())),
            ("b", Json::Bytes(vec![0, 255])),
        ]);
        assert_eq!(v.to_string(), r#"{"a":[1,-2,null,true],"s":"q\"\\\n\u0001é","b":"00ff"}"#);
    }
}
