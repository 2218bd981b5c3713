//! `quire index` and `quire docs`: progress on a terminal, JSON events, a summary.

use std::path::{Path, PathBuf};

/// Indexing progress as `quire index` shows it: a progress line on stderr (on a
/// terminal) and a line per file done or failed, or each event as one JSON line on
/// stdout. `quire folders` shows its syncs the same way.
pub struct Progress {
    json: bool,
    tty: bool,
    line: String,
    file: (usize, usize, String),
}

impl Progress {
    pub fn new(json: bool) -> Self {
        Self {
            json,
            tty: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            line: String::new(),
            file: (0, 0, String::new()),
        }
    }

    /// Show one event; false when the output is gone (a closed pipe stops the run).
    pub fn on(&mut self, ev: quire::engine::IndexEvent) -> bool {
        use quire::engine::IndexEvent as E;
        use std::io::Write;
        if self.json {
            if let Ok(s) = serde_json::to_string(&ev) {
                let mut out = std::io::stdout().lock();
                return writeln!(out, "{s}").and_then(|_| out.flush()).is_ok();
            }
            return true;
        }
        let tty = self.tty;
        let name = |p: &str| {
            Path::new(p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.to_string())
        };
        let file = &mut self.file;
        let line = &mut self.line;
        let status = match &ev {
            E::File { index, total, path } => {
                *file = (*index, *total, name(path));
                Some(format!("[{index}/{total}] {}: extracting", file.2))
            }
            E::Embedded {
                chunks,
                total,
                eta_secs,
                ..
            } => {
                let eta = eta_text(*eta_secs);
                Some(format!(
                    "[{}/{}] {} {} chunks {chunks}/{total}{eta}",
                    file.0,
                    file.1,
                    file.2,
                    bar(*chunks, *total, 20)
                ))
            }
            E::Paused { .. } => Some(format!(
                "[{}/{}] {}: paused, a question is being answered",
                file.0, file.1, file.2
            )),
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
                eprintln!("{}done   {}: {what}", clear(tty, line), name(path));
                line.clear();
                None
            }
            E::FileFailed { path, reason } => {
                eprintln!("{}FAILED {}: {reason}", clear(tty, line), name(path));
                line.clear();
                None
            }
            E::Reembedded {
                model,
                done,
                total,
                eta_secs,
            } => {
                let eta = eta_text(*eta_secs);
                Some(format!(
                    "re-embedding with {model} {} chunks {done}/{total}{eta}",
                    bar(*done, *total, 20)
                ))
            }
            E::Page { .. } | E::Finished { .. } => None,
        };
        if let (Some(s), true) = (status, tty) {
            eprint!("{}{s}", clear(tty, line));
            *line = s;
        }
        true
    }

    /// Erase the progress line.
    pub fn end(&mut self) {
        if self.tty && !self.line.is_empty() {
            eprint!("{}", clear(self.tty, &self.line));
            self.line.clear();
        }
    }
}

/// `quire index`: a progress line on stderr (or JSON events on stdout), then a
/// summary; fails only when nothing could be indexed.
pub fn index(engine: &quire::engine::Engine, paths: &[PathBuf], json: bool) -> anyhow::Result<()> {
    let cancel = quire::llm::Cancel::new();
    let mut progress = Progress::new(json);
    if paths.is_empty() && engine.queued()? == 0 {
        anyhow::bail!("nothing to index: name files or folders (nothing is left queued)");
    }
    let summary = engine.index_summary(paths, &cancel, &mut |ev| progress.on(ev))?;
    progress.end();
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

pub fn fmt_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// `quire docs`: one line per document.
/// `quire queue`: the indexing queue, a line per file of the current batch.
pub fn queue(engine: &quire::engine::Engine, json: bool) -> anyhow::Result<()> {
    let q = engine.queue()?;
    if json {
        println!("{}", serde_json::to_string(&q)?);
        return Ok(());
    }
    if q.items.is_empty() {
        println!("the queue is empty");
        return Ok(());
    }
    for r in &q.items {
        let state = match r.state.as_str() {
            "running" => format!(
                "running {:>3.0}%{}",
                r.progress * 100.0,
                r.eta_secs
                    .map(|s| format!(", {} left", fmt_secs(s)))
                    .unwrap_or_default()
            ),
            "failed" => format!("failed ({})", r.error.as_deref().unwrap_or("?")),
            s => s.to_string(),
        };
        println!("{:>4}  {state}  {}", r.id, r.path);
    }
    let mut tail = format!("{} waiting or running", q.pending);
    if let Some(s) = q.eta_secs {
        tail += &format!(", about {} left", fmt_secs(s));
    }
    if q.paused_for_question {
        tail += "; paused, a question is being answered";
    }
    println!("{tail}");
    Ok(())
}

/// `quire queue cancel ID|PATH|all`.
pub fn cancel(engine: &quire::engine::Engine, what: &str) -> anyhow::Result<()> {
    let id = if what == "all" {
        None
    } else if let Ok(id) = what.parse::<i64>() {
        Some(id)
    } else {
        let id = engine.queued_id_of(what)?.ok_or_else(|| {
            anyhow::anyhow!("{what} is not waiting or running in the queue (see `quire queue`)")
        })?;
        Some(id)
    };
    let n = engine.cancel_queued(id)?;
    match (id, n) {
        (Some(id), 0) => {
            anyhow::bail!("queue item {id} is not waiting or running (see `quire queue`)")
        }
        (None, 0) => println!("nothing to cancel"),
        (_, n) => println!("cancelled {n} file{}", if n == 1 { "" } else { "s" }),
    }
    Ok(())
}

pub fn docs(engine: &quire::engine::Engine) -> anyhow::Result<()> {
    let docs = engine.documents()?;
    if docs.is_empty() {
        println!("no documents (add some with `quire index PATH...`)");
    }
    for d in docs {
        match d.error {
            Some(e) => println!("{:>4}  failed  {}  ({e})", d.id, d.path),
            None => println!(
                "{:>4}  {:>4} pages {:>5} chunks  {}{}",
                d.id,
                d.pages,
                d.chunks,
                d.path,
                if d.unavailable {
                    "  (unavailable: its watched folder is missing)"
                } else {
                    ""
                }
            ),
        }
    }
    Ok(())
}

/// `quire reembed`: choose the embedding model (when given) and re-embed every chunk
/// another model made, with a progress line; resumes a stopped one.
pub fn reembed(
    engine: &quire::engine::Engine,
    embedder: Option<String>,
    json: bool,
) -> anyhow::Result<()> {
    use std::io::Write;
    if let Some(name) = embedder {
        engine.set_settings(quire::settings::Settings {
            embedder: name,
            ..engine.settings()
        })?;
    }
    let cancel = quire::llm::Cancel::new();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut on = |ev: quire::engine::IndexEvent| {
        if json {
            if let Ok(s) = serde_json::to_string(&ev) {
                let mut out = std::io::stdout().lock();
                return writeln!(out, "{s}").and_then(|_| out.flush()).is_ok();
            }
        } else if let (quire::engine::IndexEvent::Reembedded { done, total, .. }, true) = (&ev, tty)
        {
            eprint!(
                "\r\x1b[Kre-embedding {} {done}/{total}",
                bar(*done, *total, 20)
            );
        }
        true
    };
    let n = engine.reembed(&cancel, &mut on)?;
    if tty && !json {
        eprintln!();
    }
    eprintln!("re-embedded {n} chunks with {}", engine.embedder_name());
    Ok(())
}

/// ", ETA 1m 05s", or nothing when there is no estimate yet.
fn eta_text(eta_secs: Option<f64>) -> String {
    eta_secs
        .map(|s| format!(", ETA {}", fmt_secs(s)))
        .unwrap_or_default()
}
