//! The BM25 retriever over the same chunks as the vector one.
//!
//! Scoring is Okapi BM25 as Lucene computes it (k1 = 1.2, b = 0.75,
//! idf = ln(1 + (N − df + 0.5) / (df + 0.5))), over the terms of [`crate::text::analyzer`].
//! Postings are stored compactly: per term one byte string of its (row, term
//! frequency) pairs in row order, each the gap from the previous row as a varint with
//! one bit saying whether a frequency byte follows (frequencies above 1, saturated at
//! 255, where BM25 is flat anyway) — about a byte and a half a posting instead of
//! five. Document length norms are precomputed per row. A query is scored term at a
//! time into a dense accumulator and the top k taken with a bounded heap.

use std::collections::HashMap;

use super::vector::TopK;
use super::{DocFilter, Hit, Retriever};
use crate::text::analyzer as text;
use crate::Result;

use crate::text::bm25::{B, K1};

/// An inverted index over chunk texts.
#[derive(Debug, Default, Clone)]
pub struct Bm25Index {
    vocab: HashMap<String, u32>,
    /// Term `t`'s postings, encoded ([`push_posting`]).
    postings: Vec<Box<[u8]>>,
    /// Term `t`'s document frequency: the chunks holding it.
    dfs: Vec<u32>,
    /// `K1 * (1 − B + B * len / avg_len)` per row.
    norms: Vec<f32>,
    /// Terms per row (the norms follow from them).
    lens: Vec<u32>,
    ids: Vec<i64>,
    docs: Vec<i64>,
}

/// Append the posting `(row, tf)` to a term's encoded postings whose last row was
/// `last` (`None` before the first): the gap `row - last` (the row itself first),
/// shifted left one bit, the bit set when a frequency byte follows, as a LEB128
/// varint; then the frequency when it is above 1. Rows must increase.
fn push_posting(out: &mut Vec<u8>, last: Option<u32>, row: u32, tf: u8) {
    let gap = u64::from(row - last.map_or(0, |l| l));
    let mut v = (gap << 1) | u64::from(tf > 1);
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    if tf > 1 {
        out.push(tf);
    }
}

/// The `(row, tf)` pairs of one term's encoded postings, in row order.
#[derive(Clone)]
pub struct Postings<'a> {
    bytes: &'a [u8],
    at: usize,
    row: Option<u32>,
}

impl<'a> Postings<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            at: 0,
            row: None,
        }
    }
}

impl Iterator for Postings<'_> {
    type Item = (u32, u8);
    #[inline]
    fn next(&mut self) -> Option<(u32, u8)> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = *self.bytes.get(self.at)?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
        }
        let tf = if v & 1 == 1 {
            let t = *self.bytes.get(self.at)?;
            self.at += 1;
            t
        } else {
            1
        };
        let row = self.row.map_or(0, |r| r) + (v >> 1) as u32;
        self.row = Some(row);
        Some((row, tf))
    }
}

/// Collects chunk texts for a [`Bm25Index`].
#[derive(Debug, Default)]
pub struct Bm25Builder {
    vocab: HashMap<String, u32>,
    /// Per term: its encoded postings, its last row and its document frequency.
    postings: Vec<Vec<u8>>,
    last: Vec<u32>,
    dfs: Vec<u32>,
    lens: Vec<u32>,
    ids: Vec<i64>,
    docs: Vec<i64>,
    scratch: Vec<u32>,
}

impl Bm25Builder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new term's id.
    fn define(&mut self, term: &str) -> u32 {
        let id = self.postings.len() as u32;
        self.vocab.insert(term.to_string(), id);
        self.postings.push(Vec::new());
        self.last.push(0);
        self.dfs.push(0);
        id
    }

    /// Index one chunk.
    pub fn add(&mut self, chunk_id: i64, doc_id: i64, text: &str) {
        let mut terms = std::mem::take(&mut self.scratch);
        terms.clear();
        text::analyze(text, |t| {
            let id = match self.vocab.get(t) {
                Some(&id) => id,
                None => self.define(t),
            };
            terms.push(id);
        });
        self.add_terms(chunk_id, doc_id, &mut terms);
        self.scratch = terms;
    }

    /// Index one chunk given as term ids of this builder's vocabulary (synthetic
    /// benchmarks use this to skip text generation); `terms` is reordered.
    fn add_terms(&mut self, chunk_id: i64, doc_id: i64, terms: &mut [u32]) {
        let row = self.ids.len() as u32;
        self.lens.push(terms.len() as u32);
        self.ids.push(chunk_id);
        self.docs.push(doc_id);
        terms.sort_unstable();
        let mut i = 0;
        while i < terms.len() {
            let t = terms[i];
            let mut j = i + 1;
            while j < terms.len() && terms[j] == t {
                j += 1;
            }
            let tf = (j - i).min(u8::MAX as usize) as u8;
            let t = t as usize;
            if let (Some(p), Some(last), Some(df)) = (
                self.postings.get_mut(t),
                self.last.get_mut(t),
                self.dfs.get_mut(t),
            ) {
                // Grown by a quarter, not doubled: the slack of millions of
                // postings lists is memory the index holds.
                if p.capacity() - p.len() < 6 {
                    p.reserve_exact(p.len() / 4 + 8);
                }
                push_posting(p, (*df > 0).then_some(*last), row, tf);
                *last = row;
                *df += 1;
            }
            i = j;
        }
    }

    /// Define a term (for [`Bm25Builder::add_term_ids`]); returns its id.
    pub fn term_id(&mut self, term: &str) -> u32 {
        match self.vocab.get(term) {
            Some(&id) => id,
            None => self.define(term),
        }
    }

    /// Index one chunk from ids returned by [`Bm25Builder::term_id`] (already
    /// analyzed terms); unknown ids are ignored.
    pub fn add_term_ids(&mut self, chunk_id: i64, doc_id: i64, terms: &mut [u32]) {
        self.add_terms(chunk_id, doc_id, terms);
    }

    /// Chunks added.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no chunk was added.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn build(self) -> Bm25Index {
        let norms = norms_of(&self.lens);
        Bm25Index {
            vocab: self.vocab,
            postings: self
                .postings
                .into_iter()
                .map(Vec::into_boxed_slice)
                .collect(),
            dfs: self.dfs,
            norms,
            lens: self.lens,
            ids: self.ids,
            docs: self.docs,
        }
    }
}

/// `K1 * (1 − B + B * len / avg_len)` for each length.
fn norms_of(lens: &[u32]) -> Vec<f32> {
    let n = lens.len();
    let total: u64 = lens.iter().map(|&l| u64::from(l)).sum();
    let avg = if n == 0 {
        1.0
    } else {
        (total as f64 / n as f64).max(1e-9)
    };
    lens.iter()
        .map(|&l| (f64::from(K1) * (1.0 - f64::from(B) + f64::from(B) * f64::from(l) / avg)) as f32)
        .collect()
}

impl Bm25Index {
    /// Chunks indexed.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Distinct terms.
    pub fn terms(&self) -> usize {
        self.vocab.len()
    }

    /// Postings held.
    pub fn postings(&self) -> usize {
        self.dfs.iter().map(|&d| d as usize).sum()
    }

    /// Approximate bytes held by postings, norms and ids (not the vocabulary).
    pub fn bytes(&self) -> usize {
        self.postings.iter().map(|p| p.len() + 16).sum::<usize>()
            + self.dfs.len() * 4
            + self.norms.len() * 8
            + self.ids.len() * 16
    }

    /// This index without the chunks of `remove` and with `added`'s chunks after the
    /// others: what a [`Bm25Builder`] makes of the kept chunks, in order, then
    /// `added`'s — same rows, postings, norms and scores — in one pass over the
    /// postings, without the kept chunks' texts. Terms left without postings go.
    pub fn updated(
        &self,
        remove: &std::collections::HashSet<i64>,
        added: Bm25Builder,
    ) -> Bm25Index {
        // Old row → new row, for the rows kept.
        let mut new_row = vec![u32::MAX; self.ids.len()];
        let mut kept = 0u32;
        for (row, doc) in self.docs.iter().enumerate() {
            if !remove.contains(doc) {
                new_row[row] = kept;
                kept += 1;
            }
        }
        let mut lens = Vec::with_capacity(kept as usize + added.lens.len());
        let mut ids = Vec::with_capacity(lens.capacity());
        let mut docs = Vec::with_capacity(lens.capacity());
        for (row, _) in new_row.iter().enumerate().filter(|(_, &r)| r != u32::MAX) {
            lens.push(self.lens[row]);
            ids.push(self.ids[row]);
            docs.push(self.docs[row]);
        }
        lens.extend(&added.lens);
        ids.extend(&added.ids);
        docs.extend(&added.docs);
        // The added chunks' postings by term text, rows shifted after the kept ones.
        let mut added_by_term: HashMap<&str, &[u8]> = HashMap::new();
        for (term, &id) in &added.vocab {
            if let Some(p) = added.postings.get(id as usize).filter(|p| !p.is_empty()) {
                added_by_term.insert(term.as_str(), p.as_slice());
            }
        }
        let mut names: Vec<&str> = vec![""; self.vocab.len()];
        for (term, &id) in &self.vocab {
            if let Some(n) = names.get_mut(id as usize) {
                *n = term;
            }
        }
        let mut vocab = HashMap::with_capacity(self.vocab.len() + added.vocab.len());
        let mut postings: Vec<Box<[u8]>> = Vec::with_capacity(vocab.capacity());
        let mut dfs = Vec::with_capacity(vocab.capacity());
        let mut buf = Vec::new();
        let mut push_term = |term: &str, old: Postings<'_>, new: Option<&&[u8]>| {
            buf.clear();
            let mut last = None;
            let mut df = 0u32;
            for (r, tf) in old {
                let nr = new_row[r as usize];
                if nr != u32::MAX {
                    push_posting(&mut buf, last, nr, tf);
                    last = Some(nr);
                    df += 1;
                }
            }
            for (r, tf) in Postings::new(new.map_or(&[][..], |p| *p)) {
                push_posting(&mut buf, last, kept + r, tf);
                last = Some(kept + r);
                df += 1;
            }
            if df > 0 {
                vocab.insert(term.to_string(), postings.len() as u32);
                postings.push(buf.as_slice().into());
                dfs.push(df);
            }
        };
        for (id, term) in names.iter().enumerate() {
            push_term(term, self.postings_of(id as u32), added_by_term.get(term));
        }
        let mut fresh: Vec<(&str, &[u8])> = added_by_term
            .iter()
            .filter(|(t, _)| !self.vocab.contains_key(**t))
            .map(|(t, p)| (*t, *p))
            .collect();
        fresh.sort_unstable_by_key(|(t, _)| *t);
        for (term, p) in fresh {
            push_term(term, Postings::new(&[]), Some(&p));
        }
        Bm25Index {
            vocab,
            postings,
            dfs,
            norms: norms_of(&lens),
            lens,
            ids,
            docs,
        }
    }

    /// The chunks containing `term` (an analyzed term's id), as `(row, tf)`.
    fn postings_of(&self, term: u32) -> Postings<'_> {
        Postings::new(self.postings.get(term as usize).map_or(&[][..], |p| p))
    }

    /// The document frequency of a term id.
    fn df(&self, term: u32) -> usize {
        self.dfs.get(term as usize).map_or(0, |&d| d as usize)
    }

    /// The query's distinct known term ids.
    fn query_terms(&self, query: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        text::analyze(query, |t| {
            if let Some(&id) = self.vocab.get(t) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        });
        ids
    }

    /// Each distinct term of `query` with the IDF [`Self::search`] gives it and the
    /// chunks holding it; a term no chunk holds gets the IDF of a term in none.
    pub fn term_weights(&self, query: &str) -> Vec<super::TermWeight> {
        let mut out: Vec<super::TermWeight> = Vec::new();
        text::analyze(query, |t| {
            if out.iter().any(|w| w.term == t) {
                return;
            }
            let chunks = self.vocab.get(t).map_or(0, |&id| self.df(id));
            out.push(super::TermWeight::new(t.to_string(), chunks, self.len()));
        });
        out
    }

    /// The `k` best chunks for `query`, best first; chunks sharing no term with
    /// the query are never returned. Ties go to the earlier chunk.
    pub fn search(&self, query: &str, k: usize, filter: Option<&DocFilter>) -> Vec<Hit> {
        let terms = self.query_terms(query);
        if terms.is_empty() || k == 0 {
            return Vec::new();
        }
        let n = self.len() as f32;
        let mut acc = vec![0f32; self.len()];
        for t in terms {
            let df = self.df(t) as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let w = idf * (K1 + 1.0);
            for (r, tf) in self.postings_of(t) {
                let r = r as usize;
                if let (Some(a), Some(&norm)) = (acc.get_mut(r), self.norms.get(r)) {
                    let tf = f32::from(tf);
                    *a += w * tf / (tf + norm);
                }
            }
        }
        let mut top = TopK::new(k);
        for (row, &s) in acc.iter().enumerate() {
            if s > 0.0 && s > top.threshold() {
                if let Some(f) = filter {
                    if !self.docs.get(row).is_some_and(|&d| f.allows(d)) {
                        continue;
                    }
                }
                top.push(s, row);
            }
        }
        top.into_sorted()
            .into_iter()
            .filter_map(|(score, row)| self.ids.get(row).map(|&chunk_id| Hit { chunk_id, score }))
            .collect()
    }
}

impl Retriever for Bm25Index {
    fn name(&self) -> &str {
        "bm25"
    }
    fn term_weights(&self, query: &str) -> Vec<super::TermWeight> {
        self.term_weights(query)
    }
    fn retrieve(&self, query: &str, top_k: usize, filter: Option<&DocFilter>) -> Result<Vec<Hit>> {
        Ok(self.search(query, top_k, filter))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn build(texts: &[(i64, i64, &str)]) -> Bm25Index {
        let mut b = Bm25Builder::new();
        for (id, doc, t) in texts {
            b.add(*id, *doc, t);
        }
        b.build()
    }

    fn ids(hits: &[Hit]) -> Vec<i64> {
        hits.iter().map(|h| h.chunk_id).collect()
    }

    #[test]
    fn scores_are_okapi_bm25_by_hand() {
        // Three chunks of lengths 2, 4 and 2 (after stop words): avg 8/3.
        let ix = build(&[
            (1, 1, "apple banana"),
            (2, 1, "apple apple cherry durian"),
            (3, 2, "cherry fig"),
        ]);
        let hits = ix.search("apple", 10, None);
        assert_eq!(ids(&hits), vec![2, 1]);
        let (n, df, avg) = (3.0f64, 2.0f64, 8.0f64 / 3.0);
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let score = |tf: f64, len: f64| {
            let k1 = f64::from(K1);
            let b = f64::from(B);
            idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg))
        };
        assert!((f64::from(hits[0].score) - score(2.0, 4.0)).abs() < 1e-5);
        assert!((f64::from(hits[1].score) - score(1.0, 2.0)).abs() < 1e-5);
    }

    #[test]
    fn english_query_finds_its_chunk_through_stemming() {
        let ix = build(&[
            (
                1,
                1,
                "To put a package on hold, use apt-mark hold; apt-mark unhold undoes it.",
            ),
            (2, 1, "The Debian name comes from Debra and Ian Murdock."),
            (3, 2, "Toy Story characters name the releases."),
        ]);
        let hits = ix.search("How can I keep apt from upgrading a held package?", 3, None);
        assert_eq!(hits.first().map(|h| h.chunk_id), Some(1));
        assert!(ix.search("the of and", 3, None).is_empty());
        assert!(ix.search("zebra", 3, None).is_empty());
    }

    #[test]
    fn two_character_chinese_query_finds_its_chunk() {
        let ix = build(&[
            (
                1,
                1,
                "在 CJK 宏包中，汉字与汉字之间的距离由 CJKglue 命令控制。",
            ),
            (2, 1, "用 dvipdfmx 生成的 PDF 可以复制粘贴中文。"),
            (3, 2, "包括行距和字号的设置。"),
        ]);
        let hits = ix.search("宏包", 3, None);
        assert_eq!(hits.first().map(|h| h.chunk_id), Some(1));
        // Chunk 3 shares only the character 包, so it ranks below.
        assert_eq!(ids(&hits), vec![1, 3]);
        assert_eq!(
            ix.search("复制", 3, None).first().map(|h| h.chunk_id),
            Some(2)
        );
    }

    /// Chinese is indexed as characters and their bigrams, not as dictionary words
    /// nor as characters alone. Measured on the Chinese questions (README, "Chinese
    /// retrieval"), jieba word segmentation ranked no better, and worse where the
    /// question and the page cut the same idea differently. Here the question says
    /// 中文和英文混在一起 and the page 中英文混排: jieba cuts them into words they do
    /// not share (中文/英文/混在 against 中英文/混排) and finds only the passage that
    /// shares the words 和 and 一起; characters and bigrams (中, 英, 文, 混, 英文,
    /// 文混, …) find the answer first.
    #[test]
    fn chinese_paraphrase_is_found_through_characters_and_bigrams() {
        let ix = build(&[
            (1, 1, "中英文混排时为何无法正确分行？"),
            (2, 1, "中文字体和西文字体可以一起设置。"),
            (3, 2, "页眉和页脚的格式由 fancyhdr 宏包设置。"),
        ]);
        let hits = ix.search("中文和英文混在一起的时候，为什么断行不对？", 3, None);
        assert_eq!(hits.first().map(|h| h.chunk_id), Some(1), "{hits:?}");
        // The bigram keeps a two-character word whole: 行距 (line spacing) finds its
        // passage before one with many a 行 and 距 apart, where characters alone
        // would rank it second.
        let ix = build(&[
            (1, 1, "行距由 \\linespread 调整。"),
            (2, 1, "每一行的长度和距离：一行一行地距离相等。"),
        ]);
        let hits = ix.search("行距", 2, None);
        assert_eq!(ids(&hits), vec![1, 2]);
    }

    /// The English words of a mixed query are words, however it is typed (spaced,
    /// unspaced, full-width), and their rarity carries the ranking over the common
    /// Chinese 选项.
    #[test]
    fn mixed_chinese_english_query_weighs_its_english_words() {
        let ix = build(&[
            (
                1,
                1,
                "用 tlmgr update --all --dry-run 可以先看会更新哪些宏包，并不真的安装。",
            ),
            (
                2,
                1,
                "选项写在 \\documentclass 的方括号里，各个选项之间用逗号分隔。",
            ),
            (3, 2, "宏包的选项也可以用 \\PassOptionsToPackage 事先给出。"),
        ]);
        for q in [
            "tlmgr 的 dry-run 选项",
            "tlmgr的dry-run选项",
            "ｔｌｍｇｒ 的 ｄｒｙ－ｒｕｎ 选项",
        ] {
            let hits = ix.search(q, 3, None);
            assert_eq!(hits.first().map(|h| h.chunk_id), Some(1), "{q}: {hits:?}");
        }
    }

    #[test]
    fn filter_and_top_k() {
        let ix = build(&[(1, 1, "alpha beta"), (2, 2, "alpha"), (3, 2, "alpha gamma")]);
        assert_eq!(ix.search("alpha", 1, None).len(), 1);
        let f = DocFilter::new([2]);
        let got = ids(&ix.search("alpha", 10, Some(&f)));
        assert_eq!(got, vec![2, 3]);
        assert!(Bm25Index::default().search("alpha", 3, None).is_empty());
    }

    /// Postings round-trip through their encoding: gaps of every varint length,
    /// frequencies 1, above 1 and saturated.
    #[test]
    fn postings_round_trip_through_the_encoding() {
        let pairs: Vec<(u32, u8)> = vec![
            (0, 1),
            (1, 2),
            (63, 1),
            (64, 255),
            (200, 1),
            (20_000, 3),
            (2_000_000, 1),
            (u32::MAX - 1, 1),
            (u32::MAX, 7),
        ];
        let mut bytes = Vec::new();
        let mut last = None;
        for &(r, tf) in &pairs {
            push_posting(&mut bytes, last, r, tf);
            last = Some(r);
        }
        assert_eq!(Postings::new(&bytes).collect::<Vec<_>>(), pairs);
        // A gap below 64 with a frequency of 1 is one byte.
        let mut one = Vec::new();
        push_posting(&mut one, Some(10), 73, 1);
        assert_eq!(one.len(), 1);
        // A truncated string ends the postings instead of reading past them.
        assert_eq!(
            Postings::new(&bytes[..bytes.len() - 1]).count(),
            pairs.len() - 1
        );
    }

    /// Scores from the compact postings are the plain (row, tf) scoring's, bit for
    /// bit, on an index of varied chunks, term frequencies above 255 included.
    #[test]
    fn compact_postings_score_as_plain_postings() {
        let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
        let mut texts: Vec<(i64, i64, String)> = (0..300i64)
            .map(|i| {
                let t: Vec<&str> = (0..(1 + i % 23))
                    .map(|j| words[((i * 5 + j * j) % 6) as usize])
                    .collect();
                (i * 2 + 1, i / 10, t.join(" "))
            })
            .collect();
        texts.push((10_000, 99, "alpha ".repeat(300)));
        let mut b = Bm25Builder::new();
        let mut plain: HashMap<String, Vec<(u32, u8)>> = HashMap::new();
        let mut lens = Vec::new();
        for (row, (id, doc, t)) in texts.iter().enumerate() {
            b.add(*id, *doc, t);
            let mut counts: HashMap<String, usize> = HashMap::new();
            let mut len = 0u32;
            text::analyze(t, |w| {
                *counts.entry(w.to_string()).or_default() += 1;
                len += 1;
            });
            lens.push(len);
            for (w, c) in counts {
                plain
                    .entry(w)
                    .or_default()
                    .push((row as u32, c.min(255) as u8));
            }
        }
        let ix = b.build();
        let norms = norms_of(&lens);
        let n = texts.len() as f32;
        for q in ["alpha", "beta gamma", "zeta delta epsilon", "alpha zeta"] {
            let mut acc = vec![0f32; texts.len()];
            let mut seen = Vec::new();
            text::analyze(q, |w| {
                if seen.iter().any(|s| s == w) {
                    return;
                }
                seen.push(w.to_string());
                let Some(p) = plain.get(w) else { return };
                let df = p.len() as f32;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let wt = idf * (K1 + 1.0);
                for &(r, tf) in p {
                    let tf = f32::from(tf);
                    acc[r as usize] += wt * tf / (tf + norms[r as usize]);
                }
            });
            let mut want: Vec<(f32, usize)> = acc
                .iter()
                .enumerate()
                .filter(|(_, &s)| s > 0.0)
                .map(|(r, &s)| (s, r))
                .collect();
            want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let got = ix.search(q, 20, None);
            assert_eq!(got.len(), want.len().min(20), "{q}");
            for (g, (s, r)) in got.iter().zip(&want) {
                assert_eq!(g.chunk_id, texts[*r].0, "{q}");
                assert_eq!(g.score.to_bits(), s.to_bits(), "{q}");
            }
        }
        assert_eq!(ix.postings(), plain.values().map(Vec::len).sum::<usize>());
        assert_eq!(ix.terms(), plain.len());
    }
}
