//! [`GgufLlm`]: a GGUF model run by candle behind the [`Llm`] trait.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};

use super::arch::{Arch, Forward};
use super::chat::{ChatTemplate, Message};
use super::device::{Chosen, DeviceChoice};
use super::gguf::GgufFile;
use super::runtime::candle::CandleLlama;
use super::runtime::llama::{Llama, SeqCache};
use super::speculative::{self, Source};
use super::tokenizer::{Tokenizer, Utf8Stream};
use super::{BatchEvent, BatchSink, Cancel, Completion, GenParams, Llm, StopReason, TokenSink};
use crate::{Error, Result};

/// How to load a model.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Where to run: `auto` takes a compiled-in GPU that initializes, else the CPU.
    /// On the CPU, llama, Qwen2, Qwen3 and Gemma 3 run on Quire's own kernels; on a GPU on
    /// the candle forward pass ([`super::runtime::candle`]).
    pub device: DeviceChoice,
    /// Run llama, Qwen2, Qwen3 and Gemma 3 on the candle forward pass even on the CPU (tests
    /// compare it with the own kernels there).
    pub candle: bool,
    /// Requantize Q4_1 / Q5_0 / Q5_1 weights to Q8_0 at load, llama only. Off by
    /// default: Quire's own Q4_1 kernel is as fast, and requantized weights are not
    /// llama.cpp's, so greedy output would no longer follow llama.cpp's.
    pub requantize: bool,
    /// Wrap each prompt as one user message in the model's chat template (only for
    /// models that have one, or whose vocabulary has chat turn markers).
    pub chat: bool,
    /// Cap on the context window (the file's own length is used when smaller).
    pub max_context: usize,
}

/// The context window a model is loaded with when nothing caps it lower (the file's
/// own when smaller): the KV cache of a longer one costs memory most prompts never use.
pub const DEFAULT_MAX_CONTEXT: usize = 8192;

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            device: DeviceChoice::Cpu,
            candle: false,
            requantize: false,
            chat: true,
            max_context: DEFAULT_MAX_CONTEXT,
        }
    }
}

enum Net {
    Llama(Llama),
    /// llama, Qwen2, Gemma 3 on a candle device (the GPU path).
    Candle(CandleLlama),
}

impl Net {
    /// Logits of the last of `tokens`, run at positions `pos..`.
    fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<Tensor> {
        Ok(match self {
            Net::Llama(m) => m.forward(tokens, pos)?,
            Net::Candle(m) => m.forward(tokens, pos)?,
        })
    }

    /// The logits after each of `tokens` run at `pos..`, each row computed as a
    /// one-token step would be; `None` for a network without such a pass.
    fn verify(
        &mut self,
        tokens: &[u32],
        pos: usize,
        device: &Device,
    ) -> Option<Result<Vec<Tensor>>> {
        let Net::Llama(m) = self else {
            return None;
        };
        Some(m.verify(tokens, pos).map_err(Error::from).and_then(|rows| {
            rows.into_iter()
                .map(|l| {
                    let n = l.len();
                    Ok(Tensor::from_vec(l, n, device)?)
                })
                .collect()
        }))
    }
}

struct State {
    net: Net,
    /// Tokens whose keys and values are in the cache, in order.
    cached: Vec<u32>,
}

/// A GGUF model loaded for generation.
pub struct GgufLlm {
    path: PathBuf,
    arch: Arch,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    chat: bool,
    window: usize,
    device: Device,
    /// The device setting it was loaded for, and what it resolved to.
    chosen: Chosen,
    /// See [`GgufLlm::runtime`].
    runtime: String,
    state: Mutex<State>,
    /// What proposes tokens for greedy decoding to verify ([`speculative`]).
    draft: std::sync::RwLock<Option<Drafter>>,
    /// How many tokens each draft proposes a pass, learnt across completions: prompt
    /// lookup's, then a draft model's.
    lengths: Mutex<[speculative::Adaptive; 2]>,
}

/// A draft for speculative decoding.
#[derive(Clone)]
pub enum Drafter {
    /// A smaller model of the same vocabulary.
    Model(Arc<GgufLlm>),
    /// Tokens that followed the last few earlier in the prompt or the answer.
    Lookup,
    /// Prompt lookup where it has a proposal, else the smaller model.
    LookupThenModel(Arc<GgufLlm>),
}

impl std::fmt::Debug for GgufLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufLlm")
            .field("path", &self.path)
            .field("arch", &self.arch)
            .field("window", &self.window)
            .field("chat", &self.chat)
            .finish()
    }
}

/// Statistics of the prompt cache of the last completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefixStats {
    pub prompt_tokens: usize,
    pub reused_tokens: usize,
}

impl GgufLlm {
    /// Load the GGUF model at `path` with default options (CPU, chat wrapping).
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        Self::load_with(path, &LoadOptions::default())
    }

    /// Load the GGUF model at `path`.
    pub fn load_with(path: impl AsRef<Path>, opts: &LoadOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let g = GgufFile::open(&path)?;
        let arch = Arch::of(&g)?;
        let tokenizer = Tokenizer::from_gguf(&g)?;
        let source = g
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok())
            .cloned();
        let template = ChatTemplate::new(source, &tokenizer);
        let chat = opts.chat && template.is_chat_model();
        let file_ctx = g.context_length().unwrap_or(2048);
        let window = file_ctx.min(opts.max_context).max(16);
        let chosen = opts.device.resolve()?;
        let device = chosen.device.clone();
        let bad = |e: candle_core::Error| {
            Error::model_format(&path, format!("cannot load the {arch} model: {e}"))
        };
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let mut r = BufReader::new(file);
        let GgufFile { content, .. } = g;
        let net = match arch.forward() {
            Forward::Own(dec) if chosen.is_gpu() || opts.candle => Net::Candle(
                CandleLlama::from_gguf(&content, &mut r, dec, &device, window).map_err(bad)?,
            ),
            Forward::Own(dec) => Net::Llama(
                Llama::from_gguf(&content, &mut r, dec, &device, window, opts.requantize)
                    .map_err(bad)?,
            ),
        };
        let runtime = match net {
            Net::Llama(_) => "own CPU kernels".to_string(),
            _ => format!("candle on {}", chosen.name),
        };
        Ok(Self {
            path,
            arch,
            tokenizer,
            template,
            chat,
            window,
            device,
            chosen,
            runtime,
            state: Mutex::new(State {
                net,
                cached: Vec::new(),
            }),
            draft: std::sync::RwLock::new(None),
            lengths: Mutex::new(std::array::from_fn(|_| {
                speculative::Adaptive::new(speculative::DRAFT_TOKENS)
            })),
        })
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> &str {
        self.arch.name()
    }

    /// The architecture.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The device setting the model was loaded for and the device it runs on.
    pub fn device(&self) -> &Chosen {
        &self.chosen
    }

    /// Which forward pass runs the model: "own CPU kernels", "candle on cuda:0", ….
    pub fn runtime(&self) -> &str {
        &self.runtime
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The chat template.
    pub fn chat_template(&self) -> &ChatTemplate {
        &self.template
    }

    /// Whether prompts are wrapped as one user message.
    pub fn is_chat(&self) -> bool {
        self.chat
    }

    /// Turn chat wrapping on or off.
    pub fn set_chat(&mut self, chat: bool) {
        self.chat = chat;
    }

    /// The prompt text actually sent to the model for `prompt`.
    pub fn render_prompt(&self, prompt: &str) -> Result<String> {
        if self.chat {
            self.template.render(&[Message::user(prompt)])
        } else {
            Ok(prompt.to_string())
        }
    }

    /// Forget the KV cache (the next prompt is processed from scratch).
    /// Decode greedy completions speculatively with `draft` (or plainly with `None`).
    /// A draft model must share this model's vocabulary, token for token, and run on
    /// the own kernels as this one must.
    pub fn set_draft(&self, draft: Option<Drafter>) -> Result<()> {
        if draft.is_some() && !matches!(self.lock()?.net, Net::Llama(_)) {
            return Err(Error::Invalid(format!(
                "{} cannot decode speculatively: it does not run on the own kernels",
                file_name(&self.path)
            )));
        }
        if let Some(Drafter::Model(d) | Drafter::LookupThenModel(d)) = &draft {
            self.check_draft(d)?;
        }
        *self.draft.write().unwrap_or_else(|e| e.into_inner()) = draft;
        self.set_draft_lengths(speculative::Adaptive::new(speculative::DRAFT_TOKENS));
        Ok(())
    }

    /// How many tokens the draft proposes before each pass: chosen from what this
    /// model has measured ([`speculative::Adaptive::new`], what [`Self::set_draft`]
    /// starts from), or always the most ([`speculative::Adaptive::fixed`]).
    pub fn set_draft_lengths(&self, lengths: speculative::Adaptive) {
        *self.lengths.lock().unwrap_or_else(|e| e.into_inner()) = [lengths.clone(), lengths];
    }

    /// Why `d` cannot draft for this model, if it cannot.
    pub fn check_draft(&self, d: &GgufLlm) -> Result<()> {
        let why = |m: &str| {
            Err(Error::Invalid(format!(
                "{} cannot draft for {}: {m}",
                file_name(&d.path),
                file_name(&self.path)
            )))
        };
        if !speculative::same_vocabulary(&self.tokenizer, &d.tokenizer) {
            return why("another vocabulary");
        }
        Ok(())
    }

    /// The draft in use, if any.
    pub fn draft(&self) -> Option<Drafter> {
        self.draft.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Up to `k` greedy tokens after `seq` (this model as a draft), reusing the
    /// cached prefix; none when `seq` and the proposals would not fit the window.
    fn propose_greedy(&self, seq: &[u32], k: usize, cancel: &Cancel) -> Result<Vec<u32>> {
        if seq.len() + k >= self.window {
            return Ok(Vec::new());
        }
        let mut st = self.lock()?;
        let (mut logits, _) = self.prefill(&mut st, seq, cancel)?;
        let mut out = Vec::with_capacity(k);
        for i in 0..k {
            let t = greedy(&logits)?;
            out.push(t);
            if i + 1 == k || self.tokenizer.is_eog(t) {
                break;
            }
            let pos = st.cached.len();
            logits = st.net.forward(&[t], pos)?;
            st.cached.push(t);
        }
        Ok(out)
    }

    pub fn reset_cache(&self) -> Result<()> {
        let mut st = self.lock()?;
        st.cached.clear();
        match &mut st.net {
            Net::Llama(m) => m.clear_cache(),
            Net::Candle(m) => m.clear_cache(),
        }
        Ok(())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| Error::Invalid("the model is unusable after a panic".into()))
    }

    /// Greedy ids for prompt tokens (for parity tests): up to `n` generated ids.
    pub fn greedy_ids(&self, prompt_ids: &[u32], n: usize) -> Result<Vec<u32>> {
        let mut st = self.lock()?;
        let mut out = Vec::new();
        let mut logits = self.prefill(&mut st, prompt_ids, &Cancel::new())?.0;
        for _ in 0..n {
            let next = greedy(&logits)?;
            out.push(next);
            if self.tokenizer.is_eog(next) {
                break;
            }
            let pos = st.cached.len();
            logits = st.net.forward(&[next], pos)?;
            st.cached.push(next);
        }
        Ok(out)
    }

    /// Teacher-forced logits (for parity diagnostics): the logits after `prompt_ids`,
    /// then after each token of `forced` fed one at a time, as generation does.
    pub fn forced_logits(&self, prompt_ids: &[u32], forced: &[u32]) -> Result<Vec<Vec<f32>>> {
        let mut st = self.lock()?;
        st.cached.clear();
        let mut logits = self.prefill(&mut st, prompt_ids, &Cancel::new())?.0;
        let mut out = Vec::with_capacity(forced.len() + 1);
        for &next in forced {
            out.push(logits.to_vec1()?);
            let pos = st.cached.len();
            logits = st.net.forward(&[next], pos)?;
            st.cached.push(next);
        }
        out.push(logits.to_vec1()?);
        Ok(out)
    }

    /// The logits after each of `forced`, run after `prompt_ids` in one verification
    /// pass of speculative decoding (for tests: they are [`Self::forced_logits`]'s, bit
    /// for bit). `None` for a network without such a pass.
    pub fn verified_logits(
        &self,
        prompt_ids: &[u32],
        forced: &[u32],
    ) -> Result<Option<Vec<Vec<f32>>>> {
        let mut st = self.lock()?;
        st.cached.clear();
        self.prefill(&mut st, prompt_ids, &Cancel::new())?;
        let pos = st.cached.len();
        let rows = match st.net.verify(forced, pos, &self.device) {
            None => return Ok(None),
            Some(r) => r?,
        };
        st.cached.extend_from_slice(forced);
        Ok(Some(
            rows.iter()
                .map(|l| Ok(l.to_vec1()?))
                .collect::<Result<_>>()?,
        ))
    }

    /// The next-token logits after `ids`, from scratch (for diagnostics and tests).
    pub fn logits(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let mut st = self.lock()?;
        st.cached.clear();
        let (l, _) = self.prefill(&mut st, ids, &Cancel::new())?;
        Ok(l.to_vec1()?)
    }

    /// Timings for benchmarks: process `prompt_ids` (reusing a cached prefix when
    /// `reuse`), then generate exactly `n` greedy tokens (end tokens do not stop it).
    /// Returns (prompt seconds, generation seconds, tokens reused from the cache).
    pub fn timed_run(
        &self,
        prompt_ids: &[u32],
        n: usize,
        reuse: bool,
    ) -> Result<(f64, f64, usize)> {
        let mut st = self.lock()?;
        if !reuse {
            st.cached.clear();
        }
        self.check_room(prompt_ids, n)?;
        let t0 = Instant::now();
        let (mut logits, reused) = self.prefill(&mut st, prompt_ids, &Cancel::new())?;
        let pp = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        for _ in 0..n {
            let next = greedy(&logits)?;
            let pos = st.cached.len();
            logits = st.net.forward(&[next], pos)?;
            st.cached.push(next);
        }
        Ok((pp, t1.elapsed().as_secs_f64(), reused))
    }

    /// Timings for benchmarks of leaves written together (`complete_batch`): each of
    /// `prompts` read into its own cache, then exactly `n` greedy tokens for all of
    /// them at once, one pass a step (end tokens do not stop it). Returns (prompt
    /// seconds in all, generation seconds). Own CPU kernels only.
    pub fn timed_batch_run(&self, prompts: &[Vec<u32>], n: usize) -> Result<(f64, f64)> {
        let st = self.lock()?;
        let Net::Llama(m) = &st.net else {
            return Err(Error::Invalid(
                "a batch is timed on the own CPU kernels only".into(),
            ));
        };
        let mut caches = Vec::with_capacity(prompts.len());
        let mut next = Vec::with_capacity(prompts.len());
        let t0 = Instant::now();
        for t in prompts {
            self.check_prompt(t)?;
            self.check_room(t, n)?;
            let mut cache = m.fork_cache(0);
            let last = read_prompt(m, &mut cache, t, 0, &Cancel::new())?;
            next.push([argmax(&last)]);
            caches.push(cache);
        }
        let pp = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        for _ in 0..n {
            let mut batch: Vec<(&mut SeqCache, &[u32], usize)> = caches
                .iter_mut()
                .zip(&next)
                .map(|(c, id)| {
                    let pos = c.len();
                    (c, id.as_slice(), pos)
                })
                .collect();
            let out = m.forward_multi(&mut batch)?;
            for (id, l) in next.iter_mut().zip(out) {
                *id = [argmax(&l)];
            }
        }
        Ok((pp, t1.elapsed().as_secs_f64()))
    }

    /// `tokens` and `n` generated after them must fit the window.
    fn check_room(&self, tokens: &[u32], n: usize) -> Result<()> {
        if tokens.len() + n >= self.window {
            return Err(Error::ContextOverflow {
                needed: tokens.len() + n,
                window: self.window,
            });
        }
        Ok(())
    }

    /// A prompt must have a token and leave room for one more in the window.
    fn check_prompt(&self, tokens: &[u32]) -> Result<()> {
        if tokens.is_empty() {
            return Err(Error::Invalid("empty prompt".into()));
        }
        if tokens.len() >= self.window {
            return Err(Error::ContextOverflow {
                needed: tokens.len() + 1,
                window: self.window,
            });
        }
        Ok(())
    }

    /// Process `tokens` into the cache, reusing a shared prefix; returns the logits
    /// of the last token and how many tokens were reused.
    fn prefill(&self, st: &mut State, tokens: &[u32], cancel: &Cancel) -> Result<(Tensor, usize)> {
        self.check_prompt(tokens)?;
        // Both passes' KV caches can be truncated: a shared prefix is reused.
        let common = reusable_prefix(&st.cached, tokens);
        st.cached.truncate(common);
        const CHUNK: usize = 512;
        let mut pos = common;
        let mut logits = None;
        for chunk in tokens[common..].chunks(CHUNK) {
            cancel.check()?;
            let r = st.net.forward(chunk, pos);
            let l = match r {
                Ok(l) => l,
                Err(e) => {
                    st.cached.clear();
                    return Err(e);
                }
            };
            st.cached.extend_from_slice(chunk);
            pos += chunk.len();
            logits = Some(l);
        }
        let logits = logits.ok_or_else(|| Error::Invalid("empty prompt".into()))?;
        Ok((logits, common))
    }

    /// Complete and report how much of the prompt came from the cache.
    pub fn complete_stats(
        &self,
        prompt: &str,
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<(Completion, PrefixStats)> {
        let text = self.render_prompt(prompt)?;
        self.complete_raw(&text, params, cancel, sink)
    }

    /// Complete `text` as is (no chat wrapping; special tokens in it are parsed).
    pub fn complete_raw(
        &self,
        text: &str,
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<(Completion, PrefixStats)> {
        let tokens = self.tokenizer.encode_prompt(text)?;
        let mut st = self.lock()?;
        let t0 = Instant::now();
        let (mut logits, reused) = self.prefill(&mut st, &tokens, cancel)?;
        let prompt_secs = t0.elapsed().as_secs_f64();
        let stats = PrefixStats {
            prompt_tokens: tokens.len(),
            reused_tokens: reused,
        };
        let t1 = Instant::now();
        let mut dec = Decoder::new(self, params, &tokens)?;
        let drafter = self
            .draft()
            .filter(|_| params.temperature <= 0.0 && params.constraint.is_none());
        let mut draft_stats = None;
        if let Some(drafter) = drafter {
            if let Some(first) = dec.step(logits, sink)? {
                let mut target = Verifier {
                    st: &mut st,
                    device: &self.device,
                };
                let mut choose = |l: Tensor| dec.step(l, sink);
                let lookup = speculative::PromptLookup;
                let mut lengths = self.lengths.lock().unwrap_or_else(|e| e.into_inner());
                let [by_lookup, by_model] = &mut *lengths;
                let mut sources = match &drafter {
                    Drafter::Model(m) => vec![Source {
                        draft: m.as_ref(),
                        lengths: by_model,
                    }],
                    Drafter::Lookup => vec![Source {
                        draft: &lookup,
                        lengths: by_lookup,
                    }],
                    Drafter::LookupThenModel(m) => vec![
                        Source {
                            draft: &lookup,
                            lengths: by_lookup,
                        },
                        Source {
                            draft: m.as_ref(),
                            lengths: by_model,
                        },
                    ],
                };
                draft_stats = Some(speculative::decode_from(
                    &mut target,
                    &mut sources,
                    tokens.clone(),
                    first,
                    &mut choose,
                    cancel,
                )?);
            }
        } else {
            while let Some(next) = dec.step(logits, sink)? {
                cancel.check()?;
                let pos = st.cached.len();
                logits = match st.net.forward(&[next], pos) {
                    Ok(l) => l,
                    Err(e) => {
                        st.cached.clear();
                        return Err(e);
                    }
                };
                st.cached.push(next);
            }
        }
        let (text, n_out, stop) = dec.finish(sink)?;
        Ok((
            Completion {
                text,
                prompt_tokens: tokens.len(),
                output_tokens: n_out,
                stop,
                prompt_secs,
                gen_secs: t1.elapsed().as_secs_f64(),
                draft: draft_stats,
            },
            stats,
        ))
    }
}

/// The target side of speculative decoding: the model's state while it decodes.
struct Verifier<'a, 'b> {
    st: &'a mut std::sync::MutexGuard<'b, State>,
    device: &'a Device,
}

impl speculative::Target for Verifier<'_, '_> {
    fn cached(&self) -> usize {
        self.st.cached.len()
    }

    fn verify(&mut self, tokens: &[u32]) -> Result<Vec<Tensor>> {
        let pos = self.st.cached.len();
        match self.st.net.verify(tokens, pos, self.device) {
            Some(Ok(rows)) => {
                self.st.cached.extend_from_slice(tokens);
                Ok(rows)
            }
            Some(Err(e)) => {
                self.st.cached.clear();
                Err(e)
            }
            // Another network: one token at a time (no proposal is verified).
            None => {
                let l = self.st.net.forward(&tokens[..1], pos)?;
                self.st.cached.push(tokens[0]);
                Ok(vec![l])
            }
        }
    }

    fn keep(&mut self, len: usize) {
        self.st.cached.truncate(len);
        if let Net::Llama(m) = &mut self.st.net {
            m.truncate_cache(len);
        }
    }
}

impl speculative::Draft for GgufLlm {
    fn propose(&self, seq: &[u32], k: usize, cancel: &Cancel) -> Result<Vec<u32>> {
        self.propose_greedy(seq, k, cancel)
    }

    fn name(&self) -> String {
        file_name(&self.path)
    }

    fn lag(&self, seq: &[u32]) -> usize {
        match self.lock() {
            Ok(st) => seq.len() - reusable_prefix(&st.cached, seq),
            Err(_) => seq.len(),
        }
    }
}

/// The file name of `p` (empty without one).
pub(super) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One sequence's decoding: sampling (with repeat penalty and an optional output
/// constraint), end tokens, stop strings, the token budget and streaming.
struct Decoder<'a> {
    tokenizer: &'a Tokenizer,
    params: &'a GenParams,
    sampler: LogitsProcessor,
    constraint: Option<super::constrain::Constrainer>,
    out: Output<'a>,
    history: Vec<u32>,
    n_out: usize,
    max: usize,
    stop: StopReason,
}

impl<'a> Decoder<'a> {
    fn new(llm: &'a GgufLlm, params: &'a GenParams, prompt: &[u32]) -> Result<Self> {
        let room = llm.window.saturating_sub(prompt.len());
        let max = params.max_tokens.min(room);
        let constraint = match params.constraint {
            Some(c) => Some(super::constrain::Constrainer::new(c, &llm.tokenizer, max)?),
            None => None,
        };
        Ok(Self {
            tokenizer: &llm.tokenizer,
            params,
            sampler: sampler(params),
            constraint,
            out: Output::new(&params.stop),
            history: prompt.to_vec(),
            n_out: 0,
            max,
            stop: StopReason::MaxTokens,
        })
    }

    /// Choose the next token from `logits` and stream its text; returns the token
    /// to run next, or `None` when generation is over.
    fn step(&mut self, logits: Tensor, sink: &mut TokenSink<'_>) -> Result<Option<u32>> {
        if self.n_out >= self.max {
            return Ok(None);
        }
        let p = self.params;
        let mut l = logits;
        if p.repeat_penalty != 1.0 && p.repeat_last_n > 0 {
            let start = self.history.len().saturating_sub(p.repeat_last_n);
            l = candle_transformers::utils::apply_repeat_penalty(
                &l,
                p.repeat_penalty,
                &self.history[start..],
            )?;
        }
        let next = match &mut self.constraint {
            Some(c) => c.next(&l, &mut self.sampler)?,
            // (Greedy sampling draws no random number: the same choice either way.)
            None if p.temperature <= 0.0 => Some(greedy(&l)?),
            None => Some(self.sampler.sample(&l)?),
        };
        let Some(next) = next else {
            self.stop = StopReason::EndToken;
            return Ok(None);
        };
        self.n_out += 1;
        self.history.push(next);
        if self.tokenizer.is_eog(next) {
            self.stop = StopReason::EndToken;
            return Ok(None);
        }
        match self.out.push(&self.tokenizer.token_bytes(next), sink)? {
            Flow::Go => {}
            Flow::StopString => {
                self.stop = StopReason::StopString;
                return Ok(None);
            }
            Flow::Sink => {
                self.stop = StopReason::Sink;
                return Ok(None);
            }
        }
        if self.constraint.as_ref().is_some_and(|c| c.done()) {
            self.stop = StopReason::EndToken;
            return Ok(None);
        }
        if self.n_out >= self.max {
            return Ok(None);
        }
        Ok(Some(next))
    }

    /// Flush held-back text; returns the text, tokens generated and why it stopped.
    fn finish(mut self, sink: &mut TokenSink<'_>) -> Result<(String, usize, StopReason)> {
        if self.stop != StopReason::StopString && self.stop != StopReason::Sink {
            self.out.finish(sink)?;
        }
        Ok((self.out.text, self.n_out, self.stop))
    }
}

impl GgufLlm {
    /// [`Llm::complete_batch`] on the llama forward: each prompt is processed into
    /// its own cache (forked from the shared prefix of the model's own sequence),
    /// then every generation step runs all unfinished sequences as one batch.
    /// `None` when this model cannot batch (another architecture, a constrained
    /// output), and the caller runs the prompts one by one.
    fn complete_batch_llama(
        &self,
        prompts: &[String],
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut BatchSink<'_>,
    ) -> Result<Option<Vec<Completion>>> {
        if params.constraint.is_some() || prompts.len() < 2 {
            return Ok(None);
        }
        let mut tokens = Vec::with_capacity(prompts.len());
        for p in prompts {
            let t = self.tokenizer.encode_prompt(&self.render_prompt(p)?)?;
            self.check_prompt(&t)?;
            tokens.push(t);
        }
        let st = self.lock()?;
        let Net::Llama(m) = &st.net else {
            return Ok(None);
        };
        // The prefix all the prompts share (the chat template's head and the prompt
        // template's, ~34 tokens of a leaf's), read once: as far as the model's own
        // cache holds it, from there; the rest into a cache each prompt forks from.
        // (Read one by one, each prompt would reuse it from the one before.)
        let t0 = Instant::now();
        let shared = tokens
            .iter()
            .map(|t| reusable_prefix(&tokens[0], t))
            .min()
            .unwrap_or(0);
        let own = reusable_prefix(&st.cached, &tokens[0]).min(shared);
        let base = if shared > own {
            let mut base = m.fork_cache(own);
            read_prompt(m, &mut base, &tokens[0][..shared], own, cancel)?;
            Some(base)
        } else {
            None
        };
        let mut base_secs = t0.elapsed().as_secs_f64();
        // Prompts, one at a time (each is already a batch of rows).
        let mut caches: Vec<SeqCache> = Vec::with_capacity(prompts.len());
        let mut logits = Vec::with_capacity(prompts.len());
        let mut prompt_secs = Vec::with_capacity(prompts.len());
        for (i, t) in tokens.iter().enumerate() {
            let t0 = Instant::now();
            // From the model's own cache where it holds more of this prompt.
            let held = reusable_prefix(&st.cached, t);
            let (mut cache, common) = match &base {
                Some(b) if held <= shared => (b.fork(shared), shared),
                _ => (m.fork_cache(held), held),
            };
            let last = read_prompt(m, &mut cache, t, common, cancel)?;
            caches.push(cache);
            logits.push(Some(Tensor::from_vec(
                last.clone(),
                last.len(),
                &self.device,
            )?));
            prompt_secs.push(t0.elapsed().as_secs_f64() + std::mem::take(&mut base_secs));
            // Stopping is the cancel's to say (checked before the next chunk).
            sink(BatchEvent::Read(i))?;
        }
        // Generation: every step feeds the unfinished sequences together.
        let t1 = Instant::now();
        let mut decs = tokens
            .iter()
            .map(|t| Decoder::new(self, params, t))
            .collect::<Result<Vec<_>>>()?;
        let mut gen_secs = vec![0.0; prompts.len()];
        loop {
            cancel.check()?;
            let mut feed: Vec<(usize, u32)> = Vec::new();
            for (i, dec) in decs.iter_mut().enumerate() {
                let Some(l) = logits[i].take() else { continue };
                match dec.step(l, &mut |s: &str| sink(BatchEvent::Text(i, s)))? {
                    Some(next) => feed.push((i, next)),
                    None => gen_secs[i] = t1.elapsed().as_secs_f64(),
                }
            }
            if feed.is_empty() {
                break;
            }
            // `feed` is in sequence order, so one pass pairs caches with tokens.
            let ids: Vec<[u32; 1]> = feed.iter().map(|&(_, t)| [t]).collect();
            let mut next = feed.iter().map(|f| f.0).zip(&ids).peekable();
            let mut batch: Vec<(&mut SeqCache, &[u32], usize)> = Vec::with_capacity(feed.len());
            for (i, c) in caches.iter_mut().enumerate() {
                if let Some((_, id)) = next.next_if(|(j, _)| *j == i) {
                    let pos = c.len();
                    batch.push((c, id.as_slice(), pos));
                }
            }
            let out = m.forward_multi(&mut batch)?;
            for (&(i, _), l) in feed.iter().zip(out) {
                let n = l.len();
                logits[i] = Some(Tensor::from_vec(l, n, &self.device)?);
            }
        }
        let mut out = Vec::with_capacity(prompts.len());
        for (i, dec) in decs.into_iter().enumerate() {
            let (text, output_tokens, stop) =
                dec.finish(&mut |s: &str| sink(BatchEvent::Text(i, s)))?;
            out.push(Completion {
                text,
                prompt_tokens: tokens[i].len(),
                output_tokens,
                stop,
                prompt_secs: prompt_secs[i],
                gen_secs: gen_secs[i],
                draft: None,
            });
        }
        Ok(Some(out))
    }
}

/// `tokens[from..]` into `cache` (which holds the first `from`) in pieces of 512, each
/// one sequence's batch; the logits of the last token. Cancel is checked before each
/// piece.
fn read_prompt(
    m: &Llama,
    cache: &mut SeqCache,
    tokens: &[u32],
    from: usize,
    cancel: &Cancel,
) -> Result<Vec<f32>> {
    let mut pos = from;
    let mut last = Vec::new();
    for chunk in tokens[from..].chunks(512) {
        cancel.check()?;
        last = m
            .forward_multi(&mut [(cache, chunk, pos)])?
            .pop()
            .unwrap_or_default();
        pos += chunk.len();
    }
    Ok(last)
}

/// How many leading tokens of `tokens` (non-empty) can come from a cache holding
/// `cached`: the shared prefix, less the last token, which must run again to give
/// its logits.
fn reusable_prefix(cached: &[u32], tokens: &[u32]) -> usize {
    cached
        .iter()
        .zip(tokens)
        .take_while(|(a, b)| a == b)
        .count()
        .min(tokens.len().saturating_sub(1))
}

/// The greedy choice: the index of the largest logit, the first one on ties (as
/// candle's `argmax`, which is a scalar loop taking ~0.15 ms on a 262144-entry
/// vocabulary; this one is vectorized). NaNs are never chosen.
fn greedy(logits: &Tensor) -> Result<u32> {
    let (storage, layout) = logits.storage_and_layout();
    let v = match (&*storage, layout.contiguous_offsets()) {
        (candle_core::Storage::Cpu(cpu), Some((start, end))) if logits.rank() == 1 => {
            &cpu.as_slice::<f32>()?[start..end]
        }
        _ => {
            drop(storage);
            return Ok(logits.argmax(0)?.to_scalar::<u32>()?);
        }
    };
    Ok(argmax(v))
}

/// See [`greedy`].
fn argmax(v: &[f32]) -> u32 {
    const L: usize = 16;
    let mut m = [f32::NEG_INFINITY; L];
    let chunks = v.chunks_exact(L);
    let tail = chunks.remainder();
    for c in chunks {
        for (m, &x) in m.iter_mut().zip(c) {
            *m = if x > *m { x } else { *m };
        }
    }
    let max = m
        .iter()
        .chain(tail)
        .fold(f32::NEG_INFINITY, |a, &x| if x > a { x } else { a });
    v.iter().position(|&x| x == max).unwrap_or(0) as u32
}

fn sampler(p: &GenParams) -> LogitsProcessor {
    let s = if p.temperature <= 0.0 {
        Sampling::ArgMax
    } else {
        let temperature = p.temperature;
        match (p.top_k, p.top_p) {
            (Some(k), Some(pp)) => Sampling::TopKThenTopP {
                k,
                p: pp,
                temperature,
            },
            (Some(k), None) => Sampling::TopK { k, temperature },
            (None, Some(pp)) => Sampling::TopP { p: pp, temperature },
            (None, None) => Sampling::All { temperature },
        }
    };
    LogitsProcessor::from_sampling(p.seed, s)
}

enum Flow {
    Go,
    StopString,
    Sink,
}

/// Generated text: UTF-8 assembly, stop strings held back until they cannot match.
struct Output<'s> {
    utf8: Utf8Stream,
    stops: &'s [String],
    /// Everything decoded so far (emitted and held back).
    text: String,
    emitted: usize,
}

impl<'s> Output<'s> {
    fn new(stops: &'s [String]) -> Self {
        Self {
            utf8: Utf8Stream::default(),
            stops,
            text: String::new(),
            emitted: 0,
        }
    }

    fn push(&mut self, bytes: &[u8], sink: &mut TokenSink<'_>) -> Result<Flow> {
        let piece = self.utf8.push(bytes);
        if piece.is_empty() {
            return Ok(Flow::Go);
        }
        self.text.push_str(&piece);
        // A stop string anywhere in the not-yet-emitted text (it may begin earlier).
        let longest = self.stops.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut from = self.emitted.saturating_sub(longest);
        while !self.text.is_char_boundary(from) {
            from -= 1;
        }
        let hit = self
            .stops
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| self.text[from..].find(s.as_str()).map(|p| from + p))
            .min();
        if let Some(at) = hit {
            let at = at.max(self.emitted);
            self.text.truncate(at);
            self.emit(at, sink)?;
            return Ok(Flow::StopString);
        }
        // Hold back the longest tail that could still start a stop string.
        let mut keep_from = self.text.len();
        for (i, _) in self.text[self.emitted..].char_indices() {
            let at = self.emitted + i;
            let tail = &self.text[at..];
            if self.stops.iter().any(|s| s.starts_with(tail)) {
                keep_from = at;
                break;
            }
        }
        if self.emit(keep_from, sink)? {
            Ok(Flow::Go)
        } else {
            Ok(Flow::Sink)
        }
    }

    /// Send text up to byte `to`; returns what the sink said.
    fn emit(&mut self, to: usize, sink: &mut TokenSink<'_>) -> Result<bool> {
        if to <= self.emitted {
            return Ok(true);
        }
        let s = &self.text[self.emitted..to];
        self.emitted = to;
        sink(s)
    }

    fn finish(&mut self, sink: &mut TokenSink<'_>) -> Result<()> {
        let rest = self.utf8.finish();
        self.text.push_str(&rest);
        let end = self.text.len();
        self.emit(end, sink)?;
        Ok(())
    }
}

impl Llm for GgufLlm {
    fn context_window(&self) -> usize {
        self.window
    }

    fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(self.tokenizer.encode(text, true)?.len())
    }

    fn complete(
        &self,
        prompt: &str,
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<Completion> {
        self.complete_stats(prompt, params, cancel, sink)
            .map(|c| c.0)
    }

    fn chat(
        &self,
        messages: &[Message],
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<Completion> {
        if !self.chat {
            return self.complete(
                &super::chat::messages_to_prompt(messages),
                params,
                cancel,
                sink,
            );
        }
        let text = self.template.render(messages)?;
        self.complete_raw(&text, params, cancel, sink).map(|c| c.0)
    }

    fn render_text(&self, prompt: &str) -> Result<String> {
        self.render_prompt(prompt)
    }

    fn render_messages(&self, messages: &[Message]) -> Result<String> {
        if self.chat {
            self.template.render(messages)
        } else {
            Ok(super::chat::messages_to_prompt(messages))
        }
    }

    fn complete_batch(
        &self,
        prompts: &[String],
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut BatchSink<'_>,
    ) -> Result<Vec<Completion>> {
        if let Some(out) = self.complete_batch_llama(prompts, params, cancel, sink)? {
            return Ok(out);
        }
        super::complete_each(self, prompts, params, cancel, sink)
    }
}

/// Read only the header of a GGUF file (re-exported for the CLI).
pub fn header(path: &Path) -> Result<gguf_file::Content> {
    GgufFile::open(path).map(|g| g.content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_is_candles_argmax() -> Result<()> {
        let mut s = 7u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 40) as f32 / 1000.0 - 8000.0
        };
        for len in [1usize, 5, 16, 17, 100, 262_147] {
            let mut v: Vec<f32> = (0..len).map(|_| next()).collect();
            let t = Tensor::new(v.as_slice(), &Device::Cpu)?;
            let want = t.argmax(0)?.to_scalar::<u32>()?;
            assert_eq!(greedy(&t)?, want, "len {len}");
            // Ties: the first of the largest, wherever the two sit in their chunks.
            let at = want as usize;
            if len > 3 {
                v[len - 1] = v[at];
                v[1] = v[at];
                let t = Tensor::new(v.as_slice(), &Device::Cpu)?;
                assert_eq!(greedy(&t)?, 1.min(want), "len {len}");
            }
        }
        let t = Tensor::new(&[1.0f32, f32::NAN, 3.0, 2.0], &Device::Cpu)?;
        assert_eq!(greedy(&t)?, 2);
        // A slice of a larger tensor (offset into its storage).
        let t = Tensor::new(&[9.0f32, 1.0, 4.0, 2.0], &Device::Cpu)?.narrow(0, 1, 3)?;
        assert_eq!(greedy(&t)?, 1);
        Ok(())
    }
}
