//! Fuzz target: CMap parsing and the CID path. Arbitrary bytes are a Type0 font's
//! ToUnicode CMap, and a fixed content stream shows two-byte codes with that font.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "wrap.rs"]
mod wrap;

fuzz_target!(|data: &[u8]| {
    let pdf = wrap::page(wrap::CMAP_CONTENT, data);
    let _ = quire_pdf::extract_bytes(std::path::Path::new("cmap.pdf"), &pdf);
});
