//! Fuzz target: CMap parsing and the CID path. Arbitrary bytes are a Type0 font's
//! ToUnicode CMap, and a fixed content stream shows two-byte codes with that font.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "wrap.rs"]
mod wrap;

const CONTENT: &[u8] = b"BT /F2 12 Tf 72 720 Td <0001002A0041FFFF00FF> Tj \
[<00410042> -200 <0043>] TJ /F1 12 Tf (plain) Tj ET /X1 Do";

fuzz_target!(|data: &[u8]| {
    let pdf = wrap::page(CONTENT, data);
    let _ = quire_pdf::extract_bytes(std::path::Path::new("cmap.pdf"), &pdf);
});
