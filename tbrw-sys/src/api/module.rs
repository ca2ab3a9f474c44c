//! Modules (guide 9): adding, enumerating, `get_one_module`.

use std::os::raw::c_void;

use tb5::codes::*;
use tb5::GlobalSection;

use super::{byte_size, enumerate, Extent};
use crate::callback::resolve;
use crate::convert::*;
use crate::ctypes::*;
use crate::handle::{boundary, non_null, with, Code, R};

/// `TBRW_add_module`.
#[no_mangle]
pub unsafe extern "C" fn TBRW_add_module(ptr: *mut c_void, module: *mut TBRW_MODULE) -> u32 {
    boundary(|| {
        let v = module_in(module)?;
        with(ptr, |h| Ok(h.engine.add_module(&v)?))
    })
}

/// Up to `n` modules from `from`, as C structures (also the module side of
/// `TBRW_bind_enumerate_modules`).
pub(super) fn modules_chunk(f: &tb5::Tb5File, from: u64, n: usize) -> R<Vec<TBRW_MODULE>> {
    let t = f.modules()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
    (from..(from + n as u64).min(t.len())).map(|i| Ok(module_out(&t.get(i)?))).collect()
}

/// `TBRW_enumerate_modules` (the module section must be open for reading).
#[no_mangle]
pub unsafe extern "C" fn TBRW_enumerate_modules(
    ptr: *mut c_void,
    callback: *const c_void,
    user_ptr: *mut c_void,
    start_index: u64,
) -> u32 {
    boundary(|| {
        let cb: EnumCallback<TBRW_MODULE> = resolve(callback)?;
        enumerate(
            ptr,
            start_index,
            |h| {
                let f = h.engine.check_readable(GlobalSection::Module)?;
                Ok(Extent::table(f.modules()?.map_or(0, |m| m.len()), GlobalSection::Module))
            },
            |h, from, n| modules_chunk(h.engine.check_readable(GlobalSection::Module)?, from, n),
            |v| cb(v.as_mut_ptr(), byte_size::<TBRW_MODULE>(v.len()), v.len() as u32, user_ptr),
        )
    })
}

/// `TBRW_get_one_module`: the pointer stays valid until the next call on
/// this handle. With read permission, a module section this session
/// finished is read too.
#[no_mangle]
pub unsafe extern "C" fn TBRW_get_one_module(
    ptr: *mut c_void,
    module_index: u64,
    p_module: *mut *const TBRW_MODULE,
) -> u32 {
    boundary(|| {
        non_null(p_module)?;
        let p = with(ptr, |h| {
            let file = h.engine.readable_file(GlobalSection::Module)?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
            let t = file.modules()?.ok_or(Code(TBRW_SECTION_NOT_EXIST))?;
            *h.one_module = module_out(&t.get(module_index)?);
            Ok(&*h.one_module as *const TBRW_MODULE)
        })?;
        *p_module = p;
        Ok(())
    })
}
