//! An ELF image no file holds, read from a process's memory (the kernel's
//! vDSO: a collector reads it from `/proc/<pid>/mem`), made a stored file
//! ([`crate::stored`]) so that its functions are named without a file, as
//! perf names them from the copy in its build-id cache.
//!
//! Imports `elf`, `symtab`, `stored`.

/// Why an image gives no stored file ([`from_image`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The bytes are no ELF image this crate reads: why.
    #[error("{0}")]
    Malformed(String),
    /// The image parses but names no function.
    #[error("no function symbols")]
    NoFunctions,
}

/// An ELF image read from a process's memory (the kernel's vDSO, which no
/// file holds: a collector reads it from `/proc/<pid>/mem` and stores it,
/// as perf stores the vDSO in its build-id cache) as one stored file
/// labelled `label`: its layout, build id and every function symbol of its
/// `.symtab`, else its `.dynsym`, as the symbolizer keeps them from a file
/// (one per address). An image that does not parse as ELF, or names no
/// function, is an error saying why.
pub fn from_image(label: &str, image: &[u8]) -> Result<crate::stored::StoredFile, ImageError> {
    let path: std::sync::Arc<std::path::Path> = std::sync::Arc::from(std::path::Path::new(label));
    let elf = crate::elf::ElfFile::parse(path, crate::elf::Bytes::owned(image.to_vec())).map_err(|e| match e {
        crate::elf::OpenError::Malformed(why) | crate::elf::OpenError::Unreadable(why) => ImageError::Malformed(why),
        other => ImageError::Malformed(format!("{other:?}")),
    })?;
    let obj = elf.object().ok_or_else(|| ImageError::Malformed("not an ELF image".into()))?;
    let mut symbols = Vec::new();
    for dynamic in [false, true] {
        let (table, own) = crate::symtab::SymbolTable::from_object(&obj, dynamic, &[], false);
        if own > 0 {
            symbols = (0..table.len())
                .filter_map(|i| table.entry(i))
                .map(|(start, end, name)| crate::stored::StoredSymbol { start, end, name: name.to_owned() })
                .collect();
            break;
        }
    }
    if symbols.is_empty() {
        return Err(ImageError::NoFunctions);
    }
    Ok(crate::stored::StoredFile {
        label: label.to_owned(),
        build_id: elf.build_id.clone(),
        layout: elf.layout.clone(),
        symbols,
    })
}

#[cfg(test)]
mod tests {
    use super::from_image;

    /// A function the test binary keeps whatever the optimizer does with
    /// the test itself (inlined, its name then gone from the symbols).
    #[inline(never)]
    fn kept_in_the_symbol_table() -> usize {
        std::hint::black_box(7)
    }

    /// What is not an ELF image, or is cut short, or names no function,
    /// is an error saying why; never a panic.
    #[test]
    fn bad_images_are_errors() {
        assert_eq!(kept_in_the_symbol_table(), 7);
        assert!(from_image("[vdso]", b"").is_err());
        assert!(from_image("[vdso]", b"not an elf image at all").unwrap_err().to_string().contains("not an ELF"));
        let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        for cut in [16, 64, 4096] {
            let _ = from_image("x", &own[..cut.min(own.len())]);
        }
        // A whole file with functions: its own symbols, its build id.
        let f = from_image("self", &own).unwrap();
        assert_eq!(f.label, "self");
        assert!(f.symbols.iter().any(|s| s.name.contains("kept_in_the_symbol_table")));
    }
}
