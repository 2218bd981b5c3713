//! `quire bench llm`: prompt-processing and generation speed of a GGUF model, side by
//! side with llama.cpp's figures for the same file, plus the KV-cache prefix reuse
//! saving and the time to the first generated token.
//!
//! With `busy` set (`--load N`), the speeds are measured quiet, then again beside N
//! busy processes ([`crate::load::Busy`]); with `peer` (a Python with
//! llama-cpp-python), llama.cpp is measured in the same run under the same load by
//! `scripts/llamacpp_speed.py`, instead of read from a recorded `speed.json`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use quire::llm::calibrate::prompt_ids;
use quire::llm::chat::Message;
use quire::llm::{Cancel, GenParams, GgufLlm, Llm, LoadOptions};
use quire::{Error, Result};

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Tokens in the prompt-processing run.
    pub prompt_tokens: usize,
    /// Tokens generated in the generation run.
    pub gen_tokens: usize,
    /// Tokens of prompt before the generation run (16: a short prompt; a summary's
    /// leaf or a long answer's prompt generates thousands of tokens deep, where each
    /// token attends to every one before it).
    pub gen_depth: usize,
    /// Sequences generating together in the batch run (1: none).
    pub batch: usize,
    /// Runs per figure; the median is reported.
    pub runs: usize,
    /// llama.cpp's `speed.json` for the same file, when known.
    pub reference: Option<PathBuf>,
    /// How to load the model.
    pub load: LoadOptions,
    /// Busy processes beside the loaded measurement (0: quiet only).
    pub busy: usize,
    /// A Python with llama-cpp-python: measure llama.cpp here, under the same load.
    pub peer: Option<PathBuf>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            prompt_tokens: 512,
            gen_tokens: 128,
            gen_depth: 16,
            batch: 1,
            runs: 3,
            reference: None,
            load: LoadOptions::default(),
            busy: 0,
            peer: None,
        }
    }
}

/// The figures of one `quire bench llm` run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LlmBench {
    pub model: String,
    pub threads: usize,
    pub requantize: bool,
    pub load_secs: f64,
    pub prompt_tokens: usize,
    pub gen_tokens: usize,
    /// Prompt tokens before the generated ones.
    pub gen_depth: usize,
    pub runs: usize,
    /// Median prompt-processing speed, tokens/s.
    pub pp_tok_s: f64,
    /// Median generation speed, tokens/s.
    pub gen_tok_s: f64,
    /// `--batch N`: sequences generating together, and the median seconds of one
    /// step for all of them (N tokens).
    pub batch: usize,
    pub batch_step_secs: Option<f64>,
    /// llama.cpp's figures for the same file (from `speed.json`), if found.
    pub llamacpp_pp_tok_s: Option<f64>,
    pub llamacpp_gen_tok_s: Option<f64>,
    /// Quire / llama.cpp.
    pub pp_ratio: Option<f64>,
    pub gen_ratio: Option<f64>,
    /// A second prompt sharing its head with the first: seconds with and without the
    /// KV cache of the first, and how many tokens were reused.
    pub prefix_shared_tokens: usize,
    pub prefix_total_tokens: usize,
    pub prefix_cold_secs: f64,
    pub prefix_warm_secs: f64,
    /// Short chat prompt: seconds from a loaded model to the first streamed text.
    pub first_token_secs: f64,
    /// Busy processes beside the speed figures above (0: a quiet machine).
    pub busy: usize,
    /// With `busy`: the quiet figures of the same run, and loaded / quiet.
    pub quiet_pp_tok_s: Option<f64>,
    pub quiet_gen_tok_s: Option<f64>,
    pub pp_kept: Option<f64>,
    pub gen_kept: Option<f64>,
    /// llama.cpp's quiet figures of the same run (with `busy` and a peer).
    pub llamacpp_quiet_pp_tok_s: Option<f64>,
    pub llamacpp_quiet_gen_tok_s: Option<f64>,
    /// Where llama.cpp's figures come from: a `speed.json`, or a run here.
    pub llamacpp_source: Option<String>,
    /// The thread pool after the run: its width and how often it narrowed/widened.
    pub pool: quire::cpu::pool::PoolState,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Workers of the widest pool the forward pass and the embedder use (`cpu::pool`).
pub fn threads() -> usize {
    quire::cpu::pool::max_threads()
}

/// Where llama.cpp's `speed.json` for `model` is: `$QUIRE_SHARED` or `../shared`.
pub fn default_reference(model: &Path) -> Option<PathBuf> {
    let stem = model.file_stem()?.to_str()?;
    let p = crate::shared()
        .join("reference/llamacpp")
        .join(stem)
        .join("speed.json");
    p.exists().then_some(p)
}

fn read_reference(p: &Path) -> Result<(Option<f64>, Option<f64>)> {
    let text = std::fs::read_to_string(p).map_err(|e| Error::io(p, e))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::Invalid(format!("{}: {e}", p.display())))?;
    Ok((
        v["prompt_tokens_per_s_median"].as_f64(),
        v["gen_tokens_per_s_median"].as_f64(),
    ))
}

/// Run the benchmark on the model at `path`.
pub fn bench(path: &Path, opts: &BenchOptions) -> Result<LlmBench> {
    let t = Instant::now();
    let llm = GgufLlm::load_with(path, &opts.load)?;
    let load_secs = t.elapsed().as_secs_f64();
    let runs = opts.runs.max(1);

    // Warm-up (first-touch of weights, allocator).
    let warm = prompt_ids(&llm, 32)?;
    llm.timed_run(&warm, 4, false)?;

    let ids = prompt_ids(&llm, opts.prompt_tokens)?;
    let gen_ids = prompt_ids(&llm, opts.gen_depth.max(1))?;
    let speeds = || -> Result<(f64, f64)> {
        let mut pp = Vec::new();
        let mut gen = Vec::new();
        for _ in 0..runs {
            let (p, _, _) = llm.timed_run(&ids, 0, false)?;
            pp.push(ids.len() as f64 / p);
            // Generation after `gen_depth` prompt tokens, exactly gen_tokens tokens.
            let (_, g, _) = llm.timed_run(&gen_ids, opts.gen_tokens, false)?;
            gen.push(opts.gen_tokens as f64 / g);
        }
        Ok((median(pp), median(gen)))
    };
    let peer = |what: &str| -> Result<Option<(f64, f64)>> {
        match &opts.peer {
            Some(py) => {
                eprintln!("llama.cpp ({what}) ...");
                run_peer(py, path, opts.prompt_tokens, opts.gen_depth).map(|r| Some((r.0, r.1)))
            }
            None => Ok(None),
        }
    };
    let (quiet, quiet_peer) = if opts.busy > 0 {
        (Some(speeds()?), peer("quiet")?)
    } else {
        (None, None)
    };
    let ((pp_tok_s, gen_tok_s), loaded_peer) = {
        let _busy = crate::load::Busy::start(opts.busy)?;
        let ours = speeds()?;
        let what = format!("beside {} busy processes", opts.busy);
        (ours, peer(&what)?)
    };

    // Several sequences generating together, each `gen_depth` deep (distinct
    // prompts: each a rotation of the same tokens).
    let batch = if opts.batch > 1 {
        let prompts: Vec<Vec<u32>> = (0..opts.batch)
            .map(|i| {
                let mut p = gen_ids.clone();
                let n = p.len().max(1);
                p.rotate_left(i % n);
                p
            })
            .collect();
        let mut steps = Vec::new();
        for _ in 0..runs {
            let (_, g) = llm.timed_batch_run(&prompts, opts.gen_tokens)?;
            steps.push(g / opts.gen_tokens.max(1) as f64);
        }
        Some(median(steps))
    } else {
        None
    };

    // Prefix reuse: a second prompt sharing 3/4 of the first one's tokens.
    let total = opts
        .prompt_tokens
        .min(llm.context_window().saturating_sub(8));
    let shared = total * 3 / 4;
    let first = prompt_ids(&llm, total)?;
    let mut second = first[..shared].to_vec();
    let tail = llm
        .tokenizer()
        .encode(" A different question follows here.", false)?;
    while second.len() < total {
        second.extend(tail.iter().take(total - second.len()));
    }
    let (cold, _, _) = llm.timed_run(&second, 0, false)?;
    llm.timed_run(&first, 0, false)?;
    let (warm_secs, _, reused) = llm.timed_run(&second, 0, true)?;

    // Time to first token on a short chat prompt.
    llm.reset_cache()?;
    let t = Instant::now();
    let mut first_at = None;
    let params = GenParams {
        max_tokens: 4,
        ..GenParams::default()
    };
    let chat = llm
        .chat_template()
        .render(&[Message::user("What is the capital of France?")])?;
    llm.complete_raw(&chat, &params, &Cancel::new(), &mut |_s: &str| {
        first_at.get_or_insert_with(|| t.elapsed().as_secs_f64());
        Ok(true)
    })?;
    let first_token_secs = first_at.unwrap_or_else(|| t.elapsed().as_secs_f64());

    // A recorded speed.json is a quiet figure: beside it only a quiet run.
    let reference = opts.reference.clone().or_else(|| default_reference(path));
    let ((rpp, rgen), source) = match (loaded_peer, &reference) {
        (Some((p, g)), _) => (
            (Some(p), Some(g)),
            Some("llama-cpp-python, run here".to_string()),
        ),
        (None, Some(p)) if opts.busy == 0 => (read_reference(p)?, Some(p.display().to_string())),
        _ => ((None, None), None),
    };
    Ok(LlmBench {
        model: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        threads: threads(),
        requantize: opts.load.requantize,
        load_secs,
        prompt_tokens: ids.len(),
        gen_tokens: opts.gen_tokens,
        gen_depth: gen_ids.len(),
        runs,
        pp_tok_s,
        gen_tok_s,
        batch: opts.batch,
        batch_step_secs: batch,
        llamacpp_pp_tok_s: rpp,
        llamacpp_gen_tok_s: rgen,
        pp_ratio: rpp.map(|r| pp_tok_s / r),
        gen_ratio: rgen.map(|r| gen_tok_s / r),
        prefix_shared_tokens: reused,
        prefix_total_tokens: total,
        prefix_cold_secs: cold,
        prefix_warm_secs: warm_secs,
        first_token_secs,
        busy: opts.busy,
        quiet_pp_tok_s: quiet.map(|q| q.0),
        quiet_gen_tok_s: quiet.map(|q| q.1),
        pp_kept: quiet.map(|q| pp_tok_s / q.0),
        gen_kept: quiet.map(|q| gen_tok_s / q.1),
        llamacpp_quiet_pp_tok_s: quiet_peer.map(|q| q.0),
        llamacpp_quiet_gen_tok_s: quiet_peer.map(|q| q.1),
        llamacpp_source: source,
        pool: quire::cpu::pool::state(),
    })
}

/// llama.cpp's (prompt, generation) tokens/s on `model` by `scripts/llamacpp_speed.py`
/// in `python` (which has llama-cpp-python), with a prompt of `prompt_tokens` and
/// generation after `gen_depth` prompt tokens, under whatever load runs now.
pub fn run_peer(
    python: &Path,
    model: &Path,
    prompt_tokens: usize,
    gen_depth: usize,
) -> Result<(f64, f64)> {
    let v = crate::load::run_peer_script_with(
        python,
        "llamacpp_speed.py",
        &[model],
        &[
            ("PROMPT_TOKENS", prompt_tokens.to_string()),
            ("GEN_DEPTH", gen_depth.to_string()),
        ],
        "llama-cpp-python",
    )?;
    match (
        v["prompt_tokens_per_s_median"].as_f64(),
        v["gen_tokens_per_s_median"].as_f64(),
    ) {
        (Some(p), Some(g)) => Ok((p, g)),
        _ => Err(Error::Invalid("llamacpp_speed.py printed no speeds".into())),
    }
}

impl std::fmt::Display for LlmBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let opt = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |x| format!("{x:.p$}"));
        writeln!(
            f,
            "model {}  threads {}  requantize {}  load {:.2}s  median of {}",
            self.model, self.threads, self.requantize, self.load_secs, self.runs
        )?;
        writeln!(
            f,
            "{:<28} {:>10} {:>10} {:>7}",
            "", "quire", "llama.cpp", "ratio"
        )?;
        writeln!(
            f,
            "{:<28} {:>10.1} {:>10} {:>7}",
            format!("prompt {} tok (tok/s)", self.prompt_tokens),
            self.pp_tok_s,
            opt(self.llamacpp_pp_tok_s, 1),
            opt(self.pp_ratio, 2)
        )?;
        writeln!(
            f,
            "{:<28} {:>10.1} {:>10} {:>7}",
            if self.gen_depth > 16 {
                format!(
                    "generate {} tok after {} (tok/s)",
                    self.gen_tokens, self.gen_depth
                )
            } else {
                format!("generate {} tok (tok/s)", self.gen_tokens)
            },
            self.gen_tok_s,
            opt(self.llamacpp_gen_tok_s, 1),
            opt(self.gen_ratio, 2)
        )?;
        if let Some(s) = self.batch_step_secs {
            writeln!(
                f,
                "{} sequences generating together, {} deep: {:.1} ms a step ({:.1} tok/s in all, {:.1} ms a sequence)",
                self.batch,
                self.gen_depth,
                s * 1e3,
                self.batch as f64 / s,
                s * 1e3 / self.batch as f64
            )?;
        }
        writeln!(
            f,
            "prefix reuse: {}/{} tokens reused, prompt {:.3}s cold -> {:.3}s warm",
            self.prefix_shared_tokens,
            self.prefix_total_tokens,
            self.prefix_cold_secs,
            self.prefix_warm_secs
        )?;
        writeln!(
            f,
            "first token (short chat prompt, model loaded): {:.3}s",
            self.first_token_secs
        )?;
        if self.busy > 0 {
            writeln!(
                f,
                "beside {} busy processes; quiet in the same run: prompt {} / generate {} tok/s \
                 (kept {} / {}); llama.cpp quiet: {} / {}",
                self.busy,
                opt(self.quiet_pp_tok_s, 1),
                opt(self.quiet_gen_tok_s, 1),
                opt(self.pp_kept, 2),
                opt(self.gen_kept, 2),
                opt(self.llamacpp_quiet_pp_tok_s, 1),
                opt(self.llamacpp_quiet_gen_tok_s, 1),
            )?;
        }
        write!(
            f,
            "pool: generation {} / prompt {} of {} workers (adaptive {}, narrowed {}x, widened {}x); llama.cpp from {}",
            self.pool.decode,
            self.pool.prompt,
            self.pool.max,
            self.pool.adaptive,
            self.pool.narrowed,
            self.pool.widened,
            self.llamacpp_source.as_deref().unwrap_or("-")
        )
    }
}
