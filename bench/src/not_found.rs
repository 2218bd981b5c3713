//! The figures of `quire bench not-found`: how often the honest "not found" check
//! ([`quire::retrieve::relevance::judge`]) refuses questions the library does not
//! answer (`bench/data/unanswerable.jsonl`: English and Chinese, far off-topic and
//! near-topic) and wrongly refuses questions it does answer (the corpus questions,
//! `bench/data/questions-zh.jsonl`, and generic questions any document answers:
//! `bench/data/generic.jsonl`), over whatever Quire library `--data-dir` holds (the
//! corpus is indexed into it first when it is empty; `scripts/big-library.sh` builds
//! the 1k, 5k and 30k-chunk libraries). An answerable question whose page is in a PDF
//! the library lacks is left out (listed). Every question is in the tuning or the
//! held-out half (`bench/data/not_found_split.json`, drawn once): figures are given
//! for each half and each kind, with every question's signals.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use quire::engine::{Engine, EngineConfig, RetrieveOptions};
use quire::llm::Cancel;
use quire::retrieve::relevance::{self, Signals};
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

/// A question of any of the files.
#[derive(Debug, Clone, Deserialize)]
struct Question {
    id: String,
    lang: String,
    question: String,
    /// `near` or `far` (unanswerable questions).
    #[serde(default)]
    kind: Option<String>,
    /// The PDF that answers it (answerable questions).
    #[serde(default)]
    file: Option<String>,
}

/// The committed split: question ids in the tuning and the held-out half.
#[derive(Debug, Clone, Deserialize)]
pub struct Split {
    pub seed: u64,
    pub tune: Vec<String>,
    pub held: Vec<String>,
}

impl Split {
    /// `tune`, `held`, or `none` for a question in neither.
    pub fn half(&self, id: &str) -> &'static str {
        if self.tune.iter().any(|t| t == id) {
            "tune"
        } else if self.held.iter().any(|t| t == id) {
            "held"
        } else {
            "none"
        }
    }
}

/// One question's signals and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    pub id: String,
    pub lang: String,
    /// `corpus`, `zh` (bench/data/questions-zh.jsonl), `generic` or `unanswerable`.
    pub set: String,
    /// `near` or `far` for an unanswerable question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub answerable: bool,
    /// `tune` or `held`.
    pub split: String,
    /// Whether the check let it through to the model.
    pub covered: bool,
    pub reason: String,
    pub signals: Signals,
}

/// Refusals in one group of questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// `unanswerable`, `unanswerable near`, `unanswerable zh`, `answerable`, `corpus`, …
    pub group: String,
    /// `tune`, `held` or `all`.
    pub split: String,
    pub questions: usize,
    pub refused: usize,
}

impl Figure {
    /// Refused, as a share of the questions.
    pub fn rate(&self) -> f64 {
        if self.questions == 0 {
            0.0
        } else {
            self.refused as f64 / self.questions as f64
        }
    }
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub embedder: String,
    pub documents: usize,
    pub chunks: usize,
    pub split_seed: u64,
    pub questions: Vec<Scored>,
    /// Answerable questions left out: their PDF is not in this library.
    pub left_out: Vec<String>,
    /// Per group and half.
    pub figures: Vec<Figure>,
}

impl Report {
    /// The figure for `group` in `split`, if any question is in it.
    pub fn figure(&self, group: &str, split: &str) -> Option<&Figure> {
        self.figures
            .iter()
            .find(|f| f.group == group && f.split == split)
    }
}

/// The groups a question counts in.
fn groups(s: &Scored) -> Vec<String> {
    let mut g = Vec::new();
    if s.answerable {
        g.push("answerable".to_string());
        g.push(format!("answerable {}", s.lang));
        g.push(s.set.clone());
    } else {
        g.push("unanswerable".to_string());
        g.push(format!("unanswerable {}", s.lang));
        if let Some(k) = &s.kind {
            g.push(format!("unanswerable {k}"));
            g.push(format!("unanswerable {k} {}", s.lang));
        }
    }
    g
}

/// Refusals per group, for each half and both together.
pub fn figures(questions: &[Scored]) -> Vec<Figure> {
    let mut by: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for s in questions {
        for g in groups(s) {
            for split in [s.split.as_str(), "all"] {
                let e = by.entry((g.clone(), split.to_string())).or_default();
                e.0 += 1;
                e.1 += usize::from(!s.covered);
            }
        }
    }
    by.into_iter()
        .map(|((group, split), (questions, refused))| Figure {
            group,
            split,
            questions,
            refused,
        })
        .collect()
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

/// Read the committed split.
pub fn load_split(path: &Path) -> Result<Split> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
}

/// The question files, in the order they are reported.
pub struct Sets<'a> {
    pub corpus: &'a Path,
    pub zh: &'a Path,
    pub generic: &'a Path,
    pub unanswerable: &'a Path,
    pub split: &'a Path,
}

/// Run over the library in `data_dir` (the corpus `pdfs` are indexed first if it
/// holds no document).
pub fn run(
    data_dir: &Path,
    pdfs: &Path,
    sets: &Sets,
    embedder: Option<&str>,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let split = load_split(sets.split)?;
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
    let docs = engine.documents()?;
    let files: HashSet<&str> = docs.iter().map(|d| d.file_name.as_str()).collect();
    let settings = engine.settings();
    let opts = RetrieveOptions {
        top_k: settings.top_k,
        ..RetrieveOptions::default()
    };
    let threshold = settings
        .not_found_threshold
        .or_else(|| relevance::calibrated_threshold(&settings.embedder));
    let mut questions = Vec::new();
    let mut left_out = Vec::new();
    for (path, set, answerable) in [
        (sets.corpus, "corpus", true),
        (sets.zh, "zh", true),
        (sets.generic, "generic", true),
        (sets.unanswerable, "unanswerable", false),
    ] {
        for q in load(path)? {
            if let Some(f) = &q.file {
                if answerable && !files.contains(f.as_str()) {
                    left_out.push(q.id);
                    continue;
                }
            }
            let r = engine.search(&q.question, &opts, &cancel)?;
            let judged = relevance::judge(&r, threshold, &settings.embedder);
            questions.push(Scored {
                split: split.half(&q.id).to_string(),
                id: q.id,
                lang: q.lang,
                set: set.into(),
                kind: if answerable { None } else { q.kind },
                answerable,
                covered: judged.covered,
                reason: judged.reason,
                signals: relevance::signals(&r),
            });
        }
    }
    Ok(Report {
        embedder: settings.embedder.clone(),
        documents: docs.len(),
        chunks: docs.iter().map(|d| d.chunks).sum(),
        split_seed: split.seed,
        figures: figures(&questions),
        left_out,
        questions,
    })
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\"not found\" over {} documents, {} chunks ({}); split seed {}",
            self.documents, self.chunks, self.embedder, self.split_seed
        )?;
        for s in &self.questions {
            writeln!(
                f,
                "  {:<4} {:<4} {:<2} {:<12} {:<4} {:<7} {}",
                s.split,
                s.id,
                s.lang,
                s.set,
                s.kind.as_deref().unwrap_or(""),
                if s.covered { "answer" } else { "REFUSE" },
                s.reason
            )?;
        }
        if !self.left_out.is_empty() {
            writeln!(
                f,
                "left out (their PDF is not in this library): {}",
                self.left_out.join(" ")
            )?;
        }
        writeln!(
            f,
            "{:<26} {:>14} {:>14} {:>14}",
            "refused", "tune", "held", "all"
        )?;
        let mut names: Vec<&str> = self.figures.iter().map(|x| x.group.as_str()).collect();
        names.dedup();
        for g in names {
            let cell = |split: &str| {
                self.figure(g, split).map_or(String::new(), |x| {
                    format!("{}/{} {:>3.0}%", x.refused, x.questions, 100.0 * x.rate())
                })
            };
            writeln!(
                f,
                "{:<26} {:>14} {:>14} {:>14}",
                g,
                cell("tune"),
                cell("held"),
                cell("all")
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn s(id: &str, set: &str, kind: Option<&str>, split: &str, covered: bool) -> Scored {
        Scored {
            id: id.into(),
            lang: if set == "zh" { "zh" } else { "en" }.into(),
            set: set.into(),
            kind: kind.map(String::from),
            answerable: set != "unanswerable",
            split: split.into(),
            covered,
            reason: String::new(),
            signals: Signals::default(),
        }
    }

    #[test]
    fn figures_count_refusals_per_group_and_half() {
        let qs = [
            s("U1", "unanswerable", Some("near"), "tune", false),
            s("U2", "unanswerable", Some("far"), "held", false),
            s("U3", "unanswerable", Some("near"), "held", true),
            s("A1", "corpus", None, "held", true),
            s("Z1", "zh", None, "held", false),
        ];
        let r = Report {
            embedder: String::new(),
            documents: 0,
            chunks: 0,
            split_seed: 0,
            figures: figures(&qs),
            questions: qs.to_vec(),
            left_out: Vec::new(),
        };
        let f = r.figure("unanswerable", "held").unwrap();
        assert_eq!((f.questions, f.refused), (2, 1));
        let f = r.figure("unanswerable near", "all").unwrap();
        assert_eq!((f.questions, f.refused), (2, 1));
        let f = r.figure("unanswerable", "tune").unwrap();
        assert_eq!((f.questions, f.refused), (1, 1));
        let f = r.figure("answerable", "held").unwrap();
        assert_eq!((f.questions, f.refused), (2, 1));
        assert_eq!(r.figure("answerable zh", "held").unwrap().refused, 1);
        assert!(r.figure("corpus", "tune").is_none());
        assert!((r.figure("answerable", "held").unwrap().rate() - 0.5).abs() < 1e-9);
        assert!(r.to_string().contains("unanswerable near"));
    }

    #[test]
    fn every_question_is_in_exactly_one_half_and_the_sets_are_big_enough() {
        let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data");
        let split = load_split(&data.join("not_found_split.json")).unwrap();
        let un = load(&data.join("unanswerable.jsonl")).unwrap();
        assert!(un.len() >= 60);
        for lang in ["en", "zh"] {
            for kind in ["near", "far"] {
                let n = un
                    .iter()
                    .filter(|q| q.lang == lang && q.kind.as_deref() == Some(kind))
                    .count();
                assert!(n >= 8, "{lang} {kind}: {n}");
            }
        }
        let mut ids: Vec<String> = Vec::new();
        for f in ["unanswerable.jsonl", "questions-zh.jsonl", "generic.jsonl"] {
            let qs = load(&data.join(f)).unwrap();
            assert!(qs
                .iter()
                .all(|q| !q.question.is_empty() && !q.id.is_empty()));
            ids.extend(qs.into_iter().map(|q| q.id));
        }
        for id in &ids {
            assert_ne!(split.half(id), "none", "{id} is in no half");
        }
        assert!(split.tune.iter().all(|t| !split.held.contains(t)));
        // Halves: as many unanswerable questions in each, give or take one per group.
        let tune = un.iter().filter(|q| split.half(&q.id) == "tune").count();
        assert!(
            tune.abs_diff(un.len() - tune) <= 4,
            "{tune} of {}",
            un.len()
        );
    }
}
