//! The vector retriever: exact top-k by cosine over all chunk embeddings.
//!
//! Rows are L2-normalized, so cosine is a dot product, and a query is one linear scan
//! with a bounded heap (no allocation per row). Rows are grouped by document, so a
//! document filter scans only the filtered documents' rows.
//!
//! The scan reads an int8 form of the rows (a quarter of the memory traffic, which is
//! what bounds it; per row a scale and the norm of its quantization error, which
//! bounds how far the int8 score can be from the exact one). An index either keeps
//! the f32 rows as well ([`VectorIndexBuilder::new`]: a row's exact score is computed
//! during the scan when the row could still enter the top k) or keeps the int8 codes
//! alone ([`VectorIndexBuilder::codes_only`], a quarter of the memory): then the scan
//! gathers the rows whose score bound still reaches the k-th best lower bound, and
//! their exact scores come from the f32 vectors an [`ExactVectors`] reads (the engine's
//! store), fetched best bound first until no remaining row can enter. Either way the
//! result is exactly the f32 scan's, bit for bit. On x86-64 with AVX2+FMA the dot
//! products run vectorized kernels chosen at run time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{DocFilter, Hit, Retriever};
use crate::embed::Embedder;
use crate::{Error, Result};

/// Below this many rows a scan stays on the calling thread.
const PARALLEL_MIN_ROWS: usize = 32_768;

/// Rows whose exact score an index without its f32 rows asks for at once.
const RESCORE_BATCH: usize = 256;

/// The f32 vectors of chunks, as stored (not necessarily normalized): what an index
/// that keeps only int8 codes rescores its best candidates with.
pub trait ExactVectors: Send + Sync {
    /// The vectors of those of `ids` that still exist, in any order.
    fn exact_vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>>;
}

/// Exact cosine search over normalized embeddings.
#[derive(Debug, Default, Clone)]
pub struct VectorIndex {
    dims: usize,
    ids: Vec<i64>,
    /// The normalized rows, when kept (`keeps_rows`); else empty.
    data: Vec<f32>,
    keeps_rows: bool,
    /// The rows quantized to int8, `data[i] ≈ scale[row] * q8[i]`.
    q8: Vec<i8>,
    /// Per row: its int8 scale and the L2 norm of its quantization error.
    scale: Vec<f32>,
    err: Vec<f32>,
    /// `(doc_id, first row, end row)`, rows of a document being contiguous.
    doc_ranges: Vec<(i64, usize, usize)>,
}

/// Collects embeddings for a [`VectorIndex`].
#[derive(Debug, Default)]
pub struct VectorIndexBuilder {
    dims: usize,
    /// Chunk and document of each row, in the order pushed.
    ids: Vec<i64>,
    docs: Vec<i64>,
    /// The normalized rows (kept) or empty (codes only).
    data: Vec<f32>,
    codes_only: bool,
    q8: Vec<i8>,
    scale: Vec<f32>,
    err: Vec<f32>,
    scratch: Vec<f32>,
}

impl VectorIndexBuilder {
    /// Embeddings of length `dims`; the index keeps the f32 rows and their int8 codes.
    pub fn new(dims: usize) -> Self {
        Self {
            dims,
            ..Self::default()
        }
    }

    /// Embeddings of length `dims`; the index keeps only the int8 codes (a quarter of
    /// the memory) and is searched with [`VectorIndex::search_with`], rescoring from
    /// the stored vectors.
    pub fn codes_only(dims: usize) -> Self {
        Self {
            dims,
            codes_only: true,
            ..Self::default()
        }
    }

    /// Room for `n` more rows.
    pub fn reserve(&mut self, n: usize) {
        self.ids.reserve(n);
        self.docs.reserve(n);
        if self.codes_only {
            self.q8.reserve(n * self.dims);
            self.scale.reserve(n);
            self.err.reserve(n);
        } else {
            self.data.reserve(n * self.dims);
        }
    }

    /// Add a chunk's embedding; it is normalized here (a zero vector stays zero).
    pub fn push(&mut self, chunk_id: i64, doc_id: i64, embedding: &[f32]) -> Result<()> {
        if embedding.len() != self.dims {
            return Err(Error::Invalid(format!(
                "chunk {chunk_id}: embedding has {} dimensions, the index {}",
                embedding.len(),
                self.dims
            )));
        }
        if embedding.iter().any(|x| !x.is_finite()) {
            return Err(Error::Invalid(format!(
                "chunk {chunk_id}: embedding is not finite"
            )));
        }
        if self.codes_only {
            let mut row = std::mem::take(&mut self.scratch);
            normalize_into(embedding, &mut row);
            let start = self.q8.len();
            self.q8.resize(start + self.dims, 0);
            let (s, e) = quantize(&row, &mut self.q8[start..]);
            self.scale.push(s);
            self.err.push(e);
            self.scratch = row;
        } else {
            let start = self.data.len();
            self.data.resize(start + self.dims, 0.0);
            normalize_to(embedding, &mut self.data[start..]);
        }
        self.ids.push(chunk_id);
        self.docs.push(doc_id);
        Ok(())
    }

    /// Rows grouped by document (stable within one). Rows pushed in document order,
    /// as the store gives them, are kept where they are, without a copy.
    pub fn build(self) -> VectorIndex {
        let dims = self.dims;
        let n = self.ids.len();
        let in_order = self.docs.windows(2).all(|w| w[0] <= w[1]);
        let order: Vec<usize> = if in_order {
            Vec::new()
        } else {
            let mut o: Vec<usize> = (0..n).collect();
            o.sort_by_key(|&i| self.docs[i]);
            o
        };
        let reorder = |rows: Vec<f32>, width: usize| -> Vec<f32> {
            if in_order || width == 0 {
                return rows;
            }
            let mut d = Vec::with_capacity(rows.len());
            for &i in &order {
                d.extend_from_slice(&rows[i * width..(i + 1) * width]);
            }
            d
        };
        let (data, q8, scale, err) = if self.codes_only {
            let q8 = if in_order || dims == 0 {
                self.q8
            } else {
                let mut d = Vec::with_capacity(self.q8.len());
                for &i in &order {
                    d.extend_from_slice(&self.q8[i * dims..(i + 1) * dims]);
                }
                d
            };
            (Vec::new(), q8, reorder(self.scale, 1), reorder(self.err, 1))
        } else {
            let data = reorder(self.data, dims);
            let mut q8 = vec![0i8; data.len()];
            let mut scale = Vec::with_capacity(n);
            let mut err = Vec::with_capacity(n);
            if dims > 0 {
                for (row, out) in data.chunks_exact(dims).zip(q8.chunks_exact_mut(dims)) {
                    let (s, e) = quantize(row, out);
                    scale.push(s);
                    err.push(e);
                }
            }
            (data, q8, scale, err)
        };
        let (ids, docs) = if in_order {
            (self.ids, self.docs)
        } else {
            (
                order.iter().map(|&i| self.ids[i]).collect(),
                order.iter().map(|&i| self.docs[i]).collect(),
            )
        };
        let mut doc_ranges: Vec<(i64, usize, usize)> = Vec::new();
        for (row, &doc) in docs.iter().enumerate() {
            match doc_ranges.last_mut() {
                Some(last) if last.0 == doc => last.2 = row + 1,
                _ => doc_ranges.push((doc, row, row + 1)),
            }
        }
        drop(docs);
        VectorIndex {
            dims,
            ids,
            data,
            keeps_rows: !self.codes_only,
            q8,
            scale,
            err,
            doc_ranges,
        }
    }
}

/// `v` normalized into `out` (same length): `x / |v|`, computed as the index always
/// has (a zero vector stays zero), so that rescoring from the stored vector gives the
/// kept row's score bit for bit.
fn normalize_to(v: &[f32], out: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let inv = if norm > 0.0 { 1.0 / norm } else { 0.0 };
    for (o, x) in out.iter_mut().zip(v) {
        *o = x * inv;
    }
}

/// [`normalize_to`] into a reused buffer.
fn normalize_into(v: &[f32], out: &mut Vec<f32>) {
    out.clear();
    out.resize(v.len(), 0.0);
    normalize_to(v, out);
}

impl VectorIndex {
    /// Vector length.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The documents indexed, in row order.
    pub fn documents(&self) -> impl Iterator<Item = i64> + '_ {
        self.doc_ranges.iter().map(|r| r.0)
    }

    /// Add the rows of `added` (built alone), whose documents must all come after
    /// this index's last one: the result is the index [`VectorIndexBuilder::build`]
    /// makes from both sets of rows, without touching the rows already here.
    pub fn append(&mut self, added: VectorIndex) -> Result<()> {
        if added.is_empty() {
            return Ok(());
        }
        if self.is_empty() {
            *self = added;
            return Ok(());
        }
        if added.dims != self.dims {
            return Err(Error::Invalid(format!(
                "added embeddings have {} dimensions, the index {}",
                added.dims, self.dims
            )));
        }
        if added.keeps_rows != self.keeps_rows {
            return Err(Error::Invalid(
                "added rows must be kept as the index keeps its own (f32 or codes only)".into(),
            ));
        }
        let last = self.doc_ranges.last().map_or(i64::MIN, |r| r.0);
        if added.doc_ranges.first().is_some_and(|r| r.0 <= last) {
            return Err(Error::Invalid(
                "added documents must come after the indexed ones".into(),
            ));
        }
        let base = self.len();
        self.ids.extend(added.ids);
        self.data.extend(added.data);
        self.q8.extend(added.q8);
        self.scale.extend(added.scale);
        self.err.extend(added.err);
        self.doc_ranges.extend(
            added
                .doc_ranges
                .into_iter()
                .map(|(d, a, b)| (d, a + base, b + base)),
        );
        Ok(())
    }

    /// Drop the rows of `docs`, keeping the others in order (in place).
    pub fn remove_documents(&mut self, docs: &std::collections::HashSet<i64>) {
        if docs.is_empty() || !self.doc_ranges.iter().any(|r| docs.contains(&r.0)) {
            return;
        }
        let d = self.dims;
        let mut w = 0usize;
        let mut ranges = Vec::with_capacity(self.doc_ranges.len());
        for &(doc, a, b) in &self.doc_ranges {
            if docs.contains(&doc) {
                continue;
            }
            let n = b - a;
            if a != w {
                if self.keeps_rows {
                    self.data.copy_within(a * d..b * d, w * d);
                }
                self.q8.copy_within(a * d..b * d, w * d);
                self.ids.copy_within(a..b, w);
                self.scale.copy_within(a..b, w);
                self.err.copy_within(a..b, w);
            }
            ranges.push((doc, w, w + n));
            w += n;
        }
        self.data.truncate(w * d);
        self.q8.truncate(w * d);
        self.ids.truncate(w);
        self.scale.truncate(w);
        self.err.truncate(w);
        self.doc_ranges = ranges;
    }

    /// Rows indexed.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Bytes held by the embeddings (f32 rows when kept, int8 codes, scales and
    /// errors, ids).
    pub fn bytes(&self) -> usize {
        self.data.len() * 4 + self.q8.len() + self.ids.len() * 16 + self.doc_ranges.len() * 24
    }

    /// Whether the f32 rows are kept (else only the int8 codes: search with
    /// [`VectorIndex::search_with`]).
    pub fn keeps_rows(&self) -> bool {
        self.keeps_rows
    }

    /// Document of a row.
    pub fn doc_of_row(&self, row: usize) -> Option<i64> {
        let i = self.doc_ranges.partition_point(|r| r.2 <= row);
        self.doc_ranges
            .get(i)
            .filter(|r| r.1 <= row && row < r.2)
            .map(|r| r.0)
    }

    /// The `k` rows most similar to `query` (cosine), best first; ties go to the
    /// earlier row. An index that keeps only codes needs [`VectorIndex::search_with`].
    pub fn search(&self, query: &[f32], k: usize, filter: Option<&DocFilter>) -> Result<Vec<Hit>> {
        self.search_with(query, k, filter, None)
    }

    /// [`VectorIndex::search`], the exact scores of an index that keeps only its
    /// int8 codes read from `exact` (the same ranking and scores as the f32 rows').
    pub fn search_with(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<&DocFilter>,
        exact: Option<&dyn ExactVectors>,
    ) -> Result<Vec<Hit>> {
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        if query.len() != self.dims {
            return Err(Error::Invalid(format!(
                "query embedding has {} dimensions, the index {}",
                query.len(),
                self.dims
            )));
        }
        let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !norm.is_finite() {
            return Err(Error::Invalid("query embedding is not finite".into()));
        }
        let inv = if norm > 0.0 { 1.0 / norm } else { 0.0 };
        let q = Query::new(query.iter().map(|x| x * inv).collect());
        if !self.keeps_rows {
            let exact = exact.ok_or_else(|| {
                Error::Invalid(
                    "this vector index keeps only int8 codes: it needs the stored vectors".into(),
                )
            })?;
            return self.search_codes(&q, k, filter, exact);
        }
        let mut top = TopK::new(k);
        match filter {
            None => self.scan(&q, 0, self.len(), &mut top),
            Some(f) => {
                for &(doc, start, end) in &self.doc_ranges {
                    if f.allows(doc) {
                        self.scan(&q, start, end, &mut top);
                    }
                }
            }
        }
        Ok(top
            .into_sorted()
            .into_iter()
            .map(|(score, row)| Hit {
                chunk_id: self.ids[row],
                score,
            })
            .collect())
    }

    /// Scan rows `start..end` into `top`; large ranges are split across the cores
    /// (the scan is bound by memory bandwidth, which one core does not saturate).
    fn scan(&self, q: &Query, start: usize, end: usize, top: &mut TopK) {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let n = end - start;
        if threads < 2 || n < PARALLEL_MIN_ROWS {
            return self.scan_one(q, start, end, top);
        }
        let part = n.div_ceil(threads);
        let k = top.k;
        let parts: Vec<TopK> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (a, b) = (start + t * part, (start + (t + 1) * part).min(end));
                    s.spawn(move || {
                        let mut local = TopK::new(k);
                        if a < b {
                            self.scan_one(q, a, b, &mut local);
                        }
                        local
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for local in parts {
            for (score, row) in local.into_sorted() {
                top.push(score, row);
            }
        }
    }

    /// The search of an index without its f32 rows: the rows whose upper score bound
    /// reaches the k-th best lower bound, then their exact scores from `exact`, best
    /// bound first, until the next bound is below the k-th exact score.
    fn search_codes(
        &self,
        q: &Query,
        k: usize,
        filter: Option<&DocFilter>,
        exact: &dyn ExactVectors,
    ) -> Result<Vec<Hit>> {
        let ranges: Vec<(usize, usize)> = match filter {
            None => vec![(0, self.len())],
            Some(f) => self
                .doc_ranges
                .iter()
                .filter(|r| f.allows(r.0))
                .map(|r| (r.1, r.2))
                .collect(),
        };
        let mut lower = TopK::new(k);
        let mut candidates: Vec<(f32, usize)> = Vec::new();
        for (start, end) in ranges {
            self.bounds(q, start, end, &mut lower, &mut candidates);
        }
        let floor = lower.threshold();
        candidates.retain(|c| c.0 >= floor);
        // Best upper bound first; on a tie the earlier row.
        candidates.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut top = TopK::new(k);
        let mut row_of: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        let mut row = Vec::with_capacity(self.dims);
        let fma = fma_available();
        for batch in candidates.chunks(RESCORE_BATCH.max(k)) {
            if batch.first().is_some_and(|c| c.0 < top.threshold()) {
                break;
            }
            row_of.clear();
            let ids: Vec<i64> = batch
                .iter()
                .filter(|c| c.0 >= top.threshold())
                .map(|c| {
                    row_of.insert(self.ids[c.1], c.1);
                    self.ids[c.1]
                })
                .collect();
            for (id, v) in exact.exact_vectors(&ids)? {
                let Some(&r) = row_of.get(&id) else { continue };
                if v.len() != self.dims {
                    return Err(Error::Invalid(format!(
                        "chunk {id}: stored embedding has {} dimensions, the index {}",
                        v.len(),
                        self.dims
                    )));
                }
                normalize_into(&v, &mut row);
                top.push(exact_dot(fma, &row, &q.f), r);
            }
        }
        Ok(top
            .into_sorted()
            .into_iter()
            .map(|(score, row)| Hit {
                chunk_id: self.ids[row],
                score,
            })
            .collect())
    }

    /// Rows `start..end`'s score bounds: the k best lower bounds into `lower`, and
    /// `(upper bound, row)` into `candidates` for every row whose upper bound reached
    /// the k-th lower bound when it was scanned. Large ranges are split across cores.
    fn bounds(
        &self,
        q: &Query,
        start: usize,
        end: usize,
        lower: &mut TopK,
        candidates: &mut Vec<(f32, usize)>,
    ) {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let n = end - start;
        if threads < 2 || n < PARALLEL_MIN_ROWS {
            return bounds_one(self, q, start, end, lower, candidates);
        }
        let part = n.div_ceil(threads);
        let k = lower.k;
        let parts: Vec<(TopK, Vec<(f32, usize)>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (a, b) = (start + t * part, (start + (t + 1) * part).min(end));
                    s.spawn(move || {
                        let mut local = TopK::new(k);
                        let mut cands = Vec::new();
                        if a < b {
                            bounds_one(self, q, a, b, &mut local, &mut cands);
                        }
                        (local, cands)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for (local, cands) in parts {
            for (score, row) in local.into_sorted() {
                lower.push(score, row);
            }
            candidates.extend(cands);
        }
    }

    fn scan_one(&self, q: &Query, start: usize, end: usize, top: &mut TopK) {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::cpu::has_avx2_fma() {
                // SAFETY: the CPU has the features `scan_avx2` is compiled for.
                unsafe { scan_avx2(self, q, start, end, top) };
                return;
            }
        }
        scan_impl::<false>(self, q, start, end, top);
    }
}

/// A normalized query with its int8 form and the bounds the int8 scan needs.
struct Query {
    f: Vec<f32>,
    q8: Vec<i8>,
    /// |q|, for the maddubs form of the int8 dot product.
    abs8: Vec<u8>,
    scale: f32,
    /// Norm of the quantized query, and of its quantization error.
    q8_norm: f32,
    err: f32,
}

impl Query {
    fn new(f: Vec<f32>) -> Self {
        let mut q8 = vec![0i8; f.len()];
        let (scale, err) = quantize(&f, &mut q8);
        let q8_norm = q8
            .iter()
            .map(|&c| (scale * c as f32).powi(2))
            .sum::<f32>()
            .sqrt();
        let abs8 = q8.iter().map(|c| c.unsigned_abs()).collect();
        Self {
            f,
            q8,
            abs8,
            scale,
            q8_norm,
            err,
        }
    }
}

/// Symmetric int8 quantization of `v` into `out` (codes in -127..=127): returns the
/// scale and the L2 norm of the error `v - scale * out`.
fn quantize(v: &[f32], out: &mut [i8]) -> (f32, f32) {
    let amax = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = amax / 127.0;
    let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
    let mut err = 0f64;
    for (x, o) in v.iter().zip(out.iter_mut()) {
        let c = (x * inv).round().clamp(-127.0, 127.0);
        *o = c as i8;
        err += f64::from(x - scale * c).powi(2);
    }
    (scale, err.sqrt() as f32)
}

/// Slack added to every bound, far above the f32 rounding of the scores compared.
const BOUND_SLACK: f32 = 1e-4;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn scan_avx2(ix: &VectorIndex, q: &Query, start: usize, end: usize, top: &mut TopK) {
    scan_impl::<true>(ix, q, start, end, top);
}

/// Rows `start..end` into `top`. For a row `v` (unit norm) with int8 form `v'` and
/// error `e = v - v'`, and the query `q = q' + d`: `q·v = q'·v' + q'·e + d·v`, so
/// `|q·v - q'·v'| <= |q'| |e| + |d|`. A row whose int8 score plus that bound cannot
/// beat the current k-th exact score is skipped; the others get their exact score.
#[inline(always)]
fn scan_impl<const SIMD: bool>(
    ix: &VectorIndex,
    q: &Query,
    start: usize,
    end: usize,
    top: &mut TopK,
) {
    let dims = ix.dims;
    if dims == 0 {
        return;
    }
    let base = q.err + BOUND_SLACK;
    for row in start..end {
        let approx = q.scale * ix.scale[row] * idot::<SIMD>(&ix.q8[row * dims..][..dims], q) as f32;
        if approx + q.q8_norm * ix.err[row] + base <= top.threshold() {
            continue;
        }
        let s = dot::<SIMD>(&ix.data[row * dims..][..dims], &q.f);
        if s > top.threshold() {
            top.push(s, row);
        }
    }
}

/// Whether the fast scan's kernels (AVX2 + FMA) run here: the rescoring computes its
/// exact scores with the same rounding as they do.
fn fma_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::has_avx2_fma()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The exact score as the scan computes it (fused multiply-adds where the scan uses
/// them: `mul_add` rounds the same with or without the instruction).
fn exact_dot(fma: bool, a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if fma {
            // SAFETY: `fma` is true only where the CPU has AVX2 and FMA.
            return unsafe { dot_fma(a, b) };
        }
    }
    if fma {
        dot::<true>(a, b)
    } else {
        dot::<false>(a, b)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn dot_fma(a: &[f32], b: &[f32]) -> f32 {
    dot::<true>(a, b)
}

fn bounds_one(
    ix: &VectorIndex,
    q: &Query,
    start: usize,
    end: usize,
    lower: &mut TopK,
    candidates: &mut Vec<(f32, usize)>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::has_avx2_fma() {
            // SAFETY: the CPU has the features `bounds_avx2` is compiled for.
            unsafe { bounds_avx2(ix, q, start, end, lower, candidates) };
            return;
        }
    }
    bounds_impl::<false>(ix, q, start, end, lower, candidates);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn bounds_avx2(
    ix: &VectorIndex,
    q: &Query,
    start: usize,
    end: usize,
    lower: &mut TopK,
    candidates: &mut Vec<(f32, usize)>,
) {
    bounds_impl::<true>(ix, q, start, end, lower, candidates);
}

/// Rows `start..end`'s int8 scores with their bounds (see [`scan_impl`]): a row's
/// exact score lies in `approx ± bound`. The k best lower bounds go to `lower`; a row
/// whose upper bound is below the k-th lower bound cannot be in the top k (k rows
/// score above it), so only the others are kept as candidates.
#[inline(always)]
fn bounds_impl<const SIMD: bool>(
    ix: &VectorIndex,
    q: &Query,
    start: usize,
    end: usize,
    lower: &mut TopK,
    candidates: &mut Vec<(f32, usize)>,
) {
    let dims = ix.dims;
    if dims == 0 {
        return;
    }
    let base = q.err + BOUND_SLACK;
    for row in start..end {
        let approx = q.scale * ix.scale[row] * idot::<SIMD>(&ix.q8[row * dims..][..dims], q) as f32;
        let bound = q.q8_norm * ix.err[row] + base;
        let upper = approx + bound;
        if upper < lower.threshold() {
            continue;
        }
        lower.push(approx - bound, row);
        candidates.push((upper, row));
    }
}

/// The exact score: 16 f32 lanes (fused multiply-adds with `FMA`), summed pairwise.
#[inline(always)]
fn dot<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    const L: usize = 16;
    let mut acc = [0f32; L];
    let ca = a.chunks_exact(L);
    let cb = b.chunks_exact(L);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..L {
            acc[i] = if FMA {
                x[i].mul_add(y[i], acc[i])
            } else {
                acc[i] + x[i] * y[i]
            };
        }
    }
    let mut s = 0.0;
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    // Pairwise sum of the lanes.
    let mut w = L;
    while w > 1 {
        w /= 2;
        for i in 0..w {
            acc[i] += acc[i + w];
        }
    }
    acc[0] + s
}

/// `Σ row[i] * q.q8[i]` in integers.
#[inline(always)]
fn idot<const SIMD: bool>(row: &[i8], q: &Query) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if SIMD {
            // SAFETY: SIMD is only true inside `scan_avx2`, compiled for AVX2.
            return unsafe { idot_avx2(row, &q.q8, &q.abs8) };
        }
    }
    row.iter()
        .zip(&q.q8)
        .map(|(&a, &b)| i32::from(a) * i32::from(b))
        .sum()
}

/// The int8 dot product as ggml does it: `maddubs(|q|, sign(row, q))`; codes stay in
/// -127..=127, so no pair sum saturates.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn idot_avx2(row: &[i8], q: &[i8], qabs: &[u8]) -> i32 {
    use std::arch::x86_64::*;
    let n = row.len().min(q.len()).min(qabs.len());
    let blocks = n / 32;
    let ones = _mm256_set1_epi16(1);
    let mut acc = _mm256_setzero_si256();
    for b in 0..blocks {
        // SAFETY: b * 32 + 32 <= n, within all three slices.
        unsafe {
            let r = _mm256_loadu_si256(row.as_ptr().add(b * 32).cast());
            let s = _mm256_loadu_si256(q.as_ptr().add(b * 32).cast());
            let a = _mm256_loadu_si256(qabs.as_ptr().add(b * 32).cast());
            let p = _mm256_maddubs_epi16(a, _mm256_sign_epi8(r, s));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
        }
    }
    let lo = _mm256_castsi256_si128(acc);
    let hi = _mm256_extracti128_si256(acc, 1);
    let x = _mm_add_epi32(lo, hi);
    let x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0b01_00_11_10));
    let x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0b10_11_00_01));
    let mut sum = _mm_cvtsi128_si32(x);
    for i in blocks * 32..n {
        sum += i32::from(row[i]) * i32::from(q[i]);
    }
    sum
}

/// A bounded min-heap keeping the `k` best `(score, row)` pairs.
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Entry>,
}

#[derive(Clone, Copy)]
struct Entry(f32, usize);

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// "Greater" means worse, so the heap's top is the worst kept entry: lower score,
    /// or on a tie the later row.
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0).then(self.1.cmp(&o.1))
    }
}

impl TopK {
    pub(crate) fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    /// Scores at or below this cannot enter (ties keep the earlier row, and rows
    /// come in increasing order).
    #[inline]
    pub(crate) fn threshold(&self) -> f32 {
        if self.heap.len() < self.k {
            f32::NEG_INFINITY
        } else {
            self.heap.peek().map_or(f32::NEG_INFINITY, |e| e.0)
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, score: f32, row: usize) {
        if self.k == 0 {
            return;
        }
        let e = Entry(score, row);
        if self.heap.len() < self.k {
            self.heap.push(e);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if e < *worst {
                *worst = e;
            }
        }
    }

    /// Best first.
    pub(crate) fn into_sorted(self) -> Vec<(f32, usize)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| (e.0, e.1))
            .collect()
    }
}

/// [`VectorIndex`] with the embedder that turns queries into vectors, and where an
/// index of codes alone reads its exact vectors.
pub struct VectorRetriever<'a> {
    pub index: &'a VectorIndex,
    pub embedder: &'a dyn Embedder,
    pub exact: Option<&'a dyn ExactVectors>,
}

impl Retriever for VectorRetriever<'_> {
    fn name(&self) -> &str {
        "vector"
    }
    fn retrieve(&self, query: &str, top_k: usize, filter: Option<&DocFilter>) -> Result<Vec<Hit>> {
        let q = self.embedder.embed_query(query)?;
        self.index.search_with(&q, top_k, filter, self.exact)
    }
    fn covers(&self, query: &str) -> bool {
        self.embedder.covers(query)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn index(rows: &[(i64, i64, [f32; 3])]) -> VectorIndex {
        let mut b = VectorIndexBuilder::new(3);
        for (id, doc, v) in rows {
            b.push(*id, *doc, v).unwrap();
        }
        b.build()
    }

    #[test]
    fn exact_top_k_by_cosine() {
        let ix = index(&[
            (1, 10, [1.0, 0.0, 0.0]),
            (2, 20, [0.0, 1.0, 0.0]),
            (3, 10, [1.0, 1.0, 0.0]),
            (4, 20, [-1.0, 0.0, 0.0]),
        ]);
        let hits = ix.search(&[2.0, 0.0, 0.0], 3, None).unwrap();
        let ids: Vec<i64> = hits.iter().map(|h| h.chunk_id).collect();
        assert_eq!(ids, vec![1, 3, 2]);
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        assert!((hits[1].score - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!(hits[2].score.abs() < 1e-6);
    }

    #[test]
    fn filter_restricts_to_documents() {
        let ix = index(&[
            (1, 10, [1.0, 0.0, 0.0]),
            (2, 20, [0.9, 0.1, 0.0]),
            (3, 10, [0.0, 1.0, 0.0]),
        ]);
        let f = DocFilter::new([10]);
        let ids: Vec<i64> = ix
            .search(&[0.0, 1.0, 0.0], 5, Some(&f))
            .unwrap()
            .iter()
            .map(|h| h.chunk_id)
            .collect();
        assert_eq!(ids, vec![3, 1]);
        assert!(ix
            .search(&[1.0, 0.0, 0.0], 5, Some(&DocFilter::new([99])))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn ties_keep_the_earlier_row_and_bad_input_is_an_error() {
        let ix = index(&[
            (7, 1, [1.0, 0.0, 0.0]),
            (5, 1, [1.0, 0.0, 0.0]),
            (6, 1, [1.0, 0.0, 0.0]),
        ]);
        let ids: Vec<i64> = ix
            .search(&[1.0, 0.0, 0.0], 2, None)
            .unwrap()
            .iter()
            .map(|h| h.chunk_id)
            .collect();
        assert_eq!(ids, vec![7, 5]);
        assert!(ix.search(&[1.0, 0.0], 2, None).is_err());
        assert!(ix.search(&[f32::NAN, 0.0, 0.0], 2, None).is_err());
        let mut b = VectorIndexBuilder::new(3);
        assert!(b.push(1, 1, &[1.0]).is_err());
    }

    #[test]
    fn kernel_matches_a_plain_dot_product_on_many_rows() {
        // Odd dimensions exercise the remainder path.
        let dims = 37;
        let mut state = 12345u64;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2000) as f32 / 1000.0 - 1.0
        };
        let mut b = VectorIndexBuilder::new(dims);
        let mut rows = Vec::new();
        for i in 0..500 {
            let v: Vec<f32> = (0..dims).map(|_| rnd()).collect();
            b.push(i, i % 7, &v).unwrap();
            rows.push(v);
        }
        let ix = b.build();
        let q: Vec<f32> = (0..dims).map(|_| rnd()).collect();
        let qn = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        let mut expect: Vec<(f32, i64)> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let rn = r.iter().map(|x| x * x).sum::<f32>().sqrt();
                (
                    r.iter().zip(&q).map(|(a, b)| a * b).sum::<f32>() / rn / qn,
                    i as i64,
                )
            })
            .collect();
        expect.sort_by(|a, b| b.0.total_cmp(&a.0));
        let got = ix.search(&q, 10, None).unwrap();
        for (g, e) in got.iter().zip(&expect) {
            assert_eq!(g.chunk_id, e.1);
            assert!((g.score - e.0).abs() < 1e-5);
        }
    }

    #[test]
    fn a_scan_split_across_threads_equals_one_scan_including_ties() {
        let dims = 8;
        let n = PARALLEL_MIN_ROWS * 3 + 17;
        let mut b = VectorIndexBuilder::new(dims);
        for r in 0..n {
            // Few distinct vectors, so many rows tie, some across the split points.
            let mut v = vec![0.1f32; dims];
            v[r % dims] = 1.0 + (r % 5) as f32;
            b.push(r as i64, (r / 1000) as i64, &v).unwrap();
        }
        let ix = b.build();
        let mut q = vec![0.0f32; dims];
        q[3] = 1.0;
        let qn = Query::new(q.clone());
        let mut one = TopK::new(25);
        ix.scan_one(&qn, 0, ix.len(), &mut one);
        let hits = ix.search(&q, 25, None).unwrap();
        let want: Vec<i64> = one.into_sorted().iter().map(|&(_, r)| ix.ids[r]).collect();
        let got: Vec<i64> = hits.iter().map(|h| h.chunk_id).collect();
        assert_eq!(got, want);
        // The best rows are the earliest of the tied best vectors.
        assert_eq!(got[0], 19);
        assert_eq!(got[1], 59);
    }

    /// Uniform values in -1..=1 (step 1e-4) from a xorshift generator.
    fn uniform(seed: u64) -> impl FnMut() -> f32 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 20_001) as f32 / 10_000.0 - 1.0
        }
    }

    /// Every row's exact score, best first (ties: earlier row), by the f32 kernel alone.
    /// (`FMA` as the kernel the fast scan uses: `mul_add` rounds the same either way.)
    fn brute_force<const FMA: bool>(ix: &VectorIndex, q: &Query) -> Vec<(f32, usize)> {
        let mut all: Vec<(f32, usize)> = (0..ix.len())
            .map(|r| (dot::<FMA>(&ix.data[r * ix.dims..][..ix.dims], &q.f), r))
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        all
    }

    #[test]
    fn the_int8_prefilter_returns_exactly_the_f32_top_k() {
        let dims = 384;
        let mut rnd = uniform(99);
        let mut b = VectorIndexBuilder::new(dims);
        let base: Vec<f32> = (0..dims).map(|_| rnd()).collect();
        for i in 0..3000 {
            // Half the rows are small perturbations of one vector, so many scores
            // sit closer together than the int8 error.
            let v: Vec<f32> = if i % 2 == 0 {
                base.iter().map(|x| x + 0.01 * rnd()).collect()
            } else {
                (0..dims).map(|_| rnd()).collect()
            };
            b.push(i, i / 100, &v).unwrap();
        }
        let ix = b.build();
        for t in 0..5 {
            let qv: Vec<f32> = if t == 0 {
                base.clone()
            } else {
                base.iter().map(|x| x + 0.3 * t as f32 * rnd()).collect()
            };
            let n = qv.iter().map(|x| x * x).sum::<f32>().sqrt();
            let q = Query::new(qv.iter().map(|x| x / n).collect());
            let plain = brute_force::<false>(&ix, &q);
            let fused = brute_force::<true>(&ix, &q);
            let fast_is_fma = cfg!(target_arch = "x86_64") && crate::cpu::has_avx2_fma();
            for k in [1, 10, 50] {
                let mut portable = TopK::new(k);
                scan_impl::<false>(&ix, &q, 0, ix.len(), &mut portable);
                assert_eq!(
                    portable.into_sorted(),
                    plain[..k],
                    "portable, query {t}, k {k}"
                );
                let mut fast = TopK::new(k);
                ix.scan_one(&q, 0, ix.len(), &mut fast);
                let want = if fast_is_fma { &fused } else { &plain };
                assert_eq!(fast.into_sorted(), want[..k], "fast, query {t}, k {k}");
            }
        }
    }

    #[test]
    fn the_int8_score_stays_within_its_bound() {
        let mut rnd = uniform(7);
        for dims in [3, 31, 32, 33, 384] {
            for _ in 0..50 {
                let mut v: Vec<f32> = (0..dims).map(|_| rnd()).collect();
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= n);
                let mut qv: Vec<f32> = (0..dims).map(|_| rnd()).collect();
                let n = qv.iter().map(|x| x * x).sum::<f32>().sqrt();
                qv.iter_mut().for_each(|x| *x /= n);
                let q = Query::new(qv);
                let mut v8 = vec![0i8; dims];
                let (s, e) = quantize(&v, &mut v8);
                let exact: f64 = v
                    .iter()
                    .zip(&q.f)
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum();
                let int = idot::<false>(&v8, &q);
                #[cfg(target_arch = "x86_64")]
                if crate::cpu::has_avx2_fma() {
                    // SAFETY: the CPU has AVX2.
                    assert_eq!(unsafe { idot_avx2(&v8, &q.q8, &q.abs8) }, int);
                }
                let approx = f64::from(q.scale * s * int as f32);
                let bound = f64::from(q.q8_norm * e + q.err);
                assert!((exact - approx).abs() <= bound + 1e-6, "dims {dims}");
                assert!(bound < 0.05, "dims {dims}: bound {bound}");
            }
        }
    }

    /// The raw vectors by chunk id, counting the rows asked for.
    struct Raw {
        rows: std::collections::HashMap<i64, Vec<f32>>,
        asked: std::sync::atomic::AtomicUsize,
    }
    impl ExactVectors for Raw {
        fn exact_vectors(&self, ids: &[i64]) -> Result<Vec<(i64, Vec<f32>)>> {
            self.asked
                .fetch_add(ids.len(), std::sync::atomic::Ordering::Relaxed);
            Ok(ids
                .iter()
                .filter_map(|id| self.rows.get(id).map(|v| (*id, v.clone())))
                .collect())
        }
    }

    /// Rows of `dims` values: `near` of every `every` rows perturb one vector by
    /// `noise` (so that many scores lie closer together than the int8 error), the rest
    /// are uniform; documents of 100 rows, given out of order.
    fn rows(dims: usize, n: i64, every: i64, noise: f32, seed: u64) -> Vec<(i64, i64, Vec<f32>)> {
        let mut rnd = uniform(seed);
        let base: Vec<f32> = (0..dims).map(|_| rnd()).collect();
        (0..n)
            .map(|i| {
                let v: Vec<f32> = if every > 0 && i % every == 0 {
                    base.iter().map(|x| x + noise * rnd()).collect()
                } else {
                    (0..dims).map(|_| rnd()).collect()
                };
                // Chunk ids not in row order, documents interleaved.
                (n * 3 - i * 3, (i * 7) % (n / 100).max(1), v)
            })
            .collect()
    }

    /// With only int8 codes kept, the rescored top k is the f32 index's exactly —
    /// ids, scores bit for bit, ties — with and without a document filter, for
    /// queries near the crowded vector and far from it.
    #[test]
    fn codes_only_rescoring_returns_exactly_the_f32_top_k() {
        let dims = 384;
        let data = rows(dims, 4000, 2, 0.01, 99);
        let mut full = VectorIndexBuilder::new(dims);
        let mut lean = VectorIndexBuilder::codes_only(dims);
        for (id, doc, v) in &data {
            full.push(*id, *doc, v).unwrap();
            lean.push(*id, *doc, v).unwrap();
        }
        // Exact duplicates: ties the rescoring must break as the scan does.
        for (k, (_, doc, v)) in data.iter().take(30).enumerate() {
            full.push(100_000 + k as i64, *doc, v).unwrap();
            lean.push(100_000 + k as i64, *doc, v).unwrap();
        }
        let (full, lean) = (full.build(), lean.build());
        assert!(full.keeps_rows() && !lean.keeps_rows());
        assert!(lean.bytes() * 3 < full.bytes());
        let raw = Raw {
            rows: data
                .iter()
                .map(|(id, _, v)| (*id, v.clone()))
                .chain(
                    data.iter()
                        .take(30)
                        .enumerate()
                        .map(|(k, (_, _, v))| (100_000 + k as i64, v.clone())),
                )
                .collect(),
            asked: Default::default(),
        };
        let mut rnd = uniform(5);
        let near = &data[0].2;
        let filter = DocFilter::new([0, 3, 7, 11, 12]);
        for t in 0..6 {
            let q: Vec<f32> = match t {
                0 => near.clone(),
                1 | 2 => near.iter().map(|x| x + 0.3 * t as f32 * rnd()).collect(),
                _ => (0..dims).map(|_| rnd()).collect(),
            };
            for k in [1, 10, 50] {
                for f in [None, Some(&filter)] {
                    let want = full.search(&q, k, f).unwrap();
                    let got = lean.search_with(&q, k, f, Some(&raw)).unwrap();
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!(g.chunk_id, w.chunk_id, "query {t}, k {k}");
                        assert_eq!(g.score.to_bits(), w.score.to_bits(), "query {t}, k {k}");
                    }
                }
            }
        }
        // Without the stored vectors, an index of codes is an error, not a guess.
        assert!(lean.search(near, 5, None).is_err());
        // The f32 index searched "with" vectors ignores them.
        assert_eq!(
            full.search_with(near, 5, None, Some(&raw)).unwrap(),
            full.search(near, 5, None).unwrap()
        );
    }

    /// Over spread-out rows only a few candidates are rescored; a scan split across
    /// threads gathers the same candidates as one.
    #[test]
    fn rescoring_reads_few_vectors_and_splits_across_threads() {
        let dims = 64;
        let n = PARALLEL_MIN_ROWS as i64 * 2 + 301;
        let data = rows(dims, n, 0, 0.0, 17);
        let mut full = VectorIndexBuilder::new(dims);
        let mut lean = VectorIndexBuilder::codes_only(dims);
        for (id, doc, v) in &data {
            full.push(*id, *doc, v).unwrap();
            lean.push(*id, *doc, v).unwrap();
        }
        let (full, lean) = (full.build(), lean.build());
        let raw = Raw {
            rows: data.iter().map(|(id, _, v)| (*id, v.clone())).collect(),
            asked: Default::default(),
        };
        let mut rnd = uniform(3);
        for _ in 0..5 {
            let q: Vec<f32> = (0..dims).map(|_| rnd()).collect();
            assert_eq!(
                lean.search_with(&q, 10, None, Some(&raw)).unwrap(),
                full.search(&q, 10, None).unwrap()
            );
        }
        let asked = raw.asked.load(std::sync::atomic::Ordering::Relaxed);
        assert!(asked >= 5 * 10);
        assert!(asked < 5 * n as usize / 20, "{asked} vectors read");
    }

    /// A stored vector of another length is an error naming the chunk.
    #[test]
    fn a_stored_vector_of_the_wrong_length_is_an_error() {
        let mut b = VectorIndexBuilder::codes_only(3);
        b.push(1, 1, &[1.0, 0.0, 0.0]).unwrap();
        let ix = b.build();
        let raw = Raw {
            rows: [(1, vec![1.0, 0.0])].into_iter().collect(),
            asked: Default::default(),
        };
        let e = ix.search_with(&[1.0, 0.0, 0.0], 1, None, Some(&raw));
        assert!(e.is_err_and(|e| e.to_string().contains("chunk 1")));
    }
}
