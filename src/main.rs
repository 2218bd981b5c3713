//! The `quire` command line: a thin adapter over the library.

use std::ffi::OsString;
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
        fusion: quire::engine::FusionMode,
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
    /// Benchmarks: runs the `quire-bench` binary next to this one with the same
    /// arguments (`quire bench --help` lists them).
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

#[derive(Subcommand)]
enum DocsCmd {
    /// Remove a document (by id or path) from the index.
    Rm {
        /// Document id (see `quire docs`) or the file's path.
        doc: String,
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
            let opts = quire::engine::RetrieveOptions {
                top_k,
                fusion,
                num_queries: queries,
                retrievers: quire::engine::RetrieverKind::parse_list(&retrievers)?,
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
        Cmd::Bench { args } => bench(&args),
    }
}

/// `quire bench ...`: the benchmarks are their own binary, `quire-bench` (the `bench/`
/// member), built next to this one; run it with `args` and exit with its status.
fn bench(args: &[OsString]) -> anyhow::Result<()> {
    let exe = std::env::current_exe()?
        .with_file_name(format!("quire-bench{}", std::env::consts::EXE_SUFFIX));
    anyhow::ensure!(
        exe.is_file(),
        "quire-bench is not built: run `cargo build -p quire-bench` (or `--release`)"
    );
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let e = cmd.exec();
        Err(e).with_context(|| format!("running {}", exe.display()))
    }
    #[cfg(not(unix))]
    {
        let status = cmd
            .status()
            .with_context(|| format!("running {}", exe.display()))?;
        std::process::exit(status.code().unwrap_or(1));
    }
}

fn models(model: Option<PathBuf>) -> anyhow::Result<()> {
    let llm = match model {
        Some(p) => p,
        None => quire::models::default_llm()?,
    };
    let g = quire::llm::gguf::GgufFile::open(&llm)?;
    let arch = g.architecture()?;
    println!(
        "llm       {}  architecture={arch} context={} tensors={} speed={}",
        llm.display(),
        g.context_length()?,
        g.content.tensor_infos.len(),
        quire::llm::model::speed_path(arch)
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
