//! The codec's errors in its own words: none names an option of a front
//! end (`--layout`), which the `tbrw` command adds itself.

use std::io::Cursor;

use tbrw_elf_profile::{detect, open, write_header, Header, Magic, SAY_WHICH_LAYOUT};

#[test]
fn bytes_that_fit_several_layouts_are_an_error_naming_no_option() {
    // A header and nothing else fits every layout with a 32-byte header.
    let mut bytes = Vec::new();
    let h = Header { magic: Magic::Current, wall_time: 1, cpu_time: 1, samples: 0, maps: Vec::new() };
    write_header(&mut bytes, &h).unwrap();
    let opened = open(Cursor::new(bytes), "p.prof").unwrap();
    let e = detect(&opened, "p.prof", None).unwrap_err().to_string();
    assert!(e.contains("more than one layout") && e.ends_with(SAY_WHICH_LAYOUT), "{e}");
    assert!(!e.contains("--"), "{e}");
}
