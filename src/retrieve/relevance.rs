//! Honest "not found": whether the documents seem to cover a question at all.
//!
//! Fused scores cannot say it: reciprocal-rank fusion scores ranks, so the best node
//! of an unrelated question scores as high as the best node of a good one. Nor can the
//! closest chunk's cosine alone: the maximum over more chunks rises with the library,
//! and on 28,000 chunks most off-topic questions find some chunk above the 0.30 that
//! 9 PDFs calibrated. Two signals decide, measured with `quire-bench not-found` on
//! libraries of 1k, 5k and 28k chunks (README, "Not found"):
//!
//! - **Words the library never uses.** BM25 knows, for every term of the question,
//!   how many chunks hold it ([`super::TermWeight`]). A question about nginx, SymPy,
//!   tcolorbox's cousin tikzposter or 香蕉 asks for something no page mentions; the
//!   share of the question's IDF weight in such terms (Latin words and CJK characters
//!   counted apart, the larger share taken; CJK bigrams left out, since a bigram across
//!   two words is unknown in any library) is `unknown`. It does not grow less telling
//!   as the library grows: a bigger library knows more words, but a question's own
//!   subject is still missing from a library that does not cover it.
//! - **The closest chunk's cosine**, less `UNKNOWN_WEIGHT` × the unknown share of
//!   Latin words, against a threshold calibrated per embedding model. Questions the
//!   library answers keep their own chunk's cosine whatever the library's size, so
//!   the threshold can sit just under the lowest of them once the questions about
//!   the documents themselves ("Summarize the main points", "Who wrote this?") are
//!   set apart: they name nothing to look for and are never refused.
//!
//! A question with CJK characters is judged by the unknown share alone (the English
//! embedder does not read it): refused from [`UNKNOWN_SHARE`] up. A library under
//! [`FULL_VOCABULARY`] chunks weighs missing words less and holds the cosine to a
//! lower threshold, nearer the [`SMALL_LIBRARY`] one.

use serde::{Deserialize, Serialize};

use super::{Retrieval, TermWeight};

/// Cosine thresholds calibrated by `quire-bench not-found` for the embedding models
/// Quire ships (folder names). Another model gets only the unknown-words check until
/// the user sets one.
///
/// MiniLM, on the tuning half (README, "Not found"): the English corpus questions'
/// closest chunks score 0.57–0.81 at any library size; 0.54 is the lowest hundredth
/// that, with the unknown-words check, refuses the most unanswerable questions of the
/// 28k-chunk library while keeping every answerable one of the 1k, 5k and 28k
/// libraries. m3e-small does not separate the sets (answerable 0.78–0.91,
/// unanswerable 0.70–0.86 on the corpus), so it has none.
const CALIBRATED: &[(&str, f32)] = &[("all-MiniLM-L6-v2", 0.54)];

/// How much a question's unknown share of Latin words lowers its cosine.
pub const UNKNOWN_WEIGHT: f32 = 0.5;

/// From this share of its weight in terms the library never uses, a question that
/// the embedder does not judge (Chinese, or no vector search) is refused.
pub const UNKNOWN_SHARE: f32 = 0.15;

/// Below this many chunks, a word the library lacks says less (a library of two
/// manuals lacks "sign" and "unchanged"), and the closest chunk of an off-topic
/// question is less close: [`UNKNOWN_WEIGHT`] is scaled down and [`UNKNOWN_SHARE`]
/// up by `chunks / FULL_VOCABULARY`, and the threshold goes from [`SMALL_LIBRARY`]
/// (at no chunks) to the calibrated one (at this many).
pub const FULL_VOCABULARY: usize = 2000;

/// The cosine threshold that 9 PDFs calibrated for MiniLM, where a small library's
/// threshold starts.
pub const SMALL_LIBRARY: f32 = 0.30;

/// The calibrated threshold for embedding model `embedder` (its folder name or a path
/// ending in it), if there is one.
pub fn calibrated_threshold(embedder: &str) -> Option<f32> {
    let name = std::path::Path::new(embedder.trim_end_matches('/'))
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    CALIBRATED.iter().find(|(n, _)| *n == name).map(|&(_, t)| t)
}

/// The decision, as the side panel shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relevance {
    /// The closest chunk's cosine similarity to the question; `None` when the vector
    /// retriever did not search for it (nothing in scope, or a language the embedding
    /// model does not cover).
    pub best: Option<f32>,
    /// The threshold applied; `None` when no check was made.
    pub threshold: Option<f32>,
    /// Whether the documents seem to cover the question (true when not checked).
    pub covered: bool,
    /// One sentence on what was decided and why.
    pub reason: String,
    /// The share of the question's weight in terms no chunk of the library holds
    /// (`None`: no term-weighing retriever ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<f32>,
    /// Those terms, as the BM25 analyzer writes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_terms: Vec<String>,
}

/// What the check reads from a retrieval, for the decision and the benchmark.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    /// The closest chunk's cosine (the question itself, the `vector` retriever).
    pub best: Option<f32>,
    /// The IDF-weighted share of the question's Latin words no chunk holds.
    pub unknown_latin: f32,
    /// The same over its CJK characters.
    pub unknown_cjk: f32,
    /// The terms no chunk holds.
    pub unknown_terms: Vec<String>,
    /// Whether the question holds CJK characters (the embedder does not judge it).
    pub cjk: bool,
    /// Whether it asks about the documents themselves and names nothing else.
    pub about_documents: bool,
    /// Whether any term weights were there (a BM25 retriever ran).
    pub weighed: bool,
    /// Chunks in the library the terms were weighed over.
    pub library: usize,
}

impl Signals {
    /// The larger unknown share.
    pub fn unknown(&self) -> f32 {
        self.unknown_latin.max(self.unknown_cjk)
    }
    /// How much a missing word says in a library this big: 1 from
    /// [`FULL_VOCABULARY`] chunks up, less below.
    pub fn vocabulary(&self) -> f32 {
        (self.library as f32 / FULL_VOCABULARY as f32).min(1.0)
    }
    /// The weight of the unknown share of Latin words in [`Self::score`].
    pub fn unknown_weight(&self) -> f32 {
        UNKNOWN_WEIGHT * self.vocabulary()
    }
    /// The unknown share from which a question the embedder does not judge is refused.
    pub fn unknown_share(&self) -> f32 {
        UNKNOWN_SHARE / self.vocabulary().max(f32::EPSILON)
    }
    /// Threshold `t` for a library this big: from [`SMALL_LIBRARY`] (or `t`, if
    /// lower) at no chunks to `t` at [`FULL_VOCABULARY`].
    pub fn threshold(&self, t: f32) -> f32 {
        let low = t.min(SMALL_LIBRARY);
        low + (t - low) * self.vocabulary()
    }
    /// The cosine the threshold is held against: the closest chunk's, less
    /// [`Self::unknown_weight`] × the unknown share of Latin words.
    pub fn score(&self) -> Option<f32> {
        self.best
            .map(|b| b - self.unknown_weight() * self.unknown_latin)
    }
}

/// The closest chunk's cosine similarity to the question itself (query 0), from the
/// retriever named `vector`.
pub fn best_cosine(r: &Retrieval) -> Option<f32> {
    let vector = r.retrievers.iter().position(|n| n == "vector")?;
    r.best
        .iter()
        .filter(|b| b.query == 0 && b.retriever == vector)
        .map(|b| b.score)
        .reduce(f32::max)
}

/// Words of questions about the documents themselves: a question made only of these
/// (after the analyzer's stop words) names nothing a passage could lack.
const ABOUT_DOCUMENTS: &str = "document documents pdf pdfs file files paper papers article \
    book books chapter chapters section sections introduction conclusion conclusions \
    abstract summary summaries summarize summarise summarizing overview outline gist main \
    key point points idea ideas takeaway takeaways topic topics theme themes subject cover \
    covers covered author authors wrote write written writer published important most \
    explain describe tell give brief short few three sentence sentences paragraph paragraphs";

/// The same for Chinese: phrases removed before looking for anything left.
const ABOUT_DOCUMENTS_ZH: &[&str] = &[
    "讲的是什么",
    "讲了什么",
    "讲什么",
    "关于什么",
    "主要内容",
    "是谁写的",
    "谁写的",
    "作者是谁",
    "什么时候写的",
    "介绍一下",
    "一句话",
    "三句话",
    "这篇",
    "这份",
    "这本",
    "这些",
    "这个",
    "文档",
    "文件",
    "文章",
    "论文",
    "本书",
    "总结",
    "概括",
    "摘要",
    "要点",
    "主要",
    "内容",
    "作者",
    "介绍",
    "简要",
    "简单",
    "一下",
    "请",
    "哪些",
    "什么",
    "是",
    "的",
    "了",
    "吗",
    "呢",
    "书",
];

fn is_cjk_term(t: &str) -> bool {
    t.chars().any(crate::text::is_cjk)
}

/// Whether `question` only asks about the documents themselves.
pub fn about_documents(question: &str) -> bool {
    let mut q = question.to_string();
    for p in ABOUT_DOCUMENTS_ZH {
        q = q.replace(p, " ");
    }
    let mut meta = std::collections::HashSet::new();
    crate::text::analyzer::analyze(ABOUT_DOCUMENTS, |t| {
        meta.insert(t.to_string());
    });
    // A question of stop words only ("What is this?") asks about the documents too.
    let mut other = false;
    crate::text::analyzer::analyze(&q, |t| other |= !meta.contains(t));
    !other
}

/// The IDF-weighted share of `terms` that no chunk holds.
fn unknown_share<'a>(terms: impl Iterator<Item = &'a TermWeight>) -> f32 {
    let (mut all, mut unknown) = (0f32, 0f32);
    for t in terms {
        all += t.idf;
        if t.chunks == 0 {
            unknown += t.idf;
        }
    }
    if all > 0.0 {
        unknown / all
    } else {
        0.0
    }
}

/// The signals of retrieval `r`.
pub fn signals(r: &Retrieval) -> Signals {
    let q = r.queries.first().map_or("", String::as_str);
    let w = &r.term_weights;
    Signals {
        best: best_cosine(r),
        unknown_latin: unknown_share(w.iter().filter(|t| !is_cjk_term(&t.term))),
        // Characters, not bigrams: a bigram across two words is unknown anywhere.
        unknown_cjk: unknown_share(
            w.iter()
                .filter(|t| is_cjk_term(&t.term) && t.term.chars().count() == 1),
        ),
        unknown_terms: w
            .iter()
            .filter(|t| t.chunks == 0 && (!is_cjk_term(&t.term) || t.term.chars().count() == 1))
            .map(|t| t.term.clone())
            .collect(),
        cjk: q.chars().any(crate::text::is_cjk),
        about_documents: about_documents(q),
        weighed: !w.is_empty(),
        library: w.first().map_or(0, |t| t.of),
    }
}

/// Judge retrieval `r` against cosine `threshold` (`None`: none calibrated for
/// `embedder`, so only the unknown-words check runs; `Some(0)`: the check is off).
pub fn judge(r: &Retrieval, threshold: Option<f32>, embedder: &str) -> Relevance {
    let s = signals(r);
    let unknown = s.weighed.then(|| s.unknown());
    let named = || {
        let mut n: Vec<String> = s
            .unknown_terms
            .iter()
            .take(4)
            .map(|t| format!("\"{t}\""))
            .collect();
        if s.unknown_terms.len() > 4 {
            n.push("…".into());
        }
        n.join(", ")
    };
    let verdict = |covered: bool, threshold: Option<f32>, reason: String| Relevance {
        best: s.best,
        threshold,
        covered,
        reason,
        unknown,
        unknown_terms: s.unknown_terms.clone(),
    };
    if threshold.is_some_and(|t| t <= 0.0) {
        return verdict(
            true,
            None,
            "not checked: the \"not found\" check is off in Settings".into(),
        );
    }
    if s.about_documents {
        return verdict(
            true,
            None,
            "not checked: the question asks about the documents themselves".into(),
        );
    }
    // Without term weights (PostgreSQL's BM25) the library's size is unknown: the
    // small-library threshold then holds.
    let t = threshold.filter(|_| !s.cjk).map(|t| s.threshold(t));
    match (s.score(), t) {
        (Some(score), Some(t)) => {
            let b = s.best.unwrap_or(score);
            let why = if s.unknown_latin > 0.0 {
                format!(
                    "the closest passage's similarity {b:.2}, less {:.2} × the share {:.2} of the question's weight in words the documents never use ({}), is {score:.2}",
                    s.unknown_weight(),
                    s.unknown_latin,
                    named()
                )
            } else {
                format!("the closest passage's similarity {b:.2}")
            };
            if score < t {
                verdict(false, Some(t), format!("not found: {why}, below the threshold {t:.2}"))
            } else {
                verdict(true, Some(t), format!("found: {why}, reaching the threshold {t:.2}"))
            }
        }
        _ if s.weighed => {
            let u = s.unknown();
            let lead = if s.cjk || s.best.is_none() {
                "the embedding model does not judge this question's language"
            } else {
                "no similarity threshold is calibrated for the embedding model"
            };
            let need = s.unknown_share();
            if u >= need {
                verdict(
                    false,
                    None,
                    format!(
                        "not found: {:.0}% of the question's weight is in words the documents never use ({}), at least {:.0}%",
                        100.0 * u,
                        named(),
                        100.0 * need
                    ),
                )
            } else {
                verdict(
                    true,
                    None,
                    format!(
                        "found: {lead}, and only {:.0}% of the question's weight is in words the documents never use (below {:.0}%)",
                        100.0 * u,
                        100.0 * need.min(1.0)
                    ),
                )
            }
        }
        (None, _) => verdict(
            true,
            None,
            "not checked: the vector search did not run for this question's language".into(),
        ),
        (Some(_), None) => verdict(
            true,
            None,
            format!(
                "not checked: no \"not found\" threshold is calibrated for the embedding model {embedder}; set one in Settings"
            ),
        ),
    }
}

/// What the answer says when the documents don't seem to cover the question, in the
/// question's language (Chinese when it holds Han characters, else English).
pub fn not_found_answer(question: &str) -> String {
    let han = question
        .chars()
        .any(|c| matches!(c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF));
    if han {
        "文档中似乎没有涉及这个问题的内容。下面列出的是最接近的段落，供参考。".into()
    } else {
        "The documents don't seem to cover this question. The closest passages are listed \
         in the sources panel, in case one of them helps."
            .into()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{BestHit, FusionMode};
    use super::*;

    fn retrieval(question: &str, best: Vec<BestHit>, weights: &[(&str, f32, usize)]) -> Retrieval {
        Retrieval {
            queries: vec![question.into(), "q2".into()],
            retrievers: vec!["vector".into(), "bm25".into()],
            fusion: FusionMode::ReciprocalRerank,
            nodes: Vec::new(),
            skipped: Vec::new(),
            best,
            term_weights: weights
                .iter()
                .map(|&(term, idf, chunks)| TermWeight {
                    term: term.into(),
                    idf,
                    chunks,
                    of: 28_000,
                })
                .collect(),
        }
    }

    fn hit(query: usize, retriever: usize, score: f32) -> BestHit {
        BestHit {
            query,
            retriever,
            chunk_id: 1,
            score,
        }
    }

    #[test]
    fn the_question_s_own_vector_score_decides() {
        // BM25's raw score and a generated query's cosine are not the signal.
        let known = [("nicematrix", 6.0, 40), ("block", 3.0, 300)];
        let r = retrieval(
            "nicematrix blocks",
            vec![hit(0, 0, 0.5), hit(0, 1, 9.0), hit(1, 0, 0.9)],
            &known,
        );
        assert_eq!(best_cosine(&r), Some(0.5));
        let j = judge(&r, Some(0.54), "all-MiniLM-L6-v2");
        assert!(!j.covered);
        assert!(
            j.reason.contains("0.50") && j.reason.contains("0.54"),
            "{}",
            j.reason
        );
        let r = retrieval("nicematrix blocks", vec![hit(0, 0, 0.6)], &known);
        assert!(judge(&r, Some(0.54), "x").covered);
        // Without term weights (PostgreSQL's BM25) the library's size is unknown: the
        // small-library threshold holds.
        let r = retrieval("nicematrix blocks", vec![hit(0, 0, 0.5)], &[]);
        let j = judge(&r, Some(0.54), "x");
        assert!(j.covered && j.threshold == Some(SMALL_LIBRARY), "{j:?}");
        let r = retrieval("nicematrix blocks", vec![hit(0, 0, 0.29)], &[]);
        assert!(!judge(&r, Some(0.54), "x").covered);
        let r = retrieval("nicematrix blocks", vec![hit(0, 0, 0.6)], &[]);
        // Off, or no vector search and no term weights: no check, and the reason says
        // which; uncalibrated without term weights: no check either.
        let j = judge(&r, Some(0.0), "x");
        assert!(j.covered && j.reason.contains("off"));
        let j = judge(&r, None, "some-model");
        assert!(j.covered && j.reason.contains("some-model"));
        let r = retrieval("nicematrix blocks", vec![hit(0, 1, 3.0)], &[]);
        let j = judge(&r, Some(0.54), "x");
        assert!(j.covered && j.best.is_none() && j.reason.contains("language"));
    }

    #[test]
    fn words_the_library_never_uses_lower_the_score() {
        // "How do I configure a reverse proxy in nginx?": nginx is in no chunk.
        let w = [
            ("configur", 5.0, 300),
            ("revers", 6.0, 100),
            ("proxi", 9.0, 4),
            ("nginx", 10.0, 0),
        ];
        let r = retrieval("configure reverse proxy nginx", vec![hit(0, 0, 0.62)], &w);
        let s = signals(&r);
        assert!((s.unknown_latin - 10.0 / 30.0).abs() < 1e-6);
        assert_eq!(s.unknown_terms, vec!["nginx".to_string()]);
        // 0.62 − 0.5 × 0.333 = 0.453 < 0.54, though 0.62 alone would pass.
        let j = judge(&r, Some(0.54), "all-MiniLM-L6-v2");
        assert!(!j.covered, "{}", j.reason);
        assert!(j.reason.contains("\"nginx\""), "{}", j.reason);
        assert_eq!(j.unknown_terms, vec!["nginx".to_string()]);
        // Every word known: the same cosine is found.
        let known: Vec<_> = w.iter().map(|&(t, i, _)| (t, i, 3)).collect();
        let r = retrieval(
            "configure reverse proxy nginx",
            vec![hit(0, 0, 0.62)],
            &known,
        );
        let j = judge(&r, Some(0.54), "all-MiniLM-L6-v2");
        assert!(j.covered && j.unknown == Some(0.0), "{}", j.reason);
        // A very close passage outweighs one unknown word (a typo, a new name).
        let r = retrieval("configure reverse proxy nginx", vec![hit(0, 0, 0.75)], &w);
        assert!(judge(&r, Some(0.54), "x").covered);
        // In a library of two manuals a missing word says little, and the threshold
        // is nearer 0.30 (0.30 + 0.24 × 0.1): 0.62 − 0.5 × 0.1 × 0.333 = 0.603 passes,
        // and so does 0.35, which a big library refuses.
        let mut r = retrieval("configure reverse proxy nginx", vec![hit(0, 0, 0.62)], &w);
        for t in &mut r.term_weights {
            t.of = 200;
        }
        let s = signals(&r);
        assert!((s.unknown_weight() - 0.05).abs() < 1e-6);
        assert!((s.unknown_share() - 1.5).abs() < 1e-5);
        assert!((s.threshold(0.54) - 0.324).abs() < 1e-6);
        assert!((s.threshold(0.2) - 0.2).abs() < 1e-6);
        assert!(judge(&r, Some(0.54), "x").covered);
        r.best[0].score = 0.35;
        let j = judge(&r, Some(0.54), "x");
        assert!(j.covered && j.threshold == Some(s.threshold(0.54)), "{j:?}");
        r.best[0].score = 0.30;
        assert!(!judge(&r, Some(0.54), "x").covered);
    }

    #[test]
    fn chinese_is_judged_by_the_characters_the_library_never_uses() {
        // 香蕉面包怎么做: 香 and 蕉 are in no chunk; the bigrams (面包, 包怎, …) are
        // left out of the share, even when unknown, and the cosine is ignored.
        let w = [
            ("香", 10.0, 0),
            ("蕉", 10.0, 0),
            ("香蕉", 10.0, 0),
            ("面", 4.0, 50),
            ("包", 2.0, 900),
            ("面包", 9.0, 2),
            ("包怎", 10.0, 0),
            ("怎", 2.0, 800),
            ("么", 2.0, 900),
            ("做", 3.0, 300),
        ];
        let r = retrieval("香蕉面包怎么做", vec![hit(0, 0, 0.9)], &w);
        let s = signals(&r);
        assert!(s.cjk);
        assert!((s.unknown_cjk - 20.0 / 33.0).abs() < 1e-6);
        assert_eq!(s.unknown_terms, vec!["香".to_string(), "蕉".to_string()]);
        let j = judge(&r, Some(0.54), "all-MiniLM-L6-v2");
        assert!(!j.covered && j.threshold.is_none(), "{}", j.reason);
        assert!(j.reason.contains("61%"), "{}", j.reason);
        // An answerable question: one rare character unknown (屏蔽's 蔽) is not enough,
        // nor is a bigram across two words that no page has.
        let w = [
            ("屏", 6.0, 10),
            ("蔽", 10.0, 0),
            ("屏蔽", 10.0, 0),
            ("整", 3.0, 200),
            ("段", 3.0, 300),
            ("整段", 8.0, 5),
            ("段屏", 10.0, 0),
            ("内", 3.0, 200),
            ("容", 3.0, 200),
            ("注", 4.0, 90),
            ("释", 4.0, 90),
            ("latex", 1.0, 5000),
        ]
        .into_iter()
        .chain("有办法一次性把编译时忽略加行前面".chars().map(|c| {
            let c: &'static str = Box::leak(c.to_string().into_boxed_str());
            (c, 3.0, 300)
        }))
        .collect::<Vec<_>>();
        let r = retrieval("整段内容屏蔽注释 LaTeX", Vec::new(), &w);
        let j = judge(&r, Some(0.54), "all-MiniLM-L6-v2");
        assert!(j.covered, "{}", j.reason);
        assert!(j.unknown.unwrap() < UNKNOWN_SHARE);
        // The same unknown character in a library of 100 chunks: far from enough.
        let mut r = r;
        for t in &mut r.term_weights {
            t.of = 100;
        }
        assert!(judge(&r, Some(0.54), "x").reason.contains("below 100%"));
        // A Chinese question naming a tool no page mentions: its Latin share counts.
        let w = [
            ("matplotlib", 10.0, 0),
            ("python", 4.0, 30),
            ("画", 3.0, 40),
        ];
        let r = retrieval("用 Python 的 matplotlib 画图", Vec::new(), &w);
        assert!(!judge(&r, None, "x").covered);
    }

    #[test]
    fn questions_about_the_documents_themselves_are_not_refused() {
        for q in [
            "Summarize the main points.",
            "Who wrote this?",
            "What is this document about?",
            "What are the key takeaways?",
            "Summarize the document in three sentences.",
            "这篇文档讲了什么？",
            "作者是谁？",
        ] {
            assert!(about_documents(q), "{q}");
            // Even with a far cosine and a word the library lacks.
            let r = retrieval(q, vec![hit(0, 0, 0.1)], &[("takeawai", 10.0, 0)]);
            let j = judge(&r, Some(0.54), "all-MiniLM-L6-v2");
            assert!(
                j.covered && j.reason.contains("documents themselves"),
                "{q}"
            );
        }
        for q in [
            "Who wrote nicematrix?",
            "How do I configure nginx?",
            "香蕉面包怎么做？",
            "这篇文档里怎么设置页边距？",
        ] {
            assert!(!about_documents(q), "{q}");
        }
    }

    #[test]
    fn thresholds_are_known_for_the_shipped_embedders_only() {
        assert!(calibrated_threshold("all-MiniLM-L6-v2").is_some());
        assert!(calibrated_threshold("/opt/models/all-MiniLM-L6-v2/").is_some());
        assert!(calibrated_threshold("bge-small").is_none());
        assert!(not_found_answer("这是什么？").contains("文档"));
        assert!(not_found_answer("What is this?").contains("don't seem to cover"));
    }
}
