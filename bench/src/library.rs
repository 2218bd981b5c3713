//! `quire bench library --docs N`: a library of N text PDFs (made by [`crate::pdfgen`],
//! 1–300 pages, median about 12) indexed as the app indexes it (the engine's queue and
//! pipeline, `Engine::index_summary`, with the default embedding model), into each
//! store asked for (SQLite, PostgreSQL). Per store: indexing throughput (pages, docs,
//! chunks a second) and the time the index's writes took, the accuracy of the queue's
//! ETA (`Engine::queue().eta_secs`, what the UI shows, and the pipeline's own, in its
//! `embedded` events) at 5, 10, 25, 50 and 75 % of the pages against the time that was
//! actually left, peak RSS of the indexing (VmHWM, reset before), the index's bytes on
//! disk per page, search latency (the engine's retrieval as a question runs it, no
//! LLM), and the time to bring the index up to date after 1 % of the files changed.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use quire::engine::{
    Cancel, DocStatus, Engine, EngineConfig, IndexEvent, RetrieveOptions, RetrieverKind,
};
use quire::{Error, Result};
use serde::Serialize;

use crate::pdfgen::{self, TextPool};

/// Where the ETA is sampled, as fractions of the library's pages.
pub const ETA_POINTS: [f64; 5] = [0.05, 0.10, 0.25, 0.50, 0.75];

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub docs: usize,
    /// The folder of the library's PDFs (made there, or reused).
    pub dir: PathBuf,
    /// Stores to index into, in turn: `sqlite`, `postgres` (a throwaway server from
    /// `scripts/pg-test-server.sh`), or a `postgres://…` URL (its documents are
    /// removed first: give the benchmark a database of its own).
    pub stores: Vec<String>,
    pub seed: u64,
    /// Search queries timed per store.
    pub queries: usize,
}

/// The ETA at one point of the work.
#[derive(Debug, Clone, Serialize)]
pub struct EtaSample {
    /// Fraction of the pages done when sampled.
    pub at: f64,
    pub elapsed_secs: f64,
    /// Seconds the indexing actually still took.
    pub actual_secs: f64,
    /// The queue's ETA as the UI shows it (`Engine::queue().eta_secs`); None while
    /// it has no measure yet.
    pub queue_eta_secs: Option<f64>,
    /// (ETA − actual) / actual, in %.
    pub queue_error_pct: Option<f64>,
    /// The pipeline's ETA in its last `embedded` event.
    pub pipeline_eta_secs: Option<f64>,
    pub pipeline_error_pct: Option<f64>,
}

/// Search latency over the finished index.
#[derive(Debug, Clone, Serialize)]
pub struct SearchFigures {
    pub queries: usize,
    /// The first query, which loads the index into memory (SQLite) where needed.
    pub first_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Bringing the index up to date after some files changed.
#[derive(Debug, Clone, Serialize)]
pub struct SyncFigures {
    /// Files rewritten with other text (1 % of the library, at least 1).
    pub changed: usize,
    /// Files indexed again (the changed ones, when the check is right).
    pub reindexed: usize,
    /// Files found unchanged.
    pub unchanged: usize,
    pub secs: f64,
    /// How the changes were found.
    pub method: String,
}

/// One store's figures.
#[derive(Debug, Clone, Serialize)]
pub struct StoreRun {
    /// `sqlite` or `postgres`.
    pub store: String,
    pub indexed: usize,
    pub failed: usize,
    pub pages: u64,
    pub chunks: u64,
    pub index_secs: f64,
    pub pages_per_sec: f64,
    pub docs_per_sec: f64,
    pub chunks_per_sec: f64,
    /// The index's writes (each document's `insert_document`, from its last
    /// embedding to its end), summed.
    pub write_secs: f64,
    pub eta: Vec<EtaSample>,
    /// Peak resident memory of this process while indexing, MB (extraction runs in
    /// child processes, not counted).
    pub peak_rss_mb: f64,
    /// Bytes of the data directory after indexing (SQLite: the whole index; None for
    /// a database elsewhere).
    pub index_bytes: Option<u64>,
    pub index_bytes_per_page: Option<f64>,
    pub search: SearchFigures,
    pub sync: SyncFigures,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct LibraryReport {
    pub cpu: String,
    pub cores: usize,
    pub docs: usize,
    /// Pages of the library as made.
    pub pages: u64,
    pub dir: String,
    /// Files made now (the others were reused), and the time it took.
    pub generated: usize,
    pub generate_secs: f64,
    pub embedder: String,
    pub runs: Vec<StoreRun>,
    /// PostgreSQL's indexing time over SQLite's, when both ran.
    pub postgres_vs_sqlite: Option<f64>,
    /// The same for the writes alone.
    pub postgres_vs_sqlite_writes: Option<f64>,
}

/// The default folder of a library of `docs` documents: kept between runs.
pub fn default_dir(docs: usize, seed: u64) -> PathBuf {
    std::env::temp_dir().join(format!("quire-library-{docs}-{seed}"))
}

/// Run the benchmark; progress lines go to `progress`.
pub fn run(opts: &Options, progress: &mut dyn FnMut(&str)) -> Result<LibraryReport> {
    if opts.docs == 0 {
        return Err(Error::Invalid("--docs must be at least 1".into()));
    }
    let targets = opts
        .stores
        .iter()
        .map(|s| StoreTarget::parse(s))
        .collect::<Result<Vec<_>>>()?;
    let pool = TextPool::load(Path::new(pdfgen::LICENSES))?;
    progress(&format!(
        "library of {} PDFs in {}",
        opts.docs,
        opts.dir.display()
    ));
    let lib = pdfgen::generate(&pool, &opts.dir, opts.docs, opts.seed, progress)?;
    progress(&format!(
        "{} PDFs made, {} reused ({:.1} s)",
        lib.written,
        opts.docs - lib.written,
        lib.secs
    ));
    let queries = pool.queries(opts.seed, opts.queries.max(1));
    let mut runs = Vec::new();
    let mut embedder = String::new();
    for target in targets {
        let server = match &target {
            StoreTarget::ThrowawayPostgres => Some(PgServer::start()?),
            _ => None,
        };
        let url = match (&target, &server) {
            (StoreTarget::Postgres(u), _) => Some(u.clone()),
            (_, Some(srv)) => Some(srv.url.clone()),
            _ => None,
        };
        progress(&format!(
            "indexing into {}",
            url.as_deref().unwrap_or("SQLite")
        ));
        let (r, model) = run_store(opts, &pool, &lib, url, &queries, progress)?;
        embedder = model;
        runs.push(r);
    }
    let by = |name: &str| runs.iter().find(|r| r.store == name);
    let ratio = |f: fn(&StoreRun) -> f64| match (by("postgres"), by("sqlite")) {
        (Some(p), Some(s)) => Some(f(p) / f(s).max(1e-9)),
        _ => None,
    };
    Ok(LibraryReport {
        cpu: crate::support::cpu_name(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        docs: opts.docs,
        pages: lib.files.iter().map(|(_, p)| u64::from(*p)).sum(),
        dir: opts.dir.display().to_string(),
        generated: lib.written,
        generate_secs: lib.secs,
        embedder,
        postgres_vs_sqlite: ratio(|r| r.index_secs),
        postgres_vs_sqlite_writes: ratio(|r| r.write_secs),
        runs,
    })
}

enum StoreTarget {
    Sqlite,
    ThrowawayPostgres,
    Postgres(String),
}

impl StoreTarget {
    fn parse(s: &str) -> Result<Self> {
        match s {
            "sqlite" => Ok(Self::Sqlite),
            "postgres" => Ok(Self::ThrowawayPostgres),
            u if u.starts_with("postgres://") || u.starts_with("postgresql://") => {
                Ok(Self::Postgres(u.to_string()))
            }
            other => Err(Error::Invalid(format!(
                "--store {other:?}: sqlite, postgres (a throwaway server) or a postgres:// URL"
            ))),
        }
    }
}

/// A throwaway PostgreSQL + pgvector on loopback (`scripts/pg-test-server.sh`, the
/// tests' server: the pgserver wheel in `.venv-pg`), stopped when dropped.
struct PgServer {
    url: String,
    dir: tempfile::TempDir,
}

fn pg_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-test-server.sh")
}

impl PgServer {
    fn start() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("quire-bench-pg-")
            .tempdir()
            .map_err(|e| Error::io(Path::new("tempdir"), e))?;
        let out = Command::new(pg_script())
            .arg("start")
            .arg(dir.path())
            .output()
            .map_err(|e| Error::io(pg_script(), e))?;
        let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || !url.starts_with("postgres://") {
            return Err(Error::Invalid(format!(
                "{} start: {}",
                pg_script().display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(Self { url, dir })
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = Command::new(pg_script())
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

/// Peak resident memory of this process in MB (VmHWM; 0 where there is none).
fn peak_rss_mb() -> f64 {
    crate::memory::status_mb("VmHWM:")
}

/// Start the peak over from the memory in use now (Linux: `clear_refs` 5).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

pub fn percentile(xs: &mut [f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let i = ((p * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1;
    xs[i]
}

/// What indexing measured, before the ETAs are set against the end.
struct Indexing {
    indexed: usize,
    failed: usize,
    secs: f64,
    write_secs: f64,
    /// (fraction, elapsed, queue ETA, pipeline ETA).
    samples: Vec<(f64, f64, Option<f64>, Option<f64>)>,
}

/// Index the library's folder into `engine` through the queue and the pipeline,
/// sampling the ETAs at [`ETA_POINTS`].
fn index_library(
    engine: &Engine,
    lib: &pdfgen::Library,
    dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Indexing> {
    let pages_of: HashMap<String, u32> = lib
        .files
        .iter()
        .map(|(p, n)| {
            let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            (p.display().to_string(), *n)
        })
        .collect();
    let total_pages: f64 = pages_of
        .values()
        .map(|&n| f64::from(n))
        .sum::<f64>()
        .max(1.0);
    let files = lib.files.len();
    let t = Instant::now();
    let (mut done_pages, mut done_files, mut current) = (0.0f64, 0usize, 0.0f64);
    let mut last_embedded: Option<Instant> = None;
    let mut write_secs = 0.0;
    let mut pipeline_eta = None;
    let mut samples = Vec::new();
    let mut last_line = Instant::now();
    let mut queue_error = None;
    let summary = engine.index_summary(&[dir.to_path_buf()], &Cancel::new(), &mut |ev| {
        match &ev {
            IndexEvent::File { path, .. } => {
                current = pages_of.get(path).map_or(0.0, |&n| f64::from(n));
                last_embedded = None;
            }
            IndexEvent::Embedded {
                chunks,
                total,
                eta_secs,
                ..
            } => {
                pipeline_eta = *eta_secs;
                last_embedded = Some(Instant::now());
                let f = *chunks as f64 / (*total).max(1) as f64;
                sample(
                    (done_pages + f * current) / total_pages,
                    &t,
                    engine,
                    pipeline_eta,
                    &mut samples,
                    &mut queue_error,
                );
            }
            IndexEvent::FileDone { skipped, .. } => {
                if let (false, Some(e)) = (*skipped, last_embedded) {
                    write_secs += e.elapsed().as_secs_f64();
                }
                done_pages += current;
                done_files += 1;
                sample(
                    done_pages / total_pages,
                    &t,
                    engine,
                    pipeline_eta,
                    &mut samples,
                    &mut queue_error,
                );
            }
            IndexEvent::FileFailed { path, reason } => {
                progress(&format!("failed: {path}: {reason}"));
                done_pages += current;
                done_files += 1;
            }
            _ => {}
        }
        if last_line.elapsed().as_secs_f64() >= 10.0 {
            last_line = Instant::now();
            let secs = t.elapsed().as_secs_f64();
            progress(&format!(
                "  {done_files}/{files} files, {:.0}% of the pages, {:.1} pages/s, {:.0} s",
                100.0 * done_pages / total_pages,
                done_pages / secs.max(1e-9),
                secs
            ));
        }
        true
    })?;
    if let Some(e) = queue_error {
        return Err(e);
    }
    Ok(Indexing {
        indexed: summary.indexed,
        failed: summary.failed.len(),
        secs: t.elapsed().as_secs_f64(),
        write_secs,
        samples,
    })
}

/// Sample the ETAs at each point of [`ETA_POINTS`] that `fraction` has passed.
fn sample(
    fraction: f64,
    t: &Instant,
    engine: &Engine,
    pipeline_eta: Option<f64>,
    samples: &mut Vec<(f64, f64, Option<f64>, Option<f64>)>,
    queue_error: &mut Option<Error>,
) {
    while samples.len() < ETA_POINTS.len() && fraction >= ETA_POINTS[samples.len()] {
        let queue_eta = match engine.queue() {
            Ok(q) => q.eta_secs,
            Err(e) => {
                queue_error.get_or_insert(e);
                None
            }
        };
        samples.push((fraction, t.elapsed().as_secs_f64(), queue_eta, pipeline_eta));
    }
}

fn error_pct(eta: Option<f64>, actual: f64) -> Option<f64> {
    eta.filter(|_| actual > 0.0)
        .map(|e| 100.0 * (e - actual) / actual)
}

/// Time `queries` through the engine's retrieval as a question runs it (the
/// settings' top k and fusion, the question alone: no LLM query variants).
fn search(engine: &Engine, queries: &[String]) -> Result<SearchFigures> {
    search_with(engine, queries, None)
}

/// [`search`] with the settings' retrievers, or `only` one of them.
pub fn search_with(
    engine: &Engine,
    queries: &[String],
    only: Option<RetrieverKind>,
) -> Result<SearchFigures> {
    let s = engine.settings();
    let mut opts = RetrieveOptions {
        top_k: s.top_k,
        fusion: s.fusion.parse()?,
        num_queries: 1,
        ..RetrieveOptions::default()
    };
    if let Some(k) = only {
        opts.retrievers = vec![k];
    }
    let cancel = Cancel::new();
    let t = Instant::now();
    let first = &queries[0];
    engine.search(first, &opts, &cancel)?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut ms = Vec::with_capacity(queries.len());
    for q in queries {
        let t = Instant::now();
        engine.search(q, &opts, &cancel)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(SearchFigures {
        queries: ms.len(),
        first_ms,
        p50_ms: percentile(&mut ms, 0.5),
        p99_ms: percentile(&mut ms, 0.99),
    })
}

/// The files to change: 1 % of the library (at least one), spread over it.
fn files_to_change(lib: &pdfgen::Library) -> Vec<usize> {
    let n = lib.files.len();
    let k = n.div_ceil(100).max(1);
    (0..k).map(|j| j * n / k).collect()
}

/// Watch the library's folder (SQLite: watched folders need it), and sync it once
/// with nothing changed: the seconds that took, or `None` where the store has no
/// watched folders (PostgreSQL) and the sync indexes the folder again instead.
pub fn watch_library(engine: &Engine, dir: &Path) -> Result<Option<f64>> {
    if engine
        .add_folder(dir, &quire::engine::FolderOptions::default())
        .is_err()
    {
        return Ok(None);
    }
    let t = Instant::now();
    let r = engine.sync_folders(&Cancel::new(), &mut |_| true)?;
    if r.indexed > 0 || r.changed > 0 || r.added > 0 {
        return Err(Error::Invalid(format!(
            "the first sync of the indexed library found work: {} added, {} changed",
            r.added, r.changed
        )));
    }
    Ok(Some(t.elapsed().as_secs_f64()))
}

/// Bring the index up to date after `changed` files of the library changed.
///
/// Where the folder is watched (`watched`, SQLite), the watched-folder sync: every
/// file's size and modification time compared, only the files whose stamp moved read
/// and hashed, the changed ones indexed; its time grows with the change (and one
/// `stat` a file). Otherwise (PostgreSQL, which has no watched folders) the folder is
/// indexed again through the queue, as `quire index DIR` does: every file read and
/// hashed (sha256), so its time grows with the library.
pub fn sync_after_change(
    engine: &Engine,
    dir: &Path,
    changed: usize,
    watched: Option<f64>,
) -> Result<SyncFigures> {
    let t = Instant::now();
    if let Some(unchanged_secs) = watched {
        let r = engine.sync_folders(&Cancel::new(), &mut |_| true)?;
        return Ok(SyncFigures {
            changed,
            reindexed: r.indexed,
            unchanged: r.unchanged,
            secs: t.elapsed().as_secs_f64(),
            method: format!(
                "watched-folder sync: every file's size and time compared, {} read and \
                 hashed, the changed indexed (the same sync with nothing changed: {:.3} s)",
                r.hashed, unchanged_secs
            ),
        });
    }
    let summary = engine.index_summary(&[dir.to_path_buf()], &Cancel::new(), &mut |_| true)?;
    Ok(SyncFigures {
        changed,
        reindexed: summary.indexed.saturating_sub(summary.skipped),
        unchanged: summary.skipped,
        secs: t.elapsed().as_secs_f64(),
        method: "the folder indexed again: every file read and hashed (sha256), \
                 the changed ones indexed"
            .into(),
    })
}

/// Index the library into a fresh index (SQLite in a temporary data directory, or
/// the PostgreSQL database at `url`, emptied first) and measure it.
fn run_store(
    opts: &Options,
    pool: &TextPool,
    lib: &pdfgen::Library,
    url: Option<String>,
    queries: &[String],
    progress: &mut dyn FnMut(&str),
) -> Result<(StoreRun, String)> {
    let data = tempfile::Builder::new()
        .prefix("quire-bench-library-")
        .tempdir()
        .map_err(|e| Error::io(Path::new("tempdir"), e))?;
    let store = if url.is_some() { "postgres" } else { "sqlite" };
    let engine = Engine::open(EngineConfig {
        data_dir: data.path().to_path_buf(),
        store: url.clone(),
        ..EngineConfig::default()
    })?;
    for d in engine.documents()? {
        engine.remove_document(d.id)?;
    }
    let model = engine.embedder_name();
    // Only indexing counts: the PDFs made, the engine opened.
    reset_peak_rss();
    let ix = index_library(&engine, lib, &opts.dir, progress)?;
    let peak_rss_mb = peak_rss_mb();
    let docs = engine.documents()?;
    let done = docs.iter().filter(|d| d.status == DocStatus::Done);
    let pages: u64 = done.clone().map(|d| u64::from(d.pages)).sum();
    let chunks: u64 = done.map(|d| d.chunks as u64).sum();
    let index_bytes = url.is_none().then(|| dir_bytes(data.path()));
    progress(&format!(
        "{store}: {} files, {pages} pages, {chunks} chunks in {:.1} s; searching",
        ix.indexed, ix.secs
    ));
    let search = search(&engine, queries)?;
    // 1 % of the files rewritten with other text (a revision this run alone makes),
    // then the index brought up to date; the files are put back after.
    let watched = watch_library(&engine, &opts.dir)?;
    let change = files_to_change(lib);
    let revision = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64 | 1);
    for &i in &change {
        pdfgen::write_doc(pool, opts.seed, i, revision, &lib.files[i].0)?;
    }
    progress(&format!("{store}: {} files changed; syncing", change.len()));
    let sync = sync_after_change(&engine, &opts.dir, change.len(), watched);
    for &i in &change {
        pdfgen::write_doc(pool, opts.seed, i, 0, &lib.files[i].0)?;
    }
    let sync = sync?;
    let eta = ix
        .samples
        .iter()
        .map(|&(at, elapsed, q, p)| {
            let actual = ix.secs - elapsed;
            EtaSample {
                at,
                elapsed_secs: elapsed,
                actual_secs: actual,
                queue_eta_secs: q,
                queue_error_pct: error_pct(q, actual),
                pipeline_eta_secs: p,
                pipeline_error_pct: error_pct(p, actual),
            }
        })
        .collect();
    let secs = ix.secs.max(1e-9);
    Ok((
        StoreRun {
            store: store.into(),
            indexed: ix.indexed,
            failed: ix.failed,
            pages,
            chunks,
            index_secs: ix.secs,
            pages_per_sec: pages as f64 / secs,
            docs_per_sec: ix.indexed as f64 / secs,
            chunks_per_sec: chunks as f64 / secs,
            write_secs: ix.write_secs,
            eta,
            peak_rss_mb,
            index_bytes,
            index_bytes_per_page: index_bytes.map(|b| b as f64 / pages.max(1) as f64),
            search,
            sync,
        },
        model,
    ))
}

fn opt(x: Option<f64>, unit: &str) -> String {
    x.map_or("-".into(), |v| format!("{v:.1}{unit}"))
}

impl fmt::Display for LibraryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "CPU: {} ({} cores)", self.cpu, self.cores)?;
        writeln!(
            f,
            "library: {} PDFs, {} pages in {} ({} made now, {:.1} s); embedder {}",
            self.docs, self.pages, self.dir, self.generated, self.generate_secs, self.embedder
        )?;
        for r in &self.runs {
            writeln!(f, "\n== {} ==", r.store)?;
            let mut row = |k: &str, v: String| writeln!(f, "{k:<36}{v}");
            row(
                "files indexed / failed",
                format!("{} / {}", r.indexed, r.failed),
            )?;
            row("pages, chunks", format!("{}, {}", r.pages, r.chunks))?;
            row("indexing time", format!("{:.1} s", r.index_secs))?;
            row(
                "  of which the index's writes",
                format!("{:.1} s", r.write_secs),
            )?;
            row(
                "pages/s, docs/s, chunks/s",
                format!(
                    "{:.2}, {:.3}, {:.2}",
                    r.pages_per_sec, r.docs_per_sec, r.chunks_per_sec
                ),
            )?;
            row(
                "peak RSS while indexing",
                format!("{:.0} MB", r.peak_rss_mb),
            )?;
            row(
                "index on disk",
                match (r.index_bytes, r.index_bytes_per_page) {
                    (Some(b), Some(pp)) => {
                        format!("{:.1} MB, {:.0} bytes/page", b as f64 / 1e6, pp)
                    }
                    _ => "in the database".into(),
                },
            )?;
            row(
                "search (no LLM)",
                format!(
                    "p50 {:.1} ms, p99 {:.1} ms over {} queries (first {:.0} ms)",
                    r.search.p50_ms, r.search.p99_ms, r.search.queries, r.search.first_ms
                ),
            )?;
            row(
                "sync after 1% changed",
                format!(
                    "{:.1} s: {} changed, {} indexed again, {} unchanged",
                    r.sync.secs, r.sync.changed, r.sync.reindexed, r.sync.unchanged
                ),
            )?;
            row("  how", r.sync.method.clone())?;
            writeln!(
                f,
                "{:<8}{:>10}{:>12}{:>12}{:>10}{:>12}{:>10}",
                "ETA at", "elapsed", "actual left", "queue ETA", "error", "pipeline", "error"
            )?;
            for e in &r.eta {
                writeln!(
                    f,
                    "{:<8}{:>9.1}s{:>11.1}s{:>12}{:>10}{:>12}{:>10}",
                    format!("{:.0}%", e.at * 100.0),
                    e.elapsed_secs,
                    e.actual_secs,
                    opt(e.queue_eta_secs, "s"),
                    opt(e.queue_error_pct, "%"),
                    opt(e.pipeline_eta_secs, "s"),
                    opt(e.pipeline_error_pct, "%"),
                )?;
            }
        }
        if let (Some(all), Some(w)) = (self.postgres_vs_sqlite, self.postgres_vs_sqlite_writes) {
            writeln!(
                f,
                "\nPostgreSQL / SQLite: indexing {all:.2}×, the writes alone {w:.2}×"
            )?;
        }
        Ok(())
    }
}
