//! The `quire` command line: a thin adapter over the library.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "quire", version, about = "Chat with your own PDFs, offline")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check the model files and print what they are.
    Models {
        /// A GGUF file to inspect instead of the default LLM.
        #[arg(long)]
        model: Option<PathBuf>,
    },
    /// Generate text with the local LLM, streamed to stdout.
    Generate(GenerateArgs),
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
}

#[derive(clap::Args)]
struct GenerateArgs {
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
    /// cpu, cuda or metal (cuda and metal need the cargo feature of that name).
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Keep Q4_1/Q5_0/Q5_1 weights as they are instead of requantizing to Q8_0.
    #[arg(long)]
    no_requantize: bool,
    /// Print timings and peak memory to stderr at the end.
    #[arg(long)]
    stats: bool,
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Prompt processing and generation speed vs llama.cpp's figures.
    Llm {
        /// A GGUF file instead of the default LLM.
        #[arg(long)]
        model: Option<PathBuf>,
        /// llama.cpp's speed.json for the same file (default: the shared reference).
        #[arg(long)]
        reference: Option<PathBuf>,
        /// Keep Q4_1/Q5_0/Q5_1 weights as they are instead of requantizing to Q8_0.
        #[arg(long)]
        no_requantize: bool,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("quire: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Cmd::Models { model } => models(model),
        Cmd::Generate(a) => generate(a),
        Cmd::Bench {
            what:
                BenchCmd::Llm {
                    model,
                    reference,
                    no_requantize,
                    json,
                },
        } => {
            let path = match model {
                Some(p) => p,
                None => quire::models::default_llm()?,
            };
            let opts = quire::llm::bench::BenchOptions {
                reference,
                load: quire::llm::LoadOptions {
                    requantize: !no_requantize,
                    ..Default::default()
                },
                ..Default::default()
            };
            let b = quire::llm::bench::bench(&path, &opts)?;
            if json {
                println!("{}", serde_json::to_string(&b)?);
            } else {
                println!("{b}");
            }
            Ok(())
        }
    }
}

fn generate(a: GenerateArgs) -> anyhow::Result<()> {
    use quire::llm::{Cancel, GenParams, GgufLlm, Llm, LoadOptions};
    use std::io::Write;
    let start = std::time::Instant::now();
    let path = match a.model {
        Some(p) => p,
        None => quire::models::default_llm()?,
    };
    let opts = LoadOptions {
        device: a.device.parse()?,
        requantize: !a.no_requantize,
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

fn models(model: Option<PathBuf>) -> anyhow::Result<()> {
    let llm = match model {
        Some(p) => p,
        None => quire::models::default_llm()?,
    };
    let g = quire::llm::gguf::GgufFile::open(&llm)?;
    println!(
        "llm       {}  architecture={} context={} tensors={}",
        llm.display(),
        g.architecture()?,
        g.context_length()?,
        g.content.tensor_infos.len()
    );
    let emb = quire::models::default_embedder()?;
    let b = quire::embed::bert::BertFiles::open(&emb).context("embedding model")?;
    println!(
        "embedder  {}  hidden={} layers={} vocab={}",
        emb.display(),
        b.config.hidden_size,
        b.config.num_hidden_layers,
        b.tokenizer.get_vocab_size(true)
    );
    Ok(())
}
