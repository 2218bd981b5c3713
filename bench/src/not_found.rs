//! The figures of `quire bench not-found`: how the "not found" signal (the closest
//! chunk's cosine similarity to the question, [`quire::retrieve::relevance`])
//! separates the corpus questions, which the documents answer, from questions they do
//! not (`bench/data/unanswerable.jsonl`), with generic questions any document answers
//! ("Who wrote this?", "Summarize the main points": `bench/data/generic.jsonl`, whose
//! closest chunk is never very close), over a Quire index of the corpus made by the
//! engine. It prints each question's signal, the threshold this data calibrates (the
//! highest, in hundredths, that keeps every corpus and generic question by at least
//! [`MARGIN`]), and what the threshold in use refuses.

use std::fmt;
use std::path::{Path, PathBuf};

use quire::engine::{Engine, EngineConfig, RetrieveOptions};
use quire::llm::Cancel;
use quire::retrieve::relevance;
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

/// A question of either file: the corpus's (`answerable`) or the unanswerable set.
#[derive(Debug, Clone, Deserialize)]
struct Question {
    id: String,
    lang: String,
    question: String,
}

/// One question's signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    pub id: String,
    pub lang: String,
    /// `corpus` (a corpus question), `generic` or `unanswerable`.
    pub kind: String,
    pub answerable: bool,
    /// `None`: the vector search did not run (a language the embedder does not cover).
    pub best: Option<f32>,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub embedder: String,
    pub questions: Vec<Scored>,
    /// The threshold in use (the calibrated one for the embedder, if any).
    pub threshold_in_use: Option<f32>,
    /// The highest threshold keeping every answerable question, less `MARGIN`.
    pub calibrated: Option<f32>,
    /// At the threshold in use: answerable questions kept, unanswerable refused, out
    /// of those checked.
    pub answerable_kept: usize,
    pub answerable_checked: usize,
    pub unanswerable_refused: usize,
    pub unanswerable_checked: usize,
    /// Questions not checked (no vector search for their language).
    pub not_checked: usize,
}

/// Kept below the lowest answerable question's signal, so that a question a little
/// further from its page than any in the corpus is still answered.
pub const MARGIN: f32 = 0.01;

/// The threshold calibrated from `scores`: the lowest answerable signal less
/// [`MARGIN`], rounded down to hundredths; `None` without answerable scores.
pub fn calibrate(scores: &[Scored]) -> Option<f32> {
    let lowest = scores
        .iter()
        .filter(|s| s.answerable)
        .filter_map(|s| s.best)
        .reduce(f32::min)?;
    Some((((lowest - MARGIN) * 100.0).floor() / 100.0).max(0.0))
}

fn load(path: &Path) -> Result<Vec<Question>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
        })
        .collect()
}

/// Run over the index in `data_dir` (the corpus `pdfs` are indexed first if it holds
/// no document).
pub fn run(
    data_dir: &Path,
    pdfs: &Path,
    answerable: &Path,
    generic: &Path,
    unanswerable: &Path,
    embedder: Option<&str>,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let engine = Engine::open(EngineConfig::new(Some(data_dir.to_path_buf()))?)?;
    if let Some(e) = embedder {
        let mut s = engine.settings();
        s.embedder = e.to_string();
        engine.set_settings(s)?;
    }
    let cancel = Cancel::new();
    if engine.documents()?.is_empty() {
        progress("indexing the corpus");
        let files: Vec<PathBuf> = crate::pdfs(pdfs)?;
        engine.index(&files, &cancel, &mut |_| true)?;
    }
    let settings = engine.settings();
    let opts = RetrieveOptions {
        top_k: settings.top_k,
        ..RetrieveOptions::default()
    };
    let mut questions = Vec::new();
    for (path, kind, answerable) in [
        (answerable, "corpus", true),
        (generic, "generic", true),
        (unanswerable, "unanswerable", false),
    ] {
        for q in load(path)? {
            let r = engine.search(&q.question, &opts, &cancel)?;
            questions.push(Scored {
                id: q.id,
                lang: q.lang,
                kind: kind.into(),
                answerable,
                best: relevance::best_cosine(&r),
            });
        }
    }
    let threshold_in_use = settings
        .not_found_threshold
        .or_else(|| relevance::calibrated_threshold(&settings.embedder));
    let checked = |a: bool| {
        questions
            .iter()
            .filter(move |s| s.answerable == a && s.best.is_some())
    };
    let t = threshold_in_use.unwrap_or(0.0);
    Ok(Report {
        embedder: settings.embedder.clone(),
        calibrated: calibrate(&questions),
        threshold_in_use,
        answerable_kept: checked(true).filter(|s| s.best.unwrap_or(0.0) >= t).count(),
        answerable_checked: checked(true).count(),
        unanswerable_refused: checked(false).filter(|s| s.best.unwrap_or(1.0) < t).count(),
        unanswerable_checked: checked(false).count(),
        not_checked: questions.iter().filter(|s| s.best.is_none()).count(),
        questions,
    })
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\"not found\" signal: the closest chunk's cosine similarity ({})",
            self.embedder
        )?;
        let mut rows: Vec<&Scored> = self.questions.iter().collect();
        rows.sort_by(|a, b| {
            b.best
                .partial_cmp(&a.best)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        for s in rows {
            writeln!(
                f,
                "  {:<6} {:<3} {:<12} {}",
                s.id,
                s.lang,
                s.kind,
                s.best.map_or("not checked".into(), |b| format!("{b:.3}"))
            )?;
        }
        let t = |x: Option<f32>| x.map_or("none".into(), |t| format!("{t:.2}"));
        writeln!(
            f,
            "calibrated threshold (lowest corpus or generic question − {MARGIN}, in hundredths): {}",
            t(self.calibrated)
        )?;
        writeln!(
            f,
            "at the threshold in use ({}): corpus and generic kept {}/{}, unanswerable refused {}/{}, not checked {}",
            t(self.threshold_in_use),
            self.answerable_kept,
            self.answerable_checked,
            self.unanswerable_refused,
            self.unanswerable_checked,
            self.not_checked
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn s(answerable: bool, best: Option<f32>) -> Scored {
        Scored {
            id: String::new(),
            lang: "en".into(),
            kind: String::new(),
            answerable,
            best,
        }
    }

    #[test]
    fn the_threshold_sits_a_margin_below_the_lowest_answerable_question() {
        let scores = [
            s(true, Some(0.61)),
            s(true, Some(0.47)),
            s(true, None),
            s(false, Some(0.2)),
        ];
        assert_eq!(calibrate(&scores), Some(0.46));
        assert_eq!(calibrate(&[s(false, Some(0.3))]), None);
    }

    #[test]
    fn the_unanswerable_and_generic_questions_load() {
        let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data");
        let qs = load(&data.join("unanswerable.jsonl")).unwrap();
        assert!(qs.len() >= 20);
        assert!(qs
            .iter()
            .all(|q| !q.question.is_empty() && !q.id.is_empty()));
        assert!(load(&data.join("generic.jsonl")).unwrap().len() >= 8);
    }
}
