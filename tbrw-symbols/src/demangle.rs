//! Name demangling for Rust (legacy and v0) and C++ (Itanium) symbols.

use std::borrow::Cow;

/// Demangles a Rust or C++ symbol name; any other name comes back as it is.
///
/// Rust is tried first: legacy Rust names are valid Itanium names too, and the
/// C++ demangler would show their hash. A symbol version suffix (`@GLIBC_2.2.5`,
/// `@@VER`) is kept as it is after the demangled name.
pub fn demangle(name: &str) -> Cow<'_, str> {
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
            if let Ok(d) = sym.demangle() {
                return Cow::Owned(format!("{d}{version}"));
            }
        }
    }
    Cow::Borrowed(name)
}

/// Whether [`demangle`] may change `name`: `false` only for names no
/// demangler here accepts (Rust legacy `_ZN`/`ZN`/`__ZN`, Rust v0 `_R`/`R`/
/// `__R`, Itanium `_Z`), so that callers can skip it for most C names.
pub(crate) fn may_be_mangled(name: &str) -> bool {
    ["_Z", "ZN", "__Z", "_R", "R", "__R"].iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::{demangle, may_be_mangled};

    #[test]
    fn rust_legacy_and_v0() {
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
    }

    #[test]
    fn cpp() {
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(
            demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)"
        );
    }

    #[test]
    fn versions_kept_and_plain_names_untouched() {
        assert_eq!(demangle("_ZN3foo3barEv@@LIB_1.0"), "foo::bar()@@LIB_1.0");
        assert_eq!(demangle("memcpy@GLIBC_2.2.5"), "memcpy@GLIBC_2.2.5");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Zgarbage"), "_Zgarbage");
        assert_eq!(demangle(""), "");
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
    }

    #[test]
    fn mangled_names_are_not_ruled_out() {
        for n in ["_ZN4core3fmt5write17h0123456789abcdefE", "_RNvCs1234_7mycrate3foo", "_ZN3foo3barEv@@LIB_1.0"] {
            assert!(may_be_mangled(n), "{n}");
        }
        assert!(!may_be_mangled("memcpy@GLIBC_2.2.5"));
    }
}
