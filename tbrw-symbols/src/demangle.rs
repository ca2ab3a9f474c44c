//! Name demangling for Rust (legacy and v0) and C++ (Itanium) symbols, in
//! the two forms the GNU demangler (libiberty, what perf and `c++filt`
//! use) gives:
//!
//! - [`demangle`], the form perf report shows: C++ names without their
//!   parameters and return type (`Accum<32ul>::sum`, `c++filt -p`), Rust
//!   names without their hash;
//! - [`demangle_full`], the whole signature (`Accum<32ul>::sum(unsigned
//!   long)`, `c++filt`).
//!
//! Integer literals among template arguments are spelled as libiberty
//! spells them (`32ul`, `-5l`, `7u`, `true`), not with a cast
//! (`(unsigned long)32`) as `cpp_demangle` does.

use std::borrow::Cow;

/// How names are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Names {
    /// As the symbol table spells them.
    Raw,
    /// [`demangle`].
    Short,
    /// [`demangle_full`].
    Full,
}

/// `name` as `names` says.
pub(crate) fn shown(name: &str, names: Names) -> Cow<'_, str> {
    match names {
        Names::Raw => Cow::Borrowed(name),
        Names::Short => demangle(name),
        Names::Full => demangle_full(name),
    }
}

/// Demangles a Rust or C++ symbol name as perf report shows it (a C++
/// function without its parameters and return type); any other name comes
/// back as it is.
///
/// Rust is tried first: legacy Rust names are valid Itanium names too, and the
/// C++ demangler would show their hash. A symbol version suffix (`@GLIBC_2.2.5`,
/// `@@VER`) is kept as it is after the demangled name.
pub fn demangle(name: &str) -> Cow<'_, str> {
    demangle_as(name, false)
}

/// Demangles a Rust or C++ symbol name with the whole signature of a C++
/// function (its parameters, `const`, and the return type of a template
/// function), as `c++filt` shows it; any other name comes back as it is.
pub fn demangle_full(name: &str) -> Cow<'_, str> {
    demangle_as(name, true)
}

fn demangle_as(name: &str, full: bool) -> Cow<'_, str> {
    let (base, version) = match name.find('@') {
        Some(at) if at > 0 => name.split_at(at),
        _ => (name, ""),
    };
    if let Ok(d) = rustc_demangle::try_demangle(base) {
        // `{:#}` drops the `::h0123…` hash of legacy names.
        return Cow::Owned(format!("{d:#}{version}"));
    }
    if base.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(base) {
            let d = if full { sym.demangle() } else { short_cpp(&sym) };
            if let Ok(d) = d {
                return Cow::Owned(format!("{}{version}", gnu_literals(&d)));
            }
        }
    }
    Cow::Borrowed(name)
}

/// A C++ name without its parameters and return type, as libiberty gives
/// it without `DMGL_PARAMS`: also without the qualifiers of a member
/// function (`const`, `&`...), which `cpp_demangle` keeps after the
/// parameters it leaves out (`operator() const`).
fn short_cpp(sym: &cpp_demangle::Symbol<&str>) -> Result<String, std::fmt::Error> {
    let short = sym.demangle_with_options(&cpp_demangle::DemangleOptions::new().no_params().no_return_type())?;
    let with_params = sym.demangle_with_options(&cpp_demangle::DemangleOptions::new().no_return_type())?;
    // The qualifiers: what follows the parameters' closing parenthesis.
    let quals = with_params.rfind(')').map_or("", |at| &with_params[at + 1..]);
    let only_quals = !quals.is_empty()
        && quals.split_whitespace().all(|w| matches!(w, "const" | "volatile" | "restrict" | "&" | "&&"));
    Ok(match short.strip_suffix(quals) {
        Some(bare) if only_quals => bare.to_owned(),
        _ => short,
    })
}

/// The integer types whose literals libiberty writes with a suffix instead
/// of a cast, and the suffix; `bool` is `true`/`false`.
const SUFFIXES: [(&str, &str); 6] = [
    ("int", ""),
    ("unsigned int", "u"),
    ("long", "l"),
    ("unsigned long", "ul"),
    ("long long", "ll"),
    ("unsigned long long", "ull"),
];

/// `(TYPE)N` casts of integer literals in `cpp_demangle`'s output, spelled
/// as libiberty spells them: `Nul` for `(unsigned long)N`, `true` for
/// `(bool)1`... Other casts (`(char)97`) stay as they are, as there.
fn gnu_literals(d: &str) -> Cow<'_, str> {
    if !d.contains('(') {
        return Cow::Borrowed(d);
    }
    let mut out = String::with_capacity(d.len());
    let mut rest = d;
    while let Some(open) = rest.find('(') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match literal(after) {
            Some((text, used)) => {
                out.push_str(&text);
                rest = &after[used..];
            }
            None => {
                out.push('(');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// At `s` (just after a `(`): `TYPE)N` for an integer or `bool` type and
/// the literal as libiberty writes it, with the bytes it spans.
fn literal(s: &str) -> Option<(String, usize)> {
    let close = s.find(')')?;
    let ty = &s[..close];
    let value = &s[close + 1..];
    let digits_at = usize::from(value.starts_with('-'));
    let digits = value[digits_at..].bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let number = &value[..digits_at + digits];
    // A number that runs on into a name or a decimal point is no literal.
    if value[digits_at + digits..].starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.') {
        return None;
    }
    let text = if ty == "bool" {
        match number {
            "0" => "false".to_owned(),
            "1" => "true".to_owned(),
            _ => return None,
        }
    } else {
        let (_, suffix) = SUFFIXES.iter().find(|(t, _)| *t == ty)?;
        format!("{number}{suffix}")
    };
    Some((text, close + 1 + number.len()))
}

/// Whether [`demangle`] may change `name`: `false` only for names no
/// demangler here accepts (Rust legacy `_ZN`/`ZN`/`__ZN`, Rust v0 `_R`/`R`/
/// `__R`, Itanium `_Z`), so that callers can skip it for most C names.
pub(crate) fn may_be_mangled(name: &str) -> bool {
    ["_Z", "ZN", "__Z", "_R", "R", "__R"].iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::{demangle, demangle_full, may_be_mangled};

    #[test]
    fn rust_legacy_and_v0() {
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
        assert_eq!(demangle_full("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
    }

    /// Both forms against what GNU c++filt (libiberty, perf's demangler)
    /// prints: `c++filt -p` (perf report's form) and `c++filt`.
    #[test]
    fn cpp_as_cxxfilt_prints_it() {
        let cases = [
            ("_ZN5AccumILm32EE3sumEm", "Accum<32ul>::sum", "Accum<32ul>::sum(unsigned long)"),
            (
                "_ZN2ns6Worker4makeERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEi",
                "ns::Worker::make",
                "ns::Worker::make(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, int)",
            ),
            ("_Z3fooILb1EEvv", "foo<true>", "void foo<true>()"),
            ("_Z3fooILi5EEvv", "foo<5>", "void foo<5>()"),
            ("_Z3fooILln5EEvv", "foo<-5l>", "void foo<-5l>()"),
            ("_Z3fooILj7EEvv", "foo<7u>", "void foo<7u>()"),
            ("_Z3fooILc97EEvv", "foo<(char)97>", "void foo<(char)97>()"),
            ("_Z3fooILy3EEvv", "foo<3ull>", "void foo<3ull>()"),
            ("_Z3fooILx3EEvv", "foo<3ll>", "void foo<3ll>()"),
            (
                "_ZNSt6vectorIiSaIiEE9push_backERKi",
                "std::vector<int, std::allocator<int> >::push_back",
                "std::vector<int, std::allocator<int> >::push_back(int const&)",
            ),
            ("_Z3barIiET_S0_", "bar<int>", "int bar<int>(int)"),
            ("_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()", "main::{lambda()#1}::operator()() const"),
            ("_ZN3foo3barEv", "foo::bar", "foo::bar()"),
        ];
        for (mangled, short, full) in cases {
            assert_eq!(demangle(mangled), short, "{mangled}");
            assert_eq!(demangle_full(mangled), full, "{mangled}");
        }
    }

    #[test]
    fn versions_kept_and_plain_names_untouched() {
        assert_eq!(demangle("_ZN3foo3barEv@@LIB_1.0"), "foo::bar@@LIB_1.0");
        assert_eq!(demangle_full("_ZN3foo3barEv@@LIB_1.0"), "foo::bar()@@LIB_1.0");
        assert_eq!(demangle("memcpy@GLIBC_2.2.5"), "memcpy@GLIBC_2.2.5");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Zgarbage"), "_Zgarbage");
        assert_eq!(demangle(""), "");
    }

    #[test]
    fn casts_that_are_not_integer_literals_stay() {
        assert_eq!(super::gnu_literals("f<(unsigned long)32>"), "f<32ul>");
        assert_eq!(super::gnu_literals("f<(bool)2>"), "f<(bool)2>");
        assert_eq!(super::gnu_literals("f<(long)3x>"), "f<(long)3x>");
        assert_eq!(super::gnu_literals("f<(short)3>"), "f<(short)3>");
        assert_eq!(super::gnu_literals("g(int)"), "g(int)");
        assert_eq!(super::gnu_literals("g((int)"), "g((int)");
        assert_eq!(super::gnu_literals("(long)"), "(long)");
    }

    proptest::proptest! {
        /// A name [`may_be_mangled`] rules out comes back from [`demangle`]
        /// as it is (names spelled from the prefixes' letters too).
        #[test]
        fn names_ruled_out_are_not_demangled(name in "[_ZRNv0-9a-zA-Z@.$]{0,24}") {
            if !may_be_mangled(&name) {
                proptest::prop_assert!(matches!(demangle(&name), std::borrow::Cow::Borrowed(_)), "{}", name);
            }
        }

        /// The literal rewriting never panics and keeps text without casts.
        #[test]
        fn literal_rewriting_is_total(text in "[(a-z )0-9<>,-]{0,40}") {
            let out = super::gnu_literals(&text);
            if !text.contains('(') {
                proptest::prop_assert_eq!(out.as_ref(), text.as_str());
            }
        }
    }

    #[test]
    fn mangled_names_are_not_ruled_out() {
        for n in ["_ZN4core3fmt5write17h0123456789abcdefE", "_RNvCs1234_7mycrate3foo", "_ZN3foo3barEv@@LIB_1.0"] {
            assert!(may_be_mangled(n), "{n}");
        }
        assert!(!may_be_mangled("memcpy@GLIBC_2.2.5"));
    }
}
