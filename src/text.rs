//! Facts about writing systems that several rooms share (the embedder's language
//! check, the BM25 analyzer), kept below both.

/// Whether `c` is written without spaces between words (CJK ideographs, kana,
/// hangul syllables).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x2FA1F) // CJK extensions B.. and compatibility supplement
}
