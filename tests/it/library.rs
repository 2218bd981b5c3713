//! The library as a window lists it: what another process (`quire index`, run as a
//! child against the same data directory) indexes shows in the open engine's pages and
//! summary without reopening it; failed files are listed with their error, ignored
//! (out of the count and list until their file changes) and retried.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quire::engine::{Engine, EngineConfig, LibraryFilter, LibraryQuery, LibrarySort};
use quire::ingest::ExtractedPage;
use quire::llm::Cancel;
use quire::store::{Chunk, NewDocument, Store};

use crate::util;

fn engine(dir: &Path) -> Engine {
    Engine::open(EngineConfig::new(Some(dir.to_path_buf())).expect("config")).expect("engine")
}

fn pages(topic: &str) -> Vec<String> {
    vec![format!(
        "This page is about {topic}. The {topic} section explains how {topic} works."
    )]
}

fn query(filter: LibraryFilter, search: &str) -> LibraryQuery {
    LibraryQuery {
        search: search.into(),
        filter,
        sort: LibrarySort::Name,
        offset: 0,
        limit: 50,
    }
}

#[test]
fn what_another_process_indexes_shows_in_the_open_engine() {
    let tmp = tempfile::tempdir().expect("tmp");
    let data = tmp.path().join("data");
    let open = engine(&data);
    // The window is open and has listed (and counted) an empty library.
    let before = open.library_summary().expect("summary");
    assert_eq!((before.indexed, before.failed, before.queued), (0, 0, 0));
    assert_eq!(
        open.library(&LibraryQuery::default()).expect("page").total,
        0
    );
    let _ = open.status();

    let (a, b) = (tmp.path().join("alpha.pdf"), tmp.path().join("beta.pdf"));
    util::write_pdf(&a, &pages("glaciers"));
    util::write_pdf(&b, &pages("volcanoes"));
    let out = Command::new(util::quire_exe())
        .args(["index", "--data-dir"])
        .arg(&data)
        .arg(&a)
        .arg(&b)
        .output()
        .expect("run quire index");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let after = open.library_summary().expect("summary");
    assert_eq!(after.indexed, 2, "{after:?}");
    assert!(after.pages >= 2 && after.chunks >= 2, "{after:?}");
    assert!(after.generation > before.generation, "{before:?} {after:?}");
    let page = open.library(&LibraryQuery::default()).expect("page");
    assert_eq!(page.total, 2);
    let names: Vec<&str> = page.items.iter().map(|d| d.file_name.as_str()).collect();
    assert_eq!(names, ["alpha.pdf", "beta.pdf"]);
    // Searched and filtered on the database's side.
    let found = open
        .library(&query(LibraryFilter::Done, "BET"))
        .expect("search");
    assert_eq!(found.total, 1);
    assert_eq!(found.items[0].file_name, "beta.pdf");
    assert_eq!(
        open.library(&query(LibraryFilter::Failed, ""))
            .expect("failed")
            .total,
        0
    );
}

fn wait_for_queue(e: &Engine) {
    let start = Instant::now();
    while e.queued().expect("queued") > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the retry never ran"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The drain thread writes the failure after the row leaves the queue's count:
    // wait until the library's summary has nothing queued either (a fixed pause was
    // too short on a loaded machine).
    while e.library_summary().expect("summary").queued > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the summary still counts a queued file"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
}

#[test]
fn failed_files_are_listed_ignored_and_retried() {
    let tmp = tempfile::tempdir().expect("tmp");
    let e = Arc::new(engine(&tmp.path().join("data")));
    let bad = tmp.path().join("broken.pdf");
    std::fs::write(&bad, b"%PDF-1.4\nnot really a pdf").expect("write");
    let good = tmp.path().join("good.pdf");
    util::write_pdf(&good, &pages("rivers"));
    let _ = e.index(&[bad.clone(), good.clone()], &Cancel::new(), &mut |_| true);

    let s = e.library_summary().expect("summary");
    assert_eq!((s.indexed, s.failed), (1, 1), "{s:?}");
    let failed = e
        .library(&query(LibraryFilter::Failed, ""))
        .expect("failed");
    assert_eq!(failed.total, 1);
    let item = &failed.items[0];
    assert_eq!(item.file_name, "broken.pdf");
    assert!(
        item.error.as_deref().is_some_and(|m| !m.is_empty()),
        "{item:?}"
    );
    let id = item.id;

    // Ignored: out of the count and of the failed list (and of "all"), for good...
    e.ignore_failed(id).expect("ignore");
    assert_eq!(e.library_summary().expect("summary").failed, 0);
    assert_eq!(
        e.library(&query(LibraryFilter::Failed, "")).unwrap().total,
        0
    );
    assert_eq!(e.library(&query(LibraryFilter::All, "")).unwrap().total, 1);
    // ... even when the same unchanged file fails again.
    let _ = e.index(std::slice::from_ref(&bad), &Cancel::new(), &mut |_| true);
    assert_eq!(e.library_summary().expect("summary").failed, 0);
    // An indexed document cannot be ignored, nor an unknown id.
    let good_id = e.library(&query(LibraryFilter::Done, "")).unwrap().items[0].id;
    assert!(e.ignore_failed(good_id).is_err());
    assert!(e.ignore_failed(999_999).is_err());

    // Retried: queued again and no longer ignored; still broken, so failed again.
    let ignored_id = e.library(&query(LibraryFilter::All, "")).unwrap().total;
    assert_eq!(ignored_id, 1);
    let failed_id = {
        let st = e.store();
        let docs = st.documents().expect("docs");
        docs.iter()
            .find(|d| d.status == "failed")
            .expect("failed row")
            .id
    };
    e.retry_failed(failed_id).expect("retry");
    wait_for_queue(&e);
    let s = e.library_summary().expect("summary");
    assert_eq!((s.indexed, s.failed, s.queued), (1, 1, 0), "{s:?}");

    // A file that changed is no longer ignored when it fails again.
    let id = e.library(&query(LibraryFilter::Failed, "")).unwrap().items[0].id;
    e.ignore_failed(id).expect("ignore");
    std::fs::write(&bad, b"%PDF-1.4\nstill not a pdf, but other bytes").expect("write");
    let _ = e.index(std::slice::from_ref(&bad), &Cancel::new(), &mut |_| true);
    assert_eq!(e.library_summary().expect("summary").failed, 1);

    // Retrying a file that is gone says so.
    std::fs::remove_file(&bad).expect("rm");
    let id = e.library(&query(LibraryFilter::Failed, "")).unwrap().items[0].id;
    let err = e.retry_failed(id).expect_err("a missing file").to_string();
    assert!(err.contains("broken.pdf"), "{err}");
}

/// Fill `s` with 30 documents (every 7th failed, one with a title) and 2 queued files,
/// ignore one failure, and say what each page, search, filter and sort lists, as text
/// (ids left out, so two stores give the same transcript).
pub(crate) fn library_transcript(s: &mut Store) -> Vec<String> {
    let chunk = Chunk {
        text: "some text".into(),
        page_start: 1,
        page_end: 1,
        char_start: 0,
        char_end: 9,
        tokens: 2,
    };
    let page = ExtractedPage {
        number: 1,
        text: "some text".into(),
        ocr: false,
        has_images: false,
        tables: Vec::new(),
    };
    let mut failed = Vec::new();
    for i in 0..30 {
        let path = format!("/lib/{}-{i:02}.pdf", ["Alpha", "beta", "Gamma_x"][i % 3]);
        let hash = format!("h{i}");
        if i % 7 == 6 {
            failed.push(
                s.insert_failed(&path, &hash, 5, &format!("bad {i}"))
                    .unwrap(),
            );
            continue;
        }
        let title = (i == 4).then_some("The Zebra Report");
        s.insert_document(&NewDocument {
            path: &path,
            hash: &hash,
            bytes: 5,
            title,
            pages: &[
                page.clone(),
                ExtractedPage {
                    number: 2,
                    ..page.clone()
                },
            ],
            chunks: std::slice::from_ref(&chunk),
            embeddings: &[vec![1.0, 0.0]],
            model: "m",
        })
        .unwrap();
    }
    s.enqueue(&[("/in/wait-a.pdf".into(), 1), ("/in/wait-b.pdf".into(), 1)])
        .unwrap();
    assert!(s.set_ignored(failed[0], true).unwrap());
    let mut t = Vec::new();
    let sum = s.library_summary().unwrap();
    t.push(format!(
        "summary {} {} {} {} {}",
        sum.indexed, sum.queued, sum.failed, sum.pages, sum.chunks
    ));
    let queries = [
        ("", "all", "name", 0, 5),
        ("", "all", "name", 25, 10),
        ("", "done", "date", 0, 4),
        ("", "failed", "name", 0, 10),
        ("GAMMA_", "all", "name", 0, 100),
        ("a_x-1", "all", "name", 0, 100),
        ("zebra", "done", "name", 0, 100),
        ("100%", "all", "name", 0, 100),
        ("", "queued", "name", 0, 10),
        ("wait-b", "queued", "name", 0, 10),
    ];
    for (search, filter, sort, offset, limit) in queries {
        let p = s
            .library_page(&LibraryQuery {
                search: search.into(),
                filter: filter.parse().unwrap(),
                sort: sort.parse().unwrap(),
                offset,
                limit,
            })
            .unwrap();
        let rows: Vec<String> = p
            .items
            .iter()
            .map(|d| {
                format!(
                    "{}:{}:{}:{}:{}",
                    d.file_name,
                    d.status,
                    d.pages,
                    d.chunks,
                    d.error.as_deref().unwrap_or("")
                )
            })
            .collect();
        t.push(format!(
            "{search}/{filter}/{sort}/{offset}: {} {} {}",
            p.total,
            p.offset,
            rows.join(" ")
        ));
    }
    t
}

#[test]
fn the_sqlite_store_pages_searches_filters_and_sorts() {
    let mut s = Store::open_in_memory().unwrap();
    let t = library_transcript(&mut s);
    // 26 indexed (2 pages, 1 chunk each), 4 failed of which 1 ignored, 2 queued.
    assert_eq!(t[0], "summary 26 2 3 52 26");
    // All, by name, case-insensitively: Alpha-00, Alpha-03, …; the ignored failure
    // (beta-06) is left out: 29 rows.
    assert!(
        t[1].starts_with("/all/name/0: 29 0 Alpha-00.pdf:done:2:1: Alpha-03.pdf"),
        "{}",
        t[1]
    );
    assert!(t[2].starts_with("/all/name/25: 29 25 "), "{}", t[2]);
    assert_eq!(t[2].matches(".pdf").count(), 4, "{}", t[2]);
    // Newest first.
    assert!(
        t[3].starts_with("/done/date/0: 26 0 Gamma_x-29.pdf"),
        "{}",
        t[3]
    );
    // Failed, with their errors, the ignored one left out.
    assert_eq!(
        t[4],
        "/failed/name/0: 3 0 Alpha-27.pdf:failed:0:0:bad 27 beta-13.pdf:failed:0:0:bad 13 \
         Gamma_x-20.pdf:failed:0:0:bad 20"
    );
    // Case-insensitive substring; `_` and `%` are matched as themselves.
    assert!(t[5].starts_with("GAMMA_/all/name/0: 10 0 "), "{}", t[5]);
    assert!(
        t[6].starts_with("a_x-1/all/name/0: 3 0 Gamma_x-11.pdf"),
        "{}",
        t[6]
    );
    assert_eq!(t[7], "zebra/done/name/0: 1 0 beta-04.pdf:done:2:1:");
    assert_eq!(t[8], "100%/all/name/0: 0 0 ");
    assert_eq!(
        t[9],
        "/queued/name/0: 2 0 wait-a.pdf:queued:0:0: wait-b.pdf:queued:0:0:"
    );
    assert_eq!(t[10], "wait-b/queued/name/0: 1 0 wait-b.pdf:queued:0:0:");
}

#[test]
fn the_queue_is_read_a_page_of_waiting_files_at_a_time() {
    let tmp = tempfile::tempdir().expect("tmp");
    let e = engine(&tmp.path().join("data"));
    let files: Vec<(String, u64)> = (0..7).map(|i| (format!("/in/f{i}.pdf"), 10)).collect();
    let ids = e.store().enqueue(&files).expect("enqueue");
    e.cancel_queued(Some(ids[0])).expect("cancel");
    let p = e.queue_page(2, 3).expect("page");
    assert_eq!((p.total, p.offset), (6, 2));
    let paths: Vec<&str> = p.items.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/in/f3.pdf", "/in/f4.pdf", "/in/f5.pdf"]);
    assert_eq!(e.queue_page(6, 3).expect("past the end").items.len(), 0);
    assert_eq!(e.library_summary().expect("summary").queued, 6);
}
