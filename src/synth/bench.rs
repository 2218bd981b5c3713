//! The figures of `quire bench answer`: per response mode, the median seconds per
//! question, LLM calls, tokens generated, and the share of answers that contain every
//! `must_contain` string of the question. Retrieval is the caller's: this module takes
//! each question with its retrieved nodes.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{synthesize, Event, Node, Request, ResponseMode};
use crate::llm::{Cancel, Llm};
use crate::{Error, Result};

/// One question of `questions.jsonl` (other fields are ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    pub question: String,
    #[serde(default)]
    pub must_contain: Vec<String>,
}

/// Read a JSON-lines question file; blank lines are skipped.
pub fn load_questions(path: &Path) -> Result<Vec<Question>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| Error::Invalid(format!("{} line {}: {e}", path.display(), i + 1)))
        })
        .collect()
}

/// Whether `answer` contains every one of `must` (exact substrings).
pub fn contains_all(answer: &str, must: &[String]) -> bool {
    must.iter().all(|m| answer.contains(m.as_str()))
}

/// The figures of one mode over all questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeFigures {
    pub mode: ResponseMode,
    pub questions: usize,
    /// Median wall seconds of synthesis per question.
    pub median_secs: f64,
    /// LLM calls per question, on average.
    pub calls_per_question: f64,
    /// Tokens generated per question, on average.
    pub tokens_per_question: f64,
    /// Tokens generated over all questions.
    pub tokens_total: usize,
    /// Share (0..=1) of answers containing every `must_contain` string.
    pub must_contain_share: f64,
}

/// The median of `xs` (0 when empty).
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Run every mode of `modes` over `cases` (each question with its retrieved nodes),
/// with `base` as the request (its mode is replaced). `progress` hears
/// `(mode, question index)` before each question.
pub fn run_modes(
    llm: &dyn Llm,
    base: &Request,
    modes: &[ResponseMode],
    cases: &[(Question, Vec<Node>)],
    cancel: &Cancel,
    progress: &mut dyn FnMut(ResponseMode, usize),
) -> Result<Vec<ModeFigures>> {
    let mut out = Vec::with_capacity(modes.len());
    for &mode in modes {
        let req = Request {
            mode,
            ..base.clone()
        };
        let mut secs = Vec::with_capacity(cases.len());
        let (mut calls, mut tokens, mut hits) = (0usize, 0usize, 0usize);
        for (i, (q, nodes)) in cases.iter().enumerate() {
            progress(mode, i);
            let mut quiet = |_: Event| -> Result<bool> { Ok(true) };
            let r = synthesize(llm, &req, &q.question, nodes, cancel, &mut quiet)?;
            secs.push(r.secs);
            calls += r.calls.len();
            tokens += r.output_tokens();
            if contains_all(&r.answer, &q.must_contain) {
                hits += 1;
            }
        }
        let n = cases.len().max(1) as f64;
        out.push(ModeFigures {
            mode,
            questions: cases.len(),
            median_secs: median(&secs),
            calls_per_question: calls as f64 / n,
            tokens_per_question: tokens as f64 / n,
            tokens_total: tokens,
            must_contain_share: hits as f64 / n,
        });
    }
    Ok(out)
}

/// The figures as a text table.
pub fn table(figs: &[ModeFigures]) -> String {
    let mut s = format!(
        "{:<20} {:>9} {:>12} {:>12} {:>12} {:>14}\n",
        "mode", "questions", "median s/q", "calls/q", "tokens/q", "must_contain"
    );
    for f in figs {
        s.push_str(&format!(
            "{:<20} {:>9} {:>12.2} {:>12.2} {:>12.1} {:>13.0}%\n",
            f.mode.name(),
            f.questions,
            f.median_secs,
            f.calls_per_question,
            f.tokens_per_question,
            f.must_contain_share * 100.0
        ));
    }
    s
}

/// Parse a comma-separated list of mode names (`all` for every mode).
pub fn parse_modes(list: &str) -> Result<Vec<ResponseMode>> {
    if list.trim() == "all" {
        return Ok(ResponseMode::ALL.to_vec());
    }
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(str::parse)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::synth::ScriptedLlm;

    #[test]
    fn figures_from_the_scripted_llm() {
        let llm = ScriptedLlm::new(2000);
        let q = |id: &str, must: &[&str]| Question {
            id: id.into(),
            question: "q?".into(),
            must_contain: must.iter().map(|s| s.to_string()).collect(),
        };
        let nodes = vec![Node::new("a", "alpha"), Node::new("b", "beta")];
        let cases = vec![
            (q("1", &["answer"]), nodes.clone()),
            (q("2", &["nope"]), nodes.clone()),
        ];
        let mut seen = Vec::new();
        let figs = run_modes(
            &llm,
            &Request::default(),
            &parse_modes("refine,no_text").unwrap(),
            &cases,
            &Cancel::new(),
            &mut |m, i| seen.push((m, i)),
        )
        .unwrap();
        assert_eq!(seen.len(), 4);
        assert_eq!(figs[0].mode, ResponseMode::Refine);
        assert_eq!(figs[0].calls_per_question, 2.0);
        assert_eq!(figs[0].must_contain_share, 0.5);
        // four calls of "answer k": 8 tokens (chars) each
        assert_eq!(figs[0].tokens_total, 32);
        assert_eq!(figs[1].calls_per_question, 0.0);
        assert_eq!(figs[1].must_contain_share, 0.0);
        assert!(table(&figs).contains("no_text"));
        assert!(parse_modes("refine,bogus").is_err());
        assert_eq!(parse_modes("all").unwrap().len(), 7);
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}
