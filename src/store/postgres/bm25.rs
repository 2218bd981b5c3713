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

/// Bytes before each document's postings in a block's list (`term_blocks.postings`):
/// the document's id (8) and its postings' count (4), big-endian (`int8send`,
/// `int4send`, as the merge writes them in SQL).
pub(super) const BLOCK_HEADER: usize = 12;

/// Append document `doc`'s list (`postings`, [`push_posting`]'s bytes) to a block's.
#[cfg(test)]
pub(super) fn push_block_doc(block: &mut Vec<u8>, doc: i64, postings: &[u8]) {
    block.extend_from_slice(&doc.to_be_bytes());
    block.extend_from_slice(&((postings.len() / POSTING_BYTES) as i32).to_be_bytes());
    block.extend_from_slice(postings);
}

/// A block's list split by document: (document, its postings' bytes).
pub(super) fn read_block(block: &[u8]) -> Result<Vec<(i64, &[u8])>> {
    let bad = || {
        crate::Error::Invalid(format!(
            "a BM25 block of {} bytes that does not split into documents",
            block.len()
        ))
    };
    let mut docs = Vec::new();
    let mut rest = block;
    while !rest.is_empty() {
        if rest.len() < BLOCK_HEADER {
            return Err(bad());
        }
        let (mut doc, mut n) = ([0; 8], [0; 4]);
        doc.copy_from_slice(&rest[..8]);
        n.copy_from_slice(&rest[8..BLOCK_HEADER]);
        let bytes = usize::try_from(i32::from_be_bytes(n))
            .ok()
            .and_then(|n| n.checked_mul(POSTING_BYTES))
            .filter(|&b| b <= rest.len() - BLOCK_HEADER)
            .ok_or_else(bad)?;
        docs.push((
            i64::from_be_bytes(doc),
            &rest[BLOCK_HEADER..BLOCK_HEADER + bytes],
        ));
        rest = &rest[BLOCK_HEADER + bytes..];
    }
    Ok(docs)
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
    fn a_block_reads_back_each_documents_list() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        push_posting(&mut a, 10, 1, 5);
        push_posting(&mut a, 11, 2, 6);
        push_posting(&mut b, 40, 3, 7);
        let mut block = Vec::new();
        push_block_doc(&mut block, 3, &a);
        push_block_doc(&mut block, 9, &b);
        assert_eq!(block.len(), 2 * BLOCK_HEADER + 3 * POSTING_BYTES);
        let docs = read_block(&block).unwrap();
        assert_eq!(docs, vec![(3, a.as_slice()), (9, b.as_slice())]);
        // The bytes `int8send(3) || int4send(2) || …` the merge makes in SQL.
        assert_eq!(&block[..12], b"\0\0\0\0\0\0\0\x03\0\0\0\x02");
        // Cut short, or a count past the end: an error, not a panic.
        assert!(read_block(&block[..block.len() - 1]).is_err());
        assert!(read_block(&block[..5]).is_err());
        let mut lying = block.clone();
        lying[11] = 0x7f;
        assert!(read_block(&lying).is_err());
        lying[8] = 0xff;
        assert!(read_block(&lying).is_err());
        assert!(read_block(&[]).unwrap().is_empty());
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
