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
    /// List the model files (every GGUF and embedding model folder in the model
    /// folders) and what they are.
    Models {
        /// One GGUF file to inspect instead.
        #[arg(long)]
        model: Option<PathBuf>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// Print only the file name of the model chosen for this machine: the
        /// best-answering one predicted to answer within 6 s (calibrated on first
        /// use, then cached in the data directory).
        #[arg(long)]
        choose: bool,
        /// Threads the calibration runs on (default: the CPUs this process gets).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        threads: Option<u32>,
        /// Also consider this model file, not installed: its time estimated from an
        /// installed model's calibration and both models' measured speeds (what
        /// `models/fetch.sh` asks before fetching it). Repeatable.
        #[arg(long, value_name = "FILE")]
        consider: Vec<String>,
        /// Only describe the files: no calibration, no predicted times.
        #[arg(long, conflicts_with = "choose")]
        no_calibrate: bool,
        /// Data directory holding the calibration cache (default: $XDG_DATA_HOME/quire
        /// or ~/.local/share/quire).
        #[arg(long, env = "QUIRE_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// List the response modes a question can use (`--mode`): the built-in ones and
    /// those composed in Settings.
    Modes {
        /// Print one JSON array.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        data: DataDir,
    },
    /// Re-embed the index with the chosen embedding model (after changing it).
    Reembed {
        /// Choose this embedding model (a folder name in the model folders, or a
        /// path) first.
        #[arg(long)]
        embedder: Option<String>,
        /// Print each progress event as one JSON line on stdout.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        data: DataDir,
    },
    /// Serve the UI and the API over HTTP (loopback by default).
    Serve {
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// 0 picks a free port.
        #[arg(long, default_value_t = 8717)]
        port: u16,
        /// The access token (default: a random one, made at start and printed in the
        /// address to open). `/api` takes it as the page's cookie or
        /// `Authorization: Bearer`, `/v1` as a bearer.
        #[arg(
            long,
            env = "QUIRE_TOKEN",
            hide_env_values = true,
            conflicts_with = "no_token"
        )]
        token: Option<String>,
        /// Serve without an access token (loopback only). Then any program on this
        /// machine, under any user, can read every indexed document and conversation
        /// and add documents; web pages still cannot (the Host and Origin checks hold).
        #[arg(long)]
        no_token: bool,
        /// Also answer requests for this host name (repeatable): the name a reverse
        /// proxy forwards, or one of this machine's. Loopback names always are;
        /// others are refused, against DNS rebinding.
        #[arg(
            long = "allow-host",
            value_name = "NAME",
            env = "QUIRE_ALLOW_HOSTS",
            value_delimiter = ','
        )]
        allow_hosts: Vec<String>,
        /// Largest upload in MiB.
        #[arg(long, default_value_t = 100)]
        max_upload_mib: usize,
        #[command(flatten)]
        data: DataDir,
    },
    /// Index PDFs (files, or folders searched recursively) into the local index.
    /// Files are queued first; what a killed run left queued is finished too, and
    /// without paths only that is done.
    Index {
        paths: Vec<PathBuf>,
        /// Print each progress event as one JSON line on stdout instead of a bar.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        data: DataDir,
    },
    /// Watched folders: their PDFs indexed and kept in step with the disk (new,
    /// changed, renamed, deleted files) while `quire serve` or the window runs, and
    /// at their start.
    Folders {
        #[command(subcommand)]
        cmd: cli::folders::FoldersCmd,
        #[command(flatten)]
        data: DataDir,
    },
    /// Show the indexing queue (each file's state, progress and ETA), or cancel one
    /// file or all of it: a `quire index` or `quire serve` indexing the same data
    /// directory stops that file at its next step and goes on with the others.
    Queue {
        #[command(subcommand)]
        cmd: Option<QueueCmd>,
        /// Print one JSON object.
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
        /// Which documents to search: `all`, `collection:NAME`, or documents (ids,
        /// paths or file names) separated by commas.
        #[arg(long, value_name = "SCOPE")]
        scope: Option<String>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        data: DataDir,
    },
    /// Collections of documents to scope questions to (`--scope collection:NAME`);
    /// without a subcommand, list them.
    Collections {
        #[command(subcommand)]
        cmd: Option<cli::collections::CollectionsCmd>,
        /// Print the collections as one JSON array.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        data: DataDir,
    },
    /// Ask a question about the indexed PDFs; the answer streams to stdout.
    Ask {
        question: String,
        #[command(flatten)]
        turn: cli::ask::TurnArgs,
        #[command(flatten)]
        opts: cli::ask::AskArgs,
        #[command(flatten)]
        data: DataDir,
    },
    /// Talk with the indexed PDFs: one question a line on stdin, follow-ups use the
    /// conversation (an empty line ends it).
    Chat {
        #[command(flatten)]
        turn: cli::ask::TurnArgs,
        #[command(flatten)]
        opts: cli::ask::AskArgs,
        #[command(flatten)]
        data: DataDir,
    },
    /// Generate text with the local LLM, streamed to stdout.
    Generate(cli::generate::GenerateArgs),
    /// Extract one PDF in this process and print it as JSON (the isolated extractor's
    /// child; `serve_child` answers it before the arguments are parsed).
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
enum QueueCmd {
    /// Cancel a waiting or running file (its queue id, or its path), or `all`.
    Cancel {
        /// Queue id (see `quire queue`), the file's path, or `all`.
        what: String,
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
    #[arg(long, env = "QUIRE_DATA_DIR", global = true)]
    data_dir: Option<PathBuf>,
    /// Keep the index in this PostgreSQL database (with pgvector), shared by every
    /// Quire pointed at it, instead of the SQLite file in the data directory:
    /// postgres://user[:password]@host:port/database.
    #[arg(long, env = "QUIRE_STORE", global = true, value_name = "URL")]
    store: Option<String>,
    /// Where the models run for this command, instead of the settings' device: auto,
    /// cpu, cuda, cuda:N or metal (a GPU needs a build with `--features cuda` or
    /// `metal`).
    #[arg(long, env = "QUIRE_DEVICE", value_name = "DEVICE")]
    device: Option<String>,
    /// Answer with this OpenAI-compatible model server (http(s)://host:port, e.g. a
    /// llama.cpp server) instead of the settings' model, for this command.
    #[arg(long, env = "QUIRE_LLM_SERVER", value_name = "URL")]
    llm_server: Option<String>,
    /// The model to ask that server for (default: the first it lists).
    #[arg(
        long,
        env = "QUIRE_LLM_SERVER_MODEL",
        value_name = "NAME",
        requires = "llm_server"
    )]
    llm_server_model: Option<String>,
    /// That server's API key (sent as a bearer token).
    #[arg(
        long,
        env = "QUIRE_LLM_SERVER_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    llm_server_key: Option<String>,
    /// That server's context window in tokens (default: what the server says, else
    /// 3900).
    #[arg(long, value_name = "TOKENS", requires = "llm_server")]
    llm_server_context: Option<usize>,
}

impl DataDir {
    fn engine(&self) -> anyhow::Result<quire::engine::Engine> {
        let mut cfg = quire::engine::EngineConfig::new(self.data_dir.clone())?;
        if self.store.is_some() {
            cfg.store = self.store.clone();
        }
        if let Some(d) = &self.device {
            cfg.device = Some(d.parse()?);
        }
        cfg.llm_server = self
            .llm_server
            .as_ref()
            .map(|url| quire::llm::RemoteConfig {
                url: url.clone(),
                model: self.llm_server_model.clone().unwrap_or_default(),
                api_key: self.llm_server_key.clone(),
                context_window: self.llm_server_context.unwrap_or(0),
                tokenizer: None,
                chat: true,
            });
        Ok(quire::engine::Engine::open(cfg)?)
    }
}

fn main() {
    // The isolated PDF extractor's children are this binary (`quire __extract FILE`).
    quire::ingest::pdf::serve_child();
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("quire: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Cmd::Models {
            model,
            json,
            choose,
            threads,
            consider,
            no_calibrate,
            data_dir,
        } => models(ModelsArgs {
            consider,
            model,
            json,
            choose,
            threads: threads.map(|t| t as usize),
            calibrate: !no_calibrate,
            data_dir,
        }),
        Cmd::Modes { json, data } => cli::ask::modes(&data.engine()?, json),
        Cmd::Reembed {
            embedder,
            json,
            data,
        } => cli::index::reembed(&data.engine()?, embedder, json),
        Cmd::Serve {
            host,
            port,
            token,
            no_token,
            allow_hosts,
            max_upload_mib,
            data,
        } => {
            let token = match (token, no_token) {
                (_, true) => None,
                (Some(t), false) => Some(t),
                (None, false) => Some(
                    quire_cli::server::random_token()
                        .context("making the access token (/dev/urandom)")?,
                ),
            };
            let engine = std::sync::Arc::new(data.engine()?);
            // Finish what a killed or crashed run left queued, and sync the watched
            // folders, without being asked; then keep them in step while serving.
            quire::engine::spawn_resume(engine.clone());
            let _watcher = quire::engine::watch_folders(engine.clone());
            let opts = quire_cli::server::ServeOptions {
                addr: std::net::SocketAddr::new(host, port),
                token,
                max_upload: max_upload_mib * 1024 * 1024,
                ui_dir: None,
                allowed_hosts: allow_hosts,
            };
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(quire_cli::server::serve(engine, opts))?;
            Ok(())
        }
        Cmd::Index { paths, json, data } => cli::index::index(&data.engine()?, &paths, json),
        Cmd::Folders { cmd, data } => cli::folders::run(&data.engine()?, cmd),
        Cmd::Queue { cmd, json, data } => {
            let engine = data.engine()?;
            match cmd {
                None => cli::index::queue(&engine, json),
                Some(QueueCmd::Cancel { what }) => cli::index::cancel(&engine, &what),
            }
        }
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
            scope,
            json,
            data,
        } => {
            let engine = data.engine()?;
            let scope = match scope {
                Some(s) => engine.parse_scope(&s)?,
                None => Default::default(),
            };
            let opts = quire::engine::RetrieveOptions {
                top_k,
                fusion,
                num_queries: queries,
                retrievers: quire::engine::RetrieverKind::parse_list(&retrievers)?,
                filter: engine.resolve_scope(&scope)?.filter,
                ..Default::default()
            };
            cli::search::search(&engine, &question, &opts, json)
        }
        Cmd::Ask {
            question,
            turn,
            opts,
            data,
        } => {
            let engine = data.engine()?;
            let scope = match &turn.scope {
                Some(s) => engine.parse_scope(s)?,
                None => Default::default(),
            };
            let req = quire::engine::AskRequest {
                conversation_id: turn.conversation,
                question,
                mode: turn.mode,
                overrides: opts.overrides()?,
                scope,
                route: opts.route(),
                ..Default::default()
            };
            cli::ask::ask(&engine, req, &opts).map(|_| ())
        }
        Cmd::Collections { cmd, json, data } => cli::collections::run(&data.engine()?, cmd, json),
        Cmd::Chat { turn, opts, data } => cli::ask::chat(&data.engine()?, turn, &opts),
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

struct ModelsArgs {
    consider: Vec<String>,
    model: Option<PathBuf>,
    json: bool,
    choose: bool,
    threads: Option<usize>,
    calibrate: bool,
    data_dir: Option<PathBuf>,
}

fn models(a: ModelsArgs) -> anyhow::Result<()> {
    use quire::embed::catalog::EmbedderInfo;
    use quire::llm::calibrate;
    use quire::llm::catalog::LlmInfo;
    let ModelsArgs { model, json, .. } = a;
    let files: Vec<PathBuf> = match &model {
        Some(p) => vec![p.clone()],
        None => quire::models::gguf_files(),
    };
    let llms: Vec<LlmInfo> = files
        .iter()
        .map(|p| quire::llm::catalog::describe(p))
        .collect();
    if a.choose {
        ensure_some_llm(&llms)?;
    }
    // Predicted times and the choice, from the calibration cache or a short run.
    let mut predictions = None;
    if a.calibrate && !files.is_empty() {
        let dir = match a.data_dir.clone() {
            Some(d) => d,
            None => quire::models::data_dir()
                .context("no data directory: set HOME or pass --data-dir")?,
        };
        let threads = calibrate::threads_or_max(a.threads);
        let quiet = json || a.choose;
        let n = files.len();
        let mut progress = |i: usize, p: &std::path::Path| {
            if !quiet {
                eprintln!(
                    "calibrating {}/{n}: {} ({threads} threads)",
                    i + 1,
                    p.display()
                );
            }
        };
        predictions = Some(quire::llm::machine::for_machine(
            &dir,
            &files,
            threads,
            quire::llm::machine::Calibrate::Run(&mut progress),
            &a.consider,
        )?);
    }
    if a.choose {
        let Some(mc) = &predictions else {
            anyhow::bail!("no model to choose from");
        };
        let why = |e: &quire::llm::machine::Entry| {
            let c = &e.candidate;
            match &c.predicted {
                Ok(p) => format!(
                    "{}: predicted {p:.1} s{}: {}",
                    c.name,
                    if c.estimated {
                        " (estimated, not installed)"
                    } else {
                        ""
                    },
                    e.reason
                ),
                Err(_) => format!("{}: {}", c.name, e.reason),
            }
        };
        let Some(name) = mc.chosen_name() else {
            anyhow::bail!(
                "no usable model: {}",
                mc.models.iter().map(why).collect::<Vec<_>>().join("; ")
            );
        };
        println!("{name}");
        for e in &mc.models {
            eprintln!("{}", why(e));
        }
        return Ok(());
    }
    let embedders: Vec<EmbedderInfo> = quire::models::embedder_dirs()
        .iter()
        .map(|p| quire::embed::catalog::describe(p))
        .collect();
    if json {
        let choice = predictions.as_ref().map(|mc| {
            serde_json::json!({
                "budget_secs": mc.budget_secs,
                "threads": mc.threads,
                "cpu": mc.cpu,
                "chosen": mc.chosen_name(),
                "models": mc.models.iter().map(|e| {
                    let c = &e.candidate;
                    serde_json::json!({
                        "name": c.name,
                        "predicted_secs": c.predicted.as_ref().ok(),
                        "estimated": c.estimated,
                        "quality": quire::llm::choose::quality(&c.name),
                        "reason": e.reason,
                        "why": e.reason.to_string(),
                        "calibration": e.calibration,
                        "cached": e.cached,
                    })
                }).collect::<Vec<_>>(),
            })
        });
        println!(
            "{}",
            serde_json::json!({ "llms": llms, "embedders": embedders, "choice": choice })
        );
    } else {
        let mb = |b: u64| format!("{:.0} MB", b as f64 / 1e6);
        for m in &llms {
            match &m.error {
                Some(e) => println!("llm       {}  {}  UNUSABLE: {e}", m.path, mb(m.bytes)),
                None => println!(
                    "llm       {}  {}  architecture={} size={} quant={} context={} speed={}{}",
                    m.path,
                    mb(m.bytes),
                    m.architecture.as_deref().unwrap_or("?"),
                    m.size_label.clone().unwrap_or_else(|| format!(
                        "{:.2}B",
                        m.parameters.unwrap_or(0) as f64 / 1e9
                    )),
                    m.quantization.as_deref().unwrap_or("?"),
                    m.context.unwrap_or(0),
                    m.speed.as_deref().unwrap_or("?"),
                    if m.chat_template {
                        ""
                    } else {
                        " (base model: no chat template)"
                    }
                ),
            }
        }
        if let Some(mc) = &predictions {
            println!(
                "predicted median compact answer on {} ({} threads; budget {} s):",
                mc.cpu, mc.threads, mc.budget_secs
            );
            for e in &mc.models {
                let (c, r) = (&e.candidate, &e.reason);
                match (&e.calibration, e.cached) {
                    (Some(cal), Some(cached)) => println!(
                        "  {}  {:.1} s  (prompt {:.0} tok/s, generation {:.1} tok/s{})  {r}",
                        c.name,
                        cal.predicted_secs(),
                        cal.prompt_tok_s,
                        cal.gen_tok_s,
                        if cached { ", cached" } else { "" }
                    ),
                    _ => match &c.predicted {
                        Ok(p) => {
                            println!("  {}  {p:.1} s  (estimated, not installed)  {r}", c.name)
                        }
                        Err(_) => println!("  {}  -  {r}", c.name),
                    },
                }
            }
        }
        for e in &embedders {
            match &e.error {
                Some(err) => println!("embedder  {}  UNUSABLE: {err}", e.path),
                None => println!(
                    "embedder  {}  {}  dims={} layers={} pooling={:?} languages={}",
                    e.path,
                    mb(e.bytes),
                    e.dims.unwrap_or(0),
                    e.layers.unwrap_or(0),
                    e.pooling.unwrap_or_default(),
                    if e.languages.is_empty() {
                        "?".into()
                    } else {
                        e.languages.join(",")
                    }
                ),
            }
        }
    }
    ensure_some_llm(&llms)?;
    anyhow::ensure!(
        !embedders.is_empty(),
        "no embedding model found: run `models/fetch.sh`"
    );
    Ok(())
}

/// The error for an empty model folder: what to run, and where Quire looked.
fn ensure_some_llm<T>(llms: &[T]) -> anyhow::Result<()> {
    anyhow::ensure!(
        !llms.is_empty(),
        "no GGUF model found: run `models/fetch.sh` (searched {})",
        quire::models::search_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
