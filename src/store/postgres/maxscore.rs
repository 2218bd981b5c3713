//! BM25's top k over the database's term lists without reading every list whole:
//! MaxScore (Turtle and Flood, 1995), exact.
//!
//! A term's share of any chunk's score is below its weight `idf · (k1 + 1)` (the
//! frequency factor `tf / (tf + k1 · norm)` is under 1). The terms are read whole in
//! order of weight, rarest first. Once the k-th best score so far is above the sum of
//! the weights of the terms not read yet, a chunk that none of the read terms found
//! can no longer reach the top k: the other terms are then read only in the
//! documents of the chunks that still can ([`Lists::of_docs`]), by the primary key.
//! A common term (one row per document of the library) is read in tens of documents
//! instead of all of them, so a question reads about as many rows at 10,000
//! documents as at 1,000 when it has one rare term.
//!
//! The result is the exhaustive ranking's, bit for bit: a chunk's score is summed in
//! the query's term order from the same shares, whatever order the terms were read
//! in, and only chunks whose score is certainly below the k-th are left out (with a
//! margin of 1e-9 for the order the bounds were summed in).

use std::collections::HashMap;

use super::search::{read_postings, Bm25Stats};
use crate::Result;

/// Where the lists are read from: the database, in one snapshot.
pub(super) trait Lists {
    /// Every document's list of `term`: (document, postings).
    fn whole(&mut self, term: &str) -> Result<Vec<(i64, Vec<u8>)>>;
    /// The lists of `terms` in `docs` only: (term, document, postings).
    fn of_docs(&mut self, terms: &[&str], docs: &[i64]) -> Result<Vec<(String, i64, Vec<u8>)>>;
}

/// What one ranking read, for the bench and the log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    /// Terms whose every list was read.
    pub whole_terms: usize,
    /// Terms read only in the documents that could still rank.
    pub probed_terms: usize,
    /// Rows (a term's list in one document) read.
    pub rows: usize,
}

/// Above this many candidate documents, the remaining terms are read whole: a probe
/// by so long a list of keys costs about what a whole read does.
const MAX_PROBE_DOCS: usize = 4096;

/// Relative slack on a bound, for the order its weights were summed in.
const MARGIN: f64 = 1e-9;

/// The `k` best chunks for `terms` (the query's distinct terms in its order, with
/// their weights `idf · (k1 + 1)`; a weight of 0 is a term no chunk has), best first,
/// ties to the lower chunk id, and what was read. `allows` says which documents
/// count (a scope); the others' postings are never scored.
pub(super) fn top_k(
    terms: &[(&str, f64)],
    k: usize,
    bm: &Bm25Stats,
    allows: &dyn Fn(i64) -> bool,
    lists: &mut dyn Lists,
) -> Result<(Vec<(i64, f64)>, Reads)> {
    let mut reads = Reads::default();
    let mut acc = Shares::new(terms.len());
    if k == 0 {
        return Ok((Vec::new(), reads));
    }
    // Rarest (heaviest) first; equal weights in the query's order.
    let mut order: Vec<usize> = (0..terms.len()).filter(|&i| terms[i].1 > 0.0).collect();
    order.sort_by(|&a, &b| terms[b].1.total_cmp(&terms[a].1).then(a.cmp(&b)));
    let mut step = 0;
    let mut threshold = None;
    while step < order.len() {
        let rest: f64 = order[step..].iter().map(|&i| terms[i].1).sum();
        if let Some(t) = acc.kth_partial(k) {
            if rest * (1.0 + MARGIN) < t {
                threshold = Some((t, rest));
                break;
            }
        }
        let i = order[step];
        let (term, weight) = terms[i];
        let rows = lists.whole(term)?;
        reads.whole_terms += 1;
        reads.rows += rows.len();
        for (doc, list) in rows {
            if !allows(doc) {
                continue;
            }
            for (chunk, tf, len) in read_postings(&list)? {
                acc.add(i, chunk, doc, bm.score(weight, tf, len), true);
            }
        }
        step += 1;
    }
    if let Some((t, rest)) = threshold {
        // Chunks that may still reach the k-th score; the others are left out.
        let bound = rest * (1.0 + MARGIN);
        for s in 0..acc.len() {
            acc.live[s] = acc.partial[s] + bound >= t * (1.0 - MARGIN);
        }
        let mut docs: Vec<i64> = (0..acc.len())
            .filter(|&s| acc.live[s])
            .map(|s| acc.doc[s])
            .collect();
        docs.sort_unstable();
        docs.dedup();
        let rest_terms: Vec<&str> = order[step..].iter().map(|&i| terms[i].0).collect();
        let rows = if docs.len() > MAX_PROBE_DOCS {
            reads.whole_terms += rest_terms.len();
            let mut all = Vec::new();
            for term in &rest_terms {
                for (doc, list) in lists.whole(term)? {
                    all.push((term.to_string(), doc, list));
                }
            }
            all
        } else {
            reads.probed_terms += rest_terms.len();
            lists.of_docs(&rest_terms, &docs)?
        };
        reads.rows += rows.len();
        for (term, doc, list) in rows {
            let Some(i) = terms.iter().position(|(t, _)| *t == term) else {
                continue;
            };
            if !allows(doc) {
                continue;
            }
            for (chunk, tf, len) in read_postings(&list)? {
                // A chunk no read term found scores at most `rest`: below the k-th.
                acc.add(i, chunk, doc, bm.score(terms[i].1, tf, len), false);
            }
        }
    }
    Ok((acc.best(k), reads))
}

/// Each chunk's share from each term, kept apart so the sum is made in the query's
/// order at the end.
struct Shares {
    terms: usize,
    slot: HashMap<i64, usize>,
    chunk: Vec<i64>,
    doc: Vec<i64>,
    /// `terms` shares a chunk, 0 where the term is not in it.
    shares: Vec<f64>,
    /// The shares read so far, summed in reading order (a lower bound).
    partial: Vec<f64>,
    /// Whether the chunk can still rank (its every share is read).
    live: Vec<bool>,
}

impl Shares {
    fn new(terms: usize) -> Self {
        Self {
            terms,
            slot: HashMap::new(),
            chunk: Vec::new(),
            doc: Vec::new(),
            shares: Vec::new(),
            partial: Vec::new(),
            live: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.chunk.len()
    }

    /// Add term `i`'s share of `chunk`; a chunk not seen before is added only when
    /// `new` allows it.
    fn add(&mut self, i: usize, chunk: i64, doc: i64, share: f64, new: bool) {
        let s = match self.slot.get(&chunk) {
            Some(&s) => s,
            None if new => {
                let s = self.chunk.len();
                self.slot.insert(chunk, s);
                self.chunk.push(chunk);
                self.doc.push(doc);
                self.shares.resize(self.shares.len() + self.terms, 0.0);
                self.partial.push(0.0);
                self.live.push(true);
                s
            }
            None => return,
        };
        if !self.live[s] {
            return;
        }
        self.shares[s * self.terms + i] = share;
        self.partial[s] += share;
    }

    /// The k-th best score so far, when k chunks have one.
    fn kth_partial(&self, k: usize) -> Option<f64> {
        if self.partial.len() < k {
            return None;
        }
        let mut p = self.partial.clone();
        let (_, kth, _) = p.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
        Some(*kth)
    }

    /// The `k` best live chunks by their shares summed in the query's order, best
    /// first, ties to the lower id.
    fn best(self, k: usize) -> Vec<(i64, f64)> {
        let mut hits: Vec<(i64, f64)> = (0..self.chunk.len())
            .filter(|&s| self.live[s])
            .map(|s| {
                let shares = &self.shares[s * self.terms..(s + 1) * self.terms];
                (self.chunk[s], shares.iter().fold(0.0, |a, x| a + x))
            })
            .collect();
        let best = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > k {
            hits.select_nth_unstable_by(k - 1, best);
            hits.truncate(k);
        }
        hits.sort_unstable_by(best);
        hits
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::search::push_posting;
    use super::*;

    /// Lists in memory: `(term, doc) → postings`.
    struct Memory(Vec<(String, i64, Vec<u8>)>);

    impl Lists for Memory {
        fn whole(&mut self, term: &str) -> Result<Vec<(i64, Vec<u8>)>> {
            Ok(self
                .0
                .iter()
                .filter(|(t, ..)| t == term)
                .map(|(_, d, l)| (*d, l.clone()))
                .collect())
        }
        fn of_docs(&mut self, terms: &[&str], docs: &[i64]) -> Result<Vec<(String, i64, Vec<u8>)>> {
            Ok(self
                .0
                .iter()
                .filter(|(t, d, _)| terms.contains(&t.as_str()) && docs.contains(d))
                .cloned()
                .collect())
        }
    }

    /// The ranking as the store made it before: every list read, each chunk's score
    /// summed in the query's term order.
    fn exhaustive(
        terms: &[(&str, f64)],
        k: usize,
        bm: &Bm25Stats,
        allows: &dyn Fn(i64) -> bool,
        lists: &mut Memory,
    ) -> Vec<(i64, f64)> {
        let mut scores: HashMap<i64, f64> = HashMap::new();
        for (term, w) in terms {
            if *w <= 0.0 {
                continue;
            }
            for (doc, list) in lists.whole(term).unwrap() {
                if !allows(doc) {
                    continue;
                }
                for (chunk, tf, len) in read_postings(&list).unwrap() {
                    *scores.entry(chunk).or_insert(0.0) += bm.score(*w, tf, len);
                }
            }
        }
        let mut hits: Vec<(i64, f64)> = scores.into_iter().collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(k);
        hits
    }

    /// A deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// A library of `docs` documents of 1–12 chunks over a vocabulary of 60 terms
    /// with Zipf-like frequencies (term j in a chunk with probability ~1/(j+1)),
    /// and its statistics.
    fn library(rng: &mut Rng, docs: i64) -> (Memory, Bm25Stats, HashMap<String, usize>) {
        let mut rows: HashMap<(String, i64), Vec<u8>> = HashMap::new();
        let mut df: HashMap<String, usize> = HashMap::new();
        let (mut chunk, mut total) = (0i64, 0i64);
        for doc in 0..docs {
            for _ in 0..1 + rng.below(12) {
                chunk += 1;
                let len = 5 + rng.below(60) as i32;
                total += i64::from(len);
                for j in 0..60u64 {
                    if rng.below(2 * (j + 1)) == 0 {
                        let term = format!("t{j}");
                        let tf = 1 + rng.below(3) as i32;
                        push_posting(rows.entry((term.clone(), doc)).or_default(), chunk, tf, len);
                        *df.entry(term).or_default() += 1;
                    }
                }
            }
        }
        let mut rows: Vec<_> = rows.into_iter().map(|((t, d), l)| (t, d, l)).collect();
        rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        (Memory(rows), Bm25Stats::new(chunk as f64, total as f64), df)
    }

    #[test]
    fn the_pruned_ranking_is_the_exhaustive_one_bit_for_bit() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut lists, bm, df) = library(&mut rng, 400);
        let (mut pruned_rows, mut all_rows, mut probed) = (0, 0, 0);
        for q in 0..300 {
            let n_terms = 1 + rng.below(7) as usize;
            let names: Vec<String> =
                (0..n_terms)
                    .map(|_| format!("t{}", rng.below(64)))
                    .fold(Vec::new(), |mut v, t| {
                        if !v.contains(&t) {
                            v.push(t);
                        }
                        v
                    });
            let terms: Vec<(&str, f64)> = names
                .iter()
                .map(|t| {
                    let d = df.get(t).copied().unwrap_or(0);
                    (t.as_str(), if d == 0 { 0.0 } else { bm.weight(d as f64) })
                })
                .collect();
            let k = [1, 4, 10, 20][q % 4];
            // Every third query over a scope of the even documents.
            let scope = |d: i64| d % 2 == 0;
            let everything = |_: i64| true;
            let allows: &dyn Fn(i64) -> bool = if q % 3 == 0 { &scope } else { &everything };
            let want = exhaustive(&terms, k, &bm, allows, &mut lists);
            let (got, reads) = top_k(&terms, k, &bm, allows, &mut lists).unwrap();
            assert_eq!(got.len(), want.len(), "query {q}: {names:?}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.0, w.0, "query {q} {names:?} k={k}: {got:?} != {want:?}");
                assert_eq!(g.1.to_bits(), w.1.to_bits(), "query {q}: chunk {}", g.0);
            }
            pruned_rows += reads.rows;
            all_rows += terms
                .iter()
                .filter(|(_, w)| *w > 0.0)
                .map(|(t, _)| lists.whole(t).unwrap().len())
                .sum::<usize>();
            probed += reads.probed_terms;
        }
        // The pruning is taken: fewer rows are read than the lists hold.
        assert!(probed > 100, "{probed} terms probed");
        assert!(
            pruned_rows * 10 < all_rows * 8,
            "{pruned_rows} rows read of {all_rows}"
        );
    }

    #[test]
    fn a_query_of_one_term_reads_it_whole_and_none_is_nothing() {
        let mut rng = Rng(7);
        let (mut lists, bm, df) = library(&mut rng, 50);
        let w = bm.weight(df["t3"] as f64);
        let (got, reads) = top_k(&[("t3", w)], 5, &bm, &|_| true, &mut lists).unwrap();
        assert_eq!(got.len(), 5);
        assert_eq!((reads.whole_terms, reads.probed_terms), (1, 0));
        let (got, reads) = top_k(&[("nothing", 0.0)], 5, &bm, &|_| true, &mut lists).unwrap();
        assert!(got.is_empty());
        assert_eq!(reads, Reads::default());
        let (got, _) = top_k(&[("t3", w)], 0, &bm, &|_| true, &mut lists).unwrap();
        assert!(got.is_empty());
    }
}
