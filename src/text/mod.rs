//! Text facts that several rooms share, kept below them all: writing systems (the
//! embedder's language check, the analyzer), the BM25 analyzer that turns chunks and
//! queries into index terms ([`analyzer`]: the in-memory index, the PostgreSQL store
//! and the support check read text the same way), and BM25's constants ([`bm25`]:
//! the in-memory index and the PostgreSQL store rank the same way).

pub mod analyzer;

/// Okapi BM25's parameters, as Lucene sets them.
pub mod bm25 {
    /// BM25 term-frequency saturation.
    pub const K1: f32 = 1.2;
    /// BM25 length normalization.
    pub const B: f32 = 0.75;
}

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
