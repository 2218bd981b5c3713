//! The figures of `quire bench conversations`: over scripted conversations (each turn
//! with the page that answers it, `bench/data/conversations.jsonl`), how often a
//! follow-up question retrieves an answering page in the top k, four ways: the
//! follow-up as typed, the standalone question the chat engine condensed it into, and
//! each of those reranked by the LLM. Every conversation is held through the
//! [`Engine`] (each answer is the model's own, so the history is what a user would
//! have); the added seconds of condensing and of reranking are measured per question.

use std::path::PathBuf;

use quire::engine::{
    AskEvent, AskOverrides, AskRequest, Engine, EngineConfig, IndexEvent, RetrieveOptions, Source,
};
use quire::llm::Cancel;
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

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
    /// An answering page in the top k: the follow-up as typed, condensed, each reranked.
    pub plain: bool,
    pub condensed: bool,
    pub plain_reranked: bool,
    pub condensed_reranked: bool,
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
    pub follow_ups: usize,
    pub plain: f64,
    pub condensed: f64,
    pub plain_reranked: f64,
    pub condensed_reranked: f64,
    pub answer_has_terms: f64,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationBench {
    pub model: String,
    pub chat_mode: String,
    pub mode: String,
    pub top_k: usize,
    pub conversations: usize,
    pub all: Shares,
    pub en: Shares,
    pub zh: Shares,
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

fn shares(rows: &[&FollowUp]) -> Shares {
    let n = rows.len().max(1) as f64;
    let share = |f: &dyn Fn(&FollowUp) -> bool| rows.iter().filter(|r| f(r)).count() as f64 / n;
    Shares {
        follow_ups: rows.len(),
        plain: share(&|r| r.plain),
        condensed: share(&|r| r.condensed),
        plain_reranked: share(&|r| r.plain_reranked),
        condensed_reranked: share(&|r| r.condensed_reranked),
        answer_has_terms: share(&|r| r.answer_has_terms),
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
    engine.set_settings(s.clone())?;
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
    if !failed.is_empty() {
        return Err(Error::Invalid(format!(
            "not indexed: {}",
            failed.join("; ")
        )));
    }
    let search = |q: &str| -> Result<Vec<Source>> {
        let r = engine.search(
            q,
            &RetrieveOptions {
                top_k: opts.top_k,
                ..RetrieveOptions::default()
            },
            cancel,
        )?;
        Ok(engine.sources_of(&r))
    };
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
                        rerank: Some(follow_up),
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
            rows.push(FollowUp {
                conversation: c.id.clone(),
                turn: t + 1,
                question: turn.question.clone(),
                plain: hit(&search(&turn.question)?),
                condensed: hit(&search(&searched_for)?),
                plain_reranked: hit(&sources_of(&alone)),
                condensed_reranked: hit(&sources_of(&events)),
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
    let lang = |l: &str| -> Vec<&FollowUp> {
        rows.iter()
            .filter(|r| {
                opts.conversations
                    .iter()
                    .any(|c| c.id == r.conversation && c.lang == l)
            })
            .collect()
    };
    let n = rows.len().max(1) as f64;
    let all: Vec<&FollowUp> = rows.iter().collect();
    Ok(ConversationBench {
        model: s.model,
        chat_mode: opts.chat_mode.clone(),
        mode: opts.mode.clone(),
        top_k: opts.top_k,
        conversations: opts.conversations.len(),
        all: shares(&all),
        en: shares(&lang("en")),
        zh: shares(&lang("zh")),
        condense_secs_mean: rows.iter().map(|r| r.condense_secs).sum::<f64>() / n,
        rerank_secs_mean: rows.iter().map(|r| r.rerank_secs).sum::<f64>() / n,
        ask_secs_mean: rows.iter().map(|r| r.secs).sum::<f64>() / n,
        follow_ups: rows,
    })
}

impl std::fmt::Display for ConversationBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} conversations, model {}, chat mode {}, {} mode, top {}",
            self.conversations, self.model, self.chat_mode, self.mode, self.top_k
        )?;
        writeln!(
            f,
            "{:<4} {:>9} {:>7} {:>10} {:>9} {:>19} {:>13}",
            "",
            "follow-ups",
            "as typed",
            "condensed",
            "reranked",
            "condensed+reranked",
            "answer terms"
        )?;
        for (name, s) in [("all", &self.all), ("en", &self.en), ("zh", &self.zh)] {
            writeln!(
                f,
                "{:<4} {:>9} {:>7.0}% {:>9.0}% {:>8.0}% {:>18.0}% {:>12.0}%",
                name,
                s.follow_ups,
                s.plain * 100.0,
                s.condensed * 100.0,
                s.plain_reranked * 100.0,
                s.condensed_reranked * 100.0,
                s.answer_has_terms * 100.0
            )?;
        }
        writeln!(
            f,
            "added per follow-up: condensing {:.2} s, reranking {:.2} s (whole ask {:.2} s)",
            self.condense_secs_mean, self.rerank_secs_mean, self.ask_secs_mean
        )
    }
}
