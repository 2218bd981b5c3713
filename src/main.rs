//! The `quire` command line: a thin adapter over the library.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

mod cli;

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
    /// Serve the UI and the API over HTTP (loopback by default).
    Serve {
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// 0 picks a free port.
        #[arg(long, default_value_t = 8717)]
        port: u16,
        /// Access token; required to bind anything but loopback.
        #[arg(long, env = "QUIRE_TOKEN")]
        token: Option<String>,
        /// Largest upload in MiB.
        #[arg(long, default_value_t = 100)]
        max_upload_mib: usize,
        #[command(flatten)]
        data: DataDir,
    },
    /// Index PDFs (files, or folders searched recursively) into the local index.
    Index {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print each progress event as one JSON line on stdout instead of a bar.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        data: DataDir,
    },
    /// List the indexed documents, or remove one.
    Docs {
        #[command(subcommand)]
        cmd: Option<DocsCmd>,
        #[command(flatten)]
        data: DataDir,
    },
    /// Retrieve the sources for a question from the index and show why each was chosen.
    Search {
        question: String,
        /// Sources to keep after fusion.
        #[arg(long, default_value_t = 5)]
        top_k: usize,
        /// reciprocal_rerank, relative_score, dist_based_score or simple.
        #[arg(long, default_value = "reciprocal_rerank")]
        fusion: quire::retrieve::FusionMode,
        /// Queries in all, the question included (above 1 the LLM writes the rest).
        #[arg(long, default_value_t = 1)]
        queries: usize,
        /// Comma-separated: vector, bm25.
        #[arg(long, default_value = "vector,bm25")]
        retrievers: String,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        data: DataDir,
    },
    /// Ask a question about the indexed PDFs; the answer streams to stdout.
    Ask {
        question: String,
        /// Response mode (default: the settings' mode, compact unless changed).
        #[arg(long)]
        mode: Option<String>,
        /// Continue this conversation.
        #[arg(long)]
        conversation: Option<i64>,
        #[command(flatten)]
        opts: cli::ask::AskArgs,
        #[command(flatten)]
        data: DataDir,
    },
    /// Generate text with the local LLM, streamed to stdout.
    Generate(cli::generate::GenerateArgs),
    /// Extract one PDF in this process and print it as JSON (the isolated extractor's child).
    #[command(name = "__extract", hide = true)]
    ExtractChild { file: PathBuf },
    /// Benchmarks: print figures (one JSON object with --json).
    #[command(subcommand)]
    Bench(BenchCmd),
}

#[derive(Subcommand)]
enum DocsCmd {
    /// Remove a document (by id or path) from the index.
    Rm {
        /// Document id (see `quire docs`) or the file's path.
        doc: String,
    },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Embedding throughput: 256 chunks of 200 words, batch 32, median of 3, side by
    /// side with sentence-transformers' figure.
    Embed {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// sentence-transformers' speed.json.
        #[arg(long, default_value = "../shared/reference/speed.json")]
        reference: PathBuf,
        /// Number of chunks.
        #[arg(long, default_value_t = 256)]
        chunks: usize,
        /// Runs (the median is reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Prompt processing and generation speed vs llama.cpp's figures.
    Llm {
        /// A GGUF file instead of the default LLM.
        #[arg(long)]
        model: Option<PathBuf>,
        /// llama.cpp's speed.json for the same file (default: the shared reference).
        #[arg(long)]
        reference: Option<PathBuf>,
        /// Requantize Q4_1/Q5_0/Q5_1 weights to Q8_0 at load (not bit-exact with llama.cpp).
        #[arg(long)]
        requantize: bool,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// PDF text extraction against `pdftotext -layout`: per-page word F1 and pages/s.
    Extract {
        /// Folder of PDFs (default: ../shared/corpus/pdfs).
        dir: Option<PathBuf>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Retrieval quality over the corpus: hit@1/3/5/10 and MRR for vector, BM25 and
    /// fused, by language.
    Retrieval {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// The PDFs to index.
        #[arg(long, default_value = "../shared/corpus/pdfs")]
        pdfs: PathBuf,
        /// One JSON question a line (id, lang, file, pages, question).
        #[arg(long, default_value = "../shared/corpus/questions.jsonl")]
        questions: PathBuf,
        /// Fusion mode of the fused set.
        #[arg(long, default_value = "reciprocal_rerank")]
        fusion: quire::retrieve::FusionMode,
        /// Search this Quire index (built by `quire index`, Quire's own extraction and
        /// splitting) instead of indexing `--pdfs` with pdftotext pages.
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Answers per response mode over the corpus questions, through the engine: median
    /// seconds per question, LLM calls, tokens generated, share of answers containing
    /// every `must_contain` string.
    Answer(cli::bench::AnswerArgs),
    /// tree_summarize with each level's summaries one by one, then as one batch on
    /// the local model: seconds per question side by side, and whether the calls
    /// were the same.
    TreeBatch(cli::bench::TreeBatchArgs),
    /// Latency of one fused query over 10k, 100k and 1M synthetic chunks.
    RetrievalScale {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// Comma-separated index sizes.
        #[arg(long, default_value = "10000,100000,1000000")]
        sizes: String,
        /// Queries timed per size.
        #[arg(long, default_value_t = 50)]
        queries: usize,
    },
}

/// Where the index lives.
#[derive(clap::Args, Clone)]
struct DataDir {
    /// Data directory (default: $XDG_DATA_HOME/quire or ~/.local/share/quire).
    #[arg(long, env = "QUIRE_DATA_DIR")]
    data_dir: Option<PathBuf>,
}

impl DataDir {
    fn engine(&self) -> anyhow::Result<quire::engine::Engine> {
        let cfg = quire::engine::EngineConfig::new(self.data_dir.clone())?;
        Ok(quire::engine::Engine::open(cfg)?)
    }
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
        Cmd::Serve {
            host,
            port,
            token,
            max_upload_mib,
            data,
        } => {
            let engine = std::sync::Arc::new(data.engine()?);
            let opts = quire::server::ServeOptions {
                addr: std::net::SocketAddr::new(host, port),
                token,
                max_upload: max_upload_mib * 1024 * 1024,
                ui_dir: None,
            };
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(quire::server::serve(engine, opts))?;
            Ok(())
        }
        Cmd::Index { paths, json, data } => cli::index::index(&data.engine()?, &paths, json),
        Cmd::Docs { cmd: None, data } => cli::index::docs(&data.engine()?),
        Cmd::Docs {
            cmd: Some(DocsCmd::Rm { doc }),
            data,
        } => {
            let engine = data.engine()?;
            let id = engine.find_document(&doc)?;
            engine.remove_document(id)?;
            println!("removed document {id}");
            Ok(())
        }
        Cmd::Search {
            question,
            top_k,
            fusion,
            queries,
            retrievers,
            json,
            data,
        } => {
            let opts = quire::retrieve::RetrieveOptions {
                top_k,
                fusion,
                num_queries: queries,
                retrievers: quire::retrieve::RetrieverKind::parse_list(&retrievers)?,
                ..Default::default()
            };
            cli::search::search(&data.engine()?, &question, &opts, json)
        }
        Cmd::Ask {
            question,
            mode,
            conversation,
            opts,
            data,
        } => {
            let req = quire::engine::AskRequest {
                conversation_id: conversation,
                question,
                mode,
                overrides: opts.overrides()?,
            };
            cli::ask::ask(&data.engine()?, req, &opts)
        }
        Cmd::Generate(a) => cli::generate::generate(a),
        Cmd::ExtractChild { file } => Ok(quire::ingest::pdf::child_main(&file)?),
        Cmd::Bench(b) => match b {
            BenchCmd::Embed {
                json,
                reference,
                chunks,
                runs,
            } => cli::bench::embed(json, &reference, chunks, runs),
            BenchCmd::Llm {
                model,
                reference,
                requantize,
                json,
            } => cli::bench::llm(model, reference, requantize, json),
            BenchCmd::Extract { dir, json } => cli::bench::extract(dir, json),
            BenchCmd::Retrieval {
                json,
                pdfs,
                questions,
                fusion,
                data_dir,
            } => cli::bench::retrieval(json, &pdfs, &questions, fusion, data_dir),
            BenchCmd::Answer(a) => cli::bench::answer(&a),
            BenchCmd::TreeBatch(a) => cli::bench::tree_batch(&a),
            BenchCmd::RetrievalScale {
                json,
                sizes,
                queries,
            } => cli::bench::retrieval_scale(json, &sizes, queries),
        },
    }
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
