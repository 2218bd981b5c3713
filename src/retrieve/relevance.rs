//! Honest "not found": whether the documents seem to cover a question at all.
//!
//! Fused scores cannot say it: reciprocal-rank fusion scores ranks, so the best node
//! of an unrelated question scores as high as the best node of a good one. The signal
//! is the vector retriever's best cosine similarity between the question and any
//! chunk (in scope), taken before fusion. Below a threshold calibrated per embedding
//! model on the corpus questions and on questions the corpus does not answer
//! (`quire-bench not-found`, README "Not found"), the answer says so and shows the
//! closest passages instead of letting the model improvise.

use serde::{Deserialize, Serialize};

use super::Retrieval;

/// Thresholds calibrated by `quire-bench not-found` for the embedding models Quire
/// ships (folder names). Another model gets no check until the user sets one.
///
/// MiniLM, on the corpus: the 18 English corpus questions score 0.57–0.83, ten generic
/// questions any document answers ("Who wrote this?", "Summarize the main points")
/// 0.32–0.54, and 26 questions the corpus does not answer 0.17–0.42. 0.30 is the
/// highest hundredth that keeps every corpus and generic question (by at least 0.01);
/// it refuses 20 of the 26. (0.51 would refuse all 26, and "Who wrote this?" too.)
/// m3e-small does not separate them (answerable 0.78–0.91, unanswerable 0.70–0.86), so
/// it has none.
const CALIBRATED: &[(&str, f32)] = &[("all-MiniLM-L6-v2", 0.30)];

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

/// Judge retrieval `r` against `threshold` (`None`: none calibrated for `embedder`;
/// `Some(0)`: the check is off).
pub fn judge(r: &Retrieval, threshold: Option<f32>, embedder: &str) -> Relevance {
    let best = best_cosine(r);
    let Some(t) = threshold.filter(|&t| t > 0.0) else {
        let reason = if threshold.is_some() {
            "not checked: the \"not found\" check is off in Settings".to_string()
        } else {
            format!(
                "not checked: no \"not found\" threshold is calibrated for the embedding model {embedder}; set one in Settings"
            )
        };
        return Relevance {
            best,
            threshold: None,
            covered: true,
            reason,
        };
    };
    match best {
        None => Relevance {
            best,
            threshold: None,
            covered: true,
            reason: "not checked: the vector search did not run for this question's language"
                .into(),
        },
        Some(b) if b < t => Relevance {
            best,
            threshold: Some(t),
            covered: false,
            reason: format!(
                "not found: the closest passage's similarity {b:.2} is below the threshold {t:.2}"
            ),
        },
        Some(b) => Relevance {
            best,
            threshold: Some(t),
            covered: true,
            reason: format!(
                "found: the closest passage's similarity {b:.2} reaches the threshold {t:.2}"
            ),
        },
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

    fn retrieval(best: Vec<BestHit>) -> Retrieval {
        Retrieval {
            queries: vec!["q".into(), "q2".into()],
            retrievers: vec!["vector".into(), "bm25".into()],
            fusion: FusionMode::ReciprocalRerank,
            nodes: Vec::new(),
            skipped: Vec::new(),
            best,
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
        let r = retrieval(vec![hit(0, 0, 0.2), hit(0, 1, 9.0), hit(1, 0, 0.9)]);
        assert_eq!(best_cosine(&r), Some(0.2));
        let j = judge(&r, Some(0.30), "all-MiniLM-L6-v2");
        assert!(!j.covered);
        assert!(
            j.reason.contains("0.20") && j.reason.contains("0.30"),
            "{}",
            j.reason
        );
        let j = judge(&retrieval(vec![hit(0, 0, 0.5)]), Some(0.30), "x");
        assert!(j.covered);
        // Off, uncalibrated, or no vector search: no check, and the reason says which.
        let j = judge(&r, Some(0.0), "x");
        assert!(j.covered && j.reason.contains("off"));
        let j = judge(&r, None, "some-model");
        assert!(j.covered && j.reason.contains("some-model"));
        let j = judge(&retrieval(vec![hit(0, 1, 3.0)]), Some(0.30), "x");
        assert!(j.covered && j.best.is_none() && j.reason.contains("language"));
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
