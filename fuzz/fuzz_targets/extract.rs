//! Fuzz target: Quire's PDF text extraction (lopdf's parser, then the content-stream
//! interpreter, fonts, CMaps and layout) on arbitrary bytes. Any panic, abort,
//! stack overflow, or run over the time or memory limit is a finding.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = quire_pdf::extract_bytes(std::path::Path::new("fuzz.pdf"), data);
});
