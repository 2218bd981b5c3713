//! `quire bench support`: the support check ([`quire::support`]) on the labelled set
//! `bench/data/support.jsonl` (the default model's answers to corpus questions and
//! scripted wrong ones, each sentence labelled by reading the sources: see
//! `bench/data/support-README.md`): "supported" precision, "not found" recall,
//! wrong-citation recall, per half (tuning, held-out), and the milliseconds the check
//! adds per answer. With `--data-dir`, also the corpus questions through the engine:
//! how often the key terms are in the answer, and in the answer plus its quotes; and
//! the `extractive` mode's answers and seconds. With `--no-llm`, only the quotes, the
//! sources and the extractive mode (no model answers: fast, for tuning the quotes);
//! `--answers FILE` keeps the model's answers to reuse (greedy decoding: the same
//! answers), so the answer-plus-quotes figure follows the quotes without the model;
//! `--list HALF` prints each question of that half whose sources hold the key terms
//! and whose quotes do not, with the source sentence that holds each missing term.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::time::Instant;

use quire::engine::{AskEvent, AskRequest, Engine, EngineConfig};
use quire::llm::Cancel;
use quire::support::restates::restates;
use quire::support::{check_answer, check_sentence, Cited, Passage, Verdict};
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize)]
struct Record {
    id: String,
    lang: String,
    split: String,
    question: String,
    sources: Vec<LabelledSource>,
    #[serde(default)]
    citations: Vec<LabelledCitation>,
    answer: String,
    sentences: Vec<LabelledSentence>,
}

#[derive(Debug, Deserialize)]
struct LabelledSource {
    chunk_id: i64,
    file: String,
    page_start: u32,
    text: String,
}

#[derive(Debug, Deserialize)]
struct LabelledCitation {
    number: usize,
    chunk_id: i64,
    text: String,
}

#[derive(Debug, Deserialize)]
struct LabelledSentence {
    text: String,
    label: String,
    #[serde(default)]
    cited: Vec<usize>,
    #[serde(default)]
    wrong_citation: bool,
    /// A line the model copied from its sources (easy; scored apart).
    #[serde(default)]
    echo: bool,
}

/// The checker's figures on one half of the labelled set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckFigures {
    pub split: String,
    /// Labelled claim sentences (supported + unsupported), copied lines left out.
    pub sentences: usize,
    pub labelled_supported: usize,
    pub labelled_unsupported: usize,
    /// Of the sentences the checker called supported, the share labelled supported.
    pub supported_precision: f64,
    /// Of the sentences labelled supported, the share the checker called supported.
    pub supported_recall: f64,
    /// Of the sentences labelled unsupported, the share the checker called not found.
    pub not_found_recall: f64,
    /// Of the sentences labelled unsupported, the share not called supported
    /// (not found or partly): what the reader sees marked.
    pub flagged_recall: f64,
    /// Sentences whose `[N]` is wrong, and the share the checker flagged.
    pub wrong_citations: usize,
    pub wrong_citation_recall: f64,
    /// Sentences with right markers only, and the share flagged wrongly.
    pub right_citations: usize,
    pub wrong_citation_false_alarms: f64,
    /// Sentences labelled supported that the check marks as only restating the
    /// question (each a false alarm), and those labelled unsupported it marks so.
    #[serde(default)]
    pub supported_marked_restating: usize,
    #[serde(default)]
    pub unsupported_marked_restating: usize,
}

/// The corpus questions through the engine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerFigures {
    pub split: String,
    pub questions: usize,
    /// Key terms all in the answer / in the answer plus its quotes (none without the
    /// model's answers: `--no-llm`) / in the quotes alone / in the sources.
    pub in_answer: Option<f64>,
    pub in_answer_or_quotes: Option<f64>,
    pub in_quotes: f64,
    pub in_sources: f64,
    /// The extractive mode: key terms in its answer, its median seconds.
    pub extractive_in_answer: f64,
    pub extractive_median_secs: f64,
    /// Sentences of the model's answers the check called supported, of those checked.
    pub answer_sentences_supported: Option<f64>,
}

/// The report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub cpu: String,
    pub checker: Vec<CheckFigures>,
    /// Milliseconds the check takes per answer of the labelled set: median and max.
    pub check_ms_median: f64,
    pub check_ms_max: f64,
    pub answers: Vec<AnswerFigures>,
    pub model: Option<String>,
}

fn load_records(path: &Path) -> Result<Vec<Record>> {
    quire::jsonl::read(path)
}

fn share(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    }
}

/// The checker over the labelled set, per half and all together.
pub fn check_labelled(path: &Path, show: Option<&str>) -> Result<(Vec<CheckFigures>, Vec<f64>)> {
    let records = load_records(path)?;
    let mut by_split: HashMap<String, [usize; 12]> = HashMap::new();
    let mut ms = Vec::new();
    for r in &records {
        let passages: Vec<Passage<'_>> = r
            .sources
            .iter()
            .map(|s| Passage {
                chunk_id: s.chunk_id,
                doc_id: 0,
                file: &s.file,
                page: s.page_start,
                text: &s.text,
            })
            .collect();
        let cited: Vec<Cited<'_>> = r
            .citations
            .iter()
            .map(|c| Cited {
                number: c.number,
                chunk_id: c.chunk_id,
                text: &c.text,
            })
            .collect();
        let t = Instant::now();
        let _ = check_answer(&r.question, &r.answer, &passages, &cited);
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        for s in &r.sentences {
            if s.echo || !matches!(s.label.as_str(), "supported" | "unsupported") {
                continue;
            }
            let got = check_sentence(&s.text, &passages, &cited);
            let said_supported = got.verdict == Verdict::Supported;
            let said_not_found = got.verdict == Verdict::NotFound;
            let flagged_citation = got.wrong_citation.is_some();
            let restating = restates(&s.text, &r.question);
            if show.is_some_and(|h| h == r.split)
                && (said_supported != (s.label == "supported")
                    || (s.label == "unsupported" && !said_not_found)
                    || s.wrong_citation != flagged_citation)
            {
                eprintln!(
                    "{} [{}] got {:?} {:.2} {:?}: {}\n    span: {}",
                    r.id,
                    s.label,
                    got.verdict,
                    got.score,
                    got.note,
                    s.text,
                    got.span
                        .as_ref()
                        .map_or("", |x| x.text.as_str())
                        .replace('\n', " ")
                );
            }
            for key in [
                r.split.clone(),
                "all".to_string(),
                format!("{}-{}", r.split, r.lang),
            ] {
                let c = by_split.entry(key).or_default();
                let sup = s.label == "supported";
                c[0] += 1;
                c[1] += usize::from(sup);
                c[2] += usize::from(said_supported);
                c[3] += usize::from(said_supported && sup);
                c[4] += usize::from(!sup && said_not_found);
                c[5] += usize::from(!sup && !said_supported);
                c[10 + usize::from(!sup)] += usize::from(restating);
                if !s.cited.is_empty() && s.wrong_citation {
                    c[6] += 1;
                    c[7] += usize::from(flagged_citation);
                } else if !s.cited.is_empty() && sup {
                    c[8] += 1;
                    c[9] += usize::from(flagged_citation);
                }
            }
        }
    }
    let mut keys: Vec<String> = by_split.keys().cloned().collect();
    keys.sort_by_key(|k| (k != "tune", k != "heldout", k != "all", k.clone()));
    let figs = keys
        .into_iter()
        .map(|k| {
            let c = by_split[&k];
            CheckFigures {
                split: k,
                sentences: c[0],
                labelled_supported: c[1],
                labelled_unsupported: c[0] - c[1],
                supported_precision: share(c[3], c[2]),
                supported_recall: share(c[3], c[1]),
                not_found_recall: share(c[4], c[0] - c[1]),
                flagged_recall: share(c[5], c[0] - c[1]),
                wrong_citations: c[6],
                wrong_citation_recall: share(c[7], c[6]),
                right_citations: c[8],
                wrong_citation_false_alarms: share(c[9], c[8]),
                supported_marked_restating: c[10],
                unsupported_marked_restating: c[11],
            }
        })
        .collect();
    Ok((figs, ms))
}

#[derive(Debug, Deserialize)]
struct CorpusQuestion {
    id: String,
    question: String,
    #[serde(default)]
    must_contain: Vec<String>,
}

/// What one ask produced.
#[derive(Default)]
struct Asked {
    answer: String,
    quotes: String,
    sources: Vec<String>,
    supported: usize,
    checked: usize,
    secs: f64,
}

/// A model's answer kept by `--answers` for a later run.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct KeptAnswer {
    id: String,
    model: String,
    mode: String,
    question: String,
    answer: String,
    supported: usize,
    checked: usize,
}

/// How [`answer_figures`] runs.
#[derive(Debug, Clone, Default)]
pub struct AnswerOptions {
    /// Ask the model (the settings' mode) too; without it only the quotes and the
    /// extractive mode are measured.
    pub llm: bool,
    /// A JSONL file of the model's answers: reused when the model, mode and question
    /// match, written (appended) for the others.
    pub answers: Option<std::path::PathBuf>,
    /// The half (`tune`, `heldout`) whose quotes' misses are printed.
    pub list: Option<String>,
}

fn ask(engine: &Engine, question: &str, mode: &str, cancel: &Cancel) -> Result<Asked> {
    let req = AskRequest {
        question: question.to_string(),
        mode: Some(mode.to_string()),
        ..Default::default()
    };
    let mut a = Asked::default();
    let t = Instant::now();
    engine.ask(req, cancel, &mut |ev| {
        match ev {
            AskEvent::Sources { sources, .. } => {
                a.sources = sources.iter().map(|s| s.text.clone()).collect()
            }
            AskEvent::Quotes { quotes } => {
                a.quotes = quotes
                    .iter()
                    .map(|q| q.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            AskEvent::Support { support } => {
                a.supported = support.supported;
                a.checked = support.checked;
            }
            AskEvent::Done { answer, .. } => a.answer = answer,
            _ => {}
        }
        true
    })?;
    a.secs = t.elapsed().as_secs_f64();
    Ok(a)
}

/// Where each key term of `must` that `quotes` lack is in `sources`: the source's
/// rank and the sentence (a line) that holds it.
fn misses(must: &[String], quotes: &str, sources: &[String]) -> Vec<String> {
    must.iter()
        .filter(|m| !quotes.contains(m.as_str()))
        .map(|m| {
            let at = sources.iter().enumerate().find_map(|(i, s)| {
                let pos = s.find(m.as_str())?;
                let from = s[..pos]
                    .rfind(['.', '?', '!', '。', '？', '\n'])
                    .map_or(0, |p| p + 1);
                let to = s[pos..]
                    .find(['.', '?', '!', '。', '？', '\n'])
                    .map_or(s.len(), |p| pos + p + 1);
                let mut from = from;
                while !s.is_char_boundary(from) {
                    from -= 1;
                }
                let mut to = to;
                while !s.is_char_boundary(to) {
                    to += 1;
                }
                Some(format!(
                    "source {}: {}",
                    i + 1,
                    s[from..to].split_whitespace().collect::<Vec<_>>().join(" ")
                ))
            });
            format!("{m:?} in {}", at.unwrap_or_else(|| "no source".into()))
        })
        .collect()
}

/// The model's answers kept by an earlier run.
fn kept_answers(path: Option<&Path>) -> Result<Vec<KeptAnswer>> {
    match path {
        Some(p) if p.exists() => quire::jsonl::read(p),
        _ => Ok(Vec::new()),
    }
}

/// The model's answer to `q`: kept, or asked (and kept when `--answers` is given).
fn model_answer(
    engine: &Engine,
    q: &CorpusQuestion,
    mode: &str,
    kept: &mut Vec<KeptAnswer>,
    path: Option<&Path>,
    cancel: &Cancel,
) -> Result<KeptAnswer> {
    let model = engine.settings().model;
    if let Some(k) = kept
        .iter()
        .find(|k| k.id == q.id && k.model == model && k.mode == mode && k.question == q.question)
    {
        return Ok(k.clone());
    }
    let a = ask(engine, &q.question, mode, cancel)?;
    let k = KeptAnswer {
        id: q.id.clone(),
        model,
        mode: mode.to_string(),
        question: q.question.clone(),
        answer: a.answer,
        supported: a.supported,
        checked: a.checked,
    };
    if let Some(p) = path {
        use std::io::Write;
        let line = serde_json::to_string(&k)
            .map_err(|e| Error::Invalid(format!("{}: {e}", p.display())))?;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .map_err(|e| Error::io(p, e))?;
        writeln!(f, "{line}").map_err(|e| Error::io(p, e))?;
    }
    kept.push(k.clone());
    Ok(k)
}

/// The corpus questions through the engine over the library in `data_dir` (the
/// corpus is indexed into it first when it is empty).
pub fn answer_figures(
    data_dir: &Path,
    pdfs: &Path,
    questions: &Path,
    split: &Path,
    opts: &AnswerOptions,
    mut progress: impl FnMut(&str),
) -> Result<(Vec<AnswerFigures>, String)> {
    let engine = Engine::open(EngineConfig::new(Some(data_dir.to_path_buf()))?)?;
    let cancel = Cancel::new();
    if engine.documents()?.is_empty() {
        progress("indexing the corpus");
        let files = crate::pdfs(pdfs)?;
        engine.index(&files, &cancel, &mut |_| true)?;
    }
    let tune: Vec<String> = {
        let text = std::fs::read_to_string(split).map_err(|e| Error::io(split, e))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::Invalid(format!("{}: {e}", split.display())))?;
        v["tune"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let qs: Vec<CorpusQuestion> = quire::jsonl::read(questions)?;
    let mode = engine.settings().mode;
    let mut kept = kept_answers(opts.answers.as_deref())?;
    // [in_answer, in_answer_or_quotes, in_quotes, in_sources, extractive_in_answer,
    //  supported, checked]
    let mut rows: Vec<(String, [usize; 7], f64)> = Vec::new();
    for q in &qs {
        progress(&format!("{}: {}", q.id, q.question));
        let x = ask(&engine, &q.question, quire::settings::EXTRACTIVE, &cancel)?;
        let a = if opts.llm {
            Some(model_answer(
                &engine,
                q,
                &mode,
                &mut kept,
                opts.answers.as_deref(),
                &cancel,
            )?)
        } else {
            None
        };
        let has = |t: &str| crate::answer::contains_all(t, &q.must_contain);
        let half = if tune.contains(&q.id) {
            "tune"
        } else {
            "heldout"
        };
        let answer = a.as_ref().map_or("", |a| a.answer.as_str());
        let in_sources = has(&x.sources.join("\n"));
        let in_quotes = has(&x.quotes);
        if opts.list.as_deref() == Some(half) && in_sources && !in_quotes {
            let mut lines = vec![format!(
                "{} {}: sources hold {:?}, quotes do not{}",
                q.id,
                q.question,
                q.must_contain,
                if has(&format!("{answer}\n{}", x.quotes)) {
                    " (the answer does)"
                } else {
                    ""
                }
            )];
            for (i, l) in x.quotes.lines().enumerate() {
                lines.push(format!("    quote line {}: {}", i + 1, l.trim()));
            }
            for m in misses(&q.must_contain, &x.quotes, &x.sources) {
                lines.push(format!("    missing {m}"));
            }
            eprintln!("{}", lines.join("\n"));
        }
        rows.push((
            half.to_string(),
            [
                usize::from(has(answer)),
                usize::from(has(&format!("{answer}\n{}", x.quotes))),
                usize::from(in_quotes),
                usize::from(in_sources),
                usize::from(has(&x.answer)),
                a.as_ref().map_or(0, |a| a.supported),
                a.as_ref().map_or(0, |a| a.checked),
            ],
            x.secs,
        ));
    }
    let mut out = Vec::new();
    for half in ["tune", "heldout", "all"] {
        let rs: Vec<&(String, [usize; 7], f64)> = rows
            .iter()
            .filter(|r| half == "all" || r.0 == half)
            .collect();
        let n = rs.len();
        let sum = |i: usize| rs.iter().map(|r| r.1[i]).sum::<usize>();
        let secs: Vec<f64> = rs.iter().map(|r| r.2).collect();
        let llm = |x: f64| opts.llm.then_some(x);
        out.push(AnswerFigures {
            split: half.to_string(),
            questions: n,
            in_answer: llm(share(sum(0), n)),
            in_answer_or_quotes: llm(share(sum(1), n)),
            in_quotes: share(sum(2), n),
            in_sources: share(sum(3), n),
            extractive_in_answer: share(sum(4), n),
            extractive_median_secs: crate::answer::median(&secs),
            answer_sentences_supported: llm(share(sum(5), sum(6))),
        });
    }
    Ok((out, engine.settings().model))
}

/// The CPU's model name, for the figures.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "support check on bench/data/support.jsonl ({})",
            self.cpu
        )?;
        writeln!(
            f,
            "{:<12} {:>5} {:>5} {:>5} {:>9} {:>9} {:>9} {:>9} {:>10} {:>11} {:>13}",
            "half",
            "sent",
            "sup",
            "unsup",
            "sup prec",
            "sup rec",
            "nf rec",
            "flag rec",
            "wrong [N]",
            "false alarm",
            "restating s/u"
        )?;
        for c in &self.checker {
            writeln!(
                f,
                "{:<12} {:>5} {:>5} {:>5} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>5} {:>4.2} {:>5} {:>5.2} {:>6}/{}",
                c.split,
                c.sentences,
                c.labelled_supported,
                c.labelled_unsupported,
                c.supported_precision,
                c.supported_recall,
                c.not_found_recall,
                c.flagged_recall,
                c.wrong_citations,
                c.wrong_citation_recall,
                c.right_citations,
                c.wrong_citation_false_alarms,
                c.supported_marked_restating,
                c.unsupported_marked_restating
            )?;
        }
        writeln!(
            f,
            "check time per answer: median {:.2} ms, max {:.2} ms",
            self.check_ms_median, self.check_ms_max
        )?;
        if !self.answers.is_empty() {
            writeln!(
                f,
                "\ncorpus questions ({}): key terms in ...",
                self.model.as_deref().unwrap_or("?")
            )?;
            writeln!(
                f,
                "{:<8} {:>3} {:>7} {:>14} {:>7} {:>8} {:>11} {:>13} {:>10}",
                "half",
                "n",
                "answer",
                "answer+quotes",
                "quotes",
                "sources",
                "extractive",
                "extractive s",
                "supported"
            )?;
            let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.0}%", x * 100.0));
            for a in &self.answers {
                writeln!(
                    f,
                    "{:<8} {:>3} {:>7} {:>14} {:>6.0}% {:>7.0}% {:>10.0}% {:>13.2} {:>10}",
                    a.split,
                    a.questions,
                    pct(a.in_answer),
                    pct(a.in_answer_or_quotes),
                    a.in_quotes * 100.0,
                    a.in_sources * 100.0,
                    a.extractive_in_answer * 100.0,
                    a.extractive_median_secs,
                    pct(a.answer_sentences_supported)
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_labelled_set_is_read_and_scored_per_half() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/support.jsonl");
        let (figs, ms) = check_labelled(&path, None).unwrap();
        let all = figs.iter().find(|f| f.split == "all").unwrap();
        assert!(
            all.labelled_supported >= 150 - 40 && all.labelled_unsupported >= 40,
            "{all:?}"
        );
        assert!(all.wrong_citations >= 8, "{all:?}");
        assert!(
            figs.iter().any(|f| f.split == "tune") && figs.iter().any(|f| f.split == "heldout")
        );
        assert_eq!(ms.len(), load_records(&path).unwrap().len());
    }
}
