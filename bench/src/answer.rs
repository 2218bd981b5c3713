//! The figures of `quire bench answer`: per response mode, the median seconds per
//! question, LLM calls, tokens generated, and the share of answers that contain every
//! `must_contain` string of the question. [`run_modes`] takes each question with its
//! retrieved nodes; [`answer_bench`] goes the whole way through the [`Engine`]: index
//! the PDFs, then ask every question in every mode.

use std::path::{Path, PathBuf};

use quire::engine::{AskEvent, AskOverrides, AskRequest, Engine, EngineConfig, IndexEvent, Scope};
use quire::llm::{Cancel, GenParams, Llm};
use quire::synth::{synthesize, Event, Node, Request, Response, ResponseMode, RunOptions};
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

/// One question of `questions.jsonl` (other fields are ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    pub question: String,
    #[serde(default)]
    pub must_contain: Vec<String>,
    /// The question's language (`en`, `zh`, ...), when the file says.
    #[serde(default)]
    pub lang: String,
    /// The cells of the table row that answers it (table questions,
    /// `bench/data/table_questions.jsonl`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub row: Vec<String>,
}

/// Whether the answering `row` is among the sources (`context`): each of its cells
/// found there, compared as `quire bench tables` compares cells (letters, digits, CJK).
pub fn row_in(context: &str, row: &[String]) -> bool {
    let hay = crate::tables::normalize(context);
    let cells: Vec<String> = row
        .iter()
        .map(|c| crate::tables::normalize(c))
        .filter(|c| !c.is_empty())
        .collect();
    !cells.is_empty() && cells.iter().all(|c| hay.contains(c.as_str()))
}

/// One answered question, as the figures need it.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub answer: String,
    /// The source texts the answer was made from, joined.
    pub context: String,
    pub llm_calls: usize,
    /// Prompt tokens over the answer's LLM calls.
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub secs: f64,
    /// Each LLM call's output and how many tokens it generated.
    pub calls: Vec<(String, usize)>,
    /// Seconds from the ask to its sources, and to its first token (if any).
    pub sources_secs: Option<f64>,
    pub first_token_secs: Option<f64>,
    /// Generated tokens a second over the answer's LLM calls (0 when none).
    pub tokens_per_s: f64,
    /// Whether the support check found every checked sentence only restating the
    /// question.
    pub restates: bool,
}

impl Sample {
    /// Whether one of the answer's LLM calls ran to the token limit repeating itself
    /// ([`loops`]): the model looped instead of finishing. (Repetition across calls,
    /// as accumulate's answers to similar chunks have, does not count.)
    pub fn looped(&self, max_tokens: usize) -> bool {
        self.calls
            .iter()
            .any(|(out, n)| *n >= max_tokens && loops(out))
    }
}

/// The figures of `mode` from one sample per question (same order).
pub fn figures(
    mode: ResponseMode,
    questions: &[Question],
    samples: &[Sample],
    max_tokens: usize,
) -> ModeFigures {
    let n = samples.len().max(1) as f64;
    let secs: Vec<f64> = samples.iter().map(|s| s.secs).collect();
    let calls: usize = samples.iter().map(|s| s.llm_calls).sum();
    let tokens: usize = samples.iter().map(|s| s.output_tokens).sum();
    let share = |f: &dyn Fn(&Sample, &Question) -> bool| {
        let hits = samples
            .iter()
            .zip(questions)
            .filter(|(s, q)| f(s, q))
            .count();
        hits as f64 / n
    };
    ModeFigures {
        mode,
        questions: samples.len(),
        median_secs: median(&secs),
        calls_per_question: calls as f64 / n,
        median_prompt_tokens: median(
            &samples
                .iter()
                .map(|s| s.prompt_tokens as f64)
                .collect::<Vec<_>>(),
        ),
        tokens_per_question: tokens as f64 / n,
        tokens_total: tokens,
        must_contain_share: share(&|s, q| contains_all(&s.answer, &q.must_contain)),
        sources_share: share(&|s, q| contains_all(&s.context, &q.must_contain)),
        looping_share: share(&|s, _| s.looped(max_tokens)),
        restating_share: share(&|s, _| s.restates),
        row_in_sources_share: {
            let with_row: Vec<(&Sample, &Question)> = samples
                .iter()
                .zip(questions)
                .filter(|(_, q)| !q.row.is_empty())
                .collect();
            (!with_row.is_empty()).then(|| {
                with_row
                    .iter()
                    .filter(|(s, q)| row_in(&s.context, &q.row))
                    .count() as f64
                    / with_row.len() as f64
            })
        },
        timings: samples
            .iter()
            .zip(questions)
            .map(|(s, q)| Timing {
                id: q.id.clone(),
                secs: s.secs,
                sources_secs: s.sources_secs,
                first_token_secs: s.first_token_secs,
                prompt_tokens: s.prompt_tokens,
                output_tokens: s.output_tokens,
                tokens_per_s: s.tokens_per_s,
            })
            .collect(),
        zh_in_zh_share: {
            let zh: Vec<&Sample> = samples
                .iter()
                .zip(questions)
                .filter(|(_, q)| q.lang == "zh")
                .map(|(s, _)| s)
                .collect();
            (!zh.is_empty()).then(|| {
                zh.iter().filter(|s| mostly_chinese(&s.answer)).count() as f64 / zh.len() as f64
            })
        },
    }
}

/// Whether `answer` repeats itself the way a looping model does: some run of 8 words
/// (or, in text without spaces, 16 characters) occurs 3 times or more.
pub fn loops(answer: &str) -> bool {
    use std::collections::HashMap;
    let words: Vec<&str> = answer.split_whitespace().collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    if words.len() >= 24 {
        for w in words.windows(8) {
            let n = seen.entry(w.join(" ")).or_default();
            *n += 1;
            if *n >= 3 {
                return true;
            }
        }
    }
    seen.clear();
    let chars: Vec<char> = answer.chars().filter(|c| !c.is_whitespace()).collect();
    if chars.iter().filter(|c| quire::text::is_cjk(**c)).count() >= 48 {
        for w in chars.windows(16) {
            let n = seen.entry(w.iter().collect()).or_default();
            *n += 1;
            if *n >= 3 {
                return true;
            }
        }
    }
    false
}

/// Whether most of the letters of `answer` are Chinese (an answer in Chinese, code and
/// Latin names aside): CJK characters are at least a third of the letters.
pub fn mostly_chinese(answer: &str) -> bool {
    let letters = answer.chars().filter(|c| c.is_alphabetic()).count();
    let cjk = answer.chars().filter(|c| quire::text::is_cjk(*c)).count();
    letters > 0 && cjk * 3 >= letters
}

/// Read a JSON-lines question file; blank lines are skipped.
pub fn load_questions(path: &Path) -> Result<Vec<Question>> {
    quire::jsonl::read(path)
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
    /// Median prompt tokens per question (over its LLM calls).
    #[serde(default)]
    pub median_prompt_tokens: f64,
    /// Tokens generated per question, on average.
    pub tokens_per_question: f64,
    /// Tokens generated over all questions.
    pub tokens_total: usize,
    /// Share (0..=1) of answers containing every `must_contain` string.
    pub must_contain_share: f64,
    /// Share (0..=1) of questions whose sources, together, contain every
    /// `must_contain` string: what retrieval left the model to find.
    pub sources_share: f64,
    /// Share (0..=1) of answers with an LLM call that hit the token limit while
    /// repeating itself ([`Sample::looped`]).
    pub looping_share: f64,
    /// Share (0..=1) of the Chinese questions answered in Chinese ([`mostly_chinese`]);
    /// `None` without Chinese questions.
    pub zh_in_zh_share: Option<f64>,
    /// Share (0..=1) of the table questions whose answering row is among the sources
    /// ([`row_in`]); `None` without table questions.
    #[serde(default)]
    pub row_in_sources_share: Option<f64>,
    /// Share (0..=1) of answers that only restate the question (every sentence the
    /// support check read says the question again).
    #[serde(default)]
    pub restating_share: f64,
    /// Each question's time and tokens, in question order.
    #[serde(default)]
    pub timings: Vec<Timing>,
}

/// Where one answer's time went: what `quire models --choose`'s prediction is checked
/// against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub id: String,
    /// Seconds from the ask to the end of the answer.
    pub secs: f64,
    /// Seconds to the sources and to the first token, when there were any.
    pub sources_secs: Option<f64>,
    pub first_token_secs: Option<f64>,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    /// Generated tokens a second over the answer's LLM calls.
    pub tokens_per_s: f64,
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
        let mut samples = Vec::with_capacity(cases.len());
        for (i, (q, nodes)) in cases.iter().enumerate() {
            progress(mode, i);
            let mut quiet = |_: Event| -> Result<bool> { Ok(true) };
            let r = synthesize(llm, &req, &q.question, nodes, cancel, &mut quiet)?;
            samples.push(Sample {
                context: join_texts(nodes.iter().map(|n| n.text.as_str())),
                llm_calls: r.calls.len(),
                output_tokens: r.output_tokens(),
                secs: r.secs,
                calls: r
                    .calls
                    .iter()
                    .map(|c| (c.output.clone(), c.output_tokens))
                    .collect(),
                answer: r.answer,
                ..Sample::default()
            });
        }
        let questions: Vec<Question> = cases.iter().map(|(q, _)| q.clone()).collect();
        out.push(figures(
            mode,
            &questions,
            &samples,
            base.options.params.max_tokens,
        ));
    }
    Ok(out)
}

fn join_texts<'a>(texts: impl Iterator<Item = &'a str>) -> String {
    texts.collect::<Vec<_>>().join("\n\n")
}

/// Ask `q` through the engine in `mode`; the figures of the answer.
pub fn ask_once(
    engine: &Engine,
    q: &Question,
    mode: ResponseMode,
    overrides: &AskOverrides,
    cancel: &Cancel,
) -> Result<Sample> {
    ask_in(engine, q, mode, overrides, Scope::All, cancel)
}

/// [`ask_once`] over the documents of `scope` only.
pub fn ask_in(
    engine: &Engine,
    q: &Question,
    mode: ResponseMode,
    overrides: &AskOverrides,
    scope: Scope,
    cancel: &Cancel,
) -> Result<Sample> {
    let req = AskRequest {
        conversation_id: None,
        question: q.question.clone(),
        mode: Some(mode.name().to_string()),
        overrides: overrides.clone(),
        scope,
        ..Default::default()
    };
    let mut sample = Sample::default();
    let mut conversation = None;
    let t = std::time::Instant::now();
    engine.ask(req, cancel, &mut |ev| {
        match ev {
            AskEvent::Token { .. } if sample.first_token_secs.is_none() => {
                sample.first_token_secs = Some(t.elapsed().as_secs_f64());
            }
            AskEvent::Started {
                conversation_id, ..
            } => conversation = Some(conversation_id),
            AskEvent::Sources { sources, .. } => {
                sample.sources_secs.get_or_insert(t.elapsed().as_secs_f64());
                sample.context = join_texts(sources.iter().map(|s| s.text.as_str()));
            }
            AskEvent::Support { support } => {
                sample.restates = support.only_restates();
            }
            AskEvent::Done { answer, stats, .. } => {
                sample.answer = answer;
                sample.llm_calls = stats.llm_calls;
                sample.prompt_tokens = stats.prompt_tokens;
                sample.output_tokens = stats.output_tokens;
                sample.secs = stats.secs;
                sample.tokens_per_s = stats.tokens_per_s;
            }
            _ => {}
        }
        true
    })?;
    // The calls, with their outputs and token counts, are kept with the answer.
    if let Some(id) = conversation {
        let c = engine.conversation(id)?;
        if let Some(m) = c
            .messages
            .iter()
            .rev()
            .find(|m| m.role == quire::engine::Role::Assistant)
        {
            if let Some(calls) = m.extra.get("calls").and_then(|v| v.as_array()) {
                sample.calls = calls
                    .iter()
                    .map(|c| {
                        let out = c["output"].as_str().unwrap_or_default().to_owned();
                        (out, c["output_tokens"].as_u64().unwrap_or(0) as usize)
                    })
                    .collect();
            }
        }
    }
    Ok(sample)
}

/// What `quire bench answer` runs.
#[derive(Debug, Clone)]
pub struct AnswerBenchOptions {
    /// The PDFs to index.
    pub pdfs: PathBuf,
    /// The data directory to index into (kept; a second run reuses its index).
    pub data_dir: PathBuf,
    pub questions: Vec<Question>,
    pub modes: Vec<ResponseMode>,
    /// Departures from the default settings (top_k, max_tokens).
    pub overrides: AskOverrides,
    /// The LLM (a file name in the model folders, or a path) instead of the settings'.
    pub model: Option<String>,
    /// LlamaIndex's SentenceEmbeddingOptimizer: `percentile_cutoff`, `threshold_cutoff`
    /// (the settings' `optimizer_percentile`, `optimizer_threshold`).
    pub optimizer_percentile: Option<f64>,
    pub optimizer_threshold: Option<f64>,
}

/// The figures of `quire bench answer`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnswerBench {
    pub pdfs: String,
    pub model: String,
    /// Files in the index.
    pub documents: usize,
    pub index_secs: f64,
    pub top_k: usize,
    pub max_tokens: usize,
    pub modes: Vec<ModeFigures>,
}

impl std::fmt::Display for AnswerBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} documents from {} indexed in {:.1}s; model {}, top_k {}, max_tokens {}",
            self.documents, self.pdfs, self.index_secs, self.model, self.top_k, self.max_tokens
        )?;
        f.write_str(&table(&self.modes))
    }
}

/// Index `opts.pdfs` into `opts.data_dir` through the engine, then ask every question
/// in every mode. `progress` hears what is going on, one line at a time.
pub fn answer_bench(
    opts: &AnswerBenchOptions,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&str),
) -> Result<AnswerBench> {
    let engine = Engine::open(EngineConfig::new(Some(opts.data_dir.clone()))?)?;
    let mut s = engine.settings();
    if let Some(model) = &opts.model {
        s.model = model.clone();
    }
    s.optimizer_percentile = opts.optimizer_percentile;
    s.optimizer_threshold = opts.optimizer_threshold;
    engine.set_settings(s)?;
    let settings = opts.overrides.apply(engine.settings(), &[])?;
    progress(&format!("indexing {} ...", opts.pdfs.display()));
    let mut failed = Vec::new();
    let summary = engine.index_summary(std::slice::from_ref(&opts.pdfs), cancel, &mut |ev| {
        if let IndexEvent::FileFailed { path, reason } = ev {
            failed.push(format!("{path}: {reason}"));
        }
        true
    })?;
    for f in &failed {
        progress(&format!("not indexed: {f}"));
    }
    if summary.indexed == 0 {
        return Err(Error::Invalid(format!(
            "no PDF indexed from {}",
            opts.pdfs.display()
        )));
    }
    let mut modes = Vec::with_capacity(opts.modes.len());
    for &mode in &opts.modes {
        let mut samples = Vec::with_capacity(opts.questions.len());
        for (i, q) in opts.questions.iter().enumerate() {
            progress(&format!(
                "{mode} {}/{} {}",
                i + 1,
                opts.questions.len(),
                q.id
            ));
            samples.push(ask_once(&engine, q, mode, &opts.overrides, cancel)?);
        }
        modes.push(figures(
            mode,
            &opts.questions,
            &samples,
            settings.max_tokens,
        ));
    }
    Ok(AnswerBench {
        pdfs: opts.pdfs.display().to_string(),
        model: settings.model,
        documents: summary.indexed,
        index_secs: summary.secs,
        top_k: settings.top_k,
        max_tokens: settings.max_tokens,
        modes,
    })
}

/// One question of `quire bench tree-batch`: tree_summarize one by one, then with
/// each level's summaries as one batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeBatchRow {
    pub id: String,
    pub llm_calls: usize,
    /// Summary levels below the final answer.
    pub levels: usize,
    pub sequential_secs: f64,
    pub batch_secs: f64,
    /// Whether both runs made the same calls with the same outputs.
    pub same_calls: bool,
}

/// The figures of `quire bench tree-batch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeBatchReport {
    pub top_k: usize,
    pub context_window: usize,
    pub max_tokens: usize,
    pub rows: Vec<TreeBatchRow>,
    pub median_sequential_secs: f64,
    pub median_batch_secs: f64,
    /// Median sequential seconds over median batch seconds.
    pub speedup: f64,
}

impl std::fmt::Display for TreeBatchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "tree_summarize, top_k {}, packing window {} tokens, max_tokens {}",
            self.top_k, self.context_window, self.max_tokens
        )?;
        writeln!(
            f,
            "{:<8} {:>6} {:>7} {:>14} {:>11} {:>11}",
            "question", "calls", "levels", "one by one s", "batched s", "same calls"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:<8} {:>6} {:>7} {:>14.2} {:>11.2} {:>11}",
                r.id,
                r.llm_calls,
                r.levels,
                r.sequential_secs,
                r.batch_secs,
                if r.same_calls { "yes" } else { "NO" }
            )?;
        }
        writeln!(
            f,
            "median   {:>29.2} {:>11.2}   speedup {:.2}x",
            self.median_sequential_secs, self.median_batch_secs, self.speedup
        )
    }
}

/// Answer every case with tree_summarize twice, one by one and batched, packing
/// prompts into `context_window` tokens (small enough to make a tree of the nodes).
pub fn tree_batch(
    llm: &dyn Llm,
    cases: &[(Question, Vec<Node>)],
    context_window: usize,
    max_tokens: usize,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&str),
) -> Result<TreeBatchReport> {
    let mut rows = Vec::with_capacity(cases.len());
    for (i, (q, nodes)) in cases.iter().enumerate() {
        let mut runs = Vec::with_capacity(2);
        for batch in [false, true] {
            progress(&format!(
                "{} {}/{} {}",
                if batch { "batched" } else { "one by one" },
                i + 1,
                cases.len(),
                q.id
            ));
            let req = Request {
                mode: ResponseMode::TreeSummarize,
                options: RunOptions {
                    context_window: Some(context_window),
                    params: GenParams {
                        max_tokens,
                        repeat_penalty: 1.15,
                        ..Default::default()
                    },
                    batch,
                    ..Default::default()
                },
                ..Request::default()
            };
            let mut quiet = |_: Event| -> Result<bool> { Ok(true) };
            runs.push(synthesize(
                llm,
                &req,
                &q.question,
                nodes,
                cancel,
                &mut quiet,
            )?);
        }
        let calls = |r: &Response| -> Vec<(String, String, String)> {
            r.calls
                .iter()
                .map(|c| (c.label.clone(), c.prompt.clone(), c.output.clone()))
                .collect()
        };
        let levels = runs[0]
            .calls
            .iter()
            .filter_map(|c| c.label.strip_prefix("summarize level "))
            .filter_map(|l| l.split(',').next()?.parse::<usize>().ok())
            .max()
            .map_or(0, |top| {
                // The final answer's level has one call and is not a summary level.
                if runs[0].calls.len() > 1 {
                    top - 1
                } else {
                    0
                }
            });
        rows.push(TreeBatchRow {
            id: q.id.clone(),
            llm_calls: runs[0].calls.len(),
            levels,
            sequential_secs: runs[0].secs,
            batch_secs: runs[1].secs,
            same_calls: calls(&runs[0]) == calls(&runs[1]),
        });
    }
    let seq: Vec<f64> = rows.iter().map(|r| r.sequential_secs).collect();
    let bat: Vec<f64> = rows.iter().map(|r| r.batch_secs).collect();
    let (ms, mb) = (median(&seq), median(&bat));
    Ok(TreeBatchReport {
        top_k: cases.iter().map(|c| c.1.len()).max().unwrap_or(0),
        context_window,
        max_tokens,
        rows,
        median_sequential_secs: ms,
        median_batch_secs: mb,
        speedup: if mb > 0.0 { ms / mb } else { 0.0 },
    })
}

/// The figures as a text table.
pub fn table(figs: &[ModeFigures]) -> String {
    let mut s = format!(
        "{:<20} {:>9} {:>12} {:>9} {:>9} {:>10} {:>14} {:>12} {:>8} {:>9} {:>11} {:>10}\n",
        "mode",
        "questions",
        "median s/q",
        "calls/q",
        "prompt/q",
        "tokens/q",
        "must_contain",
        "in sources",
        "looping",
        "zh in zh",
        "row in src",
        "restating"
    );
    for f in figs {
        let zh = f
            .zh_in_zh_share
            .map_or("-".to_string(), |z| format!("{:.0}%", z * 100.0));
        s.push_str(&format!(
            "{:<20} {:>9} {:>12.2} {:>9.2} {:>9.0} {:>10.1} {:>13.0}% {:>11.0}% {:>7.0}% {:>9} {:>11} {:>9.0}%\n",
            f.mode.name(),
            f.questions,
            f.median_secs,
            f.calls_per_question,
            f.median_prompt_tokens,
            f.tokens_per_question,
            f.must_contain_share * 100.0,
            f.sources_share * 100.0,
            f.looping_share * 100.0,
            zh,
            f.row_in_sources_share
                .map_or("-".to_string(), |z| format!("{:.0}%", z * 100.0)),
            f.restating_share * 100.0
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
    use quire::synth::ScriptedLlm;

    #[test]
    fn loops_and_languages_are_told() {
        let looped = "The answer is yes and I will tell you more. ".repeat(4);
        assert!(loops(&looped));
        assert!(!loops(
            "A short answer that says one thing once, then stops."
        ));
        assert!(!loops(
            &(0..60)
                .map(|i| format!("w{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        ));
        assert!(loops(&"响应合成器使用用户查询和文本块生成响应。".repeat(4)));
        assert!(mostly_chinese("使用 \\ch 命令：例如 \\ch{H2O}。"));
        assert!(!mostly_chinese("Use \\ch{H2O} for water."));
        assert!(!mostly_chinese(""));
    }

    #[test]
    fn an_answer_loops_when_a_call_runs_to_the_limit_repeating_itself() {
        let looped = "the answer is the answer is the answer is ".repeat(12);
        let sample = |calls: Vec<(String, usize)>| Sample {
            calls,
            ..Sample::default()
        };
        assert!(sample(vec![("fine".into(), 3), (looped.clone(), 256)]).looped(256));
        // Repeating but finished before the limit: not a loop.
        assert!(!sample(vec![(looped.clone(), 100)]).looped(256));
        // At the limit without repeating: cut short, not a loop.
        let long: String = (0..300).map(|i| format!("w{i} ")).collect();
        assert!(!sample(vec![(long, 256)]).looped(256));
        // The same sentence in several calls (accumulate) is not a loop.
        let same = "The context does not mention the option you ask about at all.".to_string();
        assert!(!sample(vec![(same.clone(), 14); 4]).looped(256));
    }

    #[test]
    fn figures_from_the_scripted_llm() {
        let llm = ScriptedLlm::new(2000);
        let q = |id: &str, must: &[&str]| Question {
            id: id.into(),
            question: "q?".into(),
            must_contain: must.iter().map(|s| s.to_string()).collect(),
            lang: "en".into(),
            row: Vec::new(),
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
        // "answer" is in no source text; nothing is required of none
        assert_eq!(figs[0].sources_share, 0.0);
        assert!(table(&figs).contains("no_text"));
        assert!(parse_modes("refine,bogus").is_err());
        assert_eq!(parse_modes("all").unwrap().len(), 7);
    }

    #[test]
    fn a_row_is_among_the_sources_when_every_cell_is() {
        let row: Vec<String> = ["\\tabcolsep", "6pt", "tabular 环境的表格项前后的间距"]
            .map(String::from)
            .to_vec();
        let md = "| 命令 | 默认值 | 含义 |\n| --- | --- | --- |\n| \\tabcolsep | 6pt | tabular 环境的表格项前后的间距 |";
        assert!(row_in(md, &row));
        assert!(!row_in("| \\tabcolsep | 5pt | tabular |", &row));
        assert!(!row_in(md, &[]));
    }

    #[test]
    fn tree_batch_compares_the_two_runs() {
        let llm = ScriptedLlm::new(600);
        let words: Vec<String> = (0..60).map(|w| format!("w{w:02}")).collect();
        let nodes: Vec<Node> = (0..4)
            .map(|i| Node::new(format!("n{i}"), words.join(" ")))
            .collect();
        let q = Question {
            id: "Q1".into(),
            question: "q?".into(),
            must_contain: Vec::new(),
            lang: String::new(),
            row: Vec::new(),
        };
        let r = tree_batch(&llm, &[(q, nodes)], 600, 32, &Cancel::new(), &mut |_| {}).unwrap();
        let row = &r.rows[0];
        assert!(row.levels >= 1, "{r}");
        assert!(row.llm_calls >= 3, "{r}");
        // The scripted LLM numbers its answers by call, so the second run's outputs
        // differ from the first's: the comparison notices.
        assert!(!row.same_calls);
        assert!(r.to_string().contains("speedup"));
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}

/// `quire bench answer --while-indexing DIR`: a question's latency while the same
/// engine indexes DIR, against its quiet latency (questions first: indexing pauses
/// between embedding batches while an answer is generated).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WhileIndexing {
    pub dir: String,
    pub mode: String,
    /// Seconds from ask to answer, each question, on a quiet engine.
    pub quiet_secs: Vec<f64>,
    /// The same questions asked while DIR was being indexed (over the same documents
    /// as the quiet ones, so that each is the same work: the same sources, prompts and
    /// greedy answer).
    pub during_secs: Vec<f64>,
    /// Tokens generated per question, quiet and during (equal when the work was).
    pub quiet_tokens: Vec<usize>,
    pub during_tokens: Vec<usize>,
    /// Seconds to the first token, per question (0 where nothing was generated).
    pub quiet_first_token: Vec<f64>,
    pub during_first_token: Vec<f64>,
    pub quiet_median: f64,
    pub during_median: f64,
    /// During / quiet (medians).
    pub ratio: f64,
    /// Files of DIR indexed, and the indexing job's wall time (the asks included).
    pub index_files: usize,
    pub index_secs: f64,
    /// Of which paused for the questions.
    pub index_paused_secs: f64,
    /// Questions answered while the job ran (the others found it finished).
    pub asks_during: usize,
}

impl std::fmt::Display for WhileIndexing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} question(s) in {}: quiet median {:.2}s, while indexing {} median {:.2}s ({:.2}x; {} asked during the job)",
            self.quiet_secs.len(),
            self.mode,
            self.quiet_median,
            self.dir,
            self.during_median,
            self.ratio,
            self.asks_during
        )?;
        writeln!(
            f,
            "tokens per answer: quiet {:?}, while indexing {:?}",
            self.quiet_tokens, self.during_tokens
        )?;
        let secs = |v: &[f64]| {
            v.iter()
                .map(|s| format!("{s:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(
            f,
            "seconds per answer: quiet [{}], while indexing [{}]; to the first token: quiet [{}], while indexing [{}]",
            secs(&self.quiet_secs),
            secs(&self.during_secs),
            secs(&self.quiet_first_token),
            secs(&self.during_first_token)
        )?;
        writeln!(
            f,
            "indexing: {} files in {:.1}s, {:.1}s of it paused for the questions",
            self.index_files, self.index_secs, self.index_paused_secs
        )
    }
}

/// Ask `questions` in `mode` on a quiet `engine`, then again while it indexes `dir`
/// (from its first embedded batch on). The engine must already hold an index.
pub fn while_indexing(
    engine: &Engine,
    questions: &[Question],
    mode: ResponseMode,
    overrides: &AskOverrides,
    dir: &Path,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&str),
) -> Result<WhileIndexing> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;
    // The documents indexed before: the questions search those only, during the job
    // too, so that the new documents do not change their sources.
    let ids: Vec<i64> = engine.documents()?.iter().map(|d| d.id).collect();
    let timed = |q: &Question| -> Result<(f64, (usize, f64))> {
        let t = Instant::now();
        let scope = Scope::Documents { ids: ids.clone() };
        let s = ask_in(engine, q, mode, overrides, scope, cancel)?;
        let first = s.first_token_secs.unwrap_or(0.0);
        Ok((t.elapsed().as_secs_f64(), (s.output_tokens, first)))
    };
    // Warm: the model loaded, the retrieval index built; with a question of its own,
    // so that no measured one finds its prompt already in the KV cache.
    progress("warming up ...");
    let warm = Question {
        id: "warm-up".into(),
        question: "What is this document about?".into(),
        ..questions[0].clone()
    };
    timed(&warm)?;
    let mut quiet = Vec::new();
    for q in questions {
        progress(&format!("quiet: {}", q.id));
        quiet.push(timed(q)?);
    }
    let running = AtomicBool::new(true);
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let (summary, during_secs) = std::thread::scope(|s| -> Result<_> {
        let running = &running;
        let indexer = s.spawn(move || {
            let mut paused_at = None;
            let mut paused = 0.0;
            let mut started = Some(started_tx);
            let t = Instant::now();
            let r = engine.index_summary(&[dir.to_path_buf()], cancel, &mut |ev| {
                match ev {
                    IndexEvent::Embedded { .. } => {
                        if let Some(tx) = started.take() {
                            let _ = tx.send(());
                        }
                        if let Some(at) = paused_at.take() {
                            paused += Instant::elapsed(&at).as_secs_f64();
                        }
                    }
                    IndexEvent::Paused { .. } => paused_at = Some(Instant::now()),
                    _ => {}
                }
                true
            });
            running.store(false, Ordering::Release);
            r.map(|s| (s, t.elapsed().as_secs_f64(), paused))
        });
        // From the first embedded batch (or the job's end, if it embeds nothing).
        let _ = started_rx.recv();
        let mut during = Vec::new();
        for q in questions {
            if !running.load(Ordering::Acquire) {
                break;
            }
            progress(&format!("while indexing: {}", q.id));
            let secs = timed(q)?;
            // Counted only if the job was still running when the answer came.
            if running.load(Ordering::Acquire) {
                during.push(secs);
            }
        }
        let summary = indexer
            .join()
            .map_err(|_| Error::Invalid("the indexing thread panicked".into()))??;
        Ok((summary, during))
    })?;
    let ((summary, index_secs, index_paused_secs), during) = (summary, during_secs);
    let (quiet_secs, quiet_more): (Vec<f64>, Vec<(usize, f64)>) = quiet.into_iter().unzip();
    let (during_secs, during_more): (Vec<f64>, Vec<(usize, f64)>) = during.into_iter().unzip();
    let (quiet_tokens, quiet_first_token) = quiet_more.into_iter().unzip();
    let (during_tokens, during_first_token) = during_more.into_iter().unzip();
    let quiet_median = median(&quiet_secs);
    let during_median = median(&during_secs);
    Ok(WhileIndexing {
        dir: dir.display().to_string(),
        mode: mode.name().to_string(),
        asks_during: during_secs.len(),
        ratio: if quiet_median > 0.0 {
            during_median / quiet_median
        } else {
            0.0
        },
        quiet_secs,
        during_secs,
        quiet_tokens,
        during_tokens,
        quiet_first_token,
        during_first_token,
        quiet_median,
        during_median,
        index_files: summary.indexed,
        index_secs,
        index_paused_secs,
    })
}
