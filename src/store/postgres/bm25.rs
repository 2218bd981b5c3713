//! BM25 in the PostgreSQL index: the bytes of a term's postings list in one
//! document (`term_docs.postings`), and Lucene's Okapi BM25 over the collection's
//! statistics, in double precision. What the writes store and what the ranking
//! reads, in one place.

use crate::text::bm25::{B, K1};
use crate::Result;

/// Bytes of one posting in a term's list: the chunk's id (8), the term's frequency
/// there (4) and the chunk's length in terms (4), big-endian (as `int8send` and
/// `int4send` write them, so the migration builds the lists in SQL).
pub(super) const POSTING_BYTES: usize = 16;

/// Append a posting to a term's list of one document.
pub(super) fn push_posting(list: &mut Vec<u8>, chunk_id: i64, tf: i32, len: i32) {
    list.extend_from_slice(&chunk_id.to_be_bytes());
    list.extend_from_slice(&tf.to_be_bytes());
    list.extend_from_slice(&len.to_be_bytes());
}

/// The postings of a list: (chunk, term frequency, chunk length).
pub(super) fn read_postings(list: &[u8]) -> Result<impl Iterator<Item = (i64, i32, i32)> + '_> {
    if !list.len().is_multiple_of(POSTING_BYTES) {
        return Err(crate::Error::Invalid(format!(
            "a BM25 postings list of {} bytes (not a multiple of {POSTING_BYTES})",
            list.len()
        )));
    }
    Ok(list.chunks_exact(POSTING_BYTES).map(|p| {
        let (mut id, mut tf, mut len) = ([0; 8], [0; 4], [0; 4]);
        id.copy_from_slice(&p[..8]);
        tf.copy_from_slice(&p[8..12]);
        len.copy_from_slice(&p[12..]);
        (
            i64::from_be_bytes(id),
            i32::from_be_bytes(tf),
            i32::from_be_bytes(len),
        )
    }))
}

/// Lucene's Okapi BM25 with the collection's statistics, in double precision.
pub(super) struct Bm25Stats {
    n: f64,
    /// `b / avg_len`.
    per_term: f64,
}

impl Bm25Stats {
    pub(super) fn new(n: f64, total: f64) -> Self {
        let avg = if n > 0.0 { total / n } else { 1.0 };
        Self {
            n,
            per_term: f64::from(B) / avg.max(1e-9),
        }
    }

    /// A term's weight, `idf · (k1 + 1)`, from its document frequency.
    pub(super) fn weight(&self, df: f64) -> f64 {
        (1.0 + (self.n - df + 0.5) / (df + 0.5)).ln() * (f64::from(K1) + 1.0)
    }

    /// A posting's share of its chunk's score.
    pub(super) fn score(&self, weight: f64, tf: i32, len: i32) -> f64 {
        let (tf, k1) = (f64::from(tf), f64::from(K1));
        weight * tf / (tf + k1 * (1.0 - f64::from(B) + self.per_term * f64::from(len)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_postings_list_reads_back_what_was_pushed() {
        let mut list = Vec::new();
        push_posting(&mut list, 7, 3, 120);
        push_posting(&mut list, i64::MAX - 1, 255, 1);
        assert_eq!(list.len(), 2 * POSTING_BYTES);
        let read: Vec<_> = read_postings(&list).unwrap().collect();
        assert_eq!(read, [(7, 3, 120), (i64::MAX - 1, 255, 1)]);
        // The bytes `int8send(7) || int4send(3) || int4send(120)` make in the migration.
        assert_eq!(&list[..16], b"\0\0\0\0\0\0\0\x07\0\0\0\x03\0\0\0\x78");
        assert!(read_postings(&list[..20]).is_err());
    }

    #[test]
    fn the_weights_are_lucenes_bm25() {
        // N = 10 chunks of 100 terms on average; a term in 2 of them.
        let bm = Bm25Stats::new(10.0, 1000.0);
        let (w, k1) = (bm.weight(2.0), f64::from(K1));
        assert!((w - (1.0f64 + 8.5 / 2.5).ln() * (k1 + 1.0)).abs() < 1e-12);
        // A chunk of the average length: tf · (k1 + 1) / (tf + k1).
        assert!((bm.score(w, 2, 100) - w * 2.0 / (2.0 + k1)).abs() < 1e-12);
    }
}
