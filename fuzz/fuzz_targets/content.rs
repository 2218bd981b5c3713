//! Fuzz target: the content-stream interpreter and layout, with a page of known fonts
//! (the standard Helvetica, a Type0 font with a ToUnicode CMap, a form XObject) drawing
//! arbitrary bytes as its content. The parser is not in the way: the PDF around the
//! stream is well formed.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "wrap.rs"]
mod wrap;

fuzz_target!(|data: &[u8]| {
    let pdf = wrap::page(data, wrap::PLAIN_CMAP);
    let _ = quire_pdf::extract_bytes(std::path::Path::new("content.pdf"), &pdf);
});
