//! `quire bench ...`: each prints a table, or one JSON object with `--json`.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Print `r` as one JSON object or as its table.
fn emit<T: serde::Serialize + std::fmt::Display>(r: &T, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(r)?);
    } else {
        print!("{r}");
    }
    Ok(())
}

pub fn embed(json: bool, reference: &Path, n: usize, runs: usize) -> anyhow::Result<()> {
    let dir = quire::models::default_embedder()?;
    let emb = quire::embed::bert::BertEmbedder::open(&dir)?;
    let text = std::fs::read_to_string("/usr/share/common-licenses/GPL-3")
        .context("the benchmark text /usr/share/common-licenses/GPL-3")?;
    let chunks = quire::embed::bench::chunks_of_words(&text, n, 200);
    let reference = reference.is_file().then_some(reference);
    let r = quire::embed::bench::run(&emb, "all-MiniLM-L6-v2", &chunks, 200, runs, reference)?;
    emit(&r, json)
}

pub fn llm(
    model: Option<PathBuf>,
    reference: Option<PathBuf>,
    requantize: bool,
    json: bool,
) -> anyhow::Result<()> {
    let path = match model {
        Some(p) => p,
        None => quire::models::default_llm()?,
    };
    let opts = quire::llm::bench::BenchOptions {
        reference,
        load: quire::llm::LoadOptions {
            requantize,
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

pub fn extract(dir: Option<PathBuf>, json: bool) -> anyhow::Result<()> {
    let dir = dir.unwrap_or_else(quire::ingest::pdf::default_corpus);
    let report = quire::ingest::pdf::bench::bench(&dir)?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(())
}

pub fn retrieval(
    json: bool,
    pdfs: &Path,
    questions: &Path,
    fusion: quire::retrieve::FusionMode,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    let qs = quire::retrieve::bench::load_questions(questions)?;
    let emb = quire::embed::bert::BertEmbedder::open(quire::models::default_embedder()?)?;
    let index = match data_dir {
        Some(dir) => {
            let engine = quire::engine::Engine::open(quire::engine::EngineConfig::new(Some(dir))?)?;
            engine.retrieval_index()?
        }
        None => {
            eprintln!("indexing {} ...", pdfs.display());
            let chunks = quire::retrieve::bench::index_pdf_dir(pdfs, &emb)?;
            std::sync::Arc::new(quire::retrieve::RetrievalIndex::build(chunks)?)
        }
    };
    let r = quire::retrieve::bench::quality(&index, &emb, None, &qs, fusion, 1)?;
    emit(&r, json)
}

pub fn retrieval_scale(json: bool, sizes: &str, queries: usize) -> anyhow::Result<()> {
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
    emit(&r, json)
}

/// `quire bench answer`.
#[derive(clap::Args)]
pub struct AnswerArgs {
    /// The PDFs to index.
    #[arg(long, default_value = "../shared/corpus/pdfs")]
    pdfs: PathBuf,
    /// One JSON question a line (id, question, must_contain).
    #[arg(long, default_value = "../shared/corpus/questions.jsonl")]
    questions: PathBuf,
    /// Comma-separated response modes, or `all`.
    #[arg(long, default_value = "all")]
    modes: String,
    /// Only the first N questions.
    #[arg(long)]
    limit: Option<usize>,
    /// Source nodes per question (default: the settings' default, 4).
    #[arg(long)]
    top_k: Option<usize>,
    /// Most tokens generated per LLM call (default: the settings' default, 256).
    #[arg(long)]
    max_tokens: Option<usize>,
    /// Index into (and keep) this data directory instead of a temporary one; a later
    /// run with the same directory reuses the index.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct TreeBatchArgs {
    /// The Quire index to search (built by `quire index`).
    #[arg(long)]
    data_dir: PathBuf,
    /// One JSON question a line (id, question, must_contain).
    #[arg(long, default_value = "../shared/corpus/questions.jsonl")]
    questions: PathBuf,
    /// Only the first N questions.
    #[arg(long, default_value_t = 4)]
    limit: usize,
    /// Source nodes per question.
    #[arg(long, default_value_t = 8)]
    top_k: usize,
    /// Tokens each prompt is packed into; small enough that the nodes make a tree.
    #[arg(long, default_value_t = 1024)]
    context_window: usize,
    /// Most tokens generated per LLM call.
    #[arg(long, default_value_t = 64)]
    max_tokens: usize,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn tree_batch(a: &TreeBatchArgs) -> anyhow::Result<()> {
    use quire::synth::bench;
    let mut questions = bench::load_questions(&a.questions)?;
    questions.truncate(a.limit);
    let engine =
        quire::engine::Engine::open(quire::engine::EngineConfig::new(Some(a.data_dir.clone()))?)?;
    let cancel = quire::llm::Cancel::new();
    let opts = quire::retrieve::RetrieveOptions {
        top_k: a.top_k,
        ..Default::default()
    };
    let mut cases = Vec::with_capacity(questions.len());
    for q in questions {
        let r = engine.search(&q.question, &opts, &cancel)?;
        let nodes = quire::engine::synth_nodes(&r);
        anyhow::ensure!(
            !nodes.is_empty(),
            "nothing indexed in {}",
            a.data_dir.display()
        );
        cases.push((q, nodes));
    }
    let llm = engine.llm()?;
    let r = bench::tree_batch(
        llm.as_ref(),
        &cases,
        a.context_window,
        a.max_tokens,
        &cancel,
        &mut |m| eprintln!("{m}"),
    )?;
    emit(&r, a.json)
}

pub fn answer(a: &AnswerArgs) -> anyhow::Result<()> {
    use quire::synth::bench;
    let mut questions = bench::load_questions(&a.questions)?;
    if let Some(n) = a.limit {
        questions.truncate(n);
    }
    anyhow::ensure!(
        !questions.is_empty(),
        "no questions in {}",
        a.questions.display()
    );
    let (data_dir, temp) = match &a.data_dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("quire-bench-answer-{}", std::process::id())),
            true,
        ),
    };
    let opts = bench::AnswerBenchOptions {
        pdfs: a.pdfs.clone(),
        data_dir: data_dir.clone(),
        questions,
        modes: bench::parse_modes(&a.modes)?,
        overrides: quire::engine::AskOverrides {
            top_k: a.top_k,
            max_tokens: a.max_tokens,
            ..Default::default()
        },
    };
    let r = bench::answer_bench(&opts, &quire::llm::Cancel::new(), &mut |m| eprintln!("{m}"));
    if temp {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    emit(&r?, a.json)
}
