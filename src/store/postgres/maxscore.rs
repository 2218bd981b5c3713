//! BM25's top k over the database's term lists without reading every list whole:
//! MaxScore (Turtle and Flood, 1995), exact.
//!
//! A term's share of any chunk's score is below its weight `idf · (k1 + 1)` (the
//! frequency factor `tf / (tf + k1 · norm)` is under 1). The terms are read whole in
//! order of weight, rarest first. Once the k-th best score so far is above the sum of
//! the weights of the terms not read yet, a chunk that none of the read terms found
//! can no longer reach the top k: the other terms are then scored only in the
//! documents of the chunks that still can. Those are the common terms, whose lists
//! [`super::list_cache`] keeps between questions, so a question reads from the
//! database mostly the lists of its rare terms.
//!
//! The top k is the exhaustive ranking's: only chunks whose score is certainly below
//! the k-th are left out (with a margin of 1e-9 for the order the bounds were summed
//! in). A chunk's score is summed in reading order (rarest term first), so it may
//! differ from a sum in the query's order in the last bits.

use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::bm25::{read_block, read_postings, Bm25Stats};
use crate::Result;

/// One term's postings in every document, decoded: documents ascending, each with
/// its run of (chunk, tf, chunk length).
#[derive(Debug, Default)]
pub(super) struct TermList {
    /// (document, end of its run in `postings`).
    rows: Vec<(i64, u32)>,
    postings: Vec<(i64, i32, i32)>,
}

impl TermList {
    /// The list from its rows (document, postings bytes), in document order.
    pub(super) fn from_rows<'a>(rows: impl IntoIterator<Item = (i64, &'a [u8])>) -> Result<Self> {
        let mut rows: Vec<(i64, &[u8])> = rows.into_iter().collect();
        rows.sort_unstable_by_key(|r| r.0);
        let mut list = Self {
            rows: Vec::with_capacity(rows.len()),
            postings: Vec::with_capacity(rows.iter().map(|r| r.1.len() / 16).sum()),
        };
        for (doc, bytes) in rows {
            list.postings.extend(read_postings(bytes)?);
            list.rows.push((doc, list.postings.len() as u32));
        }
        Ok(list)
    }

    /// The list from the rows a question reads ([`super::blocks`]): a block's
    /// (`None`: several documents' lists, [`read_block`]) or one document's, in any
    /// order. Documents in `dead` (ascending: removed since their block was merged)
    /// are left out.
    pub(super) fn from_parts<'a>(
        parts: impl IntoIterator<Item = (Option<i64>, &'a [u8])>,
        dead: &[i64],
    ) -> Result<Self> {
        let mut rows: Vec<(i64, &[u8])> = Vec::new();
        for (doc, bytes) in parts {
            match doc {
                Some(doc) => rows.push((doc, bytes)),
                None => rows.extend(
                    read_block(bytes)?
                        .into_iter()
                        .filter(|(d, _)| dead.binary_search(d).is_err()),
                ),
            }
        }
        Self::from_rows(rows)
    }

    /// Rows (documents) in the list.
    pub(super) fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Memory held, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.rows.capacity() * 12 + self.postings.capacity() * 16
    }

    /// (document, its postings), documents ascending.
    pub(super) fn iter(&self) -> impl Iterator<Item = (i64, &[(i64, i32, i32)])> + '_ {
        let mut start = 0usize;
        self.rows.iter().map(move |&(doc, end)| {
            let run = &self.postings[start..end as usize];
            start = end as usize;
            (doc, run)
        })
    }

    /// The postings of documents `docs` (ascending) only.
    pub(super) fn of_docs<'a>(
        &'a self,
        docs: &'a [i64],
    ) -> impl Iterator<Item = (i64, &'a [(i64, i32, i32)])> + 'a {
        self.iter()
            .filter(move |(doc, _)| docs.binary_search(doc).is_ok())
    }
}

/// Where the lists are read from: the database, in one snapshot.
pub(super) trait Lists {
    /// Every document's list of `term`.
    fn whole(&mut self, term: &str) -> Result<Arc<TermList>>;
}

/// What one ranking read, for the bench and the log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    /// Terms scored in every document.
    pub whole_terms: usize,
    /// Terms scored only in the documents that could still rank.
    pub probed_terms: usize,
    /// Rows (a term's list in one document) scored.
    pub rows: usize,
    /// Terms whose whole list came from the cache of common terms' lists.
    pub cached_terms: usize,
}

/// Relative slack on a bound, for the order its weights were summed in.
const MARGIN: f64 = 1e-9;

/// The `k` best chunks for `terms` (the query's distinct terms, with their weights
/// `idf · (k1 + 1)`; a weight of 0 is a term no chunk has), best first, ties to the
/// lower chunk id, and what was read. `ids` is the least and greatest chunk id of
/// the `n` chunks, where known. `allows` says which documents count (a scope); the
/// others' postings are never scored.
#[allow(clippy::too_many_arguments)]
pub(super) fn top_k(
    terms: &[(&str, f64)],
    k: usize,
    ids: Option<(i64, i64)>,
    n: usize,
    bm: &Bm25Stats,
    allows: &dyn Fn(i64) -> bool,
    lists: &mut dyn Lists,
) -> Result<(Vec<(i64, f64)>, Reads)> {
    let mut reads = Reads::default();
    let mut acc = Scores::new(ids, n);
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
        // No chunk scores above the weights read so far: while the rest is not below
        // them, the k-th best cannot be above the rest either, and is not looked for.
        let read: f64 = order[..step].iter().map(|&i| terms[i].1).sum();
        let kth = (rest * (1.0 + MARGIN) < read).then(|| acc.kth(k)).flatten();
        if let Some(t) = kth {
            if rest * (1.0 + MARGIN) < t {
                threshold = Some((t, rest));
                break;
            }
        }
        let (term, weight) = terms[order[step]];
        let list = lists.whole(term)?;
        reads.whole_terms += 1;
        reads.rows += list.rows();
        for (doc, run) in list.iter() {
            if allows(doc) {
                for &(chunk, tf, len) in run {
                    acc.add(chunk, doc, bm.score(weight, tf, len), true);
                }
            }
        }
        step += 1;
    }
    if let Some((t, rest)) = threshold {
        // Chunks that may still reach the k-th score; the others are left out.
        let bound = rest * (1.0 + MARGIN);
        acc.keep(|partial| partial + bound >= t * (1.0 - MARGIN));
        let mut docs = acc.docs();
        docs.sort_unstable();
        docs.dedup();
        // The other terms scored in those chunks' documents only. Their lists are
        // the common ones, which the cache keeps: a probe by document in the
        // database (`term = ANY(…) AND doc_id = ANY(…)`) took 60 ms at 3,000
        // documents, more than reading the list whole once.
        for &i in &order[step..] {
            let (term, weight) = terms[i];
            let list = lists.whole(term)?;
            reads.probed_terms += 1;
            for (doc, run) in list.of_docs(&docs) {
                reads.rows += 1;
                for &(chunk, tf, len) in run {
                    // A chunk no read term found scores at most `rest`: below the k-th.
                    acc.add(chunk, doc, bm.score(weight, tf, len), false);
                }
            }
        }
    }
    Ok((acc.best(k), reads))
}

/// A hasher for chunk ids (sequential integers): one multiply, as rustc's FxHash.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Each chunk's score so far, and its document: in an array indexed by chunk id
/// where the ids are dense enough (a common term's postings come in id order, so
/// the adds walk the array forward), in a map otherwise. A score of 0 is a chunk
/// not seen; a chunk left out is marked below every score.
#[derive(Default)]
struct Scores {
    base: i64,
    dense: Vec<f64>,
    dense_doc: Vec<i64>,
    sparse: HashMap<i64, (f64, i64), BuildHasherDefault<IdHasher>>,
}

const LEFT_OUT: f64 = f64::NEG_INFINITY;

/// Ids spanning more than this many per chunk are scored in the map.
const MAX_SPREAD: i64 = 4;

impl Scores {
    /// Scores for chunk ids in `ids` (the least and the greatest), of `n` chunks.
    fn new(ids: Option<(i64, i64)>, n: usize) -> Self {
        let mut s = Self::default();
        if let Some((lo, hi)) = ids {
            let span = hi.saturating_sub(lo).saturating_add(1);
            if span > 0 && span <= MAX_SPREAD * n as i64 + 65_536 {
                s.base = lo;
                s.dense = vec![0.0; span as usize];
                s.dense_doc = vec![0; span as usize];
            }
        }
        s
    }

    /// Add a share to `chunk`'s score; a chunk not there is added only when `new`.
    fn add(&mut self, chunk: i64, doc: i64, share: f64, new: bool) {
        let i = chunk.wrapping_sub(self.base);
        if let Some(s) = usize::try_from(i).ok().and_then(|i| self.dense.get_mut(i)) {
            if *s == LEFT_OUT || (*s == 0.0 && !new) {
                return;
            }
            if *s == 0.0 {
                self.dense_doc[i as usize] = doc;
            }
            *s += share;
        } else if new {
            self.sparse.entry(chunk).or_insert((0.0, doc)).0 += share;
        } else if let Some(s) = self.sparse.get_mut(&chunk) {
            s.0 += share;
        }
    }

    /// (chunk, score, document) of every chunk kept.
    fn each(&self) -> impl Iterator<Item = (i64, f64, i64)> + '_ {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > 0.0)
            .map(|(i, s)| (self.base + i as i64, *s, self.dense_doc[i]));
        dense.chain(self.sparse.iter().map(|(c, s)| (*c, s.0, s.1)))
    }

    /// The k-th best score so far, when k chunks have one: the least of a heap of
    /// the k best, which most scores pass by with one comparison.
    fn kth(&self, k: usize) -> Option<f64> {
        let top = top_k_of(self.each().map(|(c, s, _)| (c, s)), k);
        (top.len() == k).then(|| top.peek().map_or(0.0, |w| w.0 .1))
    }

    /// Keep only the chunks whose score so far passes `keep`.
    fn keep(&mut self, keep: impl Fn(f64) -> bool) {
        for s in self.dense.iter_mut().filter(|s| **s > 0.0) {
            if !keep(*s) {
                *s = LEFT_OUT;
            }
        }
        self.sparse.retain(|_, s| keep(s.0));
    }

    /// The documents of the chunks kept.
    fn docs(&self) -> Vec<i64> {
        self.each().map(|(_, _, d)| d).collect()
    }

    /// The `k` best, best first, ties to the lower id.
    fn best(self, k: usize) -> Vec<(i64, f64)> {
        // Ascending in `Worst`'s order is best first.
        top_k_of(self.each().map(|(c, s, _)| (c, s)), k)
            .into_sorted_vec()
            .into_iter()
            .map(|w| w.0)
            .collect()
    }
}

/// A (chunk, score) ordered worst first: the lower score, then the higher id (ties
/// go to the lower id), so that a max-heap of them has the worst of the best on top.
struct Worst((i64, f64));

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Worst {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .0
             .1
            .total_cmp(&self.0 .1)
            .then(self.0 .0.cmp(&other.0 .0))
    }
}

/// The `k` best of `scores` (higher score, then lower id), the worst of them on top.
fn top_k_of(scores: impl Iterator<Item = (i64, f64)>, k: usize) -> BinaryHeap<Worst> {
    let mut top = BinaryHeap::with_capacity(k + 1);
    if k == 0 {
        return top;
    }
    for hit in scores {
        if top.len() < k {
            top.push(Worst(hit));
        } else if let Some(mut worst) = top.peek_mut() {
            if Worst(hit) < *worst {
                *worst = Worst(hit);
            }
        }
    }
    top
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::bm25::push_posting;
    use super::*;

    /// Lists in memory: `(term, doc) → postings`.
    struct Memory(Vec<(String, i64, Vec<u8>)>);

    impl Memory {
        fn max_chunk(&self) -> i64 {
            self.0
                .iter()
                .flat_map(|(_, _, l)| read_postings(l).unwrap().map(|p| p.0))
                .max()
                .unwrap_or(0)
        }
    }

    impl Lists for Memory {
        fn whole(&mut self, term: &str) -> Result<Arc<TermList>> {
            Ok(Arc::new(TermList::from_rows(
                self.0
                    .iter()
                    .filter(|(t, ..)| t == term)
                    .map(|(_, d, l)| (*d, l.as_slice())),
            )?))
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
            for (doc, run) in lists.whole(term).unwrap().iter() {
                if !allows(doc) {
                    continue;
                }
                for &(chunk, tf, len) in run {
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
    fn the_pruned_ranking_is_the_exhaustive_one() {
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
            // The scores in an array for most queries, in the map for some, and
            // both when the range given misses some chunks.
            let ids = match q % 5 {
                0 => None,
                1 => Some((40, 600)),
                _ => Some((1, lists.max_chunk())),
            };
            let (got, reads) = top_k(&terms, k, ids, 1000, &bm, allows, &mut lists).unwrap();
            assert_eq!(got.len(), want.len(), "query {q}: {names:?}");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                // The same score to the last bits of a sum in another order; the same
                // chunk unless another is tied with it that closely.
                assert!((g.1 - w.1).abs() <= 1e-12 * w.1, "query {q}: {g:?} {w:?}");
                let tied = want
                    .iter()
                    .enumerate()
                    .any(|(j, x)| j != i && (x.1 - w.1).abs() <= 1e-12 * w.1);
                if !tied {
                    assert_eq!(g.0, w.0, "query {q} {names:?} k={k}: {got:?} != {want:?}");
                }
            }
            pruned_rows += reads.rows;
            all_rows += terms
                .iter()
                .filter(|(_, w)| *w > 0.0)
                .map(|(t, _)| lists.whole(t).unwrap().rows())
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
    fn a_list_from_rows_in_any_order_gives_each_document_its_own_postings() {
        let rows: Vec<(i64, Vec<u8>)> = [9i64, 2, 5]
            .iter()
            .map(|&d| {
                let mut l = Vec::new();
                for c in 0..d {
                    push_posting(&mut l, d * 100 + c, 1, 10);
                }
                (d, l)
            })
            .collect();
        let list = TermList::from_rows(rows.iter().map(|(d, l)| (*d, l.as_slice()))).unwrap();
        let got: Vec<(i64, Vec<i64>)> = list
            .iter()
            .map(|(d, run)| (d, run.iter().map(|p| p.0).collect()))
            .collect();
        assert_eq!(
            got,
            vec![
                (2, vec![200, 201]),
                (5, (500..505).collect()),
                (9, (900..909).collect())
            ]
        );
        let some: Vec<i64> = list.of_docs(&[5, 7]).map(|(d, _)| d).collect();
        assert_eq!(some, vec![5]);
    }

    #[test]
    fn a_list_from_blocks_and_rows_is_the_list_from_rows_less_the_dead() {
        use super::super::bm25::push_block_doc;
        let lists: Vec<(i64, Vec<u8>)> = (1..=7i64)
            .map(|d| {
                let mut l = Vec::new();
                for c in 0..d {
                    push_posting(&mut l, d * 100 + c, (c + 1) as i32, 10 + d as i32);
                }
                (d, l)
            })
            .collect();
        // Documents 1-3 and 5-6 in two blocks, 4 and 7 not merged; 2 and 6 removed.
        let block = |docs: &[i64]| {
            let mut b = Vec::new();
            for d in docs {
                push_block_doc(&mut b, *d, &lists[*d as usize - 1].1);
            }
            b
        };
        let (b1, b2) = (block(&[1, 2, 3]), block(&[5, 6]));
        let parts = vec![
            (Some(7), lists[6].1.as_slice()),
            (None, b2.as_slice()),
            (Some(4), lists[3].1.as_slice()),
            (None, b1.as_slice()),
        ];
        let got = TermList::from_parts(parts, &[2, 6]).unwrap();
        let want = TermList::from_rows(
            lists
                .iter()
                .filter(|(d, _)| *d != 2 && *d != 6)
                .map(|(d, l)| (*d, l.as_slice())),
        )
        .unwrap();
        let flat = |l: &TermList| {
            l.iter()
                .map(|(d, run)| (d, run.to_vec()))
                .collect::<Vec<_>>()
        };
        assert_eq!(flat(&got), flat(&want));
        assert_eq!(got.rows(), 5);
        assert!(TermList::from_parts([(None, &b1[..7])], &[]).is_err());
    }

    #[test]
    fn a_query_of_one_term_reads_it_whole_and_none_is_nothing() {
        let mut rng = Rng(7);
        let (mut lists, bm, df) = library(&mut rng, 50);
        let w = bm.weight(df["t3"] as f64);
        let (got, reads) = top_k(&[("t3", w)], 5, None, 0, &bm, &|_| true, &mut lists).unwrap();
        assert_eq!(got.len(), 5);
        assert_eq!((reads.whole_terms, reads.probed_terms), (1, 0));
        let (got, reads) =
            top_k(&[("nothing", 0.0)], 5, None, 0, &bm, &|_| true, &mut lists).unwrap();
        assert!(got.is_empty());
        assert_eq!(reads, Reads::default());
        let (got, _) = top_k(&[("t3", w)], 0, None, 0, &bm, &|_| true, &mut lists).unwrap();
        assert!(got.is_empty());
    }
}
