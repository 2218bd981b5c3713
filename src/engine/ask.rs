//! Answering a question: retrieve from the index, synthesize with the chosen response
//! mode, stream what happens as [`AskEvent`]s, and keep the exchange in its
//! conversation — the partial answer too when the user stops it.
//!
//! [`Engine::ask`] places the question and keeps the answer; [`Engine::answer`] runs
//! the pipeline of ARCHITECTURE.md as named steps of an [`AnswerRun`]: condense,
//! query variants, retrieve, judge, rerank, show the sources and quotes, cite,
//! synthesize, check the support.

use std::sync::Arc;
use std::time::Instant;

use super::modes::Resolved;
use super::record::{AnswerRecord, AnswerStatus};
use super::scope::ResolvedScope;
use super::{exchanges, lock, AskEvent, AskRequest, AskStats, Citation, Engine, Evidence, Source};
use crate::chat::{self, ChatMode, Message};
use crate::embed::Embedder;
use crate::llm::{Cancel, GenParams, Llm};
use crate::retrieve::{self, relevance, Corpus, FusionMode, Retrieval, RetrieveOptions};
use crate::settings::Settings;
use crate::store::{conversations, NewMessage, Role};
use crate::support;
use crate::synth::{self, Ctx, Event, Node, RunOptions, Templates};
use crate::{Error, Result};

impl Engine {
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

    pub(super) fn search_with(
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
        // (The store's lock is let go before the in-memory index takes it again.)
        let in_database = self.store().in_database();
        let in_memory;
        let corpus: &dyn Corpus = match &in_database {
            Some(db) => db.as_ref(),
            None => {
                in_memory = self.retrieval_corpus()?;
                in_memory.as_ref()
            }
        };
        if corpus.chunks_indexed()? == 0 {
            return Err(nothing());
        }
        self.check_search_embedder()?;
        let embedder: Arc<dyn Embedder> = self.embedder()?;
        retrieve::search(corpus, question, embedder.as_ref(), llm, opts, cancel)
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
        let mut settings = req
            .overrides
            .apply(self.settings(), &self.library_modes())?;
        // `auto` as the model file it stands for now: what the answer is signed with.
        if settings.model.trim() == crate::models::AUTO {
            settings.model = self.model_name(&settings.model);
        }
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

        let mut progress = Progress {
            record: AnswerRecord {
                query: question.clone(),
                chat_mode: chat_mode.name().into(),
                scope: scope.label.clone(),
                ..AnswerRecord::default()
            },
            ..Progress::default()
        };
        let outcome = {
            // Indexing pauses from here (queued behind another ask too) to the end.
            let _first = self.priority.foreground();
            let _turn = lock(&self.generation);
            let turn = Turn {
                question: &question,
                history: &history,
                chat_mode,
                scope: &scope,
                route: req.route,
            };
            self.answer(&settings, &request, &turn, cancel, &mut send, &mut progress)
        };
        // Keep the exchange, whatever happened: an answer, a partial one, an error.
        let (content, status) = match &outcome {
            Ok(answer) => (answer.clone(), None),
            Err(Error::Cancelled) => (progress.partial.clone(), Some(AnswerStatus::Stopped)),
            Err(e) => (
                progress.partial.clone(),
                Some(AnswerStatus::Error(e.to_string())),
            ),
        };
        progress.record.status = status;
        let saved = self.store().add_message(&NewMessage {
            conversation: conversation_id,
            role: Role::Assistant,
            content: &content,
            mode: Some(&mode_name),
            query: Some(&question),
            extra: &progress.record.to_extra(),
        });
        let answer = outcome?;
        let message_id = saved?;
        send(AskEvent::Done {
            answer,
            message_id,
            stats: progress.record.stats.unwrap_or_default(),
        })
    }

    /// Condensing, retrieval, reranking and synthesis, with the generation turn held:
    /// the pipeline, step by step.
    fn answer(
        &self,
        settings: &Settings,
        plan: &Plan,
        turn: &Turn<'_>,
        cancel: &Cancel,
        send: &mut dyn FnMut(AskEvent) -> Result<()>,
        progress: &mut Progress,
    ) -> Result<String> {
        cancel.check()?;
        let given = Given {
            engine: self,
            settings,
            plan,
            turn,
            cancel,
        };
        let mut run = AnswerRun::start(given, send, progress)?;
        let memory = run.memory()?;
        let searched = run.condense(&memory)?;
        // A question about whole documents reads them (the decision is shown either
        // way).
        if let Some(answer) = run.by_whole_documents(&searched)? {
            return Ok(answer);
        }
        let queries = run.query_variants(&searched)?;
        let queries = run.follow_up_queries(&memory, &searched, queries)?;
        let mut retrieval = run.retrieve(&searched, queries)?;
        let covered = run.judge(&retrieval);
        run.rerank(&mut retrieval, &searched, covered)?;
        run.show_sources(&retrieval, &searched)?;
        if !covered {
            run.finish_without_llm();
            return Ok(relevance::not_found_answer(turn.question));
        }
        if matches!(plan.resolved, Resolved::Extractive) {
            return run.extractive();
        }
        run.need_llm()?;
        let (nodes, plan, query) = run.cite(&retrieval, &memory, &searched)?;
        let answer = run.synthesize(&plan, &query, &nodes)?;
        let plain = !settings.cite_sources && query == searched;
        let answer = if plain {
            run.answer_again(&plan, &searched, answer)?
        } else {
            answer
        };
        run.check_support(&searched, &answer)?;
        run.finish();
        Ok(answer)
    }
}

/// What every step of an answer reads.
#[derive(Clone, Copy)]
pub(super) struct Given<'a> {
    pub(super) engine: &'a Engine,
    pub(super) settings: &'a Settings,
    pub(super) plan: &'a Plan,
    pub(super) turn: &'a Turn<'a>,
    pub(super) cancel: &'a Cancel,
}

/// One answer being made: what every step reads, and what they add to (the events
/// sent, the record kept, the count of LLM steps).
pub(super) struct AnswerRun<'a> {
    pub(super) given: Given<'a>,
    pub(super) send: &'a mut dyn FnMut(AskEvent) -> Result<()>,
    pub(super) progress: &'a mut Progress,
    pub(super) llm: Option<Arc<dyn Llm>>,
    /// A model that failed to load where no step before synthesis needed it: said
    /// after the quotes are shown.
    llm_error: Option<Error>,
    /// LLM calls made so far (steps are numbered after them).
    pub(super) steps: usize,
    /// Notes for the sources panel.
    pub(super) notes: Vec<String>,
    t0: Instant,
}

impl<'a> AnswerRun<'a> {
    /// Load the model when a step will use it. A model that fails to load stops the
    /// answer only where it is needed: before retrieval when a step there uses it,
    /// else after the quotes are shown.
    fn start(
        given: Given<'a>,
        send: &'a mut dyn FnMut(AskEvent) -> Result<()>,
        progress: &'a mut Progress,
    ) -> Result<Self> {
        let t0 = Instant::now();
        let Given {
            engine,
            settings,
            plan,
            turn,
            ..
        } = given;
        // A follow-up is condensed by the LLM unless the follow-up search says not.
        let condensing = turn.chat_mode != ChatMode::Off
            && !turn.history.is_empty()
            && settings
                .follow_up_search
                .parse::<chat::follow_up::FollowUpSearch>()
                .map_or(true, |how| how.condenses(turn.chat_mode));
        let needs_llm =
            plan.resolved.uses_llm() || settings.num_queries > 1 || condensing || settings.rerank;
        let needs_llm_first = settings.num_queries > 1 || condensing;
        let (llm, llm_error) = match needs_llm.then(|| engine.llm()) {
            Some(Ok(l)) => (Some(l), None),
            Some(Err(e)) if needs_llm_first => return Err(e),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        Ok(Self {
            given,
            send,
            progress,
            llm,
            llm_error,
            steps: 0,
            notes: Vec::new(),
            t0,
        })
    }

    fn llm(&self) -> Option<&dyn Llm> {
        self.llm.as_deref()
    }

    /// An LLM step before synthesis (condensing, query variants, reranking), with at
    /// most `max_tokens`, its events forwarded and its calls counted.
    pub(super) fn llm_step<T>(
        &mut self,
        llm: &dyn Llm,
        max_tokens: usize,
        f: impl FnOnce(&mut Ctx<'_>) -> Result<T>,
    ) -> Result<T> {
        self.llm_step_reading(llm, max_tokens, &mut |_| None, f)
    }

    /// [`Self::llm_step`], with what to send when a step's prompt has been read
    /// (`on_read(step)`: a batch's prompts, read one by one before its tokens).
    pub(super) fn llm_step_reading<T>(
        &mut self,
        llm: &dyn Llm,
        max_tokens: usize,
        on_read: &mut dyn FnMut(usize) -> Option<AskEvent>,
        f: impl FnOnce(&mut Ctx<'_>) -> Result<T>,
    ) -> Result<T> {
        let opts = step_options(self.given.plan, self.steps, max_tokens);
        let (send, progress) = (&mut *self.send, &mut *self.progress);
        let mut on_event = |ev: Event| -> Result<bool> {
            match ev {
                Event::Read { step } => {
                    if let Some(e) = on_read(step) {
                        send(e)?;
                    }
                }
                ev => forward(ev, send, progress)?,
            }
            Ok(true)
        };
        let (out, calls) = synth::with_ctx(llm, &opts, self.given.cancel, &mut on_event, f)?;
        self.steps += calls.len();
        Ok(out)
    }

    /// 1. The conversation the model may see: the newest turns that fit its window
    ///    less 256 tokens, as LlamaIndex's engines size their memory.
    fn memory(&self) -> Result<Vec<Message>> {
        match self.llm() {
            Some(l) if self.given.turn.chat_mode != ChatMode::Off => {
                let count = |t: &str| l.count_tokens(t);
                chat::memory::window(
                    self.given.turn.history,
                    l.context_window().saturating_sub(256),
                    &count,
                )
            }
            _ => Ok(Vec::new()),
        }
    }

    /// 2. The standalone question to search for: a follow-up condensed with the
    ///    conversation, else the question itself.
    fn condense(&mut self, memory: &[Message]) -> Result<String> {
        let condensing =
            self.given.turn.chat_mode != ChatMode::Off && !self.given.turn.history.is_empty();
        if condensing
            && !self
                .follow_up_search()?
                .condenses(self.given.turn.chat_mode)
        {
            // Not condensed (`thread_only`): the previous question and the follow-up
            // as typed are what is searched, and said so.
            let turn = self.given.turn;
            let Some(q) = chat::follow_up::thread_query(turn.history, turn.question) else {
                return Ok(self.given.turn.question.to_string());
            };
            self.progress.record.searched_for = Some(q.clone());
            (self.send)(AskEvent::Condensed {
                question: q.clone(),
            })?;
            return Ok(q);
        }
        let Some(l) = self
            .llm
            .clone()
            .filter(|_| condensing && !memory.is_empty())
        else {
            return Ok(self.given.turn.question.to_string());
        };
        let t = Instant::now();
        let (mode, question) = (self.given.turn.chat_mode, self.given.turn.question);
        let q = self.llm_step(l.as_ref(), 128, |ctx| {
            chat::condense::condense(ctx, mode, memory, question)
        })?;
        self.progress.condense_secs = Some(t.elapsed().as_secs_f64());
        let q = q.trim().to_string();
        self.progress.record.searched_for = Some(q.clone());
        (self.send)(AskEvent::Condensed {
            question: q.clone(),
        })?;
        Ok(q)
    }

    /// 3. Query variants (RAG-fusion), a step of their own so the inspector shows
    ///    the prompt: the searched question first, then the variants.
    fn query_variants(&mut self, searched: &str) -> Result<Vec<String>> {
        let settings = self.given.settings;
        let Some(l) = self.llm.clone().filter(|_| settings.num_queries > 1) else {
            return Ok(Vec::new());
        };
        let want = settings.num_queries - 1;
        let prompt = retrieve::query_gen::prompt_from(
            settings.query_gen_template.as_deref(),
            searched,
            settings.num_queries,
            &settings.template_vars,
        );
        let text = self.llm_step(l.as_ref(), usize::MAX, |ctx| {
            ctx.call_until(
                "generate queries",
                prompt,
                retrieve::query_gen::params(want),
                &mut |t| retrieve::query_gen::enough(t, searched, want),
            )
        })?;
        let mut queries = vec![searched.to_string()];
        queries.extend(retrieve::query_gen::parse_queries(&text, searched, want));
        Ok(queries)
    }

    /// 3b. A condensed follow-up's other queries ([`chat::follow_up`]): with the
    ///     `thread` search, the follow-up as typed with the previous question, after
    ///     the searched question and its variants.
    fn follow_up_queries(
        &self,
        memory: &[Message],
        searched: &str,
        mut queries: Vec<String>,
    ) -> Result<Vec<String>> {
        if self.progress.record.searched_for.is_none() {
            return Ok(queries);
        }
        let how = self.follow_up_search()?;
        let more = chat::follow_up::queries(how, memory, self.given.turn.question, searched);
        if queries.is_empty() {
            return Ok(more);
        }
        for q in more.into_iter().skip(1) {
            if !queries.contains(&q) {
                queries.push(q);
            }
        }
        Ok(queries)
    }

    /// The `follow_up_search` setting.
    fn follow_up_search(&self) -> Result<chat::follow_up::FollowUpSearch> {
        self.given.settings.follow_up_search.parse()
    }

    /// 4. Retrieval, fused (more candidates when the LLM reranks them); the
    ///    retrievers left out for a query's language are noted.
    fn retrieve(&mut self, searched: &str, queries: Vec<String>) -> Result<Retrieval> {
        let settings = self.given.settings;
        let opts = RetrieveOptions {
            top_k: if settings.rerank {
                settings.rerank_candidates.max(settings.top_k)
            } else {
                settings.top_k
            },
            fusion: settings.fusion.parse::<FusionMode>()?,
            num_queries: settings.num_queries.max(queries.len()),
            filter: self.given.turn.scope.filter.clone(),
            queries,
            query_gen_template: settings.query_gen_template.clone(),
            ..RetrieveOptions::default()
        };
        self.given.cancel.check()?;
        let retrieval =
            self.given
                .engine
                .search_with(searched, self.llm(), &opts, self.given.cancel)?;
        if retrieval.queries.len() > 1 {
            self.progress.record.queries = retrieval.queries.clone();
            (self.send)(AskEvent::Queries {
                queries: retrieval.queries.clone(),
            })?;
        }
        self.notes = retrieval
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
        Ok(retrieval)
    }

    /// 5. Honest "not found": whether the sources cover the question. When even the
    ///    closest chunk is far from it, the closest passages are shown and no model
    ///    improvises an answer.
    fn judge(&mut self, retrieval: &Retrieval) -> bool {
        let settings = self.given.settings;
        let threshold = settings
            .not_found_threshold
            .or_else(|| relevance::calibrated_threshold(&settings.embedder));
        let judged = relevance::judge(retrieval, threshold, &settings.embedder);
        let covered = judged.covered;
        self.progress.record.relevance = Some(judged);
        covered
    }

    /// 6. LLM reranking (LlamaIndex's LLMRerank), keeping the fused order when the
    ///    model's answer cannot be read; not for passages no model will read.
    fn rerank(&mut self, retrieval: &mut Retrieval, searched: &str, covered: bool) -> Result<()> {
        let settings = self.given.settings;
        if !covered {
            retrieval.nodes.truncate(settings.top_k);
            return Ok(());
        }
        let Some(l) = self.llm.clone().filter(|_| settings.rerank) else {
            return Ok(());
        };
        let t = Instant::now();
        let nodes = synth_nodes(retrieval);
        let ranked = self.llm_step(l.as_ref(), 128, |ctx| {
            chat::rerank::rerank(
                ctx,
                searched,
                &nodes,
                settings.rerank_batch_size,
                settings.top_k,
            )
        })?;
        self.progress.rerank_secs = Some(t.elapsed().as_secs_f64());
        if ranked.is_empty() {
            self.notes.push(
                "the reranker's answer named no source it could read: the fused order is kept"
                    .into(),
            );
            retrieval.nodes.truncate(settings.top_k);
            return Ok(());
        }
        let old = std::mem::take(&mut retrieval.nodes);
        let mut scores = Vec::new();
        for r in &ranked {
            if let Some(n) = old.get(r.node) {
                retrieval.nodes.push(n.clone());
                scores.push(r.score as f32);
            }
        }
        self.progress.rerank_scores = Some(scores);
        Ok(())
    }

    /// Before the answer: LlamaIndex's SentenceEmbeddingOptimizer, when the settings set a cutoff:
    ///     the model reads each source's sentences closest to the question (the
    ///     sources panel and the quotes keep the whole passages). Where it keeps no
    ///     sentence of a source (LlamaIndex raises), the sources are read whole and a
    ///     note says so.
    fn optimize(&mut self, nodes: &mut [Node], searched: &str) -> Result<()> {
        let settings = self.given.settings;
        let opt = chat::optimizer::Optimizer {
            percentile_cutoff: settings.optimizer_percentile,
            threshold_cutoff: settings.optimizer_threshold,
            ..Default::default()
        };
        if !opt.is_on() || nodes.is_empty() {
            return Ok(());
        }
        let embedder = self.given.engine.embedder()?;
        let query = embedder.embed_query(searched)?;
        let mut shortened = nodes.to_vec();
        let mut embed = |texts: &[&str]| embedder.embed(texts);
        match opt.postprocess(&mut shortened, &query, &mut embed) {
            Ok(()) => {
                nodes.clone_from_slice(&shortened);
                Ok(())
            }
            Err(Error::Invalid(e)) if e == chat::optimizer::ZERO_SENTENCES => {
                self.notes.push(
                    "the sentence optimizer kept no sentence of a source: the sources are read whole"
                        .into(),
                );
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// 7. The sources panel, then the source sentences that best answer the
    ///    question, shown before (and whatever) the model writes.
    fn show_sources(&mut self, retrieval: &Retrieval, searched: &str) -> Result<()> {
        let mut sources = sources_of(retrieval);
        self.given.engine.mark_ocr(&mut sources);
        if let Some(scores) = &self.progress.rerank_scores {
            for (s, r) in sources.iter_mut().zip(scores) {
                s.rerank_score = Some(*r);
            }
        }
        let record = &mut self.progress.record;
        record.sources = sources.clone();
        record.notes = self.notes.clone();
        (self.send)(AskEvent::Sources {
            sources,
            notes: self.notes.clone(),
            scope: self.given.turn.scope.label.clone(),
            relevance: record.relevance.clone(),
        })?;
        let quotes = self
            .given
            .engine
            .quotes_for(searched, &self.progress.record.sources);
        if !quotes.is_empty() {
            self.progress.record.quotes = quotes.clone();
            (self.send)(AskEvent::Quotes { quotes })?;
        }
        Ok(())
    }

    /// The extractive mode's answer: the quotes, with their support (no LLM call).
    fn extractive(mut self) -> Result<String> {
        let record = &mut self.progress.record;
        let answer = support::quotes::as_answer(&record.quotes);
        let support = support::quotes::support_of(&answer, &record.quotes);
        record.support = Some(support.clone());
        (self.send)(AskEvent::Support { support })?;
        self.finish_without_llm();
        Ok(answer)
    }

    /// Stats of an answer no model wrote.
    fn finish_without_llm(&mut self) {
        self.progress.record.stats = Some(AskStats {
            secs: self.t0.elapsed().as_secs_f64(),
            llm_calls: self.progress.record.calls.len(),
            ..AskStats::default()
        });
    }

    /// The model's loading error, now that synthesis needs it.
    pub(super) fn need_llm(&mut self) -> Result<()> {
        match self.llm_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// 8. What synthesis reads: numbered sources when citing; a follow-up under
    ///    condense_plus_context is answered as the original message with the context
    ///    and the conversation in a chat prompt, every other question (the first of
    ///    a conversation goes straight through) as the standalone question with the
    ///    chosen mode and templates. Returns the nodes, the plan and the query.
    fn cite(
        &mut self,
        retrieval: &Retrieval,
        memory: &[Message],
        searched: &str,
    ) -> Result<(Vec<Node>, Plan, String)> {
        let settings = self.given.settings;
        let context_chat =
            self.given.turn.chat_mode == ChatMode::CondensePlusContext && !memory.is_empty();
        let mut nodes = synth_nodes(retrieval);
        self.optimize(&mut nodes, searched)?;
        let mut plan = self.given.plan.clone();
        plan.options.first_step = self.steps;
        if settings.cite_sources {
            let llm = self.llm();
            let count = |t: &str| match llm {
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
            self.progress.record.citations = citations.clone();
            (self.send)(AskEvent::Citations { citations })?;
            nodes = numbered_nodes;
            if !context_chat {
                plan.templates = chat::citation::templates();
            }
        }
        if !context_chat {
            return Ok((nodes, plan, searched.to_string()));
        }
        let system = if settings.cite_sources {
            chat::citation::CITE_SYSTEM_PROMPT
        } else {
            ""
        };
        // The conversation may take at most half the window in the answer's prompt,
        // so that the sources always fit beside it (LlamaIndex's limit, the window
        // less 256, would leave them no room in a long conversation).
        let history = match self.llm() {
            Some(l) => {
                let count = |t: &str| l.count_tokens(t);
                chat::memory::window(memory, l.context_window() / 2, &count)?
            }
            None => memory.to_vec(),
        };
        plan.templates = chat::condense::context_templates(&history, system);
        Ok((nodes, plan, self.given.turn.question.to_string()))
    }

    /// 9. Synthesis with the mode's synthesizer.
    pub(super) fn synthesize(
        &mut self,
        plan: &Plan,
        query: &str,
        nodes: &[Node],
    ) -> Result<String> {
        let synth_llm: &dyn Llm = self.llm.as_deref().unwrap_or(&NoLlm);
        let (send, progress) = (&mut *self.send, &mut *self.progress);
        let mut on_event = |ev: Event| -> Result<bool> {
            forward(ev, send, progress)?;
            Ok(true)
        };
        let synthesizer = plan
            .resolved
            .synthesizer(self.given.settings, plan.templates.clone());
        let response = synth::run(
            synthesizer.as_ref(),
            synth_llm,
            &plan.options,
            query,
            nodes,
            self.given.cancel,
            &mut on_event,
        )?;
        Ok(response.answer)
    }

    /// 9b. An answer that only says the question again (every sentence the support
    ///     check reads restates it), or none of whose sentences the sources bear out
    ///     while the passage that answers the question best is a table's row, is
    ///     asked for once more with the mode's question-answering template, over that
    ///     passage (the first quote; a row under its caption and header) alone: a
    ///     small model that echoes a question over four passages, or answers from the
    ///     row beside the right one, often answers it over the one row or sentence it
    ///     needs. The new answer is kept unless it restates the question too. Its
    ///     step is not streamed as the answer; the kept answer streams after the
    ///     first, whole, and the finished answer is it alone. (Not for citing answers, whose
    ///     templates read numbered sources, nor a follow-up answered with the
    ///     conversation.)
    fn answer_again(&mut self, plan: &Plan, searched: &str, answer: String) -> Result<String> {
        let Some(quote) = self.progress.record.quotes.first().cloned() else {
            return Ok(answer);
        };
        let Some(llm) = self.llm.clone() else {
            return Ok(answer);
        };
        let check = |a: &str, run: &Self| {
            let record = &run.progress.record;
            run.given
                .engine
                .support_for(searched, a, &record.sources, &record.citations)
        };
        let first = check(&answer, self);
        let row = crate::support::rows::is_row(quote.text.lines().last().unwrap_or(""));
        let why = if first.only_restates() {
            "The answer only restated the question: asked again over the passage that answers it best"
        } else if row && first.checked > 0 && first.supported == 0 {
            "No sentence of the answer is found in the sources: asked again over the table row that answers the question best"
        } else {
            return Ok(answer);
        };
        let restated = |a: &str, run: &Self| check(a, run).only_restates();
        let template = plan.templates.text_qa.clone();
        let again = self.llm_step(llm.as_ref(), usize::MAX, |ctx| {
            let prompt = ctx.format(
                &template,
                &[
                    ("context_str", quote.text.as_str()),
                    ("query_str", searched),
                ],
            );
            ctx.call(why, prompt, false, None)
        })?;
        let again = again.trim();
        if again.is_empty() || restated(again, self) {
            return Ok(answer);
        }
        // What streams cannot be taken back: the new answer streams after the first
        // (a terminal shows both); the finished answer is the new one alone.
        (self.send)(AskEvent::Token {
            step: self.steps,
            text: format!("\n\n{again}"),
            is_final: true,
        })?;
        Ok(again.to_string())
    }

    /// 10. Every sentence of the answer to `searched`, checked against the sources.
    fn check_support(&mut self, searched: &str, answer: &str) -> Result<()> {
        let record = &mut self.progress.record;
        let support =
            self.given
                .engine
                .support_for(searched, answer, &record.sources, &record.citations);
        record.support = Some(support.clone());
        (self.send)(AskEvent::Support { support })
    }

    /// The answer's stats line.
    pub(super) fn finish(&mut self) {
        let secs = self.t0.elapsed().as_secs_f64();
        let calls = &self.progress.record.calls;
        let gen_secs: f64 = calls.iter().map(|c| c.gen_secs).sum();
        let output_tokens: usize = calls.iter().map(|c| c.output_tokens).sum();
        let settings = self.given.settings;
        self.progress.record.stats = Some(AskStats {
            model: self.llm.as_ref().map(|l| {
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
            condense_secs: self.progress.condense_secs,
            rerank_secs: self.progress.rerank_secs,
            draft: crate::llm::speculative::DraftStats::sum(
                calls.iter().filter_map(|c| c.draft.as_ref()),
            ),
            cut_off_after: calls.last().filter(|c| c.cut_off).map(|c| c.output_tokens),
        });
    }
}

/// One question of a conversation: the message, the history before it, and how the
/// history is used.
pub(super) struct Turn<'a> {
    pub(super) question: &'a str,
    history: &'a [Message],
    chat_mode: ChatMode,
    pub(super) scope: &'a ResolvedScope,
    /// Whole documents, search, or by the question's kind.
    pub(super) route: super::RouteChoice,
}

/// The conversation before a question, as the chat engines' memory holds it: each
/// question and its finished answer (a stopped or failed answer is left out, with its
/// question); of a question asked again, its newest finished answer.
fn history_of(messages: &[conversations::Message]) -> Vec<Message> {
    let mut out = Vec::new();
    let mut pending: Option<&str> = None;
    let mut answered = false;
    for m in messages {
        match m.role {
            Role::User => {
                pending = Some(&m.content);
                answered = false;
            }
            Role::Assistant if AnswerRecord::status_of(m).is_none() => {
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
pub(super) struct Plan {
    pub(super) resolved: Resolved,
    pub(super) templates: Templates,
    pub(super) options: RunOptions,
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

/// What an ask has produced so far: the record kept in the conversation even when
/// it stops early, the answer text streamed so far, and the times and scores the
/// stats and the sources take.
#[derive(Default)]
pub(super) struct Progress {
    pub(super) record: AnswerRecord,
    /// Answer text streamed so far.
    partial: String,
    condense_secs: Option<f64>,
    rerank_secs: Option<f64>,
    rerank_scores: Option<Vec<f32>>,
}

/// Synthesis events as the UI sees them.
fn forward(
    ev: Event,
    send: &mut dyn FnMut(AskEvent) -> Result<()>,
    progress: &mut Progress,
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
                progress.partial.push_str(&text);
            }
            send(AskEvent::Token {
                step,
                text,
                is_final,
            })
        }
        Event::Read { .. } => Ok(()),
        Event::StepDone { call } => {
            progress.record.calls.push((*call).clone());
            send(AskEvent::StepDone { call: *call })
        }
        Event::Answer { text } => {
            progress.partial = text;
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
                kind: n.kind,
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

    fn msg(role: Role, content: &str, status: Option<&str>) -> conversations::Message {
        let mut extra = serde_json::Map::new();
        if let Some(s) = status {
            extra.insert("status".into(), serde_json::Value::String(s.into()));
        }
        conversations::Message {
            id: 0,
            role,
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
            msg(Role::User, "q1", None),
            msg(Role::Assistant, "a1", None),
            msg(Role::User, "q2", None),
            msg(Role::Assistant, "half an answ", Some("stopped")),
            msg(Role::User, "q3", None),
            msg(Role::Assistant, "", Some("error: model missing")),
            msg(Role::User, "q4", None),
            msg(Role::Assistant, "a4", None),
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
