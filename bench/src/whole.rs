//! Whole-document questions, measured: [`route_bench`] is the question-kind router's
//! accuracy on `bench/data/route.jsonl` per half of its committed split (tuning,
//! held-out); [`whole_answers`] asks the whole-document questions of
//! `bench/data/whole.jsonl` over their document twice — from the top passages
//! (search, as before the route) and by the route (every page) — and gives the share
//! of answers holding every key term and the seconds per answer, per half;
//! [`summary_timing`] is one document summarized the first time and again from its
//! kept summary tree.

use std::collections::BTreeSet;
use std::path::Path;

use quire::engine::route::{question_kind, QuestionKind};
use quire::engine::{AskEvent, AskOverrides, AskRequest, Engine, RouteChoice, Scope};
use quire::llm::Cancel;
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::answer::median;

/// One labelled question of the router's set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RouteQuestion {
    pub id: String,
    pub question: String,
    /// `whole` or `fact`.
    pub kind: String,
    #[serde(default)]
    pub lang: String,
}

/// A committed split: the ids of the tuning and the held-out half.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HalfSplit {
    pub tune: BTreeSet<String>,
    pub held: BTreeSet<String>,
}

impl HalfSplit {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
    }

    /// `tune`, `held` or `other`.
    pub fn half(&self, id: &str) -> &'static str {
        if self.tune.contains(id) {
            "tune"
        } else if self.held.contains(id) {
            "held"
        } else {
            "other"
        }
    }
}

/// The router's figures on one half.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RouteHalf {
    pub half: String,
    pub questions: usize,
    pub accuracy: f64,
    /// Whole-document questions routed whole, of all whole-document questions.
    pub whole_recall: f64,
    /// Questions routed whole that are whole-document questions.
    pub whole_precision: f64,
    /// The ids routed wrongly.
    pub wrong: Vec<String>,
}

/// `quire bench route`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RouteReport {
    pub halves: Vec<RouteHalf>,
}

impl std::fmt::Display for RouteReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{:<6} {:>9} {:>9} {:>13} {:>16}  wrong",
            "half", "questions", "accuracy", "whole recall", "whole precision"
        )?;
        for h in &self.halves {
            writeln!(
                f,
                "{:<6} {:>9} {:>8.1}% {:>12.1}% {:>15.1}%  {}",
                h.half,
                h.questions,
                h.accuracy * 100.0,
                h.whole_recall * 100.0,
                h.whole_precision * 100.0,
                h.wrong.join(" ")
            )?;
        }
        Ok(())
    }
}

/// The router over every labelled question, per half.
pub fn route_bench(questions: &[RouteQuestion], split: &HalfSplit) -> RouteReport {
    let mut halves = Vec::new();
    for half in ["tune", "held"] {
        let qs: Vec<&RouteQuestion> = questions
            .iter()
            .filter(|q| split.half(&q.id) == half)
            .collect();
        let mut h = RouteHalf {
            half: half.into(),
            questions: qs.len(),
            ..RouteHalf::default()
        };
        let (mut right, mut whole, mut whole_hit, mut routed_whole) = (0, 0, 0, 0);
        for q in qs {
            let said = question_kind(&q.question).kind == QuestionKind::Whole;
            let is = q.kind == "whole";
            whole += usize::from(is);
            routed_whole += usize::from(said);
            whole_hit += usize::from(is && said);
            if said == is {
                right += 1;
            } else {
                h.wrong.push(q.id.clone());
            }
        }
        let share = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        h.accuracy = share(right, h.questions);
        h.whole_recall = share(whole_hit, whole);
        h.whole_precision = share(whole_hit, routed_whole);
        halves.push(h);
    }
    RouteReport { halves }
}

/// One whole-document question: its document and the key terms a good answer holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WholeQuestion {
    pub id: String,
    #[serde(default)]
    pub lang: String,
    pub file: String,
    pub question: String,
    pub key_terms: Vec<String>,
}

/// Whether `answer` holds every key term (any case).
pub fn has_terms(answer: &str, terms: &[String]) -> bool {
    let a = answer.to_lowercase();
    terms.iter().all(|t| a.contains(&t.to_lowercase()))
}

/// One whole-document question answered one way.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WholeSample {
    pub id: String,
    pub half: String,
    /// `search` or `whole`.
    pub route: String,
    pub has_terms: bool,
    pub secs: f64,
    pub llm_calls: usize,
    /// The decision line.
    pub label: String,
    pub answer: String,
}

/// A row: one route over one half.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WholeRow {
    pub route: String,
    pub half: String,
    pub questions: usize,
    /// Share (0..=1) of answers holding every key term.
    pub key_terms_share: f64,
    pub median_secs: f64,
    pub mean_calls: f64,
}

/// The whole-document rows of `quire bench answer --whole`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WholeReport {
    pub rows: Vec<WholeRow>,
    pub samples: Vec<WholeSample>,
}

impl std::fmt::Display for WholeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "whole-document questions (key terms in answer, any case)"
        )?;
        writeln!(
            f,
            "{:<22} {:>6} {:>9} {:>10} {:>9} {:>7}",
            "route", "half", "questions", "key terms", "median s", "calls"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:<22} {:>6} {:>9} {:>9.1}% {:>9.1} {:>7.1}",
                if r.route == "search" {
                    "before: top-k search"
                } else {
                    "after: whole route"
                },
                r.half,
                r.questions,
                r.key_terms_share * 100.0,
                r.median_secs,
                r.mean_calls
            )?;
        }
        Ok(())
    }
}

/// What one LLM call of an answer read, wrote and took.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallTiming {
    pub label: String,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub prompt_secs: f64,
    pub gen_secs: f64,
    pub secs: f64,
    /// What the model wrote.
    pub output: String,
}

/// One question asked by [`ask_routed`]: the answer, the route's label, the seconds
/// and model calls it took, and each call's timing.
#[derive(Debug, Default)]
pub struct Routed {
    pub answer: String,
    pub label: String,
    pub secs: f64,
    pub calls: usize,
    pub steps: Vec<CallTiming>,
}

/// Ask `question` over `scope` by `route`; the answer, its decision line, seconds,
/// calls, and each call's tokens and seconds.
pub fn ask_routed(
    engine: &Engine,
    question: &str,
    scope: Scope,
    route: RouteChoice,
    overrides: &AskOverrides,
    cancel: &Cancel,
) -> Result<Routed> {
    let req = AskRequest {
        question: question.to_string(),
        scope,
        route,
        overrides: overrides.clone(),
        ..Default::default()
    };
    let mut out = Routed::default();
    engine.ask(req, cancel, &mut |ev| {
        match ev {
            AskEvent::Route { route } => out.label = route.label,
            AskEvent::StepDone { call } => out.steps.push(CallTiming {
                label: call.label,
                prompt_tokens: call.prompt_tokens,
                output_tokens: call.output_tokens,
                prompt_secs: call.prompt_secs,
                gen_secs: call.gen_secs,
                secs: call.secs,
                output: call.output,
            }),
            AskEvent::Done {
                answer: a, stats, ..
            } => {
                out.answer = a;
                out.secs = stats.secs;
                out.calls = stats.llm_calls;
            }
            _ => {}
        }
        true
    })?;
    Ok(out)
}

/// Every whole-document question over its document, by search then by the route.
pub fn whole_answers(
    engine: &Engine,
    questions: &[WholeQuestion],
    split: &HalfSplit,
    overrides: &AskOverrides,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&str),
) -> Result<WholeReport> {
    let mut samples = Vec::new();
    for (route, choice) in [
        ("search", RouteChoice::Search),
        ("whole", RouteChoice::Whole),
    ] {
        for (i, q) in questions.iter().enumerate() {
            progress(&format!("{route} {}/{} {}", i + 1, questions.len(), q.id));
            let scope = engine.parse_scope(&q.file)?;
            let asked = ask_routed(engine, &q.question, scope, choice, overrides, cancel)?;
            samples.push(WholeSample {
                id: q.id.clone(),
                half: split.half(&q.id).into(),
                route: route.into(),
                has_terms: has_terms(&asked.answer, &q.key_terms),
                secs: asked.secs,
                llm_calls: asked.calls,
                label: asked.label,
                answer: asked.answer,
            });
        }
    }
    let mut rows = Vec::new();
    for route in ["search", "whole"] {
        for half in ["tune", "held"] {
            let s: Vec<&WholeSample> = samples
                .iter()
                .filter(|s| s.route == route && s.half == half)
                .collect();
            let n = s.len().max(1) as f64;
            let secs: Vec<f64> = s.iter().map(|s| s.secs).collect();
            rows.push(WholeRow {
                route: route.into(),
                half: half.into(),
                questions: s.len(),
                key_terms_share: s.iter().filter(|s| s.has_terms).count() as f64 / n,
                median_secs: median(&secs),
                mean_calls: s.iter().map(|s| s.llm_calls).sum::<usize>() as f64 / n,
            });
        }
    }
    Ok(WholeReport { rows, samples })
}

/// `quire bench summary-time`: one document summarized by the route the first time,
/// then again from its kept summary tree, the model loaded before either (its load
/// timed apart).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryTiming {
    pub file: String,
    pub pages: u32,
    pub model: String,
    pub cpu: String,
    pub threads: usize,
    /// Seconds loading the model before the first summary (not in `first_secs`: the
    /// app keeps a loaded model between questions).
    #[serde(default)]
    pub load_secs: f64,
    pub first_secs: f64,
    pub first_calls: usize,
    pub cached_secs: f64,
    pub cached_calls: usize,
    pub first_label: String,
    pub cached_label: String,
    /// The first time's LLM calls (leaves, then the reduce).
    #[serde(default)]
    pub first_steps: Vec<CallTiming>,
}

impl std::fmt::Display for SummaryTiming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} ({} pages), model {}, {} ({} threads)",
            self.file, self.pages, self.model, self.cpu, self.threads
        )?;
        writeln!(
            f,
            "model loaded in {:.1} s before the first",
            self.load_secs
        )?;
        writeln!(
            f,
            "first:  {:>7.1} s, {:>3} LLM calls  [{}]",
            self.first_secs, self.first_calls, self.first_label
        )?;
        writeln!(
            f,
            "cached: {:>7.1} s, {:>3} LLM calls  [{}]",
            self.cached_secs, self.cached_calls, self.cached_label
        )?;
        for c in &self.first_steps {
            writeln!(
                f,
                "  {:<48} {:>6} → {:>4} tokens  prompt {:>5.1} s  gen {:>5.1} s  all {:>5.1} s",
                c.label, c.prompt_tokens, c.output_tokens, c.prompt_secs, c.gen_secs, c.secs
            )?;
        }
        Ok(())
    }
}

/// The CPU's model name, from /proc/cpuinfo.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Summarize `file` (indexed in `engine`) twice by the whole route.
pub fn summary_timing(
    engine: &Engine,
    file: &str,
    question: &str,
    overrides: &AskOverrides,
    cancel: &Cancel,
) -> Result<SummaryTiming> {
    let scope = engine.parse_scope(file)?;
    let pages = match &scope {
        Scope::Documents { ids } => engine
            .documents()?
            .iter()
            .filter(|d| ids.contains(&d.id))
            .map(|d| d.pages)
            .sum(),
        _ => 0,
    };
    // The model is loaded first: the first summary's time is the reading alone.
    let t = std::time::Instant::now();
    engine.llm()?;
    let load_secs = t.elapsed().as_secs_f64();
    let first = ask_routed(
        engine,
        question,
        scope.clone(),
        RouteChoice::Whole,
        overrides,
        cancel,
    )?;
    let cached = ask_routed(
        engine,
        question,
        scope,
        RouteChoice::Whole,
        overrides,
        cancel,
    )?;
    Ok(SummaryTiming {
        file: file.into(),
        pages,
        model: engine.settings().model,
        cpu: cpu_name(),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_secs,
        first_secs: first.secs,
        first_calls: first.calls,
        cached_secs: cached.secs,
        cached_calls: cached.calls,
        first_label: first.label,
        cached_label: cached.label,
        first_steps: first.steps,
    })
}
