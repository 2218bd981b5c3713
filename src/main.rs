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
    /// Extract one PDF in this process and print it as JSON (the isolated extractor's child).
    #[command(name = "__extract", hide = true)]
    ExtractChild { file: PathBuf },
    /// Measure a part of Quire and print its figures.
    Bench {
        #[command(subcommand)]
        what: Bench,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// PDF text extraction against `pdftotext -layout`: per-page word F1 and pages/s.
    Extract {
        /// Folder of PDFs (default: ../shared/corpus/pdfs).
        dir: Option<PathBuf>,
        /// Print one JSON object instead of a table.
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
        Cmd::ExtractChild { file } => Ok(quire::ingest::pdf::child_main(&file)?),
        Cmd::Bench { what } => match what {
            Bench::Extract { dir, json } => bench_extract(dir, json),
        },
    }
}

fn bench_extract(dir: Option<PathBuf>, json: bool) -> anyhow::Result<()> {
    let dir = dir.unwrap_or_else(quire::ingest::pdf::default_corpus);
    let report = quire::ingest::pdf::bench::bench(&dir)?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.table());
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
