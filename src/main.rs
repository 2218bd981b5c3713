//! The `quire` command line: a thin adapter over the library.

use std::path::{Path, PathBuf};

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
    /// Retrieve the sources for a question and show why each was chosen.
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
        /// PDFs to index in memory (stand-in until the store is wired in).
        #[arg(long, default_value = "../shared/corpus/pdfs")]
        pdfs: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Benchmarks: print figures (one JSON object with --json).
    #[command(subcommand)]
    Bench(BenchCmd),
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
    },
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
        Cmd::Bench(BenchCmd::Embed {
            json,
            reference,
            chunks,
            runs,
        }) => bench_embed(json, &reference, chunks, runs),
        Cmd::Search {
            question,
            top_k,
            fusion,
            queries,
            retrievers,
            pdfs,
            json,
        } => {
            let opts = quire::retrieve::RetrieveOptions {
                top_k,
                fusion,
                num_queries: queries,
                retrievers: quire::retrieve::RetrieverKind::parse_list(&retrievers)?,
                ..Default::default()
            };
            search(&question, &opts, &pdfs, json)
        }
        Cmd::Bench(BenchCmd::Retrieval {
            json,
            pdfs,
            questions,
            fusion,
        }) => bench_retrieval(json, &pdfs, &questions, fusion),
        Cmd::Bench(BenchCmd::RetrievalScale {
            json,
            sizes,
            queries,
        }) => {
            let sizes = sizes
                .split(',')
                .map(|s| s.trim().parse::<usize>())
                .collect::<Result<Vec<_>, _>>()
                .context("--sizes: comma-separated numbers")?;
            let params = quire::retrieve::bench::ScaleParams {
                sizes,
                queries,
                ..Default::default()
            };
            let r = quire::retrieve::bench::scale(&params, |m| eprintln!("{m}"))?;
            if json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                print!("{r}");
            }
            Ok(())
        }
    }
}

/// The default embedder and an in-memory retrieval index over the PDFs in `pdfs`.
fn pdf_index(
    pdfs: &Path,
) -> anyhow::Result<(
    quire::embed::bert::BertEmbedder,
    quire::retrieve::RetrievalIndex,
)> {
    let emb = quire::embed::bert::BertEmbedder::open(quire::models::default_embedder()?)?;
    eprintln!("indexing {} ...", pdfs.display());
    let chunks = quire::retrieve::bench::index_pdf_dir(pdfs, &emb)?;
    Ok((emb, quire::retrieve::RetrievalIndex::build(chunks)?))
}

fn search(
    question: &str,
    opts: &quire::retrieve::RetrieveOptions,
    pdfs: &Path,
    json: bool,
) -> anyhow::Result<()> {
    if opts.num_queries > 1 {
        anyhow::bail!("--queries above 1 needs the LLM, which this build cannot load yet");
    }
    let (emb, index) = pdf_index(pdfs)?;
    let cancel = quire::llm::Cancel::new();
    let r = index.search(question, &emb, None, opts, &cancel)?;
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{r}");
    }
    Ok(())
}

fn bench_retrieval(
    json: bool,
    pdfs: &Path,
    questions: &Path,
    fusion: quire::retrieve::FusionMode,
) -> anyhow::Result<()> {
    let qs = quire::retrieve::bench::load_questions(questions)?;
    let (emb, index) = pdf_index(pdfs)?;
    let r = quire::retrieve::bench::quality(&index, &emb, None, &qs, fusion, 1)?;
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{r}");
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

fn bench_embed(json: bool, reference: &Path, n: usize, runs: usize) -> anyhow::Result<()> {
    let dir = quire::models::default_embedder()?;
    let emb = quire::embed::bert::BertEmbedder::open(&dir)?;
    let text = std::fs::read_to_string("/usr/share/common-licenses/GPL-3")
        .context("the benchmark text /usr/share/common-licenses/GPL-3")?;
    let chunks = quire::embed::bench::chunks_of_words(&text, n, 200);
    let reference = reference.is_file().then_some(reference);
    let r = quire::embed::bench::run(&emb, "all-MiniLM-L6-v2", &chunks, 200, runs, reference)?;
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{r}");
    }
    Ok(())
}
