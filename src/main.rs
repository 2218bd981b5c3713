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
        Cmd::Index { paths, json, data } => index(&data.engine()?, &paths, json),
        Cmd::Docs { cmd: None, data } => docs(&data.engine()?),
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
        Cmd::Bench(BenchCmd::Embed {
            json,
            reference,
            chunks,
            runs,
        }) => bench_embed(json, &reference, chunks, runs),
    }
}

/// `quire index`: a progress line on stderr (or JSON events on stdout), then a
/// summary; fails only when nothing could be indexed.
fn index(engine: &quire::engine::Engine, paths: &[PathBuf], json: bool) -> anyhow::Result<()> {
    use quire::engine::IndexEvent as E;
    use std::io::Write;
    let cancel = quire::llm::Cancel::new();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut line = String::new();
    let mut file = (0, 0, String::new());
    let mut on = |ev: E| {
        if json {
            if let Ok(s) = serde_json::to_string(&ev) {
                let mut out = std::io::stdout().lock();
                // A closed pipe stops the run.
                return writeln!(out, "{s}").and_then(|_| out.flush()).is_ok();
            }
            return true;
        }
        let name = |p: &str| {
            Path::new(p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.to_string())
        };
        let status = match &ev {
            E::File { index, total, path } => {
                file = (*index, *total, name(path));
                Some(format!("[{index}/{total}] {}: extracting", file.2))
            }
            E::Embedded {
                chunks,
                total,
                eta_secs,
                ..
            } => {
                let eta = eta_secs
                    .map(|s| format!(", ETA {}", fmt_secs(s)))
                    .unwrap_or_default();
                Some(format!(
                    "[{}/{}] {} {} chunks {chunks}/{total}{eta}",
                    file.0,
                    file.1,
                    file.2,
                    bar(*chunks, *total, 20)
                ))
            }
            E::FileDone {
                path,
                chunks,
                skipped,
                ..
            } => {
                let what = if *skipped {
                    "already indexed".to_string()
                } else {
                    format!("{chunks} chunks")
                };
                eprintln!("{}done   {}: {what}", clear(tty, &line), name(path));
                line.clear();
                None
            }
            E::FileFailed { path, reason } => {
                eprintln!("{}FAILED {}: {reason}", clear(tty, &line), name(path));
                line.clear();
                None
            }
            E::Page { .. } | E::Finished { .. } => None,
        };
        if let (Some(s), true) = (status, tty) {
            eprint!("{}{s}", clear(tty, &line));
            line = s;
        }
        true
    };
    let summary = engine.index_summary(paths, &cancel, &mut on)?;
    if tty && !line.is_empty() {
        eprint!("{}", clear(tty, &line));
    }
    eprintln!(
        "indexed {} file(s) ({} already there), {} failed, in {}",
        summary.indexed,
        summary.skipped,
        summary.failed.len(),
        fmt_secs(summary.secs)
    );
    for (path, reason) in &summary.failed {
        eprintln!("  failed: {path}: {reason}");
    }
    if summary.indexed == 0 {
        anyhow::bail!("nothing could be indexed");
    }
    Ok(())
}

/// Erase the progress line on a terminal.
fn clear(tty: bool, line: &str) -> String {
    if tty && !line.is_empty() {
        format!("\r{}\r", " ".repeat(line.chars().count()))
    } else {
        String::new()
    }
}

fn bar(done: usize, total: usize, width: usize) -> String {
    let filled = (done * width)
        .checked_div(total)
        .unwrap_or(width)
        .min(width);
    format!("[{}{}]", "#".repeat(filled), "-".repeat(width - filled))
}

fn fmt_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// `quire docs`: one line per document.
fn docs(engine: &quire::engine::Engine) -> anyhow::Result<()> {
    let docs = engine.documents()?;
    if docs.is_empty() {
        println!("no documents (add some with `quire index PATH...`)");
    }
    for d in docs {
        match d.error {
            Some(e) => println!("{:>4}  failed  {}  ({e})", d.id, d.path),
            None => println!(
                "{:>4}  {:>4} pages {:>5} chunks  {}",
                d.id, d.pages, d.chunks, d.path
            ),
        }
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
