//! Watched folders, over a real SQLite index and real extraction and embedding: a
//! folder's files added, changed, renamed and deleted are followed by a rescan and by
//! the live watcher (a rename moves the document in place, not indexed again); a
//! `quire folders add` killed mid-way is finished by `quire folders sync`, each file
//! once; a folder whose root disappears keeps its documents, unavailable, until it
//! comes back.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quire::engine::{watch_folders, Engine, EngineConfig, FolderOptions, SyncReport};
use quire::llm::Cancel;
use quire::store::Store;

use crate::util;

fn engine(data: &Path) -> Engine {
    Engine::open(EngineConfig::new(Some(data.to_path_buf())).expect("config")).expect("engine")
}

fn sync(engine: &Engine) -> SyncReport {
    engine
        .sync_folders(&Cancel::new(), &mut |_| true)
        .expect("sync")
}

/// The id of the document at `path` (canonical), if any.
fn doc_at(engine: &Engine, path: &Path) -> Option<i64> {
    let path = path.display().to_string();
    engine
        .documents()
        .expect("documents")
        .into_iter()
        .find(|d| d.path == path)
        .map(|d| d.id)
}

/// The ids of a document's chunks, and its text, as the retrievers load them.
fn chunks(engine: &Engine, id: i64) -> (Vec<i64>, String) {
    let cs = engine.store().load_chunks_of(&[id]).expect("chunks");
    let text = cs
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    (cs.into_iter().map(|c| c.id).collect(), text)
}

/// A folder of PDFs about `topics`, one a file (`NN-topic.pdf`), canonical.
fn folder(root: &Path, topics: &[&str], pages: usize) -> PathBuf {
    std::fs::create_dir_all(root).expect("mkdir");
    for (i, t) in topics.iter().enumerate() {
        util::topic_pdf(&root.join(format!("{i:02}-{t}.pdf")), t, pages);
    }
    std::fs::canonicalize(root).expect("canonical")
}

/// Wait for `what` to hold, asking every 200 ms, for at most `secs` (generous: a sync
/// embeds the new files on a busy machine); fails naming `why`.
fn eventually(secs: u64, why: &str, mut what: impl FnMut() -> bool) {
    let start = Instant::now();
    while !what() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "the watcher did not catch up: {why}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_rescan_follows_files_added_changed_renamed_and_deleted() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = folder(
        &tmp.path().join("library"),
        &["astronomy", "botany", "chemistry"],
        2,
    );
    let e = engine(&tmp.path().join("data"));
    let f = e
        .add_folder(
            &root,
            &FolderOptions {
                collection: Some("Library".into()),
            },
        )
        .expect("add");
    assert!(e
        .add_folder(&root.join("..").join("library"), &Default::default())
        .is_err());
    let r = sync(&e);
    assert_eq!((r.added, r.indexed, r.failed.len()), (3, 3, 0), "{r:?}");
    let docs = e.documents().expect("docs");
    assert_eq!(docs.len(), 3);
    assert!(docs.iter().all(|d| d.status == "done" && !d.unavailable));
    let lib = e.find_collection("Library").expect("collection");
    assert_eq!(
        lib.documents.len(),
        3,
        "the folder's collection holds its documents"
    );
    assert_eq!(e.folders().expect("folders")[0].documents, 3);

    // Nothing changed: nothing read, nothing done.
    let r = sync(&e);
    assert_eq!(
        (
            r.unchanged,
            r.hashed,
            r.added + r.changed + r.renamed + r.removed
        ),
        (3, 0, 0)
    );

    // Renamed into a sub-folder: the same document, its chunks untouched.
    let a = root.join("00-astronomy.pdf");
    let a_id = doc_at(&e, &a).expect("a indexed");
    let (a_chunks, _) = chunks(&e, a_id);
    std::fs::create_dir_all(root.join("sub")).expect("mkdir");
    let moved = root.join("sub").join("stars.pdf");
    std::fs::rename(&a, &moved).expect("rename");
    let r = sync(&e);
    assert_eq!(
        (r.renamed, r.indexed, r.added, r.removed),
        (1, 0, 0, 0),
        "{r:?}"
    );
    assert_eq!(doc_at(&e, &moved), Some(a_id));
    assert_eq!(chunks(&e, a_id).0, a_chunks);
    let d = e.documents().expect("docs");
    let renamed = d.iter().find(|d| d.id == a_id).expect("a");
    assert_eq!(renamed.file_name, "stars.pdf");

    // Changed: indexed again, the old chunks gone, the new text in.
    let b = root.join("01-botany.pdf");
    let b_id = doc_at(&e, &b).expect("b indexed");
    let (b_chunks, b_text) = chunks(&e, b_id);
    assert!(b_text.contains("botany"));
    util::topic_pdf(&b, "geology", 3);
    let r = sync(&e);
    assert_eq!((r.changed, r.indexed), (1, 1), "{r:?}");
    let b_new = doc_at(&e, &b).expect("b again");
    let (new_chunks, new_text) = chunks(&e, b_new);
    assert!(new_text.contains("geology") && !new_text.contains("botany"));
    let all: Vec<i64> = e
        .store()
        .load_chunks()
        .expect("chunks")
        .iter()
        .map(|c| c.id)
        .collect();
    assert!(b_chunks.iter().all(|c| !all.contains(c)), "old chunks left");
    assert!(new_chunks.iter().all(|c| all.contains(c)));
    assert!(e
        .find_collection("Library")
        .expect("c")
        .documents
        .contains(&b_new));

    // Deleted: out of the index and of the collection.
    let c = root.join("02-chemistry.pdf");
    let c_id = doc_at(&e, &c).expect("c indexed");
    std::fs::remove_file(&c).expect("rm");
    let r = sync(&e);
    assert_eq!((r.removed, r.indexed), (1, 0), "{r:?}");
    assert_eq!(doc_at(&e, &c), None);
    assert!(!e
        .find_collection("Library")
        .expect("c")
        .documents
        .contains(&c_id));

    // A new file, any case of `.pdf`.
    util::topic_pdf(&root.join("sub").join("NEW.PDF"), "ecology", 1);
    let r = sync(&e);
    assert_eq!((r.added, r.indexed), (1, 1), "{r:?}");
    assert_eq!(e.documents().expect("docs").len(), 3);
    assert_eq!(e.find_collection("Library").expect("c").documents.len(), 3);
    assert_eq!(e.store().check().expect("check"), Vec::<String>::new());

    // Stop watching: its documents leave (or stay, when asked).
    assert_eq!(
        e.find_folder(&root.display().to_string()).expect("find"),
        f.id
    );
    assert_eq!(e.remove_folder(f.id, false).expect("rm folder"), 3);
    assert!(e.documents().expect("docs").is_empty());
    assert!(e.folders().expect("folders").is_empty());
}

#[test]
fn the_watcher_follows_changes_while_the_app_runs() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = folder(
        &tmp.path().join("watched"),
        &["forestry", "horticulture"],
        1,
    );
    let e = Arc::new(engine(&tmp.path().join("data")));
    e.add_folder(&root, &Default::default()).expect("add");
    sync(&e);
    assert_eq!(e.documents().expect("docs").len(), 2);
    let watcher = watch_folders(e.clone());

    let new = root.join("journalism.pdf");
    util::topic_pdf(&new, "journalism", 1);
    eventually(180, "a new file indexed", || {
        e.documents()
            .expect("docs")
            .iter()
            .any(|d| d.path == new.display().to_string() && d.status == "done")
    });

    let old = root.join("00-forestry.pdf");
    let id = doc_at(&e, &old).expect("indexed");
    let (ids, _) = chunks(&e, id);
    let moved = root.join("trees.pdf");
    std::fs::rename(&old, &moved).expect("rename");
    eventually(180, "a rename moved in place", || {
        doc_at(&e, &moved) == Some(id)
    });
    assert_eq!(chunks(&e, id).0, ids, "a rename is not indexed again");

    let changed = root.join("01-horticulture.pdf");
    let before = doc_at(&e, &changed).expect("indexed");
    util::topic_pdf(&changed, "linguistics", 2);
    eventually(180, "a changed file indexed again", || {
        doc_at(&e, &changed).is_some_and(|d| d != before)
            && chunks(&e, doc_at(&e, &changed).unwrap_or(before))
                .1
                .contains("linguistics")
    });

    std::fs::remove_file(&new).expect("rm");
    eventually(180, "a deleted file removed", || doc_at(&e, &new).is_none());
    watcher.stop();
    assert_eq!(e.documents().expect("docs").len(), 2);
    assert_eq!(e.store().check().expect("check"), Vec::<String>::new());
}

const TOPICS: [&str; 16] = [
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
];

#[test]
fn quire_folders_add_killed_mid_way_is_finished_by_a_sync_each_file_once() {
    let _alone = util::heavy();
    let tmp = tempfile::tempdir().expect("tmp");
    let root = folder(&tmp.path().join("library"), &TOPICS, 6);
    let data = tmp.path().join("data");
    let db = data.join("index.sqlite");
    let mut add = Command::new(util::quire_exe());
    add.args(["folders", "add", "--json", "--data-dir"])
        .arg(&data)
        .arg(&root);
    let status = util::run_index_killed_when(&mut add, 100_000, || util::done_in_db(&db) >= 1);
    assert!(!status.success(), "the sync finished before the kill");
    let before = util::done_in_db(&db);
    assert!((1..16).contains(&before), "{before} done before the kill");
    let done_before: Vec<i64> = Store::open(&db)
        .expect("open after kill")
        .documents()
        .expect("docs")
        .iter()
        .filter(|d| d.status == "done")
        .map(|d| d.id)
        .collect();

    let out = Command::new(util::quire_exe())
        .args(["folders", "sync", "--json", "--data-dir"])
        .arg(&data)
        .output()
        .expect("quire folders sync");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: SyncReport = serde_json::from_str(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .expect("a report"),
    )
    .expect("the report");
    assert_eq!(report.unchanged as i64, before, "{report:?}");
    assert_eq!(report.indexed as i64, 16 - before, "{report:?}");
    assert_eq!(report.removed + report.renamed, 0);

    let store = Store::open(&db).expect("open");
    assert_eq!(store.check().expect("check"), Vec::<String>::new());
    let docs = store.documents().expect("docs");
    assert_eq!(docs.len(), 16, "{docs:?}");
    assert!(docs.iter().all(|d| d.status == "done" && d.chunks > 0));
    let total: usize = docs.iter().map(|d| d.chunks).sum();
    assert_eq!(store.load_chunks().expect("chunks").len(), total);
    for id in &done_before {
        assert!(
            docs.iter().any(|d| d.id == *id),
            "document {id} was indexed again"
        );
    }
    drop(store);
    // And again: nothing left to do.
    let e = engine(&data);
    let r = sync(&e);
    assert_eq!((r.unchanged, r.indexed, r.hashed), (16, 0, 0), "{r:?}");
}

#[test]
fn a_folder_whose_root_disappears_keeps_its_documents_unavailable() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = folder(&tmp.path().join("disk"), &["meteorology", "numismatics"], 1);
    let e = engine(&tmp.path().join("data"));
    e.add_folder(&root, &Default::default()).expect("add");
    sync(&e);
    let ids: Vec<i64> = e.documents().expect("docs").iter().map(|d| d.id).collect();
    assert_eq!(ids.len(), 2);

    let away = tmp.path().join("unmounted");
    std::fs::rename(&root, &away).expect("rename the root away");
    let r = sync(&e);
    assert_eq!((r.unavailable, r.removed), (2, 0), "{r:?}");
    let docs = e.documents().expect("docs");
    assert_eq!(docs.iter().map(|d| d.id).collect::<Vec<_>>(), ids, "kept");
    assert!(docs.iter().all(|d| d.unavailable), "{docs:?}");
    assert!(!e.folders().expect("folders")[0].available);

    std::fs::rename(&away, &root).expect("back");
    let r = sync(&e);
    assert_eq!(
        (r.unavailable, r.unchanged, r.indexed, r.hashed),
        (0, 2, 0, 0),
        "{r:?}"
    );
    let docs = e.documents().expect("docs");
    assert_eq!(docs.iter().map(|d| d.id).collect::<Vec<_>>(), ids);
    assert!(docs.iter().all(|d| !d.unavailable));
    assert!(e.folders().expect("folders")[0].available);

    // A file deleted inside the folder that is there is removed, not kept.
    std::fs::remove_file(root.join("00-meteorology.pdf")).expect("rm");
    let r = sync(&e);
    assert_eq!((r.removed, r.unavailable), (1, 0));
    assert_eq!(e.documents().expect("docs").len(), 1);
}

#[test]
fn folders_are_added_listed_rescanned_and_removed_over_http() {
    use crate::server::{json_request, start_with};
    use serde_json::{json, Value};
    let tmp = tempfile::tempdir().expect("tmp");
    let root = folder(&tmp.path().join("shelf"), &["oceanography"], 1);
    let s = start_with(quire_cli::server::DEFAULT_MAX_UPLOAD, Ok);
    let (status, made) = json_request(
        s.addr,
        "POST",
        "/api/folders",
        &json!({ "path": root, "collection": "Ocean" }),
    );
    assert_eq!(status, 200, "{made}");
    let id = made["id"].as_i64().expect("id");
    // Indexed in the background.
    eventually(180, "the added folder indexed", || {
        s.engine
            .documents()
            .expect("docs")
            .iter()
            .any(|d| d.status == "done")
    });
    let (status, list) = json_request(s.addr, "GET", "/api/folders", &Value::Null);
    assert_eq!(status, 200, "{list}");
    assert_eq!(list[0]["path"], json!(root.display().to_string()));
    assert_eq!(list[0]["collection_name"], json!("Ocean"));
    assert_eq!(list[0]["available"], json!(true));
    // A path that is no folder is refused with its reason; nothing else changes.
    let (status, err) = json_request(
        s.addr,
        "POST",
        "/api/folders",
        &json!({ "path": root.join("nope") }),
    );
    assert_eq!(status, 400, "{err}");
    assert!(
        err["error"].as_str().is_some_and(|e| e.contains("nope")),
        "{err}"
    );
    let (status, r) = json_request(
        s.addr,
        "POST",
        &format!("/api/folders/{id}/rescan"),
        &json!({}),
    );
    assert_eq!(status, 200, "{r}");
    let (status, r) = json_request(s.addr, "POST", "/api/folders/999/rescan", &json!({}));
    assert_eq!(status, 404, "{r}");
    let (status, r) = json_request(
        s.addr,
        "DELETE",
        &format!("/api/folders/{id}"),
        &Value::Null,
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["documents_removed"], json!(1));
    let (_, list) = json_request(s.addr, "GET", "/api/folders", &Value::Null);
    assert_eq!(list, json!([]));
    assert!(s.engine.documents().expect("docs").is_empty());
}

#[test]
fn a_postgres_index_refuses_watched_folders_with_a_clear_error() {
    let pg = util::postgres::Postgres::start();
    let url = pg.fresh_database("folders");
    let tmp = tempfile::tempdir().expect("tmp");
    let root = folder(&tmp.path().join("docs"), &["rheology"], 1);
    let e = Engine::open(EngineConfig {
        data_dir: tmp.path().join("data"),
        store: Some(url),
        ..EngineConfig::default()
    })
    .expect("engine on postgres");
    let err = e
        .add_folder(&root, &Default::default())
        .expect_err("refused");
    assert_eq!(err.to_string(), "watched folders need the SQLite store");
    assert!(e.folders().expect("folders").is_empty());
    let r = sync(&e);
    assert_eq!((r.folders, r.added), (0, 0));
}

#[test]
fn a_copy_of_an_indexed_file_is_kept_once_and_not_queued_again() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = folder(&tmp.path().join("copies"), &["seismology"], 1);
    let e = engine(&tmp.path().join("data"));
    e.add_folder(&root, &Default::default()).expect("add");
    sync(&e);
    std::fs::copy(root.join("00-seismology.pdf"), root.join("copy.pdf")).expect("copy");
    for _ in 0..2 {
        let r = sync(&e);
        assert_eq!(
            (r.unchanged, r.copies, r.added, r.indexed),
            (1, 1, 0, 0),
            "{r:?}"
        );
        assert_eq!(e.documents().expect("docs").len(), 1, "the same bytes once");
    }
    // The original deleted: the copy takes the document over, not indexed again.
    let id = e.documents().expect("docs")[0].id;
    std::fs::remove_file(root.join("00-seismology.pdf")).expect("rm");
    let r = sync(&e);
    assert_eq!((r.renamed, r.removed, r.indexed), (1, 0, 0), "{r:?}");
    assert_eq!(doc_at(&e, &root.join("copy.pdf")), Some(id));
}
