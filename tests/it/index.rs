//! The index and the ingestion pipeline: broken files fail alone, the same content is
//! not indexed twice, a changed file is re-indexed, removal, cancellation, and a
//! `quire index` killed with SIGKILL leaves a consistent index that the next run
//! completes.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use lopdf::content::{Content, Operation};
use lopdf::{dictionary, Document, Object, Stream};
use quire::engine::{Engine, EngineConfig, IndexEvent};
use quire::llm::Cancel;
use quire::store::Store;

use crate::util;

/// A PDF with one page per entry of `pages`, each a few lines of Helvetica text.
fn make_pdf(pages: &[&str]) -> Document {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::new();
    for text in pages {
        let mut ops = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 11.into()]),
            Operation::new("TL", vec![14.into()]),
            Operation::new("Td", vec![60.into(), 780.into()]),
        ];
        for line in text.lines() {
            ops.push(Operation::new("Tj", vec![Object::string_literal(line)]));
            ops.push(Operation::new("T*", vec![]));
        }
        ops.push(Operation::new("ET", vec![]));
        let content = Content { operations: ops }.encode().expect("content");
        let content = doc.add_object(Stream::new(dictionary! {}, content));
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        });
        kids.push(Object::from(page));
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    doc
}

fn pdf_bytes(mut doc: Document) -> Vec<u8> {
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("save pdf");
    out
}

/// Text about `topic`, a few sentences on each of `n` pages.
fn text_pages(topic: &str, n: usize) -> Vec<String> {
    (1..=n)
        .map(|p| {
            format!(
                "Page {p} is about {topic}.\nThe {topic} section explains how {topic} works in practice.\n\
                 Readers of page {p} learn why {topic} matters and when to use it."
            )
        })
        .collect()
}

pub(crate) fn write_pdf(path: &Path, pages: &[String]) {
    let refs: Vec<&str> = pages.iter().map(String::as_str).collect();
    std::fs::write(path, pdf_bytes(make_pdf(&refs))).expect("write pdf");
}

/// A PDF whose page tree contains itself.
fn looping_pdf() -> Vec<u8> {
    let mut doc = make_pdf(&["A page tree that loops."]);
    let root = doc
        .catalog()
        .expect("catalog")
        .get(b"Pages")
        .expect("pages");
    let pages_id = root.as_reference().expect("ref");
    let pages = doc.get_object_mut(pages_id).expect("pages obj");
    if let Object::Dictionary(d) = pages {
        d.set("Kids", vec![Object::Reference(pages_id)]);
        d.set("Count", 1);
    }
    pdf_bytes(doc)
}

/// A PDF encrypted with a user password (the empty one does not open it).
fn encrypted_pdf() -> Vec<u8> {
    let mut doc = make_pdf(&["Secret text behind a password."]);
    doc.trailer.set(
        "ID",
        vec![
            Object::string_literal(b"0123456789abcdef".to_vec()),
            Object::string_literal(b"0123456789abcdef".to_vec()),
        ],
    );
    let version = lopdf::EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password: "secret",
        key_length: 128,
        permissions: lopdf::Permissions::PRINTABLE,
    };
    let state = lopdf::EncryptionState::try_from(version).expect("encryption state");
    doc.encrypt(&state).expect("encrypt");
    pdf_bytes(doc)
}

/// A good PDF's bytes with its cross-reference offsets pointing nowhere.
fn bad_xref_pdf(good: &[u8]) -> Vec<u8> {
    let mut bytes = good.to_vec();
    let text = String::from_utf8_lossy(good).into_owned();
    let xref = text.rfind("xref").expect("xref");
    // Every 10-digit offset in the table becomes 0000000001.
    let mut i = xref;
    while i + 10 <= bytes.len() {
        if bytes[i..i + 10].iter().all(u8::is_ascii_digit) && bytes.get(i + 10) == Some(&b' ') {
            bytes[i..i + 10].copy_from_slice(b"0000000001");
            i += 10;
        } else {
            i += 1;
        }
    }
    bytes
}

fn engine(dir: &Path) -> Engine {
    Engine::open(EngineConfig::new(Some(dir.to_path_buf())).expect("config")).expect("engine")
}

/// Run `engine.index` and collect its events.
fn index(engine: &Engine, paths: &[PathBuf]) -> Vec<IndexEvent> {
    let mut events = Vec::new();
    engine
        .index(paths, &Cancel::new(), &mut |ev| {
            events.push(ev);
            true
        })
        .expect("index");
    events
}

fn done(events: &[IndexEvent]) -> Vec<(String, i64, usize, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            IndexEvent::FileDone {
                path,
                doc_id,
                chunks,
                skipped,
            } => Some((path.clone(), *doc_id, *chunks, *skipped)),
            _ => None,
        })
        .collect()
}

fn name(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn broken_files_fail_alone_with_a_reason() {
    let tmp = tempfile::tempdir().expect("tmp");
    let docs = tmp.path().join("docs");
    std::fs::create_dir_all(docs.join("sub")).expect("mkdir");
    write_pdf(&docs.join("good-one.pdf"), &text_pages("photosynthesis", 3));
    write_pdf(&docs.join("sub/good-two.pdf"), &text_pages("volcanoes", 2));
    let good = pdf_bytes(make_pdf(&["Some text that will be cut short."]));
    std::fs::write(docs.join("truncated.pdf"), &good[..good.len() / 2]).expect("w");
    let garbage: Vec<u8> = (0u32..5000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(docs.join("garbage.pdf"), garbage).expect("w");
    std::fs::write(docs.join("bad-xref.pdf"), bad_xref_pdf(&good)).expect("w");
    std::fs::write(docs.join("loop.pdf"), looping_pdf()).expect("w");
    std::fs::write(docs.join("encrypted.pdf"), encrypted_pdf()).expect("w");
    std::fs::write(
        docs.join("notes.txt"),
        "not a pdf, not picked from a folder",
    )
    .expect("w");

    // Through the command line, as a user runs it: a hostile file must not take the
    // batch down with it.
    let data = tmp.path().join("data");
    let out = Command::new(crate::util::quire_exe())
        .args(["index", "--json", "--data-dir"])
        .arg(&data)
        .arg(&docs)
        .output()
        .expect("run quire index");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "quire index failed: {stderr}");
    let events: Vec<IndexEvent> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("event JSON"))
        .collect();

    let mut failed: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            IndexEvent::FileFailed { path, reason } => Some((name(path), reason.clone())),
            _ => None,
        })
        .collect();
    failed.sort();
    let failed_names: Vec<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
    for broken in ["encrypted.pdf", "garbage.pdf", "loop.pdf", "truncated.pdf"] {
        assert!(
            failed_names.contains(&broken),
            "{broken} did not fail: {failed:?}\n{stderr}"
        );
    }
    for (n, reason) in &failed {
        assert!(!reason.trim().is_empty(), "{n} failed without a reason");
    }
    let ok: Vec<String> = done(&events).iter().map(|d| name(&d.0)).collect();
    assert!(ok.contains(&"good-one.pdf".to_string()), "{ok:?}");
    assert!(ok.contains(&"good-two.pdf".to_string()), "{ok:?}");
    // bad-xref.pdf either fails with a reason or is recovered; it is never lost.
    assert!(ok.contains(&"bad-xref.pdf".to_string()) || failed_names.contains(&"bad-xref.pdf"));
    assert_eq!(
        ok.len() + failed.len(),
        7,
        "txt files are not picked: {events:?}"
    );
    match events.last() {
        Some(IndexEvent::Finished {
            indexed, failed: f, ..
        }) => {
            assert_eq!((*indexed, *f), (ok.len(), failed.len()));
        }
        other => panic!("last event {other:?}"),
    }
    for f in &failed {
        assert!(stderr.contains(&f.0), "summary lacks {}: {stderr}", f.0);
    }

    // The index holds the good files' chunks, and the failures with their reasons.
    let store = Store::open(&data.join("index.sqlite")).expect("store");
    assert!(store.check().expect("check").is_empty());
    let docs_in = store.documents().expect("docs");
    assert_eq!(docs_in.len(), 7);
    let one = docs_in
        .iter()
        .find(|d| d.file_name == "good-one.pdf")
        .expect("good-one");
    assert_eq!((one.status.as_str(), one.pages), ("done", 3));
    assert!(one.chunks >= 1);
    for d in docs_in.iter().filter(|d| d.status == "failed") {
        assert!(d.error.as_deref().is_some_and(|e| !e.is_empty()));
    }
    let chunks = store.load_chunks().expect("chunks");
    assert!(chunks.iter().any(|c| c.text.contains("photosynthesis")));
    assert!(chunks.iter().any(|c| c.text.contains("volcanoes")));
    assert!(!chunks.iter().any(|c| c.text.contains("Secret")));
    assert!(chunks
        .iter()
        .all(|c| c.embedding.len() == 384 && (norm(&c.embedding) - 1.0).abs() < 1e-3));
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[test]
fn nothing_indexable_exits_non_zero() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bad = tmp.path().join("bad.pdf");
    std::fs::write(&bad, b"%PDF-1.4\nthis is not really a pdf").expect("w");
    let out = Command::new(crate::util::quire_exe())
        .args(["index", "--data-dir"])
        .arg(tmp.path().join("data"))
        .arg(&bad)
        .arg(tmp.path().join("missing.pdf"))
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.pdf") && stderr.contains("missing.pdf"),
        "{stderr}"
    );
}

#[test]
fn same_content_once_changed_file_again_removal() {
    let tmp = tempfile::tempdir().expect("tmp");
    let e = engine(&tmp.path().join("data"));
    let a = tmp.path().join("a.pdf");
    write_pdf(&a, &text_pages("glaciers", 2));
    let g0 = e.store().generation().expect("gen");

    let first = done(&index(&e, std::slice::from_ref(&a)));
    assert_eq!(first.len(), 1);
    let (_, id, chunks, skipped) = first[0].clone();
    assert!(!skipped && chunks >= 1);
    let g1 = e.store().generation().expect("gen");
    assert!(g1 > g0);

    // Again, and under another name: skipped, same document.
    let b = tmp.path().join("copy-of-a.pdf");
    std::fs::copy(&a, &b).expect("copy");
    let again = done(&index(&e, &[a.clone(), b.clone()]));
    assert_eq!(again.len(), 2);
    assert!(
        again.iter().all(|d| d.3 && d.1 == id && d.2 == chunks),
        "{again:?}"
    );
    assert_eq!(e.documents().expect("docs").len(), 1);
    assert_eq!(e.store().generation().expect("gen"), g1);

    // Changed content: indexed again, the old chunks gone.
    write_pdf(&a, &text_pages("deserts", 3));
    let changed = done(&index(&e, std::slice::from_ref(&a)));
    assert_eq!(changed.len(), 1);
    let new_id = changed[0].1;
    assert!(!changed[0].3);
    assert_ne!(new_id, id);
    let docs = e.documents().expect("docs");
    assert_eq!(docs.len(), 1);
    assert_eq!((docs[0].id, docs[0].pages), (new_id, 3));
    let texts: Vec<String> = e
        .store()
        .load_chunks()
        .expect("chunks")
        .into_iter()
        .map(|c| c.text)
        .collect();
    assert!(texts.iter().any(|t| t.contains("deserts")));
    assert!(!texts.iter().any(|t| t.contains("glaciers")));
    assert!(e.store().generation().expect("gen") > g1);

    // Removal, by path as the CLI does it.
    let found = e.find_document(&a.display().to_string()).expect("find");
    assert_eq!(found, new_id);
    e.remove_document(new_id).expect("remove");
    assert!(e.documents().expect("docs").is_empty());
    assert!(e.store().load_chunks().expect("chunks").is_empty());
    assert!(e.remove_document(new_id).is_err());
    assert!(e.store().check().expect("check").is_empty());
}

#[test]
fn cancelling_mid_file_leaves_the_index_as_it_was() {
    let tmp = tempfile::tempdir().expect("tmp");
    let e = engine(&tmp.path().join("data"));
    let small = tmp.path().join("small.pdf");
    write_pdf(&small, &text_pages("tides", 1));
    // Enough text for several embedding batches.
    let big = tmp.path().join("big.pdf");
    write_pdf(&big, &text_pages("comets", 120));
    let cancel = Cancel::new();
    let mut events = Vec::new();
    let r = e.index(&[small.clone(), big.clone()], &cancel, &mut |ev| {
        let stop = matches!(&ev, IndexEvent::Embedded { path, .. } if path.ends_with("big.pdf"));
        events.push(ev);
        !stop
    });
    assert!(matches!(r, Err(quire::Error::Cancelled)), "{r:?}");
    let docs = e.documents().expect("docs");
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!(docs[0].file_name, "small.pdf");
    assert!(e.store().check().expect("check").is_empty());
    // The next run picks up where it stopped.
    let next = done(&index(&e, &[small, big]));
    assert_eq!(next.iter().filter(|d| d.3).count(), 1);
    assert_eq!(e.documents().expect("docs").len(), 2);
}

#[test]
fn real_tokenizer_chunks_fit_the_model() {
    use quire::embed::Embedder;
    let emb = quire::embed::bert::BertEmbedder::open(util::default_embedder()).expect("embedder");
    let pdf = util::shared().join("corpus/pdfs/ctex-faq.pdf");
    let doc = quire::ingest::pdf::extract(&pdf).expect("extract");
    let cfg = quire::ingest::split::SplitConfig::default();
    let chunks = quire::ingest::split::split(&doc.pages, &emb, &cfg).expect("split");
    assert!(chunks.len() > 10);
    for c in &chunks {
        let n = emb.count_tokens(&c.text).expect("count");
        assert_eq!(n, c.tokens);
        assert!(n <= emb.max_tokens(), "chunk of {n} tokens");
        assert!(c.page_start <= c.page_end);
        // The offsets point at the chunk's first characters on its first page.
        let page = &doc.pages[(c.page_start - 1) as usize].text;
        let from: String = page.chars().skip(c.char_start).take(8).collect();
        let head: String = c.text.chars().take(8).collect();
        assert_eq!(from, head);
    }
    // Chinese text makes it through (the FAQ is in Chinese).
    assert!(chunks.iter().any(|c| c
        .text
        .chars()
        .any(|ch| ('\u{4e00}'..='\u{9fff}').contains(&ch))));
}

/// Open the index read-only and count documents done (0 while it does not exist).
fn done_in_db(db: &Path) -> i64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return 0;
    };
    conn.query_row(
        "SELECT count(*) FROM documents WHERE status = 'done'",
        [],
        |r| r.get(0),
    )
    .unwrap_or(0)
}

#[test]
fn kill_9_mid_run_then_resume() {
    let corpus = util::shared().join("corpus/pdfs");
    let files: Vec<PathBuf> = ["wasysym.pdf", "txfontsdoc.pdf", "chemformula-manual.pdf"]
        .iter()
        .map(|f| corpus.join(f))
        .collect();
    let tmp = tempfile::tempdir().expect("tmp");
    let data = tmp.path().join("data");
    let db = data.join("index.sqlite");
    let mut child = Command::new(crate::util::quire_exe())
        .args(["index", "--json", "--data-dir"])
        .arg(&data)
        .args(&files)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn quire index");
    // Poll the database at each progress line (no timers), at most 10 000 times.
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut polls = 0;
    let mut killed_with = None;
    while polls < 10_000 {
        polls += 1;
        let n = done_in_db(&db);
        if n >= 1 {
            killed_with = Some(n);
            break;
        }
        match lines.next() {
            Some(Ok(_)) => {}
            _ => break,
        }
    }
    child.kill().expect("kill -9"); // SIGKILL on Unix
    let status = child.wait().expect("wait");
    let killed_with = killed_with.expect("no document was done before the end of the run");
    assert!(!status.success(), "the run finished before the kill");

    // What the killed run left is consistent.
    {
        let store = Store::open(&db).expect("open after kill");
        assert_eq!(store.check().expect("check"), Vec::<String>::new());
        let docs = store.documents().expect("docs");
        assert!(docs.len() as i64 >= killed_with);
        assert!(docs.iter().all(|d| d.status == "done" && d.chunks > 0));
    }

    // Run again: everything is there, nothing twice.
    let out = Command::new(crate::util::quire_exe())
        .args(["index", "--json", "--data-dir"])
        .arg(&data)
        .args(&files)
        .output()
        .expect("rerun");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<IndexEvent> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("event"))
        .collect();
    let d = done(&events);
    assert_eq!(d.len(), 3, "{events:?}");
    assert!(d.iter().filter(|x| x.3).count() as i64 >= killed_with);
    let store = Store::open(&db).expect("open");
    assert_eq!(store.check().expect("check"), Vec::<String>::new());
    let docs = store.documents().expect("docs");
    assert_eq!(docs.len(), 3);
    let total: usize = docs.iter().map(|d| d.chunks).sum();
    assert!(docs.iter().all(|d| d.status == "done" && d.chunks > 0));
    assert_eq!(store.load_chunks().expect("chunks").len(), total);
}
