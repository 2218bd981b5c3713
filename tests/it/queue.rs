//! The indexing queue: a batch killed with SIGKILL is finished by the next start
//! without being asked, every file once; the queue lists progress and can be
//! cancelled per file and for all.

use std::process::Command;
use std::sync::Arc;

use quire::engine::{spawn_resume, Engine, EngineConfig, IndexEvent};
use quire::llm::Cancel;
use quire::store::Store;

use crate::util;

const TOPICS: [&str; 20] = [
    "astronomy",
    "botany",
    "chemistry",
    "dentistry",
    "ecology",
    "forestry",
    "geology",
    "horticulture",
    "ichthyology",
    "journalism",
    "kinesiology",
    "linguistics",
    "meteorology",
    "numismatics",
    "oceanography",
    "paleontology",
    "quantum optics",
    "rheology",
    "seismology",
    "toxicology",
];

#[test]
fn a_batch_killed_mid_way_is_finished_at_the_next_start_each_file_once() {
    let _alone = crate::util::heavy();
    let tmp = tempfile::tempdir().expect("tmp");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    for (i, t) in TOPICS.iter().enumerate() {
        util::topic_pdf(&docs.join(format!("{i:02}-{t}.pdf")), t, 6);
    }
    let data = tmp.path().join("data");
    let db = data.join("index.sqlite");
    // Kill at the first progress line after a document is done (no timers).
    let status = util::run_index_killed_when(util::quire_index(&data).arg(&docs), 100_000, || {
        util::done_in_db(&db) >= 1
    });
    assert!(!status.success(), "the batch finished before the kill");
    // Counted again once it is dead: on a busy machine more files may finish between
    // the count above and the kill.
    let before = util::done_in_db(&db);
    assert!((1..20).contains(&before), "{before} done before the kill");
    // The documents done before the kill, by id: a file indexed again gets a new one.
    let done_before: Vec<i64> = Store::open(&db)
        .expect("open after kill")
        .documents()
        .expect("docs")
        .iter()
        .filter(|d| d.status == "done")
        .map(|d| d.id)
        .collect();

    // Start again, as `quire serve` and the window do: the queue is finished without
    // being asked. Its progress is visible meanwhile; the thread ends when it is done.
    let engine = Arc::new(
        Engine::open(EngineConfig::new(Some(data.clone())).expect("config")).expect("engine"),
    );
    assert_eq!(
        engine.queued().expect("queued") as i64 + before,
        20,
        "what was not done waits: {:?}",
        engine
            .queue()
            .expect("queue")
            .items
            .iter()
            .map(|r| r.state)
            .collect::<Vec<_>>()
    );
    let view = engine.queue().expect("queue");
    assert_eq!(view.items.len(), 20);
    assert_eq!(view.pending as i64, 20 - before);
    spawn_resume(engine.clone())
        .expect("something to resume")
        .join()
        .expect("resume thread");
    assert!(spawn_resume(engine.clone()).is_none(), "nothing left");

    let view = engine.queue().expect("queue");
    assert_eq!(view.pending, 0);
    assert!(view.items.iter().all(|r| r.state == "done"), "{view:?}");
    let store = Store::open(&db).expect("open");
    assert_eq!(store.check().expect("check"), Vec::<String>::new());
    let docs = store.documents().expect("docs");
    assert_eq!(docs.len(), 20, "{docs:?}");
    assert!(docs.iter().all(|d| d.status == "done" && d.chunks > 0));
    // None twice: each document's chunks once, and those done before the kill kept.
    let total: usize = docs.iter().map(|d| d.chunks).sum();
    assert_eq!(store.load_chunks().expect("chunks").len(), total);
    for id in &done_before {
        assert!(
            docs.iter().any(|d| d.id == *id),
            "document {id} was indexed again"
        );
    }
    let mut ids: Vec<i64> = view.items.iter().filter_map(|r| r.doc_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 20, "each queued file is its own document");
}

#[test]
fn queued_files_cancel_one_by_one_or_all() {
    let tmp = tempfile::tempdir().expect("tmp");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    for t in &TOPICS[..4] {
        util::topic_pdf(&docs.join(format!("{t}.pdf")), t, 2);
    }
    let engine = Engine::open(EngineConfig::new(Some(tmp.path().join("data"))).expect("config"))
        .expect("engine");
    // Cancel the last file when the first starts, and all the rest when the first
    // is done.
    let mut cancelled = Vec::new();
    let mut events = Vec::new();
    let r = engine.index(std::slice::from_ref(&docs), &Cancel::new(), &mut |ev| {
        match &ev {
            IndexEvent::File { index: 1, .. } => {
                // The last file: still queued, or already claimed by an extraction
                // worker running ahead (a cancel stops it either way).
                let q = engine.queue().expect("queue");
                let last = q
                    .items
                    .iter()
                    .rev()
                    .find(|r| r.state == "queued" || r.state == "running")
                    .expect("waiting");
                cancelled.push(engine.cancel_queued(Some(last.id)).expect("cancel one"));
            }
            IndexEvent::FileDone { .. } if cancelled.len() == 1 => {
                cancelled.push(engine.cancel_queued(None).expect("cancel all"));
            }
            _ => {}
        }
        events.push(ev);
        true
    });
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(cancelled[0], 1);
    let done = events
        .iter()
        .filter(|e| matches!(e, IndexEvent::FileDone { .. }))
        .count();
    let view = engine.queue().expect("queue");
    let states: Vec<&str> = view.items.iter().map(|r| r.state.as_str()).collect();
    assert_eq!(
        done,
        4 - states.iter().filter(|s| **s == "cancelled").count()
    );
    assert!(
        states.iter().filter(|s| **s == "cancelled").count() >= 2,
        "{states:?}"
    );
    assert_eq!(view.pending, 0);
    assert_eq!(engine.documents().expect("docs").len(), done);
}

/// `quire queue cancel` from another process: while a batch indexes, cancelling one
/// waiting file by its path and the running one by its queue id stops those two, and
/// the rest of the batch is indexed; `quire queue` shows them cancelled. The indexing
/// is held at the running file's first embedding step while the commands run, so the
/// file is still running when they do.
#[test]
fn the_cli_cancels_one_file_of_a_running_batch_from_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let (data, docs) = (dir.path().join("data"), dir.path().join("docs"));
    std::fs::create_dir_all(&docs).unwrap();
    let mut files = Vec::new();
    for (i, topic) in ["geology", "botany", "optics", "acoustics", "zoology"]
        .iter()
        .enumerate()
    {
        let p = docs.join(format!("{i}-{topic}.pdf"));
        util::topic_pdf(&p, topic, 6);
        files.push(p);
    }
    let quire = |args: &[&str]| {
        let out = Command::new(crate::util::quire_exe())
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "quire {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let engine = Engine::open(EngineConfig::new(Some(data.clone())).unwrap()).unwrap();
    let last = files[4].display().to_string();
    let mut events = Vec::new();
    let mut first: Option<String> = None;
    engine
        .index(&files, &Cancel::new(), &mut |ev| {
            if let IndexEvent::Embedded { path, .. } = &ev {
                if first.is_none() {
                    assert!(quire(&["queue", "cancel", &last]).contains("cancelled 1 file"));
                    let q: serde_json::Value =
                        serde_json::from_str(&quire(&["queue", "--json"])).unwrap();
                    let running = q["items"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|r| r["state"] == "running" && r["path"] == path.as_str())
                        .cloned()
                        .unwrap_or_else(|| panic!("{path} is not running: {q}"));
                    let id = running["id"].as_i64().unwrap().to_string();
                    assert!(quire(&["queue", "cancel", &id]).contains("cancelled 1 file"));
                    first = Some(path.clone());
                }
            }
            events.push(ev);
            true
        })
        .unwrap();
    let first = first.expect("no embedding progress seen");
    let failed: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            IndexEvent::FileFailed { path, reason } if reason == "cancelled" => Some(path.as_str()),
            _ => None,
        })
        .collect();
    let done: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            IndexEvent::FileDone { path, .. } => Some(path.as_str()),
            _ => None,
        })
        .collect();
    // The running file stopped there, reported as cancelled; three others indexed; the
    // last one never finished.
    assert!(failed.contains(&first.as_str()), "{events:?}");
    assert_eq!(done.len(), 3, "{events:?}");
    assert!(!done.contains(&first.as_str()) && !done.contains(&last.as_str()));
    let docs_list = quire(&["docs"]);
    assert_eq!(
        docs_list.lines().filter(|l| l.contains("chunks")).count(),
        3,
        "{docs_list}"
    );
    let q = quire(&["queue"]);
    assert_eq!(
        q.lines().filter(|l| l.contains("  cancelled  ")).count(),
        2,
        "{q}"
    );
    assert!(q.contains("0 waiting or running"), "{q}");
    // Nothing left to cancel: said, not an error; an id that is not waiting is one.
    assert!(quire(&["queue", "cancel", "all"]).contains("nothing to cancel"));
    let out = Command::new(crate::util::quire_exe())
        .args(["queue", "cancel", "9999", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not waiting or running"));
}

/// Opening an index requeues the running files of processes that are gone, and only
/// those: a live process's (here this one's, which took a file through the store)
/// stay its own, whatever any lock file says; the same pid with another start time is
/// a process gone (a pid reused).
#[test]
fn opening_the_index_requeues_the_files_of_gone_processes_only() {
    let tmp = tempfile::tempdir().expect("tmp");
    let data = tmp.path().join("data");
    let config = || EngineConfig::new(Some(data.clone())).expect("config");
    drop(Engine::open(config()).expect("create"));
    let db = data.join("index.sqlite");
    let mut store = Store::open(&db).expect("store");
    let ids = store
        .enqueue(&[("/x/a.pdf".into(), 1), ("/x/b.pdf".into(), 2)])
        .expect("enqueue");
    let taken = store.claim().expect("claim").expect("a row");
    assert_eq!(taken.id, ids[0]);
    let states = |e: &Engine| -> Vec<String> {
        e.queue()
            .expect("queue")
            .items
            .into_iter()
            .map(|r| r.state.to_string())
            .collect()
    };
    // Taken by a live process: left running.
    let e = Engine::open(config()).expect("open");
    assert_eq!(states(&e), ["running", "queued"]);
    drop(e);
    // The same pid, started at another time: gone.
    let conn = rusqlite::Connection::open(&db).expect("sqlite");
    conn.execute(
        "UPDATE queue SET owner = ?1 || ':1' WHERE id = ?2",
        rusqlite::params![std::process::id(), ids[0]],
    )
    .expect("owner");
    let e = Engine::open(config()).expect("open");
    assert_eq!(states(&e), ["queued", "queued"]);
}
