//! `quire-bench` (also run as `quire bench`): each subcommand prints a table, or one
//! JSON object with `--json`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Parser, Subcommand};
use quire::embed::encoder::Kernels;
use quire::embed::Embedder;

#[derive(Parser)]
#[command(
    name = "quire-bench",
    version,
    about = "Benchmarks: print figures (one JSON object with --json)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: BenchCmd,
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Write N synthetic documents (rows only: no PDF read, nothing embedded) into the
    /// SQLite index of data directory DIR, for the UI's tests and timings at scale.
    FillRows {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// How many documents (every 50th is recorded as failed).
        n: usize,
        /// The data directory (created if needed).
        dir: PathBuf,
    },
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
        /// cpu (own kernels), cuda, cuda:N, metal (candle's BERT) or auto.
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Measure quiet, then beside N busy processes (`yes`), stopped at the end.
        #[arg(long, default_value_t = 0)]
        load: usize,
        /// A Python with sentence-transformers: measure it in the same run, under the
        /// same load (default: $QUIRE_ST_PYTHON).
        #[arg(long, env = "QUIRE_ST_PYTHON")]
        peer: Option<PathBuf>,
    },
    /// The quantized matrix products of real models' widths, one at a time: GFLOP/s
    /// per shape, at a prompt's rows and at one row.
    Matmul {
        /// hidden:ffn widths (each gives h×h, f×h and h×f).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "896:4864,1536:8960,2048:11008,3072:8192,4096:14336"
        )]
        widths: Vec<String>,
        /// Weight types.
        #[arg(long, value_delimiter = ',', default_value = "q4_k,q6_k")]
        types: Vec<String>,
        /// Activation rows per product (1: generation).
        #[arg(long, value_delimiter = ',', default_value = "512,1")]
        rows: Vec<usize>,
        /// Timed runs per product (the best is kept).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// llama.cpp's `test-backend-ops` (scripts/llamacpp_ops.sh builds it): its
        /// figure for each product beside Quire's, at the same thread count.
        #[arg(long)]
        peer_ops: Option<PathBuf>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The floor of exact products on this CPU: 512-bit integer products and float
    /// FMAs a nanosecond per core, alone and interleaved, on every core at once, and
    /// the GFLOP/s llama.cpp's order then allows a Q5_0 / Q8_0 product and attention.
    Pipes {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
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
        /// cpu (own kernels), cuda, cuda:N, metal (candle) or auto.
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Measure quiet, then beside N busy processes (`yes`), stopped at the end.
        #[arg(long, default_value_t = 0)]
        load: usize,
        /// A Python with llama-cpp-python: measure llama.cpp in the same run, under the
        /// same load (default: $QUIRE_PEER_PYTHON).
        #[arg(long, env = "QUIRE_PEER_PYTHON")]
        peer: Option<PathBuf>,
        /// Tokens in the prompt-processing run (a long prompt measures attention over
        /// many keys: a whole document, a summary's leaf).
        #[arg(long, default_value_t = 512)]
        prompt_tokens: usize,
        /// Prompt tokens before the generation run (its tokens attend to them all: a
        /// summary's leaf generates ~2,800 deep).
        #[arg(long, default_value_t = 16)]
        gen_depth: usize,
        /// Also time N sequences, each `--gen-depth` deep, generating together (one
        /// pass a step: how a summary's leaves are written).
        #[arg(long, default_value_t = 1)]
        batch: usize,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Diagnostics: along llama.cpp's greedy sequences, how far its token is from
    /// Quire's greedy choice at each step (`+lead` where they agree, `-gap` where they
    /// part), with the file's weights and requantized to Q8_0.
    Margins {
        /// A GGUF file (default: SmolLM2-135M-Instruct, whose references are shared).
        #[arg(long)]
        model: Option<PathBuf>,
        /// llama.cpp's greedy.jsonl for the same file (default: the shared reference).
        #[arg(long)]
        reference: Option<PathBuf>,
        /// Tokens per sequence.
        #[arg(long, default_value_t = 20)]
        steps: usize,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The table detector against the tables marked by hand: precision and recall of
    /// rows, and of cells within matched rows, tables found, per half of the split.
    Tables {
        /// Folder of PDFs.
        #[arg(long, default_value = "../shared/corpus/pdfs")]
        pdfs: PathBuf,
        /// The hand-marked tables.
        #[arg(long, default_value = "bench/data/tables.jsonl")]
        marked: PathBuf,
        /// The committed tuning/held-out split of the marked tables.
        #[arg(long, default_value = "bench/data/tables_split.json")]
        split: PathBuf,
        /// The tuning half's figures over a grid of thresholds instead.
        #[arg(long)]
        grid: bool,
        /// Only the tuning half, with every row missed or detected in excess (what
        /// tuning looks at; the held-out half is not shown row by row).
        #[arg(long)]
        misses: bool,
        /// Instead: every table the detector finds in every PDF of the folder (marked
        /// or not): document, page, rows (what the corpus calls tables, to look for
        /// false ones).
        #[arg(long)]
        list: bool,
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
    /// The whole indexing pipeline on a fresh index: pages/s, chunks/s, peak RSS and
    /// the time of each stage, beside LlamaIndex's figure.
    Ingest {
        /// Folder of PDFs (default: ../shared/corpus/pdfs).
        dir: Option<PathBuf>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// A Python with llama-index-core, llama-index-embeddings-huggingface and
        /// pymupdf: run LlamaIndex's ingestion of the same folder after Quire's
        /// (`scripts/llamaindex_ingest.py`; default: $QUIRE_LLAMAINDEX_PYTHON).
        #[arg(long, env = "QUIRE_LLAMAINDEX_PYTHON")]
        peer: Option<PathBuf>,
        /// LlamaIndex splits at Quire's chunk size and overlap, in the model's own
        /// tokens (all of the text embedded, as Quire does), instead of its default
        /// (chunk size 512 in tiktoken tokens, each chunk truncated to the model's 256).
        #[arg(long, requires = "peer")]
        same_chunks: bool,
        /// Run everything (Quire's pipeline and the peer's) beside N busy processes
        /// (`yes`), stopped at the end.
        #[arg(long, default_value_t = 0)]
        load: usize,
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
        /// One JSON question a line (id, lang, file, pages, question); repeat for
        /// several sets.
        #[arg(long, default_values = ["../shared/corpus/questions.jsonl", "bench/data/questions-zh.jsonl", "bench/data/questions-zh2.jsonl", "bench/data/questions-nav.jsonl"])]
        questions: Vec<PathBuf>,
        /// The committed tuning and held-out halves of the question sets.
        #[arg(long, default_value = "bench/data/retrieval_split.json")]
        split: PathBuf,
        /// Fusion mode of the fused set.
        #[arg(long, default_value = "reciprocal_rerank")]
        fusion: quire::retrieve::FusionMode,
        /// What a navigation page's (contents, index, list of figures, bibliography)
        /// fused score is multiplied by, 0 to 1 (1: not demoted); default: retrieval's.
        #[arg(long)]
        nav_weight: Option<f64>,
        /// Also search the Latin words of mixed Chinese queries alone
        /// (`RetrieveOptions::latin_variant`, off by default).
        #[arg(long)]
        latin_variant: bool,
        /// Follow a matching table-of-contents entry to its page: `true` or `false`
        /// (`RetrieveOptions::follow_contents`); default: retrieval's.
        #[arg(long)]
        follow_contents: Option<bool>,
        /// Follow a table's caption in the prose to its rows: `true` or `false`
        /// (`RetrieveOptions::follow_captions`); default: retrieval's.
        #[arg(long)]
        follow_captions: Option<bool>,
        /// Search this Quire index (built by `quire index`, Quire's own extraction and
        /// splitting) instead of indexing `--pdfs` with pdftotext pages.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The embedding model (a folder name in the model folders, or a path)
        /// instead of the default.
        #[arg(long)]
        embedder: Option<String>,
        /// Queries per question for the fused set: more than 1 adds variants the LLM
        /// generates (LlamaIndex's QueryFusionRetriever prompt).
        #[arg(long, default_value_t = 1)]
        queries: usize,
        /// The LLM that generates the query variants (a GGUF file name in the model
        /// folders, or a path; default: the default model).
        #[arg(long)]
        model: Option<String>,
    },
    /// Answers per response mode over the corpus questions, through the engine: median
    /// seconds per question, LLM calls, tokens generated, share of answers containing
    /// every `must_contain` string.
    Answer(AnswerArgs),
    /// Speculative decoding on real answers: the corpus questions answered (compact)
    /// with each draft setting after `off`; median time, generation tokens/s, tokens
    /// per verification pass, answers identical to `off`'s, beside llama.cpp's
    /// generation speed on the same model (with --peer).
    Draft {
        /// The answering model: a GGUF file name in the model folders, or a path.
        #[arg(long)]
        model: String,
        /// Comma-separated draft settings after `off`: lookup, auto, or a GGUF file.
        #[arg(long, default_value = "lookup,auto")]
        drafts: String,
        /// The PDFs to index.
        #[arg(long, default_value = "../shared/corpus/pdfs")]
        pdfs: PathBuf,
        /// One JSON question a line (id, question, must_contain).
        #[arg(long, default_value = "../shared/corpus/questions.jsonl")]
        questions: PathBuf,
        /// Only the first N questions.
        #[arg(long)]
        limit: Option<usize>,
        /// Index into (and keep) this data directory; a later run reuses the index.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// A Python with llama-cpp-python: llama.cpp's generation speed, same run.
        #[arg(long)]
        peer: Option<PathBuf>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The question-kind router (whole documents or a fact lookup) on its labelled
    /// set: accuracy, whole-document recall and precision, per half of the split.
    Route {
        #[arg(long, default_value = "bench/data/route.jsonl")]
        questions: PathBuf,
        #[arg(long, default_value = "bench/data/route_split.json")]
        split: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// One document summarized by the whole-document route the first time, then again
    /// from its kept summary tree: seconds and LLM calls of each, the model loaded
    /// before both (the load's seconds printed apart).
    SummaryTime {
        /// The PDFs to index.
        #[arg(long, default_value = "../shared/corpus/pdfs")]
        pdfs: PathBuf,
        /// The document to summarize (its file name).
        #[arg(long, default_value = "chemformula-manual.pdf")]
        file: String,
        #[arg(long, default_value = "Summarize this document.")]
        question: String,
        /// Index into (and keep) this data directory instead of a temporary one.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The LLM (a GGUF file name in the model folders, or a path).
        #[arg(long)]
        model: Option<String>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// tree_summarize with each level's summaries one by one, then as one batch on
    /// the local model: seconds per question side by side, and whether the calls
    /// were the same.
    TreeBatch(TreeBatchArgs),
    /// Follow-up questions of scripted conversations: the share that retrieves an
    /// answering page in the top k as typed, condensed with the history, and each
    /// reranked by the LLM; and the seconds condensing and reranking add.
    Conversations(ConversationsArgs),
    /// The honest "not found" check over a library: how many questions it does not
    /// answer are refused, and how many it answers are wrongly refused, per half
    /// (tuning, held-out), kind (near, far) and language, with each question's signals.
    NotFound {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// A Quire library (made here from `--pdfs` when empty;
        /// `scripts/big-library.sh` builds the 1k, 5k and 30k-chunk ones).
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long, default_value = "../shared/corpus/pdfs")]
        pdfs: PathBuf,
        /// The corpus questions (answerable).
        #[arg(long, default_value = "../shared/corpus/questions.jsonl")]
        questions: PathBuf,
        /// Chinese questions the corpus answers.
        #[arg(long, default_value = "bench/data/questions-zh.jsonl")]
        questions_zh: PathBuf,
        /// Questions the library does not answer (near and far, English and Chinese).
        #[arg(long, default_value = "bench/data/unanswerable.jsonl")]
        unanswerable: PathBuf,
        /// Generic questions any document answers (summaries, authorship).
        #[arg(long, default_value = "bench/data/generic.jsonl")]
        generic: PathBuf,
        /// Each question's half: tuning or held-out.
        #[arg(long, default_value = "bench/data/not_found_split.json")]
        split: PathBuf,
        /// The embedding model (folder name or path) instead of the settings'.
        #[arg(long)]
        embedder: Option<String>,
    },
    /// The support check on the labelled set (bench/data/support.jsonl): "supported"
    /// precision, "not found" recall, wrong-citation recall per half, and its time
    /// per answer; with --data-dir, the corpus questions through the engine (key terms
    /// in the answer, in the answer plus its quotes; the extractive mode).
    Support {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        #[arg(long, default_value = "bench/data/support.jsonl")]
        labelled: PathBuf,
        /// A Quire library to ask the corpus questions in (the corpus is indexed into
        /// it when empty); without it only the labelled set is scored.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        #[arg(long, default_value = "../shared/corpus/pdfs")]
        pdfs: PathBuf,
        #[arg(long, default_value = "../shared/corpus/questions.jsonl")]
        questions: PathBuf,
        /// The corpus questions' tuning half (its `tune` list).
        #[arg(long, default_value = "bench/data/not_found_split.json")]
        split: PathBuf,
        /// Print the labelled sentences of this half (`tune`) the checker gets wrong.
        #[arg(long)]
        show: Option<String>,
        /// With --data-dir: no model answers, only the quotes, the sources and the
        /// extractive mode (fast; for tuning the quotes).
        #[arg(long)]
        no_llm: bool,
        /// With --data-dir: a JSONL file of the model's answers, reused when model,
        /// mode and question match and appended to for the others.
        #[arg(long)]
        answers: Option<PathBuf>,
        /// With --data-dir: print the questions of this half (`tune`, `heldout`) whose
        /// sources hold the key terms and whose quotes do not, and where the terms are.
        #[arg(long)]
        list: Option<String>,
    },
    /// A bounded load test of `quire serve` on loopback: N clients asking at once while
    /// a batch of PDFs indexes; every answer checked against what the server kept.
    /// Asks a minute, time to first token, queueing delay, and the server's memory.
    ServeLoad(ServeLoadArgs),
    /// The PostgreSQL index (`--store postgres://…`) beside the SQLite one on the
    /// corpus: time to write a document, fused-retrieval latency, same top 4.
    Store {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// The PostgreSQL database (with pgvector) to fill; its documents are removed
        /// first, so give the benchmark one of its own.
        #[arg(long, env = "QUIRE_STORE")]
        store: String,
        /// The PDFs to index.
        #[arg(long, default_value = "../shared/corpus/pdfs")]
        pdfs: PathBuf,
        /// One JSON question a line.
        #[arg(long, default_value = "../shared/corpus/questions.jsonl")]
        questions: PathBuf,
        /// Times each question is asked of each store.
        #[arg(long, default_value_t = 20)]
        reps: usize,
    },
    /// A library of N text PDFs (1–300 pages, median ~12) indexed as the app indexes
    /// it, into each store: throughput, ETA accuracy, peak RSS, index size per page,
    /// search p50/p99, and the sync after 1% of the files changed.
    Library {
        /// Documents in the library.
        #[arg(long, default_value_t = 100)]
        docs: usize,
        /// Where the PDFs are made (or reused when there already); default: a folder
        /// of the temporary directory named after N and the seed, kept between runs.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The store to index into: sqlite, postgres (a throwaway server started by
        /// scripts/pg-test-server.sh from .venv-pg) or a postgres:// URL (its
        /// documents are removed first). Repeat to measure several in one run.
        #[arg(long, default_values_t = vec!["sqlite".to_string()])]
        store: Vec<String>,
        /// The library's seed: the same seed, the same files.
        #[arg(long, default_value_t = 50)]
        seed: u64,
        /// Search queries timed per store.
        #[arg(long, default_value_t = 300)]
        queries: usize,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Search latency at library sizes too large to index in a session: `library`'s
    /// documents written straight to the store (real chunks and BM25 lists,
    /// stand-in vectors), the search timed at each size.
    LibrarySearch {
        /// Library sizes (documents), comma-separated; the store is filled up to each.
        #[arg(long, default_value = "1000,3000,10000")]
        sizes: String,
        /// sqlite (a temporary data directory) or a postgres:// URL (a database of its
        /// own: other documents there are removed; this library's are kept, so a run
        /// can be resumed).
        #[arg(long)]
        store: String,
        /// The library's seed (as `library`'s).
        #[arg(long, default_value_t = 50)]
        seed: u64,
        /// Search queries timed at each size.
        #[arg(long, default_value_t = 300)]
        queries: usize,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
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
    /// Peak memory of a process that holds a library of N synthetic chunks and
    /// searches it: fills a new SQLite data directory, then a child process builds the
    /// retrieval index through the engine and runs the corpus questions.
    Memory(MemoryArgs),
}

/// `quire-bench memory`.
#[derive(clap::Args)]
struct MemoryArgs {
    /// Chunks to write (200 to a document).
    #[arg(long, default_value_t = 200_000)]
    chunks: usize,
    /// The data directory: a new one is filled; with --open, an existing one is searched.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Real windows embedded for the vectors (each chunk's vector is one, perturbed).
    #[arg(long, default_value_t = 256)]
    base: usize,
    /// The PDFs whose text (with /usr/share/common-licenses) the chunks are cut from.
    #[arg(long, default_value = "../shared/corpus/pdfs")]
    pdfs: PathBuf,
    /// The questions searched (their `question` field).
    #[arg(long, default_value = "../shared/corpus/questions.jsonl")]
    questions: PathBuf,
    /// Times each question is searched.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Only open `--data-dir` and search it, in this process (what the child runs).
    #[arg(long)]
    open: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli.cmd) {
        eprintln!("quire-bench: {e:#}");
        std::process::exit(1);
    }
}

fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Embed {
            json,
            reference,
            chunks,
            runs,
            device,
            load,
            peer,
        } => embed(
            json,
            &reference,
            chunks,
            runs,
            device.parse()?,
            (load, peer),
        ),
        BenchCmd::Llm {
            model,
            reference,
            requantize,
            device,
            load,
            peer,
            prompt_tokens,
            gen_depth,
            batch,
            json,
        } => llm(
            model,
            reference,
            requantize,
            device.parse()?,
            (load, peer),
            (prompt_tokens, gen_depth, batch),
            json,
        ),
        BenchCmd::Matmul {
            widths,
            types,
            rows,
            reps,
            peer_ops,
            json,
        } => emit(
            &quire_bench::matmul::run(&widths, &types, &rows, reps, peer_ops.as_deref())?,
            json,
        ),
        BenchCmd::Margins {
            model,
            reference,
            steps,
            json,
        } => {
            let model = match model {
                Some(p) => p,
                None => quire::models::find(quire::models::SMOLLM2)?,
            };
            let reference = match reference {
                Some(p) => p,
                None => quire_bench::margins::default_reference(&model)
                    .context("no reference for a model without a file name")?,
            };
            emit(&quire_bench::margins::run(&model, &reference, steps)?, json)
        }
        BenchCmd::Extract { dir, json } => extract(dir, json),
        BenchCmd::Tables {
            pdfs,
            marked,
            split,
            grid,
            misses,
            list,
            json,
        } => {
            if list {
                let found = quire_bench::tables::list(&pdfs)?;
                if json {
                    println!("{}", serde_json::to_string(&found)?);
                } else {
                    for f in &found {
                        println!("{f}");
                    }
                }
                return Ok(());
            }
            let inputs = quire_bench::tables::Inputs {
                dir: pdfs,
                marked,
                split,
            };
            if grid {
                let reports = quire_bench::tables::grid(&inputs)?;
                if json {
                    println!("{}", serde_json::to_string(&reports)?);
                } else {
                    for r in &reports {
                        r.print();
                    }
                }
            } else {
                let halves: &[&str] = if misses { &["tune"] } else { &["tune", "held"] };
                let mut r = quire_bench::tables::run(&inputs, halves)?;
                if !misses {
                    r.misses.clear();
                }
                if json {
                    println!("{}", serde_json::to_string(&r)?);
                } else {
                    r.print();
                    for m in &r.misses {
                        println!("  {m}");
                    }
                }
            }
            Ok(())
        }
        BenchCmd::Ingest {
            dir,
            json,
            peer,
            same_chunks,
            load,
        } => {
            let dir = dir.unwrap_or_else(quire_bench::default_corpus);
            let chunks = if same_chunks {
                quire_bench::ingest::PeerChunks::Same
            } else {
                quire_bench::ingest::PeerChunks::Default
            };
            let report = quire_bench::ingest::bench(&dir, peer.as_deref(), chunks, load)?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print!("{}", report.table());
            }
            Ok(())
        }
        BenchCmd::Retrieval {
            json,
            pdfs,
            questions,
            split,
            fusion,
            nav_weight,
            latin_variant,
            follow_contents,
            follow_captions,
            data_dir,
            embedder,
            queries,
            model,
        } => {
            let mut settings = quire_bench::retrieval::QualitySettings {
                fusion,
                num_queries: queries.max(1),
                ..Default::default()
            };
            if let Some(w) = nav_weight {
                settings.navigation_weight = w;
            }
            settings.latin_variant = latin_variant;
            if let Some(f) = follow_contents {
                settings.follow_contents = f;
            }
            if let Some(f) = follow_captions {
                settings.follow_captions = f;
            }
            retrieval(
                json,
                &pdfs,
                (&questions, &split),
                settings,
                data_dir,
                embedder,
                model,
            )
        }
        BenchCmd::FillRows { json, n, dir } => emit(&quire_bench::rows::fill(&dir, n)?, json),
        BenchCmd::Answer(a) => answer(&a),
        BenchCmd::Draft {
            model,
            drafts,
            pdfs,
            questions,
            limit,
            data_dir: dir,
            peer,
            json,
        } => {
            let mut qs = quire_bench::answer::load_questions(&questions)?;
            if let Some(n) = limit {
                qs.truncate(n);
            }
            anyhow::ensure!(!qs.is_empty(), "no questions in {}", questions.display());
            let (data_dir, temp) = data_dir(&dir, "draft");
            let opts = quire_bench::draft::DraftBenchOptions {
                pdfs,
                data_dir: data_dir.clone(),
                questions: qs,
                model,
                drafts: drafts
                    .split(',')
                    .map(|d| d.trim().to_string())
                    .filter(|d| !d.is_empty())
                    .collect(),
                peer,
            };
            let r = quire_bench::draft::draft_bench(&opts, &quire::llm::Cancel::new(), &mut |m| {
                eprintln!("{m}")
            });
            if temp {
                let _ = std::fs::remove_dir_all(&data_dir);
            }
            emit(&r?, json)
        }
        BenchCmd::Route {
            questions,
            split,
            json,
        } => {
            let qs: Vec<quire_bench::whole::RouteQuestion> = quire::jsonl::read(&questions)?;
            let split = quire_bench::whole::HalfSplit::load(&split)?;
            emit(&quire_bench::whole::route_bench(&qs, &split), json)
        }
        BenchCmd::SummaryTime {
            pdfs,
            file,
            question,
            data_dir: dir,
            model,
            json,
        } => {
            let (data_dir, temp) = data_dir(&dir, "summary-time");
            let engine = indexed_engine(&pdfs, &data_dir, model.as_deref())?;
            let r = quire_bench::whole::summary_timing(
                &engine,
                &file,
                &question,
                &Default::default(),
                &quire::llm::Cancel::new(),
            );
            drop(engine);
            if temp {
                let _ = std::fs::remove_dir_all(&data_dir);
            }
            emit(&r?, json)
        }
        BenchCmd::Conversations(a) => conversations(&a),
        BenchCmd::TreeBatch(a) => tree_batch(&a),
        BenchCmd::NotFound {
            json,
            data_dir,
            pdfs,
            questions,
            questions_zh,
            unanswerable,
            generic,
            split,
            embedder,
        } => {
            let sets = quire_bench::not_found::Sets {
                corpus: &questions,
                zh: &questions_zh,
                generic: &generic,
                unanswerable: &unanswerable,
                split: &split,
            };
            let r =
                quire_bench::not_found::run(&data_dir, &pdfs, &sets, embedder.as_deref(), |m| {
                    eprintln!("{m}")
                })?;
            emit(&r, json)
        }
        BenchCmd::RetrievalScale {
            json,
            sizes,
            queries,
        } => retrieval_scale(json, &sizes, queries),
        BenchCmd::Pipes { json } => emit(
            &quire_bench::pipes::run(quire::cpu::pool::max_threads())?,
            json,
        ),
        BenchCmd::Library {
            docs,
            dir,
            store,
            seed,
            queries,
            json,
        } => {
            let opts = quire_bench::library::Options {
                docs,
                dir: dir.unwrap_or_else(|| quire_bench::library::default_dir(docs, seed)),
                stores: store,
                seed,
                queries,
            };
            let r = quire_bench::library::run(&opts, &mut |m| eprintln!("{m}"))?;
            emit(&r, json)
        }
        BenchCmd::LibrarySearch {
            sizes,
            store,
            seed,
            queries,
            json,
        } => {
            let sizes = sizes
                .split(',')
                .map(|s| {
                    s.trim()
                        .parse::<usize>()
                        .map_err(|e| quire::Error::Invalid(format!("--sizes {s:?}: {e}")))
                })
                .collect::<quire::Result<Vec<_>>>()?;
            let opts = quire_bench::library_search::Options {
                sizes,
                store,
                seed,
                queries,
            };
            let r = quire_bench::library_search::run(&opts, &mut |m| eprintln!("{m}"))?;
            emit(&r, json)
        }
        BenchCmd::ServeLoad(a) => serve_load(a),
        BenchCmd::Memory(a) => memory(&a),
        BenchCmd::Support {
            json,
            labelled,
            data_dir,
            pdfs,
            questions,
            split,
            show,
            no_llm,
            answers,
            list,
        } => {
            use quire_bench::support;
            let (checker, ms) = support::check_labelled(&labelled, show.as_deref())?;
            let mut r = support::Report {
                cpu: support::cpu_name(),
                checker,
                check_ms_median: quire_bench::answer::median(&ms),
                check_ms_max: ms.iter().copied().fold(0.0, f64::max),
                ..Default::default()
            };
            if let Some(dir) = data_dir {
                let opts = support::AnswerOptions {
                    llm: !no_llm,
                    answers,
                    list,
                };
                let (answers, model) =
                    support::answer_figures(&dir, &pdfs, &questions, &split, &opts, |m| {
                        eprintln!("{m}")
                    })?;
                r.answers = answers;
                r.model = Some(model);
            }
            emit(&r, json)
        }
        BenchCmd::Store {
            json,
            store,
            pdfs,
            questions,
            reps,
        } => {
            let emb = quire::embed::bert::BertEmbedder::open(&quire::models::default_embedder()?)?;
            eprintln!(
                "indexing {} (pdftotext pages, embedded once)",
                pdfs.display()
            );
            let chunks = quire_bench::retrieval::index_pdf_dir(&pdfs, &emb)?;
            let qs: Vec<String> = quire_bench::retrieval::load_questions(&questions)?
                .into_iter()
                .map(|q| q.question)
                .collect();
            let r = quire_bench::store::compare(&chunks, &qs, &emb, &store, reps, |m| {
                eprintln!("{m}")
            })?;
            emit(&r, json)
        }
    }
}

#[derive(clap::Args)]
struct ServeLoadArgs {
    /// Clients asking at once.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Start asks for this many seconds…
    #[arg(long, default_value_t = 120.0, conflicts_with = "asks")]
    secs: f64,
    /// …or this many asks per client instead.
    #[arg(long)]
    asks: Option<usize>,
    /// The PDF the questions are about, indexed first.
    #[arg(long, default_value = "../shared/corpus/pdfs/wasysym.pdf")]
    seed: PathBuf,
    /// PDFs indexed (one upload) while the clients ask: a folder (its PDFs but the
    /// seed) or a file.
    #[arg(long, default_value = "../shared/corpus/pdfs")]
    batch: PathBuf,
    /// At most this many of them.
    #[arg(long, default_value_t = 20)]
    batch_files: usize,
    /// One JSON question a line (`file`, `question`); those about the seed are asked.
    #[arg(long, default_value = "../shared/corpus/questions.jsonl")]
    questions: PathBuf,
    /// The LLM (a GGUF name in the model folders, or a path); default: the settings'.
    #[arg(long)]
    model: Option<String>,
    #[arg(long, default_value_t = 48)]
    max_tokens: usize,
    /// Every Nth ask of a client drops its connection after the first piece (0: none).
    #[arg(long, default_value_t = 5)]
    cancel_every: usize,
    /// The `quire` binary (default: the one beside this one).
    #[arg(long)]
    quire: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

fn serve_load(a: ServeLoadArgs) -> anyhow::Result<()> {
    let quire = match a.quire {
        Some(q) => q,
        None => std::env::current_exe()?
            .parent()
            .context("no folder for quire-bench")?
            .join("quire"),
    };
    let seed_name = a
        .seed
        .file_name()
        .context("--seed names no file")?
        .to_owned();
    let questions: Vec<String> = std::fs::read_to_string(&a.questions)
        .with_context(|| a.questions.display().to_string())?
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|q| q["file"].as_str() == seed_name.to_str())
        .filter_map(|q| q["question"].as_str().map(str::to_owned))
        .collect();
    anyhow::ensure!(
        !questions.is_empty(),
        "no question about {seed_name:?} in {}",
        a.questions.display()
    );
    let batch: Vec<PathBuf> = if a.batch.is_dir() {
        quire_bench::pdfs(&a.batch)?
            .into_iter()
            .filter(|p| p.file_name() != Some(seed_name.as_os_str()))
            .take(a.batch_files)
            .collect()
    } else {
        vec![a.batch.clone()]
    };
    let opts = quire_bench::serving::Options {
        quire,
        clients: a.clients,
        secs: if a.asks.is_some() { None } else { Some(a.secs) },
        asks_per_client: a.asks,
        seed_pdf: a.seed,
        batch,
        model: a.model,
        max_tokens: a.max_tokens,
        cancel_every: a.cancel_every,
        questions,
    };
    let r = quire_bench::serving::run(&opts, &mut |m| eprintln!("{m}"))?;
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{}", quire_bench::serving::table(&r));
    }
    anyhow::ensure!(
        r.problems.is_empty(),
        "{} problems: {}",
        r.problems.len(),
        r.problems.join("; ")
    );
    Ok(())
}

/// Print `r` as one JSON object or as its table.
fn memory(a: &MemoryArgs) -> anyhow::Result<()> {
    use quire_bench::memory;
    let questions: Vec<String> = quire_bench::retrieval::load_questions(&a.questions)?
        .into_iter()
        .map(|q| q.question)
        .collect();
    if a.open {
        let dir = a.data_dir.as_deref().context("--open needs --data-dir")?;
        let open = memory::open(dir, &questions, a.reps)?;
        return emit(&memory::MemoryReport { fill: None, open }, a.json);
    }
    let temp;
    let dir = match &a.data_dir {
        Some(d) => d.clone(),
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    eprintln!("reading real text ...");
    let words = memory::real_words(&a.pdfs)?;
    let fill = memory::fill(&dir, a.chunks, a.base, &words, |m| eprintln!("{m}"))?;
    eprintln!(
        "filled in {:.0} s; opening and searching in a child process ...",
        fill.secs
    );
    let out = std::process::Command::new(std::env::current_exe()?)
        .arg("memory")
        .arg("--open")
        .arg("--json")
        .arg("--data-dir")
        .arg(&dir)
        .arg("--questions")
        .arg(&a.questions)
        .arg("--reps")
        .arg(a.reps.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()?;
    anyhow::ensure!(out.status.success(), "the child process failed");
    let child: memory::MemoryReport = serde_json::from_slice(&out.stdout)?;
    emit(
        &memory::MemoryReport {
            fill: Some(fill),
            open: child.open,
        },
        a.json,
    )
}

fn emit<T: serde::Serialize + std::fmt::Display>(r: &T, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(r)?);
    } else {
        print!("{r}");
    }
    Ok(())
}

fn embed(
    json: bool,
    reference: &Path,
    n: usize,
    runs: usize,
    device: quire::llm::DeviceChoice,
    (busy, peer): (usize, Option<PathBuf>),
) -> anyhow::Result<()> {
    let dir = quire::models::default_embedder()?;
    let cond = quire_bench::embed::Conditions {
        busy,
        peer: peer.map(|py| (py, dir.clone())),
    };
    let device = device.resolve()?;
    let emb = quire::embed::bert::BertEmbedder::open_on(&dir, &device.device, None)?;
    eprintln!("embedder: {}", emb.runtime());
    let text = std::fs::read_to_string("/usr/share/common-licenses/GPL-3")
        .context("the benchmark text /usr/share/common-licenses/GPL-3")?;
    let chunks = quire_bench::embed::chunks_of_words(&text, n, 200);
    let reference = reference.is_file().then_some(reference);
    let mut r = quire_bench::embed::run(
        &emb,
        "all-MiniLM-L6-v2",
        &chunks,
        200,
        runs,
        reference,
        &cond,
    )?;
    r.runtime = emb.runtime();
    if !r.runtime.ends_with(" f32") {
        // The same chunks through the f32 kernels: how far the faster arithmetic moves
        // the vectors.
        let exact = quire::embed::bert::BertEmbedder::open_with(&dir, Kernels::F32)?;
        let texts: Vec<&str> = chunks.iter().map(String::as_str).collect();
        r.cosine_vs_f32 = Some(quire_bench::embed::agreement(
            &emb.embed(&texts)?,
            &exact.embed(&texts)?,
        ));
    }
    emit(&r, json)
}

fn llm(
    model: Option<PathBuf>,
    reference: Option<PathBuf>,
    requantize: bool,
    device: quire::llm::DeviceChoice,
    (busy, peer): (usize, Option<PathBuf>),
    (prompt_tokens, gen_depth, batch): (usize, usize, usize),
    json: bool,
) -> anyhow::Result<()> {
    let path = match model {
        Some(p) => p,
        None => quire::models::default_llm()?,
    };
    if prompt_tokens < 16 {
        anyhow::bail!("--prompt-tokens: at least 16 (generation starts from 16 of them)");
    }
    if gen_depth == 0 {
        anyhow::bail!("--gen-depth: at least 1 prompt token before generation");
    }
    if batch == 0 {
        anyhow::bail!("--batch: at least 1 sequence");
    }
    let opts = quire_bench::llm::BenchOptions {
        prompt_tokens,
        gen_depth,
        batch,
        reference,
        load: quire::llm::LoadOptions {
            requantize,
            device,
            ..Default::default()
        },
        busy,
        peer,
        ..Default::default()
    };
    let b = quire_bench::llm::bench(&path, &opts)?;
    if json {
        println!("{}", serde_json::to_string(&b)?);
    } else {
        println!("{b}");
    }
    Ok(())
}

fn extract(dir: Option<PathBuf>, json: bool) -> anyhow::Result<()> {
    let dir = dir.unwrap_or_else(quire_bench::default_corpus);
    let report = quire_bench::extract::bench(&dir)?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(())
}

fn retrieval(
    json: bool,
    pdfs: &Path,
    (questions, split): (&[PathBuf], &Path),
    settings: quire_bench::retrieval::QualitySettings,
    data_dir: Option<PathBuf>,
    embedder: Option<String>,
    model: Option<String>,
) -> anyhow::Result<()> {
    let mut qs = Vec::new();
    for q in questions {
        qs.extend(quire_bench::retrieval::load_questions(q)?);
    }
    let split = quire_bench::retrieval::Split::load(split)?;
    let llm = if settings.num_queries > 1 {
        let path = match model {
            Some(m) => quire::models::find(&m)?,
            None => quire::models::default_llm()?,
        };
        eprintln!("query variants by: {}", path.display());
        Some(quire::llm::GgufLlm::load(&path)?)
    } else {
        None
    };
    let dir = match embedder {
        Some(name) => quire::models::find(&name)?,
        None => quire::models::default_embedder()?,
    };
    eprintln!("embedding model: {}", dir.display());
    let emb = quire::embed::bert::BertEmbedder::open(&dir)?;
    let r = match data_dir {
        Some(dir) => {
            // The engine's own index and corpus: no text nor f32 vector in memory,
            // both read from the store.
            let engine = quire::engine::Engine::open(quire::engine::EngineConfig::new(Some(dir))?)?;
            let corpus = engine.retrieval_corpus()?;
            let llm = llm.as_ref().map(|l| l as &dyn quire::llm::Llm);
            quire_bench::retrieval::quality(corpus.as_ref(), &emb, llm, &qs, &split, settings)?
        }
        None => {
            eprintln!("indexing {} ...", pdfs.display());
            let chunks = quire_bench::retrieval::index_pdf_dir(pdfs, &emb)?;
            let index = quire::retrieve::RetrievalIndex::build(chunks)?;
            let llm = llm.as_ref().map(|l| l as &dyn quire::llm::Llm);
            quire_bench::retrieval::quality(&index, &emb, llm, &qs, &split, settings)?
        }
    };
    emit(&r, json)
}

fn retrieval_scale(json: bool, sizes: &str, queries: usize) -> anyhow::Result<()> {
    let sizes = sizes
        .split(',')
        .map(|s| s.trim().parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
        .context("--sizes: comma-separated numbers")?;
    let params = quire_bench::retrieval::ScaleParams {
        sizes,
        queries,
        ..Default::default()
    };
    let r = quire_bench::retrieval::scale(&params, |m| eprintln!("{m}"))?;
    emit(&r, json)
}

/// `quire-bench conversations`.
#[derive(clap::Args)]
struct ConversationsArgs {
    /// The folder holding the conversations' PDFs.
    #[arg(long, default_value = "../shared/corpus/pdfs")]
    pdfs: PathBuf,
    /// One JSON conversation a line (id, lang, file, turns of question, pages,
    /// must_contain); repeat for several sets.
    #[arg(long, default_values = ["bench/data/conversations.jsonl", "bench/data/conversations2.jsonl"])]
    conversations: Vec<PathBuf>,
    /// The committed tuning and held-out halves of the conversation sets.
    #[arg(long, default_value = "bench/data/conversations_split.json")]
    split: PathBuf,
    /// Only the conversations of this half: tune or held (default: both).
    #[arg(long)]
    half: Option<String>,
    /// Only the first N conversations.
    #[arg(long)]
    limit: Option<usize>,
    /// Also rerank with the LLM: the follow-ups' asks, and each follow-up asked alone.
    #[arg(long)]
    rerank: bool,
    /// No LLM: each follow-up searched as typed and as its thread query alone.
    #[arg(long)]
    thread_only: bool,
    /// How a follow-up is searched (the setting `follow_up_search`): thread_only,
    /// thread or condensed; default: the settings' default.
    #[arg(long)]
    follow_up_search: Option<String>,
    /// How follow-ups use the history: condense_plus_context or condense_question.
    #[arg(long, default_value = "condense_plus_context")]
    chat_mode: String,
    /// The response mode of every answer.
    #[arg(long, default_value = "compact")]
    mode: String,
    /// Sources kept (the top k a page must be in).
    #[arg(long, default_value_t = 4)]
    top_k: usize,
    /// Most tokens generated per LLM call.
    #[arg(long, default_value_t = 128)]
    max_tokens: usize,
    /// The LLM: a GGUF file name in the model folders, or a path.
    #[arg(long)]
    model: Option<String>,
    /// Index into (and keep) this data directory instead of a temporary one.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// `quire-bench answer`.
#[derive(clap::Args)]
struct AnswerArgs {
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
    /// The LLM: a GGUF file name in the model folders, or a path (default: the
    /// settings' model).
    #[arg(long)]
    model: Option<String>,
    /// Index into (and keep) this data directory instead of a temporary one; a later
    /// run with the same directory reuses the index.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Instead: each question's latency while the same engine indexes this folder,
    /// against its quiet latency (in the first of --modes; compact for `all`).
    #[arg(long)]
    while_indexing: Option<PathBuf>,
    /// LlamaIndex's SentenceEmbeddingOptimizer before the answer: keep this share of
    /// each source's sentences (`percentile_cutoff`, 0 to 1).
    #[arg(long)]
    optimizer_percentile: Option<f64>,
    /// The optimizer's `threshold_cutoff` (a sentence's cosine to the question).
    #[arg(long)]
    optimizer_threshold: Option<f64>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Instead: these whole-document questions (`bench/data/whole.jsonl`), each over
    /// its document, from the top passages (before) and by the whole-document route
    /// (after): key terms in answers and seconds per answer, per half of the split.
    #[arg(long)]
    whole: Option<PathBuf>,
    /// The split of the whole-document questions.
    #[arg(long, default_value = "bench/data/whole_split.json")]
    whole_split: PathBuf,
    /// Only the questions of this half (`tune` or `held`) of `--split`: e.g. the table
    /// questions' (`--questions bench/data/table_questions.jsonl --split
    /// bench/data/table_questions_split.json --half held`).
    #[arg(long, requires = "split")]
    half: Option<String>,
    /// The committed split `--half` reads.
    #[arg(long)]
    split: Option<PathBuf>,
}

#[derive(clap::Args)]
struct TreeBatchArgs {
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

fn tree_batch(a: &TreeBatchArgs) -> anyhow::Result<()> {
    let mut questions = quire_bench::answer::load_questions(&a.questions)?;
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
    let r = quire_bench::answer::tree_batch(
        llm.as_ref(),
        &cases,
        a.context_window,
        a.max_tokens,
        &cancel,
        &mut |m| eprintln!("{m}"),
    )?;
    emit(&r, a.json)
}

fn answer(a: &AnswerArgs) -> anyhow::Result<()> {
    if let Some(whole) = &a.whole {
        return answer_whole(a, whole);
    }
    let mut questions = quire_bench::answer::load_questions(&a.questions)?;
    if let (Some(half), Some(split)) = (&a.half, &a.split) {
        anyhow::ensure!(
            half == "tune" || half == "held",
            "--half is tune or held, not {half}"
        );
        let split = quire_bench::not_found::load_split(split)?;
        questions.retain(|q| split.half(&q.id) == half.as_str());
    }
    if let Some(n) = a.limit {
        questions.truncate(n);
    }
    anyhow::ensure!(
        !questions.is_empty(),
        "no questions in {}",
        a.questions.display()
    );
    if let Some(dir) = &a.while_indexing {
        return answer_while_indexing(a, &questions, dir);
    }
    let (data_dir, temp) = data_dir(&a.data_dir, "answer");
    let opts = quire_bench::answer::AnswerBenchOptions {
        pdfs: a.pdfs.clone(),
        data_dir: data_dir.clone(),
        questions,
        modes: quire_bench::answer::parse_modes(&a.modes)?,
        overrides: quire::engine::AskOverrides {
            top_k: a.top_k,
            max_tokens: a.max_tokens,
            ..Default::default()
        },
        model: a.model.clone(),
        optimizer_percentile: a.optimizer_percentile,
        optimizer_threshold: a.optimizer_threshold,
    };
    let r = quire_bench::answer::answer_bench(&opts, &quire::llm::Cancel::new(), &mut |m| {
        eprintln!("{m}")
    });
    if temp {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    emit(&r?, a.json)
}

/// An engine over `data_dir` with `pdfs` indexed (a kept index is reused), answering
/// with `model` when given.
fn indexed_engine(
    pdfs: &Path,
    data_dir: &Path,
    model: Option<&str>,
) -> anyhow::Result<quire::engine::Engine> {
    let engine = quire::engine::Engine::open(quire::engine::EngineConfig::new(Some(
        data_dir.to_path_buf(),
    ))?)?;
    if let Some(m) = model {
        let mut s = engine.settings();
        s.model = m.to_string();
        engine.set_settings(s)?;
    }
    eprintln!("indexing {} ...", pdfs.display());
    let summary = engine.index_summary(
        &[pdfs.to_path_buf()],
        &quire::llm::Cancel::new(),
        &mut |_| true,
    )?;
    eprintln!("{} indexed in {:.1}s", summary.indexed, summary.secs);
    Ok(engine)
}

/// `quire-bench answer --whole FILE`.
fn answer_whole(a: &AnswerArgs, questions: &Path) -> anyhow::Result<()> {
    let mut qs: Vec<quire_bench::whole::WholeQuestion> = quire::jsonl::read(questions)?;
    if let Some(n) = a.limit {
        qs.truncate(n);
    }
    let split = quire_bench::whole::HalfSplit::load(&a.whole_split)?;
    let (data_dir, temp) = data_dir(&a.data_dir, "answer-whole");
    let engine = indexed_engine(&a.pdfs, &data_dir, a.model.as_deref())?;
    let overrides = quire::engine::AskOverrides {
        top_k: a.top_k,
        max_tokens: a.max_tokens,
        ..Default::default()
    };
    let r = quire_bench::whole::whole_answers(
        &engine,
        &qs,
        &split,
        &overrides,
        &quire::llm::Cancel::new(),
        &mut |m| eprintln!("{m}"),
    );
    drop(engine);
    if temp {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    emit(&r?, a.json)
}

/// `quire-bench answer --while-indexing DIR`.
fn answer_while_indexing(
    a: &AnswerArgs,
    questions: &[quire_bench::answer::Question],
    dir: &Path,
) -> anyhow::Result<()> {
    let mode = match a.modes.as_str() {
        "all" => quire::synth::ResponseMode::Compact,
        m => quire_bench::answer::parse_modes(m)?[0],
    };
    let (data_dir, temp) = data_dir(&a.data_dir, "while");
    let run = || -> anyhow::Result<quire_bench::answer::WhileIndexing> {
        let engine =
            quire::engine::Engine::open(quire::engine::EngineConfig::new(Some(data_dir.clone()))?)?;
        if let Some(model) = &a.model {
            let mut s = engine.settings();
            s.model = model.clone();
            engine.set_settings(s)?;
        }
        let cancel = quire::llm::Cancel::new();
        eprintln!("indexing {} ...", a.pdfs.display());
        engine.index(std::slice::from_ref(&a.pdfs), &cancel, &mut |_| true)?;
        let overrides = quire::engine::AskOverrides {
            top_k: a.top_k,
            max_tokens: a.max_tokens,
            ..Default::default()
        };
        Ok(quire_bench::answer::while_indexing(
            &engine,
            questions,
            mode,
            &overrides,
            dir,
            &cancel,
            &mut |m| eprintln!("{m}"),
        )?)
    };
    let r = run();
    if temp {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    emit(&r?, a.json)
}

fn conversations(a: &ConversationsArgs) -> anyhow::Result<()> {
    let split = quire_bench::retrieval::Split::load(&a.split)?;
    let mut convs: Vec<quire_bench::conversations::Conversation> = Vec::new();
    for f in &a.conversations {
        convs.extend(quire::jsonl::read::<
            quire_bench::conversations::Conversation,
        >(f)?);
    }
    if let Some(h) = &a.half {
        anyhow::ensure!(
            h == "tune" || h == "held",
            "--half is tune or held, not {h:?}"
        );
        convs.retain(|c| split.place(&c.id).map(|p| p.1) == Some(h.as_str()));
    }
    if let Some(n) = a.limit {
        convs.truncate(n);
    }
    anyhow::ensure!(
        !convs.is_empty(),
        "no conversations in {:?}",
        a.conversations
    );
    let (data_dir, temp) = data_dir(&a.data_dir, "conv");
    let opts = quire_bench::conversations::Options {
        pdfs: a.pdfs.clone(),
        data_dir: data_dir.clone(),
        conversations: convs,
        model: a.model.clone(),
        chat_mode: a.chat_mode.clone(),
        mode: a.mode.clone(),
        top_k: a.top_k,
        max_tokens: a.max_tokens,
        rerank: a.rerank,
        follow_up_search: a.follow_up_search.clone(),
        split,
    };
    if a.thread_only {
        let r = quire_bench::conversations::thread_only(&opts, &quire::llm::Cancel::new());
        if temp {
            let _ = std::fs::remove_dir_all(&data_dir);
        }
        return emit(&r?, a.json);
    }
    let r = quire_bench::conversations::run(&opts, &quire::llm::Cancel::new(), &mut |m| {
        eprintln!("{m}")
    });
    if temp {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    emit(&r?, a.json)
}

/// The data directory a benchmark indexes into: the one given (kept), else a fresh
/// temporary one (`true`: remove it after).
fn data_dir(given: &Option<PathBuf>, name: &str) -> (PathBuf, bool) {
    match given {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("quire-bench-{name}-{}", std::process::id())),
            true,
        ),
    }
}
