//! `quire generate`: stream a completion from the local LLM.

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct GenerateArgs {
    /// The prompt.
    prompt: String,
    /// A GGUF file instead of the default LLM.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Wrap the prompt as one user message in the model's chat template.
    #[arg(long)]
    chat: bool,
    /// 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,
    #[arg(long)]
    top_k: Option<usize>,
    #[arg(long)]
    top_p: Option<f64>,
    #[arg(long, default_value_t = 1.0)]
    repeat_penalty: f32,
    #[arg(long, default_value_t = 299_792_458)]
    seed: u64,
    #[arg(long, default_value_t = 256)]
    max_tokens: usize,
    /// Stop before this string (repeatable).
    #[arg(long)]
    stop: Vec<String>,
    /// auto, cpu, cuda, cuda:N or metal (cuda and metal need the cargo feature of that
    /// name; auto takes a GPU that initializes, else the CPU).
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Requantize Q4_1/Q5_0/Q5_1 weights to Q8_0 at load (not bit-exact with llama.cpp).
    #[arg(long)]
    requantize: bool,
    /// Print timings and peak memory to stderr at the end.
    #[arg(long)]
    stats: bool,
}

pub fn generate(a: GenerateArgs) -> anyhow::Result<()> {
    use quire::llm::{Cancel, GenParams, GgufLlm, Llm, LoadOptions};
    use std::io::Write;
    let start = std::time::Instant::now();
    let path = match a.model {
        Some(p) => p,
        None => quire::models::default_llm()?,
    };
    let opts = LoadOptions {
        device: a.device.parse()?,
        requantize: a.requantize,
        chat: a.chat,
        ..Default::default()
    };
    let llm = GgufLlm::load_with(&path, &opts)?;
    let params = GenParams {
        max_tokens: a.max_tokens,
        temperature: a.temperature,
        top_k: a.top_k,
        top_p: a.top_p,
        repeat_penalty: a.repeat_penalty,
        seed: a.seed,
        stop: a.stop,
        ..Default::default()
    };
    let mut first = None;
    let mut out = std::io::stdout().lock();
    let c = llm.complete(&a.prompt, &params, &Cancel::new(), &mut |s: &str| {
        first.get_or_insert_with(|| start.elapsed().as_secs_f64());
        // A closed stdout (e.g. `| head`) stops generation.
        Ok(out
            .write_all(s.as_bytes())
            .and_then(|_| out.flush())
            .is_ok())
    })?;
    writeln!(out)?;
    if a.stats {
        let rss = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .map(|l| l.trim_start_matches("VmHWM:").trim().to_string())
            })
            .unwrap_or_else(|| "?".into());
        eprintln!(
            "prompt {} tok {:.3}s | output {} tok {:.3}s ({:.1} tok/s) | stop {:?} | first text {:.3}s after start | peak RSS {rss}",
            c.prompt_tokens,
            c.prompt_secs,
            c.output_tokens,
            c.gen_secs,
            c.output_tokens as f64 / c.gen_secs.max(1e-9),
            c.stop,
            first.unwrap_or(f64::NAN),
        );
    }
    Ok(())
}
