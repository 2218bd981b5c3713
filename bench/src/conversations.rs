//! The figures of `quire bench conversations`: over scripted conversations (each turn
//! with the page that answers it, `bench/data/conversations*.jsonl`), how often a
//! follow-up question retrieves an answering page in the top k: the follow-up as
//! typed, the standalone question the chat engine condensed it into, that question
//! fused with the thread query (the follow-up with the previous question,
//! `quire::chat::follow_up`), the sources the chat path itself used (its
//! `follow_up_search` setting; reranked with `--rerank`), and, with `--rerank`, the
//! follow-up asked alone and reranked. Every conversation is held through the
//! [`Engine`] (each answer is the model's own, so the history is what a user would
//! have); the added seconds of condensing and of reranking are measured per question.
//! Each conversation is in the tuning or the held-out half of its set
//! (`bench/data/conversations_split.json`, drawn once); figures are given per half.

use std::path::PathBuf;

use quire::engine::{
    AskEvent, AskOverrides, AskRequest, Engine, EngineConfig, IndexEvent, RetrieveOptions, Source,
};
use quire::llm::Cancel;
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::retrieval::Split;

/// One turn: the question, the 1-based pages that answer it, its key strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub question: String,
    pub pages: Vec<u32>,
    #[serde(default)]
    pub must_contain: Vec<String>,
}

/// One scripted conversation over one PDF.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub lang: String,
    pub file: String,
    pub turns: Vec<Turn>,
}

/// What one follow-up got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FollowUp {
    pub conversation: String,
    pub turn: usize,
    pub question: String,
    /// What the chat engine searched for.
    pub searched_for: String,
    /// The conversation's half of its set: `tune`, `held`, or `none`.
    pub half: String,
    /// An answering page in the top k: the follow-up as typed, the condensed
    /// question, that fused with the thread query, the chat path's own sources, and
    /// (with reranking) the follow-up as typed reranked.
    pub plain: bool,
    pub condensed: bool,
    pub thread: bool,
    pub asked: bool,
    pub plain_reranked: Option<bool>,
    /// The answer contains every key string of the turn.
    pub answer_has_terms: bool,
    pub condense_secs: f64,
    pub rerank_secs: f64,
    /// The whole ask (condense, retrieve, rerank, answer).
    pub secs: f64,
}

/// Shares over all follow-ups (and the Chinese and English ones apart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shares {
    /// `all`, `en`, `zh`, then each half and language (`tune`, `tune en`, …).
    pub name: String,
    pub follow_ups: usize,
    pub plain: f64,
    pub condensed: f64,
    pub thread: f64,
    pub asked: f64,
    pub plain_reranked: Option<f64>,
    pub answer_has_terms: f64,
    /// Mean added seconds of condensing.
    pub condense_secs: f64,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationBench {
    pub model: String,
    pub chat_mode: String,
    pub mode: String,
    pub top_k: usize,
    pub follow_up_search: String,
    pub reranked: bool,
    pub split_seed: u64,
    pub conversations: usize,
    /// All, by language, by half, by half and language.
    pub shares: Vec<Shares>,
    /// Mean added seconds per follow-up.
    pub condense_secs_mean: f64,
    pub rerank_secs_mean: f64,
    pub ask_secs_mean: f64,
    pub follow_ups: Vec<FollowUp>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub pdfs: PathBuf,
    pub data_dir: PathBuf,
    pub conversations: Vec<Conversation>,
    pub model: Option<String>,
    pub chat_mode: String,
    pub mode: String,
    pub top_k: usize,
    pub max_tokens: usize,
    /// Rerank the follow-ups' asks and ask each follow-up alone reranked.
    pub rerank: bool,
    /// The `follow_up_search` setting; `None` leaves the default.
    pub follow_up_search: Option<String>,
    /// The conversations' halves.
    pub split: Split,
}

/// Whether a source is from `file` and spans one of `pages`.
fn answers(s: &Source, file: &str, pages: &[u32]) -> bool {
    let name = std::path::Path::new(&s.file)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    name == file
        && pages
            .iter()
            .any(|p| (s.page_start..=s.page_end).contains(p))
}

fn shares(name: &str, rows: &[&FollowUp]) -> Shares {
    let n = rows.len().max(1) as f64;
    let share = |f: &dyn Fn(&FollowUp) -> bool| rows.iter().filter(|r| f(r)).count() as f64 / n;
    let reranked: Vec<bool> = rows.iter().filter_map(|r| r.plain_reranked).collect();
    Shares {
        name: name.to_string(),
        follow_ups: rows.len(),
        plain: share(&|r| r.plain),
        condensed: share(&|r| r.condensed),
        thread: share(&|r| r.thread),
        asked: share(&|r| r.asked),
        plain_reranked: (!reranked.is_empty() && reranked.len() == rows.len())
            .then(|| reranked.iter().filter(|&&h| h).count() as f64 / n),
        answer_has_terms: share(&|r| r.answer_has_terms),
        condense_secs: rows.iter().map(|r| r.condense_secs).sum::<f64>() / n,
    }
}

/// One ask, its events gathered.
fn ask(engine: &Engine, req: AskRequest, cancel: &Cancel) -> Result<Vec<AskEvent>> {
    let mut events = Vec::new();
    engine.ask(req, cancel, &mut |e| {
        events.push(e);
        true
    })?;
    Ok(events)
}

fn sources_of(events: &[AskEvent]) -> Vec<Source> {
    events
        .iter()
        .find_map(|e| match e {
            AskEvent::Sources { sources, .. } => Some(sources.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Index the PDFs, then hold every conversation and measure each follow-up.
pub fn run(
    opts: &Options,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&str),
) -> Result<ConversationBench> {
    let engine = Engine::open(EngineConfig::new(Some(opts.data_dir.clone()))?)?;
    let mut s = engine.settings();
    if let Some(m) = &opts.model {
        s.model = m.clone();
    }
    s.top_k = opts.top_k;
    s.max_tokens = opts.max_tokens;
    s.chat_mode = opts.chat_mode.clone();
    if let Some(f) = &opts.follow_up_search {
        s.follow_up_search = f.clone();
    }
    engine.set_settings(s.clone())?;
    index_pdfs(&engine, opts, cancel, progress)?;
    let search = |qs: &[String]| search(&engine, qs, opts.top_k, cancel);
    let thread_how = quire::chat::follow_up::FollowUpSearch::Thread;
    let mut rows = Vec::new();
    for c in &opts.conversations {
        let mut conversation = None;
        for (t, turn) in c.turns.iter().enumerate() {
            progress(&format!("{} turn {}/{}", c.id, t + 1, c.turns.len()));
            let follow_up = t > 0;
            let events = ask(
                &engine,
                AskRequest {
                    conversation_id: conversation,
                    question: turn.question.clone(),
                    mode: Some(opts.mode.clone()),
                    overrides: AskOverrides {
                        rerank: Some(follow_up && opts.rerank),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                cancel,
            )?;
            if let Some(AskEvent::Started {
                conversation_id, ..
            }) = events.first()
            {
                conversation = Some(*conversation_id);
            }
            if !follow_up {
                continue;
            }
            let searched_for = events
                .iter()
                .find_map(|e| match e {
                    AskEvent::Condensed { question } => Some(question.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| turn.question.clone());
            let (answer, stats) = match events.last() {
                Some(AskEvent::Done { answer, stats, .. }) => (answer.clone(), stats.clone()),
                _ => {
                    return Err(Error::Invalid(format!(
                        "{} turn {}: no answer",
                        c.id,
                        t + 1
                    )))
                }
            };
            let hit = |ss: &[Source]| ss.iter().any(|s| answers(s, &c.file, &turn.pages));
            // The follow-up as typed, reranked: a question of its own (no history).
            let plain_reranked = if opts.rerank {
                let alone = ask(
                    &engine,
                    AskRequest {
                        question: turn.question.clone(),
                        mode: Some("no_text".into()),
                        overrides: AskOverrides {
                            chat_mode: Some("off".into()),
                            rerank: Some(true),
                            ..Default::default()
                        },
                        ..Default::default()
                    },
                    cancel,
                )?;
                if let Some(AskEvent::Started {
                    conversation_id, ..
                }) = alone.first()
                {
                    engine.remove_conversation(*conversation_id)?;
                }
                Some(hit(&sources_of(&alone)))
            } else {
                None
            };
            // The thread query as the chat path builds it, from the conversation's
            // previous question.
            let history = [quire::chat::Message::user(c.turns[t - 1].question.clone())];
            let thread_queries = quire::chat::follow_up::queries(
                thread_how,
                &history,
                &turn.question,
                &searched_for,
            );
            rows.push(FollowUp {
                conversation: c.id.clone(),
                turn: t + 1,
                question: turn.question.clone(),
                half: opts.split.place(&c.id).map_or("none", |p| p.1).to_string(),
                plain: hit(&search(std::slice::from_ref(&turn.question))?),
                condensed: hit(&search(std::slice::from_ref(&searched_for))?),
                thread: hit(&search(&thread_queries)?),
                asked: hit(&sources_of(&events)),
                plain_reranked,
                answer_has_terms: turn
                    .must_contain
                    .iter()
                    .all(|m| answer.contains(m.as_str())),
                searched_for,
                condense_secs: stats.condense_secs.unwrap_or(0.0),
                rerank_secs: stats.rerank_secs.unwrap_or(0.0),
                secs: stats.secs,
            });
        }
    }
    let lang_of = |r: &FollowUp| {
        opts.conversations
            .iter()
            .find(|c| c.id == r.conversation)
            .map_or("", |c| c.lang.as_str())
    };
    let mut groups = vec![shares("all", &rows.iter().collect::<Vec<_>>())];
    for half in ["", "tune", "held"] {
        for lang in ["", "en", "zh"] {
            if half.is_empty() && lang.is_empty() {
                continue;
            }
            let these: Vec<&FollowUp> = rows
                .iter()
                .filter(|r| {
                    (half.is_empty() || r.half == half) && (lang.is_empty() || lang_of(r) == lang)
                })
                .collect();
            if !these.is_empty() {
                groups.push(shares(format!("{half} {lang}").trim(), &these));
            }
        }
    }
    let n = rows.len().max(1) as f64;
    Ok(ConversationBench {
        model: s.model,
        chat_mode: opts.chat_mode.clone(),
        mode: opts.mode.clone(),
        top_k: opts.top_k,
        follow_up_search: s.follow_up_search,
        reranked: opts.rerank,
        split_seed: opts.split.seed,
        conversations: opts.conversations.len(),
        shares: groups,
        condense_secs_mean: rows.iter().map(|r| r.condense_secs).sum::<f64>() / n,
        rerank_secs_mean: rows.iter().map(|r| r.rerank_secs).sum::<f64>() / n,
        ask_secs_mean: rows.iter().map(|r| r.secs).sum::<f64>() / n,
        follow_ups: rows,
    })
}

/// Without an LLM: each follow-up searched as typed and as the thread query alone
/// (the previous question and the follow-up, no condensing), per half and language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadOnly {
    pub top_k: usize,
    pub split_seed: u64,
    /// (group, follow-ups, as typed, thread query alone)
    pub shares: Vec<(String, usize, f64, f64)>,
    /// (conversation, turn, half, lang, as typed, thread query alone)
    pub rows: Vec<(String, usize, String, String, bool, bool)>,
}

/// [`ThreadOnly`]'s figures: the conversations' PDFs indexed, no LLM loaded.
/// Index the conversations' PDFs; a file that fails is an error that names it.
fn index_pdfs(
    engine: &Engine,
    opts: &Options,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&str),
) -> Result<()> {
    let mut files: Vec<PathBuf> = opts
        .conversations
        .iter()
        .map(|c| opts.pdfs.join(&c.file))
        .collect();
    files.sort();
    files.dedup();
    progress(&format!("indexing {} PDFs ...", files.len()));
    let mut failed = Vec::new();
    engine.index(&files, cancel, &mut |ev| {
        if let IndexEvent::FileFailed { path, reason } = ev {
            failed.push(format!("{path}: {reason}"));
        }
        true
    })?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "not indexed: {}",
            failed.join("; ")
        )))
    }
}

/// The sources of one query, or of several fused (the first is the question).
fn search(engine: &Engine, qs: &[String], top_k: usize, cancel: &Cancel) -> Result<Vec<Source>> {
    let r = engine.search(
        &qs[0],
        &RetrieveOptions {
            top_k,
            num_queries: qs.len(),
            queries: if qs.len() > 1 {
                qs.to_vec()
            } else {
                Vec::new()
            },
            ..RetrieveOptions::default()
        },
        cancel,
    )?;
    Ok(engine.sources_of(&r))
}

pub fn thread_only(opts: &Options, cancel: &Cancel) -> Result<ThreadOnly> {
    let engine = Engine::open(EngineConfig::new(Some(opts.data_dir.clone()))?)?;
    index_pdfs(&engine, opts, cancel, &mut |_| {})?;
    let hit = |qs: &[String], c: &Conversation, pages: &[u32]| -> Result<bool> {
        Ok(search(&engine, qs, opts.top_k, cancel)?
            .iter()
            .any(|s| answers(s, &c.file, pages)))
    };
    let mut rows = Vec::new();
    for c in &opts.conversations {
        let half = opts.split.place(&c.id).map_or("none", |p| p.1);
        for t in 1..c.turns.len() {
            let turn = &c.turns[t];
            let history = [quire::chat::Message::user(c.turns[t - 1].question.clone())];
            let thread = quire::chat::follow_up::thread_query(&history, &turn.question)
                .unwrap_or_else(|| turn.question.clone());
            rows.push((
                c.id.clone(),
                t + 1,
                half.to_string(),
                c.lang.clone(),
                hit(std::slice::from_ref(&turn.question), c, &turn.pages)?,
                hit(&[thread], c, &turn.pages)?,
            ));
        }
    }
    let mut shares = Vec::new();
    for half in ["", "tune", "held"] {
        for lang in ["", "en", "zh"] {
            let these: Vec<_> = rows
                .iter()
                .filter(|r| (half.is_empty() || r.2 == half) && (lang.is_empty() || r.3 == lang))
                .collect();
            if these.is_empty() {
                continue;
            }
            let n = these.len() as f64;
            let name = format!("{half} {lang}").trim().to_string();
            shares.push((
                if name.is_empty() { "all".into() } else { name },
                these.len(),
                these.iter().filter(|r| r.4).count() as f64 / n,
                these.iter().filter(|r| r.5).count() as f64 / n,
            ));
        }
    }
    Ok(ThreadOnly {
        top_k: opts.top_k,
        split_seed: opts.split.seed,
        shares,
        rows,
    })
}

impl std::fmt::Display for ThreadOnly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "follow-ups without an LLM, top {}; split seed {}",
            self.top_k, self.split_seed
        )?;
        writeln!(
            f,
            "{:<8} {:>10} {:>8} {:>12}",
            "", "follow-ups", "as typed", "thread alone"
        )?;
        for (name, n, plain, thread) in &self.shares {
            writeln!(
                f,
                "{name:<8} {n:>10} {:>7.0}% {:>11.0}%",
                plain * 100.0,
                thread * 100.0
            )?;
        }
        Ok(())
    }
}

impl std::fmt::Display for ConversationBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} conversations, model {}, chat mode {}, {} mode, top {}, follow-up search {}{}; \
             split seed {} (tune: tuning half, held: held-out half)",
            self.conversations,
            self.model,
            self.chat_mode,
            self.mode,
            self.top_k,
            self.follow_up_search,
            if self.reranked { ", reranked" } else { "" },
            self.split_seed
        )?;
        writeln!(
            f,
            "{:<8} {:>10} {:>8} {:>9} {:>7} {:>6} {:>9} {:>12} {:>9}",
            "",
            "follow-ups",
            "as typed",
            "condensed",
            "thread",
            "asked",
            "reranked",
            "answer terms",
            "condense"
        )?;
        for s in &self.shares {
            let reranked = s
                .plain_reranked
                .map_or("-".to_string(), |v| format!("{:.0}%", v * 100.0));
            writeln!(
                f,
                "{:<8} {:>10} {:>7.0}% {:>8.0}% {:>6.0}% {:>5.0}% {:>9} {:>11.0}% {:>7.2} s",
                s.name,
                s.follow_ups,
                s.plain * 100.0,
                s.condensed * 100.0,
                s.thread * 100.0,
                s.asked * 100.0,
                reranked,
                s.answer_has_terms * 100.0,
                s.condense_secs
            )?;
        }
        writeln!(
            f,
            "added per follow-up: condensing {:.2} s, reranking {:.2} s (whole ask {:.2} s)",
            self.condense_secs_mean, self.rerank_secs_mean, self.ask_secs_mean
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn every_conversation_is_in_exactly_one_half_and_well_formed() {
        let bench = Path::new(env!("CARGO_MANIFEST_DIR"));
        let split = Split::load(&bench.join("data/conversations_split.json")).expect("test data");
        let mut follow_ups = 0;
        let mut long = 0;
        for (set, file) in [
            ("conversations", "data/conversations.jsonl"),
            ("conversations2", "data/conversations2.jsonl"),
        ] {
            let convs: Vec<Conversation> =
                quire::jsonl::read(&bench.join(file)).expect("test data");
            let s = &split.sets[set];
            assert_eq!(s.tune.len() + s.held.len(), convs.len(), "{set}");
            for c in &convs {
                assert_eq!(split.place(&c.id).map(|p| p.0), Some(set), "{}", c.id);
                assert!(c.turns.len() >= 2, "{}", c.id);
                assert!(c.lang == "en" || c.lang == "zh", "{}", c.id);
                for t in &c.turns {
                    assert!(
                        !t.pages.is_empty() && !t.must_contain.is_empty(),
                        "{}",
                        c.id
                    );
                }
                follow_ups += c.turns.len() - 1;
                long += usize::from(c.turns.len() >= 3);
            }
            // Halved within each language: the halves differ by at most one each.
            assert!(s.tune.len().abs_diff(s.held.len()) <= 2, "{set}");
        }
        assert!(follow_ups >= 60 && long >= 20, "{follow_ups} {long}");
        let mut all: Vec<&String> = split
            .sets
            .values()
            .flat_map(|s| s.tune.iter().chain(&s.held))
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "an id in two halves or two sets");
    }

    #[test]
    fn shares_count_each_column_and_leave_reranking_out_when_not_run() {
        let row = |plain, thread, reranked: Option<bool>| FollowUp {
            conversation: "F01".into(),
            turn: 2,
            question: "q".into(),
            searched_for: "s".into(),
            half: "tune".into(),
            plain,
            condensed: false,
            thread,
            asked: thread,
            plain_reranked: reranked,
            answer_has_terms: true,
            condense_secs: 1.0,
            rerank_secs: 0.0,
            secs: 2.0,
        };
        let rows = [row(true, true, None), row(false, true, None)];
        let s = shares("tune", &rows.iter().collect::<Vec<_>>());
        assert_eq!(
            (s.follow_ups, s.plain, s.condensed, s.thread),
            (2, 0.5, 0.0, 1.0)
        );
        assert_eq!(s.plain_reranked, None);
        assert_eq!(s.condense_secs, 1.0);
        let rows = [row(true, true, Some(true)), row(false, true, Some(false))];
        let s = shares("tune", &rows.iter().collect::<Vec<_>>());
        assert_eq!(s.plain_reranked, Some(0.5));
    }
}
