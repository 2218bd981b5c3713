//! `quire bench draft`: speculative decoding on real answers. The corpus questions
//! are answered (compact, through the engine) once per draft setting — `off` first,
//! then e.g. `lookup` and `auto` or a draft model's file — and each setting's
//! figures are put side by side: the median answer time, the model's generation
//! speed, tokens per verification pass, and whether every answer is the one `off`
//! gave (speculative decoding must not change a token). With a peer (a Python with
//! llama-cpp-python), llama.cpp's generation speed on the same model is measured in
//! the same run.

use std::path::PathBuf;

use quire::engine::{AskEvent, AskRequest, AskStats, Engine, EngineConfig};
use quire::llm::Cancel;
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::answer::{contains_all, median, Question};

/// What `quire bench draft` runs.
#[derive(Debug, Clone)]
pub struct DraftBenchOptions {
    pub pdfs: PathBuf,
    pub data_dir: PathBuf,
    pub questions: Vec<Question>,
    /// The answering model (a file name in the model folders, or a path).
    pub model: String,
    /// Draft settings to compare; `off` is run first whether listed or not.
    pub drafts: Vec<String>,
    /// A Python with llama-cpp-python, for llama.cpp's speed on the same model.
    pub peer: Option<PathBuf>,
}

/// One draft setting's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DraftRow {
    pub draft: String,
    /// What drafted (a model file or prompt lookup); none when nothing did.
    pub by: Option<String>,
    pub median_secs: f64,
    pub median_prompt_tokens: f64,
    /// Output tokens over generation seconds, median over the answers.
    pub median_gen_tok_s: f64,
    /// Tokens emitted per pass over the answering model, over all answers.
    pub tokens_per_step: f64,
    /// Answers identical to `off`'s.
    pub same_answers: usize,
    /// Answers holding every key term.
    pub key_terms: usize,
    /// Passes by their rows (index 0: one row), and their mean milliseconds (none
    /// where no pass had that many rows): what the draft lengths were chosen from.
    #[serde(default)]
    pub passes: Vec<usize>,
    #[serde(default)]
    pub pass_ms: Vec<Option<f64>>,
}

/// The figures of `quire bench draft`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DraftBench {
    pub cpu: String,
    pub model: String,
    pub questions: usize,
    pub rows: Vec<DraftRow>,
    /// llama.cpp's generation tokens/s on the model (llamacpp_speed.py), this run.
    pub llamacpp_gen_tok_s: Option<f64>,
}

impl std::fmt::Display for DraftBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{}, {} questions (compact), CPU {}",
            self.model, self.questions, self.cpu
        )?;
        writeln!(
            f,
            "{:<34} {:>9} {:>9} {:>11} {:>10} {:>9} {:>9}",
            "draft", "median s", "prompt t", "gen tok/s", "tok/step", "same", "key terms"
        )?;
        for r in &self.rows {
            let name = match &r.by {
                Some(by) if *by != r.draft => format!("{} ({by})", r.draft),
                _ => r.draft.clone(),
            };
            writeln!(
                f,
                "{:<34} {:>9.2} {:>9.0} {:>11.1} {:>10.2} {:>5}/{:<3} {:>5}/{:<3}",
                name,
                r.median_secs,
                r.median_prompt_tokens,
                r.median_gen_tok_s,
                r.tokens_per_step,
                r.same_answers,
                self.questions,
                r.key_terms,
                self.questions
            )?;
        }
        for r in self.rows.iter().filter(|r| !r.passes.is_empty()) {
            let widths: Vec<String> = (r.passes.iter().zip(&r.pass_ms))
                .enumerate()
                .filter_map(|(i, (n, ms))| Some(format!("{} rows {n}x {:.1} ms", i + 1, (*ms)?)))
                .collect();
            writeln!(f, "  {} passes: {}", r.draft, widths.join(", "))?;
        }
        if let Some(g) = self.llamacpp_gen_tok_s {
            writeln!(
                f,
                "llama.cpp generation on the same model, this run: {g:.1} tok/s"
            )?;
            for r in &self.rows {
                writeln!(f, "  {}: {:.2}x llama.cpp", r.draft, r.median_gen_tok_s / g)?;
            }
        }
        Ok(())
    }
}

/// Index, then answer every question once per draft setting.
pub fn draft_bench(
    opts: &DraftBenchOptions,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&str),
) -> Result<DraftBench> {
    let engine = Engine::open(EngineConfig::new(Some(opts.data_dir.clone()))?)?;
    progress(&format!("indexing {} ...", opts.pdfs.display()));
    let summary = engine.index_summary(std::slice::from_ref(&opts.pdfs), cancel, &mut |_| true)?;
    if summary.indexed == 0 {
        return Err(Error::Invalid(format!(
            "no PDF indexed from {}",
            opts.pdfs.display()
        )));
    }
    let mut drafts = vec!["off".to_string()];
    drafts.extend(opts.drafts.iter().filter(|d| *d != "off").cloned());
    let mut rows = Vec::new();
    let mut plain: Vec<String> = Vec::new();
    for draft in &drafts {
        let mut s = engine.settings();
        s.model = opts.model.clone();
        s.draft = draft.clone();
        s.mode = "compact".into();
        engine.set_settings(s)?;
        let mut answers = Vec::new();
        let mut stats = Vec::new();
        for (i, q) in opts.questions.iter().enumerate() {
            progress(&format!(
                "draft {draft}: {}/{} {}",
                i + 1,
                opts.questions.len(),
                q.id
            ));
            let (a, st) = ask(&engine, q, cancel)?;
            answers.push(a);
            stats.push(st);
        }
        if plain.is_empty() {
            plain = answers.clone();
        }
        let all =
            quire::llm::speculative::DraftStats::sum(stats.iter().filter_map(|s| s.draft.as_ref()));
        rows.push(DraftRow {
            draft: draft.clone(),
            by: all.as_ref().map(|d| d.by.clone()),
            median_secs: median(&stats.iter().map(|s| s.secs).collect::<Vec<_>>()),
            median_prompt_tokens: median(
                &stats
                    .iter()
                    .map(|s| s.prompt_tokens as f64)
                    .collect::<Vec<_>>(),
            ),
            median_gen_tok_s: median(&stats.iter().map(|s| s.tokens_per_s).collect::<Vec<_>>()),
            tokens_per_step: all.as_ref().map_or(1.0, |d| d.tokens_per_step()),
            passes: all.as_ref().map(|d| d.passes.clone()).unwrap_or_default(),
            pass_ms: all
                .as_ref()
                .map(|d| {
                    d.mean_pass_secs()
                        .into_iter()
                        .map(|s| s.map(|s| s * 1e3))
                        .collect()
                })
                .unwrap_or_default(),
            same_answers: answers.iter().zip(&plain).filter(|(a, b)| a == b).count(),
            key_terms: answers
                .iter()
                .zip(&opts.questions)
                .filter(|(a, q)| contains_all(a, &q.must_contain))
                .count(),
        });
    }
    let llamacpp_gen_tok_s = match &opts.peer {
        Some(py) => {
            progress("llama.cpp on the same model ...");
            let path = quire::models::find(&opts.model)?;
            Some(crate::llm::run_peer(py, &path, 512, 16)?.1)
        }
        None => None,
    };
    Ok(DraftBench {
        cpu: crate::support::cpu_name(),
        model: opts.model.clone(),
        questions: opts.questions.len(),
        rows,
        llamacpp_gen_tok_s,
    })
}

/// One compact answer and its stats line.
fn ask(engine: &Engine, q: &Question, cancel: &Cancel) -> Result<(String, AskStats)> {
    let req = AskRequest {
        question: q.question.clone(),
        mode: Some("compact".into()),
        ..Default::default()
    };
    let mut out = None;
    engine.ask(req, cancel, &mut |ev| {
        if let AskEvent::Done { answer, stats, .. } = ev {
            out = Some((answer, stats));
        }
        true
    })?;
    out.ok_or_else(|| Error::Invalid(format!("{}: no answer", q.id)))
}
