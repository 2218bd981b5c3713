//! Answering a question: retrieve from the index, synthesize with the chosen response
//! mode, stream what happens as [`AskEvent`]s, and keep the exchange in its
//! conversation — the partial answer too when the user stops it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::modes::Resolved;
use super::scope::ResolvedScope;
use super::{
    exchanges, lock, AskEvent, AskRequest, AskStats, Citation, Engine, Evidence, Relevance, Source,
};
use crate::chat::{self, ChatMode, Message};
use crate::embed::Embedder;
use crate::llm::{Cancel, GenParams, GgufLlm, Llm, RemoteLlm};
use crate::retrieve::{
    self, relevance, ChunkInfo, Corpus, FusionMode, IndexedChunk, Retrieval, RetrievalIndex,
    RetrieveOptions,
};
use crate::settings::Settings;
use crate::store::conversations;
use crate::support::{self, Span, Support};
use crate::synth::{self, Event, Node, RunOptions, Templates};
use crate::{Error, Result};

/// What answering keeps between questions: the loaded LLM and the in-memory
/// retrieval index, brought up to date when the store's generation moves on.
#[derive(Default)]
pub(super) struct AskState {
    /// The model and what it was loaded from: a change of either loads again.
    llm: Mutex<Option<(LlmSource, Arc<dyn Llm>)>>,
    index: Mutex<Option<IndexSlot>>,
    /// Times the index was built from the whole store.
    full_builds: std::sync::atomic::AtomicUsize,
}

/// Where the LLM comes from: a GGUF file on a device, or a model server.
#[derive(PartialEq)]
enum LlmSource {
    Gguf(std::path::PathBuf, crate::llm::DeviceChoice),
    Server(crate::llm::RemoteConfig),
}

/// The retrieval index, the store generation it reflects, and the embedding models
/// that made its vectors.
struct IndexSlot {
    generation: i64,
    models: Vec<String>,
    index: Arc<RetrievalIndex>,
}

/// The store's chunks as the retrieval index takes them.
fn indexed_chunks(chunks: Vec<crate::store::StoredChunk>) -> Vec<IndexedChunk> {
    chunks
        .into_iter()
        .map(|c| IndexedChunk {
            id: c.id,
            info: ChunkInfo {
                doc_id: c.doc_id,
                file: c.file,
                page_start: c.page_start,
                page_end: c.page_end,
                text: c.text,
            },
            embedding: c.embedding,
        })
        .collect()
}

impl Engine {
    /// The LLM the settings name, loaded (or connected to) once and kept until the
    /// settings change it: the local GGUF `model` on the settings' device, or the
    /// OpenAI-compatible server `llm_server`.
    pub fn llm(&self) -> Result<Arc<dyn Llm>> {
        let source = match self.remote_llm() {
            Some(cfg) => LlmSource::Server(cfg),
            None => LlmSource::Gguf(
                crate::models::find(&self.settings().model)?,
                self.llm_load_options()?.device,
            ),
        };
        let mut slot = lock(&self.ask_state.llm);
        if let Some((s, llm)) = slot.as_ref() {
            if *s == source {
                return Ok(llm.clone());
            }
        }
        *slot = None; // free the old model before loading the new one
        let llm: Arc<dyn Llm> = match &source {
            LlmSource::Gguf(path, _) => {
                Arc::new(GgufLlm::load_with(path, &self.llm_load_options()?)?)
            }
            LlmSource::Server(cfg) => Arc::new(RemoteLlm::connect(cfg)?),
        };
        *slot = Some((source, llm.clone()));
        Ok(llm)
    }

    /// How many times the retrieval index was built from the whole store (the other
    /// changes were applied to it as updates).
    pub fn retrieval_index_builds(&self) -> usize {
        self.ask_state
            .full_builds
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The retrieval index over everything indexed, brought up to date when the store
    /// changed: documents added or removed since it was made are added to it or taken
    /// out of it ([`RetrievalIndex::update`]: only the new documents' chunks are read
    /// from the store), and anything else (vectors made by another embedding model, a
    /// document that is not newer) rebuilds it from the store.
    pub fn retrieval_index(&self) -> Result<Arc<RetrievalIndex>> {
        let generation = self.store().generation()?;
        let mut slot = lock(&self.ask_state.index);
        if let Some(s) = slot.as_ref() {
            if s.generation == generation {
                return Ok(s.index.clone());
            }
        }
        let models: Vec<String> = self
            .store()
            .embedding_models()?
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        if let Some(old) = slot.take() {
            if old.models == models {
                let docs = self.store().searchable_documents()?;
                let have = old.index.documents();
                let removed: std::collections::HashSet<i64> =
                    have.difference(&docs).copied().collect();
                let mut added: Vec<i64> = docs.difference(&have).copied().collect();
                added.sort_unstable();
                let chunks = indexed_chunks(self.store().load_chunks_of(&added)?);
                // The index is shared with searches still running only rarely; then
                // the update works on a copy.
                let mut index = Arc::try_unwrap(old.index).unwrap_or_else(|a| (*a).clone());
                if index.update(&removed, chunks).is_ok() {
                    let index = Arc::new(index);
                    *slot = Some(IndexSlot {
                        generation,
                        models,
                        index: index.clone(),
                    });
                    return Ok(index);
                }
            }
        }
        let chunks = indexed_chunks(self.store().load_chunks()?);
        let index = Arc::new(RetrievalIndex::build(chunks)?);
        self.ask_state
            .full_builds
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *slot = Some(IndexSlot {
            generation,
            models,
            index: index.clone(),
        });
        Ok(index)
    }

    /// Retrieve the sources for `question` from everything indexed (the LLM writes
    /// the extra queries when `opts.num_queries` is above 1).
    pub fn search(
        &self,
        question: &str,
        opts: &RetrieveOptions,
        cancel: &Cancel,
    ) -> Result<Retrieval> {
        let llm = if opts.num_queries > 1 {
            Some(self.llm()?)
        } else {
            None
        };
        let llm_dyn: Option<&dyn Llm> = llm.as_deref();
        self.search_with(question, llm_dyn, opts, cancel)
    }

    /// The side panel's view of a retrieval's sources.
    pub fn sources_of(&self, retrieval: &Retrieval) -> Vec<Source> {
        let mut sources = sources_of(retrieval);
        self.mark_ocr(&mut sources);
        sources
    }

    fn search_with(
        &self,
        question: &str,
        llm: Option<&dyn Llm>,
        opts: &RetrieveOptions,
        cancel: &Cancel,
    ) -> Result<Retrieval> {
        let nothing = || {
            Error::Invalid(
                "nothing is indexed yet: add PDFs first (drop them on the window)".into(),
            )
        };
        // A database that retrieves by itself (PostgreSQL), else the in-memory
        // index, brought up to date.
        let corpus: Arc<dyn Corpus> = match self.store().in_database() {
            Some(db) => db,
            None => self.retrieval_index()?,
        };
        if corpus.chunks_indexed()? == 0 {
            return Err(nothing());
        }
        self.check_index_embedder()?;
        let embedder: Arc<dyn Embedder> = self.embedder()?;
        retrieve::search(
            corpus.as_ref(),
            question,
            embedder.as_ref(),
            llm,
            opts,
            cancel,
        )
    }

    /// Refuse a request that cannot be answered, before anything runs: an empty
    /// question, a scope that names nothing searchable, an unknown mode, settings
    /// overrides out of range, a template that does not fit its mode or lacks a
    /// variable's value. (Shells that answer a request before streaming call it first.)
    pub fn check_ask(&self, req: &AskRequest) -> Result<()> {
        self.prepare(req).map(|_| ())
    }

    /// [`Engine::check_ask`], keeping what it resolved.
    fn prepare(&self, req: &AskRequest) -> Result<Prepared> {
        if req.question.trim().is_empty() {
            return Err(Error::Invalid("the question is empty".into()));
        }
        let scope = self.resolve_scope(&req.scope)?;
        let settings = req
            .overrides
            .apply(self.settings(), &self.library_modes())?;
        let mode_name = req.mode.clone().unwrap_or_else(|| settings.mode.clone());
        let resolved = self.resolve_mode(&mode_name, &settings)?;
        let plan = plan(&settings, resolved);
        plan.resolved
            .synthesizer(&settings, plan.templates.clone())
            .check(&plan.options.vars)?;
        Ok(Prepared {
            scope,
            settings,
            mode_name,
            plan,
        })
    }

    /// Answer a question, streaming events to `on` (which returns false once nobody
    /// listens, and that stops the work too). One generation runs at a time; others
    /// wait here, and can be cancelled while they wait.
    pub fn ask(
        &self,
        req: AskRequest,
        cancel: &Cancel,
        on: &mut dyn FnMut(AskEvent) -> bool,
    ) -> Result<()> {
        // A scope that names nothing searchable, a bad template: the user's to fix,
        // said before any model is loaded or anything is kept.
        let Prepared {
            scope,
            settings,
            mode_name,
            plan: request,
        } = self.prepare(&req)?;
        let question = req.question.trim().to_string();
        let reg = self.register(cancel);

        let chat_mode: ChatMode = settings.chat_mode.parse()?;
        let placed = exchanges::place(&**self.store(), &req, &question)?;
        let (conversation_id, question_id) = (placed.conversation_id, placed.question_id);
        let history = if req.conversation_id.is_none() && !req.history.is_empty() {
            req.history
                .iter()
                .filter(|t| matches!(t.role.as_str(), "user" | "assistant"))
                .map(|t| Message::new(t.role.clone(), t.content.clone()))
                .collect()
        } else {
            history_of(&placed.before)
        };
        let question = placed.question;
        let mut send = |ev: AskEvent| -> Result<()> {
            if on(ev) {
                Ok(())
            } else {
                cancel.cancel();
                Err(Error::Cancelled)
            }
        };
        send(AskEvent::Started {
            ask_id: reg.id,
            conversation_id,
            question_id,
        })?;

        let mut record = Record::default();
        let outcome = {
            // Indexing pauses from here (queued behind another ask too) to the end.
            let _first = self.priority.foreground();
            let _turn = lock(&self.generation);
            let turn = Turn {
                question: &question,
                history: &history,
                chat_mode,
                scope: &scope,
            };
            self.answer(&settings, &request, &turn, cancel, &mut send, &mut record)
        };
        // Keep the exchange, whatever happened: an answer, a partial one, an error.
        let (content, status) = match &outcome {
            Ok(answer) => (answer.clone(), None),
            Err(Error::Cancelled) => (record.partial.clone(), Some("stopped".to_string())),
            Err(e) => (record.partial.clone(), Some(format!("error: {e}"))),
        };
        let mut extra = Map::new();
        extra.insert("query".into(), Value::String(question.clone()));
        if !record.queries.is_empty() {
            extra.insert("queries".into(), json!(record.queries));
        }
        extra.insert("chat_mode".into(), Value::String(chat_mode.name().into()));
        if let Some(q) = &record.searched_for {
            extra.insert("searched_for".into(), Value::String(q.clone()));
        }
        if !record.citations.is_empty() {
            extra.insert("citations".into(), json!(record.citations));
        }
        if !record.notes.is_empty() {
            extra.insert("notes".into(), json!(record.notes));
        }
        extra.insert("scope".into(), Value::String(scope.label.clone()));
        if let Some(r) = &record.relevance {
            extra.insert("relevance".into(), json!(r));
        }
        if !record.quotes.is_empty() {
            extra.insert("quotes".into(), json!(record.quotes));
        }
        if let Some(s) = &record.support {
            extra.insert("support".into(), json!(s));
        }
        extra.insert("sources".into(), json!(record.sources));
        if let Some(stats) = &record.stats {
            extra.insert("stats".into(), json!(stats));
        }
        extra.insert("calls".into(), json!(record.calls));
        if let Some(s) = status {
            extra.insert("status".into(), Value::String(s));
        }
        let saved = self.store().add_message(
            conversation_id,
            "assistant",
            &content,
            Some(&mode_name),
            Some(&question),
            &extra,
        );
        let answer = outcome?;
        let message_id = saved?;
        send(AskEvent::Done {
            answer,
            message_id,
            stats: record.stats.unwrap_or_default(),
        })
    }

    /// Condensing, retrieval, reranking and synthesis, with the generation turn held.
    fn answer(
        &self,
        settings: &Settings,
        request: &Plan,
        turn: &Turn<'_>,
        cancel: &Cancel,
        send: &mut dyn FnMut(AskEvent) -> Result<()>,
        record: &mut Record,
    ) -> Result<String> {
        cancel.check()?;
        let t0 = Instant::now();
        let condensing = turn.chat_mode != ChatMode::Off && !turn.history.is_empty();
        let needs_llm = request.resolved.uses_llm()
            || settings.num_queries > 1
            || condensing
            || settings.rerank;
        // A model that fails to load stops the answer only where it is needed: before
        // retrieval when a step there uses it, else after the quotes are shown.
        let needs_llm_first = settings.num_queries > 1 || condensing;
        let (llm, llm_error) = match needs_llm.then(|| self.llm()) {
            Some(Ok(l)) => (Some(l), None),
            Some(Err(e)) if needs_llm_first => return Err(e),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        let llm_dyn: Option<&dyn Llm> = llm.as_deref();
        let mut steps = 0usize;

        // 1. The conversation the model may see (the newest turns that fit its window
        //    less 256 tokens, as LlamaIndex's engines size their memory), and the
        //    standalone question to search for.
        let memory = match llm_dyn {
            Some(l) if turn.chat_mode != ChatMode::Off => {
                let count = |t: &str| l.count_tokens(t);
                chat::memory::window(turn.history, l.context_window().saturating_sub(256), &count)?
            }
            _ => Vec::new(),
        };
        let searched = match llm_dyn {
            Some(l) if condensing && !memory.is_empty() => {
                let t = Instant::now();
                let opts = step_options(request, steps, 128);
                let mut on_event = |ev: Event| -> Result<bool> {
                    forward(ev, send, record)?;
                    Ok(true)
                };
                let (q, calls) = synth::with_ctx(l, &opts, cancel, &mut on_event, |ctx| {
                    chat::condense::condense(ctx, turn.chat_mode, &memory, turn.question)
                })?;
                steps += calls.len();
                record.condense_secs = Some(t.elapsed().as_secs_f64());
                let q = q.trim().to_string();
                record.searched_for = Some(q.clone());
                send(AskEvent::Condensed {
                    question: q.clone(),
                })?;
                q
            }
            _ => turn.question.to_string(),
        };

        // 2. Query variants (RAG-fusion), a step of their own so the inspector shows
        //    the prompt; then retrieval (more candidates when the LLM reranks them).
        let mut queries = Vec::new();
        if let (Some(l), true) = (llm_dyn, settings.num_queries > 1) {
            let want = settings.num_queries - 1;
            let prompt = retrieve::query_gen::prompt_from(
                settings.query_gen_template.as_deref(),
                &searched,
                settings.num_queries,
                &settings.template_vars,
            );
            let opts = step_options(request, steps, usize::MAX);
            let mut on_event = |ev: Event| -> Result<bool> {
                forward(ev, send, record)?;
                Ok(true)
            };
            let (text, calls) = synth::with_ctx(l, &opts, cancel, &mut on_event, |ctx| {
                ctx.call_until(
                    "generate queries",
                    prompt,
                    retrieve::query_gen::params(want),
                    &mut |t| retrieve::query_gen::enough(t, &searched, want),
                )
            })?;
            steps += calls.len();
            queries.push(searched.clone());
            queries.extend(retrieve::query_gen::parse_queries(&text, &searched, want));
        }
        let opts = RetrieveOptions {
            top_k: if settings.rerank {
                settings.rerank_candidates.max(settings.top_k)
            } else {
                settings.top_k
            },
            fusion: settings.fusion.parse::<FusionMode>()?,
            num_queries: settings.num_queries,
            filter: turn.scope.filter.clone(),
            queries,
            query_gen_template: settings.query_gen_template.clone(),
            ..RetrieveOptions::default()
        };
        cancel.check()?;
        let mut retrieval = self.search_with(&searched, llm_dyn, &opts, cancel)?;
        if retrieval.queries.len() > 1 {
            record.queries = retrieval.queries.clone();
            send(AskEvent::Queries {
                queries: retrieval.queries.clone(),
            })?;
        }
        let mut notes: Vec<String> = retrieval
            .skipped
            .iter()
            .map(|&(qi, ri)| {
                let name = retrieval.retrievers.get(ri).map_or("?", String::as_str);
                let which = if qi == 0 { "the question".to_string() } else { format!("query {}", qi + 1) };
                format!(
                    "{name} search left out for {which}: the embedding model does not cover its language"
                )
            })
            .collect();

        // 3. Honest "not found": when even the closest chunk is far from the question,
        //    the closest passages are shown and no model improvises an answer.
        let threshold = settings
            .not_found_threshold
            .or_else(|| relevance::calibrated_threshold(&settings.embedder));
        let judged = relevance::judge(&retrieval, threshold, &settings.embedder);
        let covered = judged.covered;
        record.relevance = Some(judged);

        // 4. LLM reranking (LlamaIndex's LLMRerank), keeping the fused order when the
        //    model's answer cannot be read; not for passages no model will read.
        let mut rerank_scores: Option<Vec<f32>> = None;
        if !covered {
            retrieval.nodes.truncate(settings.top_k);
        } else if let (Some(l), true) = (llm_dyn, settings.rerank) {
            let t = Instant::now();
            let nodes = synth_nodes(&retrieval);
            let opts = step_options(request, steps, 128);
            let mut on_event = |ev: Event| -> Result<bool> {
                forward(ev, send, record)?;
                Ok(true)
            };
            let (ranked, calls) = synth::with_ctx(l, &opts, cancel, &mut on_event, |ctx| {
                chat::rerank::rerank(
                    ctx,
                    &searched,
                    &nodes,
                    settings.rerank_batch_size,
                    settings.top_k,
                )
            })?;
            steps += calls.len();
            record.rerank_secs = Some(t.elapsed().as_secs_f64());
            if ranked.is_empty() {
                notes.push(
                    "the reranker's answer named no source it could read: the fused order is kept"
                        .into(),
                );
                retrieval.nodes.truncate(settings.top_k);
            } else {
                let old = std::mem::take(&mut retrieval.nodes);
                let mut scores = Vec::new();
                for r in &ranked {
                    if let Some(n) = old.get(r.node) {
                        retrieval.nodes.push(n.clone());
                        scores.push(r.score as f32);
                    }
                }
                rerank_scores = Some(scores);
            }
        }
        let mut sources = sources_of(&retrieval);
        self.mark_ocr(&mut sources);
        if let Some(scores) = &rerank_scores {
            for (s, r) in sources.iter_mut().zip(scores) {
                s.rerank_score = Some(*r);
            }
        }
        record.sources = sources.clone();
        record.notes = notes.clone();
        send(AskEvent::Sources {
            sources,
            notes,
            scope: turn.scope.label.clone(),
            relevance: record.relevance.clone(),
        })?;
        // The source sentences that best answer the question, shown before (and
        // whatever) the model writes.
        let quotes = self.quotes_for(&searched, &record.sources);
        if !quotes.is_empty() {
            record.quotes = quotes.clone();
            send(AskEvent::Quotes { quotes })?;
        }
        if !covered {
            record.stats = Some(AskStats {
                secs: t0.elapsed().as_secs_f64(),
                llm_calls: record.calls.len(),
                ..AskStats::default()
            });
            return Ok(relevance::not_found_answer(turn.question));
        }
        if matches!(request.resolved, Resolved::Extractive) {
            let answer = support::quotes::as_answer(&record.quotes);
            let support = support::quotes::support_of(&answer, &record.quotes);
            record.support = Some(support.clone());
            send(AskEvent::Support { support })?;
            record.stats = Some(AskStats {
                secs: t0.elapsed().as_secs_f64(),
                llm_calls: record.calls.len(),
                ..AskStats::default()
            });
            return Ok(answer);
        }
        if let Some(e) = llm_error {
            return Err(e);
        }

        // 5. Synthesis: numbered sources when citing. A follow-up under
        //    condense_plus_context is answered as the original message with the context
        //    and the conversation in a chat prompt; every other question (the first of
        //    a conversation goes straight through) is answered as the standalone
        //    question with the chosen mode and templates.
        let context_chat = turn.chat_mode == ChatMode::CondensePlusContext && !memory.is_empty();
        let mut nodes = synth_nodes(&retrieval);
        let mut request = request.clone();
        request.options.first_step = steps;
        if settings.cite_sources {
            let count = |t: &str| match llm_dyn {
                Some(l) => l.count_tokens(t),
                None => Ok(t.split_whitespace().count()),
            };
            let (numbered_nodes, numbered) = chat::citation::number_sources(
                &nodes,
                settings.citation_chunk_size,
                chat::citation::CHUNK_OVERLAP,
                &count,
            )?;
            let citations: Vec<Citation> = numbered
                .into_iter()
                .filter_map(|n| {
                    Some(Citation {
                        number: n.number,
                        chunk_id: nodes.get(n.node)?.id.parse().ok()?,
                        text: n.text,
                    })
                })
                .collect();
            record.citations = citations.clone();
            send(AskEvent::Citations { citations })?;
            nodes = numbered_nodes;
            if !context_chat {
                request.templates = chat::citation::templates();
            }
        }
        let query = if context_chat {
            let system = if settings.cite_sources {
                chat::citation::CITE_SYSTEM_PROMPT
            } else {
                ""
            };
            // The conversation may take at most half the window in the answer's
            // prompt, so that the sources always fit beside it (LlamaIndex's limit,
            // the window less 256, would leave them no room in a long conversation).
            let history = match llm_dyn {
                Some(l) => {
                    let count = |t: &str| l.count_tokens(t);
                    chat::memory::window(&memory, l.context_window() / 2, &count)?
                }
                None => memory.clone(),
            };
            request.templates = chat::condense::context_templates(&history, system);
            turn.question.to_string()
        } else {
            searched.clone()
        };
        let synth_llm: &dyn Llm = llm_dyn.unwrap_or(&NoLlm);
        let mut on_event = |ev: Event| -> Result<bool> {
            forward(ev, send, record)?;
            Ok(true)
        };
        let synthesizer = request
            .resolved
            .synthesizer(settings, request.templates.clone());
        let response = synth::run(
            synthesizer.as_ref(),
            synth_llm,
            &request.options,
            &query,
            &nodes,
            cancel,
            &mut on_event,
        )?;
        // Every sentence of the answer, checked against the sources.
        let support = self.support_for(&response.answer, &record.sources, &record.citations);
        record.support = Some(support.clone());
        send(AskEvent::Support { support })?;
        let secs = t0.elapsed().as_secs_f64();
        let calls = &record.calls;
        let gen_secs: f64 = calls.iter().map(|c| c.gen_secs).sum();
        let output_tokens: usize = calls.iter().map(|c| c.output_tokens).sum();
        record.stats = Some(AskStats {
            model: llm.as_ref().map(|l| {
                l.served_name()
                    .unwrap_or_else(|| super::models::setting_name(&settings.model))
            }),
            llm_calls: calls.len(),
            prompt_tokens: calls.iter().map(|c| c.prompt_tokens).sum(),
            output_tokens,
            secs,
            tokens_per_s: if gen_secs > 0.0 {
                output_tokens as f64 / gen_secs
            } else {
                0.0
            },
            condense_secs: record.condense_secs,
            rerank_secs: record.rerank_secs,
        });
        Ok(response.answer)
    }
}

/// One question of a conversation: the message, the history before it, and how the
/// history is used.
struct Turn<'a> {
    question: &'a str,
    history: &'a [Message],
    chat_mode: ChatMode,
    scope: &'a ResolvedScope,
}

/// The conversation before a question, as the chat engines' memory holds it: each
/// question and its finished answer (a stopped or failed answer is left out, with its
/// question); of a question asked again, its newest finished answer.
fn history_of(messages: &[conversations::Message]) -> Vec<Message> {
    let mut out = Vec::new();
    let mut pending: Option<&str> = None;
    let mut answered = false;
    for m in messages {
        match m.role.as_str() {
            "user" => {
                pending = Some(&m.content);
                answered = false;
            }
            "assistant" if !m.extra.contains_key("status") => {
                if answered {
                    out.pop();
                } else if let Some(q) = pending {
                    out.push(Message::user(q));
                } else {
                    continue;
                }
                out.push(Message::assistant(m.content.clone()));
                answered = true;
            }
            _ => {}
        }
    }
    out
}

/// Options for LLM steps before synthesis (condensing, reranking): the answer's
/// generation parameters with at most `max_tokens`, numbered after `steps`.
fn step_options(request: &Plan, steps: usize, max_tokens: usize) -> RunOptions {
    let mut opts = request.options.clone();
    opts.params.max_tokens = opts.params.max_tokens.min(max_tokens);
    opts.first_step = steps;
    opts
}

/// The retrieved chunks as synthesis nodes (id and text), in rank order.
pub fn synth_nodes(retrieval: &Retrieval) -> Vec<Node> {
    retrieval
        .nodes
        .iter()
        .filter_map(|n| {
            n.chunk
                .as_ref()
                .map(|c| Node::new(n.chunk_id.to_string(), c.text.clone()))
        })
        .collect()
}

/// A request checked and resolved ([`Engine::check_ask`]).
struct Prepared {
    scope: ResolvedScope,
    settings: Settings,
    mode_name: String,
    plan: Plan,
}

/// How a question is answered: the mode's synthesizer, the templates it is given
/// (the settings', or a chat engine's), and the run options.
#[derive(Clone)]
struct Plan {
    resolved: Resolved,
    templates: Templates,
    options: RunOptions,
}

/// The plan the settings describe for a resolved mode.
fn plan(settings: &Settings, resolved: Resolved) -> Plan {
    Plan {
        resolved,
        templates: settings.templates(),
        options: RunOptions {
            context_window: None,
            params: GenParams {
                max_tokens: settings.max_tokens,
                temperature: settings.temperature,
                repeat_penalty: settings.repeat_penalty,
                ..GenParams::default()
            },
            vars: settings.template_vars.clone(),
            batch: settings.batch_tree,
            first_step: 0,
        },
    }
}

/// What an ask has produced so far, kept in the conversation even when it stops early.
#[derive(Default)]
struct Record {
    queries: Vec<String>,
    searched_for: Option<String>,
    citations: Vec<Citation>,
    notes: Vec<String>,
    relevance: Option<Relevance>,
    condense_secs: Option<f64>,
    rerank_secs: Option<f64>,
    sources: Vec<Source>,
    quotes: Vec<Span>,
    support: Option<Support>,
    calls: Vec<synth::LlmCall>,
    /// Answer text streamed so far.
    partial: String,
    stats: Option<AskStats>,
}

/// Synthesis events as the UI sees them.
fn forward(
    ev: Event,
    send: &mut dyn FnMut(AskEvent) -> Result<()>,
    record: &mut Record,
) -> Result<()> {
    match ev {
        Event::Step {
            step,
            label,
            is_final,
            prompt,
        } => {
            send(AskEvent::Step {
                step,
                label,
                is_final,
            })?;
            send(AskEvent::Prompt { step, prompt })
        }
        Event::Token {
            step,
            text,
            is_final,
        } => {
            if is_final {
                record.partial.push_str(&text);
            }
            send(AskEvent::Token {
                step,
                text,
                is_final,
            })
        }
        Event::StepDone { call } => {
            record.calls.push(call.clone());
            send(AskEvent::StepDone { call })
        }
        Event::Answer { text } => {
            record.partial = text;
            Ok(())
        }
    }
}

/// The side panel's view of fused source nodes.
fn sources_of(r: &Retrieval) -> Vec<Source> {
    r.nodes
        .iter()
        .filter_map(|n| {
            let c = n.chunk.as_ref()?;
            Some(Source {
                chunk_id: n.chunk_id,
                doc_id: c.doc_id,
                file: c.file.clone(),
                page_start: c.page_start,
                page_end: c.page_end,
                score: n.score as f32,
                text: c.text.clone(),
                evidence: n
                    .evidence
                    .iter()
                    .map(|e| Evidence {
                        retriever: r.retrievers.get(e.retriever).cloned().unwrap_or_default(),
                        query_index: e.query,
                        rank: e.rank.saturating_sub(1),
                        score: e.score,
                    })
                    .collect(),
                rerank_score: None,
                ocr: false,
            })
        })
        .collect()
}

/// `no_text` makes no LLM call; this stands in so that no model need be loaded.
struct NoLlm;

impl Llm for NoLlm {
    fn context_window(&self) -> usize {
        4096
    }
    fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(text.split_whitespace().count())
    }
    fn complete(
        &self,
        _prompt: &str,
        _params: &GenParams,
        _cancel: &Cancel,
        _sink: &mut crate::llm::TokenSink<'_>,
    ) -> Result<crate::llm::Completion> {
        Err(Error::Invalid("no_text mode makes no LLM call".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &str, content: &str, status: Option<&str>) -> conversations::Message {
        let mut extra = Map::new();
        if let Some(s) = status {
            extra.insert("status".into(), Value::String(s.into()));
        }
        conversations::Message {
            id: 0,
            role: role.into(),
            content: content.into(),
            mode: None,
            query: None,
            extra,
            created_at: 0,
        }
    }

    #[test]
    fn the_history_holds_finished_exchanges_only() {
        let h = history_of(&[
            msg("user", "q1", None),
            msg("assistant", "a1", None),
            msg("user", "q2", None),
            msg("assistant", "half an answ", Some("stopped")),
            msg("user", "q3", None),
            msg("assistant", "", Some("error: model missing")),
            msg("user", "q4", None),
            msg("assistant", "a4", None),
        ]);
        assert_eq!(
            h,
            vec![
                Message::user("q1"),
                Message::assistant("a1"),
                Message::user("q4"),
                Message::assistant("a4"),
            ]
        );
    }
}
