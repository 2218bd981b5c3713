//! `quire folders`: watch folders (add, scan and index), list them, stop watching,
//! sync them all now. The engine keeps them in step while `quire serve` or the window
//! runs; these commands act once.

use std::path::PathBuf;

use quire::engine::{Engine, FolderOptions, SyncReport};

use super::index::{fmt_secs, Progress};

#[derive(clap::Subcommand, Debug, Clone)]
pub enum FoldersCmd {
    /// Watch a folder: its PDFs (recursively) are indexed now, with progress as
    /// `quire index` shows it, and kept in step after (new, changed, renamed and
    /// deleted files).
    Add {
        path: PathBuf,
        /// Tie the folder to this collection (made if there is none): it holds the
        /// folder's documents as they come and go.
        #[arg(long, value_name = "NAME")]
        collection: Option<String>,
        /// Print each progress event as one JSON line on stdout, then the sync's
        /// report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// List the watched folders.
    List {
        /// Print one JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Stop watching a folder; its documents leave the index unless
    /// `--keep-documents`.
    Rm {
        /// The folder's path or id (see `quire folders list`).
        folder: String,
        #[arg(long)]
        keep_documents: bool,
    },
    /// Sync every watched folder now: what changed on disk is indexed, renamed or
    /// removed (and what a killed run left queued is finished).
    Sync {
        /// As for `add`.
        #[arg(long)]
        json: bool,
    },
}

/// Run `cmd`.
pub fn run(engine: &Engine, cmd: FoldersCmd) -> anyhow::Result<()> {
    match cmd {
        FoldersCmd::Add {
            path,
            collection,
            json,
        } => {
            let f = engine.add_folder(&path, &FolderOptions { collection })?;
            eprintln!("watching {} (folder {})", f.path, f.id);
            sync(engine, json)
        }
        FoldersCmd::List { json } => list(engine, json),
        FoldersCmd::Rm {
            folder,
            keep_documents,
        } => {
            let id = engine.find_folder(&folder)?;
            let n = engine.remove_folder(id, keep_documents)?;
            println!("stopped watching folder {id}; {n} document(s) removed from the index");
            Ok(())
        }
        FoldersCmd::Sync { json } => sync(engine, json),
    }
}

fn sync(engine: &Engine, json: bool) -> anyhow::Result<()> {
    let cancel = quire::llm::Cancel::new();
    let mut progress = Progress::new(json);
    let report = engine.sync_folders(&cancel, &mut |ev| progress.on(ev))?;
    progress.end();
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        eprintln!("{}", describe(&report));
        for (path, reason) in &report.failed {
            eprintln!("  failed: {path}: {reason}");
        }
    }
    Ok(())
}

/// A sync's report in a line.
fn describe(r: &SyncReport) -> String {
    let mut s = format!(
        "synced {} folder(s) in {}: {} new, {} changed, {} renamed, {} removed, {} unchanged",
        r.folders,
        if r.secs < 60.0 {
            format!("{:.2}s", r.secs)
        } else {
            fmt_secs(r.secs)
        },
        r.added,
        r.changed,
        r.renamed,
        r.removed,
        r.unchanged
    );
    if r.copies > 0 {
        s += &format!(", {} copies of indexed files", r.copies);
    }
    if r.unavailable > 0 {
        s += &format!(", {} in missing folders kept (unavailable)", r.unavailable);
    }
    if r.indexed > 0 || !r.failed.is_empty() {
        s += &format!("; indexed {}, {} failed", r.indexed, r.failed.len());
    }
    s
}

fn list(engine: &Engine, json: bool) -> anyhow::Result<()> {
    let folders = engine.folders()?;
    if json {
        println!("{}", serde_json::to_string(&folders)?);
        return Ok(());
    }
    if folders.is_empty() {
        println!("no watched folders (add one with `quire folders add PATH`)");
    }
    for f in folders {
        let mut extra = String::new();
        if !f.available {
            extra += "  MISSING (documents kept, unavailable)";
        }
        if let Some(c) = &f.collection_name {
            extra += &format!("  collection \"{c}\"");
        }
        println!(
            "{:>4}  {:>5} documents  {}{extra}",
            f.id, f.documents, f.path
        );
    }
    Ok(())
}
