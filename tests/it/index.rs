//! The index and the ingestion pipeline: broken files fail alone, the same content is
//! not indexed twice, a changed file is re-indexed, removal, cancellation, and a
//! `quire index` killed with SIGKILL leaves a consistent index that the next run
//! completes.

use std::path::{Path, PathBuf};
use std::process::Command;

use lopdf::Object;
use quire::engine::{Engine, EngineConfig, IndexEvent};
use quire::llm::Cancel;
use quire::store::Store;

use crate::util;

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

/// A PDF whose page tree contains itself.
fn looping_pdf() -> Vec<u8> {
    let mut doc = util::text_pdf(&["A page tree that loops."]);
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
    util::pdf_bytes(doc)
}

/// A PDF encrypted with a user password (the empty one does not open it).
fn encrypted_pdf() -> Vec<u8> {
    util::encrypted(util::text_pdf(&["Secret text behind a password."]))
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
    util::write_pdf(&docs.join("good-one.pdf"), &text_pages("photosynthesis", 3));
    util::write_pdf(&docs.join("sub/good-two.pdf"), &text_pages("volcanoes", 2));
    let good = util::pdf_bytes(util::text_pdf(&["Some text that will be cut short."]));
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
    let (out, events) = util::run_index(util::quire_index(&data).arg(&docs));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "quire index failed: {stderr}");

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
    util::write_pdf(&a, &text_pages("glaciers", 2));
    let g0 = e.store().generation().expect("gen");

    let first = done(&util::index(&e, std::slice::from_ref(&a)));
    assert_eq!(first.len(), 1);
    let (_, id, chunks, skipped) = first[0].clone();
    assert!(!skipped && chunks >= 1);
    let g1 = e.store().generation().expect("gen");
    assert!(g1 > g0);

    // Again, and under another name: skipped, same document.
    let b = tmp.path().join("copy-of-a.pdf");
    std::fs::copy(&a, &b).expect("copy");
    let again = done(&util::index(&e, &[a.clone(), b.clone()]));
    assert_eq!(again.len(), 2);
    assert!(
        again.iter().all(|d| d.3 && d.1 == id && d.2 == chunks),
        "{again:?}"
    );
    assert_eq!(e.documents().expect("docs").len(), 1);
    assert_eq!(e.store().generation().expect("gen"), g1);

    // Changed content: indexed again, the old chunks gone.
    util::write_pdf(&a, &text_pages("deserts", 3));
    let changed = done(&util::index(&e, std::slice::from_ref(&a)));
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
    util::write_pdf(&small, &text_pages("tides", 1));
    // Enough text for several embedding batches.
    let big = tmp.path().join("big.pdf");
    util::write_pdf(&big, &text_pages("comets", 120));
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
    let next = done(&util::index(&e, &[small, big]));
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
        if quire::retrieve::table_kind(&c.text).is_some() {
            assert_table_chunk_offsets(page, c);
        } else {
            let head: String = c.text.chars().take(8).collect();
            assert_eq!(from, head);
        }
    }
    // Chinese text makes it through (the FAQ is in Chinese).
    assert!(chunks.iter().any(|c| c
        .text
        .chars()
        .any(|ch| ('\u{4e00}'..='\u{9fff}').contains(&ch))));
}

/// A table chunk's offsets cover its first row's first cell on its page: the page's
/// text from `char_start` to `char_end` holds every word of that cell (a wrapped cell's
/// lines may have other cells between them).
fn assert_table_chunk_offsets(page: &str, c: &quire::store::Chunk) {
    let squeeze = |s: &str| -> String { s.chars().filter(|ch| !ch.is_whitespace()).collect() };
    // The header's line (under the caption, if any), its separator, then the first row.
    let lines: Vec<&str> = c.text.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("| ")).unwrap_or(0);
    let row = lines
        .get(header + 2)
        .unwrap_or_else(|| panic!("no row in {:?}", c.text));
    let cell = row
        .trim_start_matches('|')
        .split(" | ")
        .map(|t| t.trim().trim_end_matches('|').trim().replace("\\|", "|"))
        .find(|t| !t.is_empty())
        .unwrap_or_else(|| panic!("an empty row in {:?}", c.text));
    let covered: String = page
        .chars()
        .skip(c.char_start)
        .take(c.char_end.saturating_sub(c.char_start))
        .collect();
    let covered_squeezed = squeeze(&covered);
    assert!(
        cell.split_whitespace().all(|w| covered_squeezed.contains(w)),
        "page {}: chars {}..{} ({covered:?}) do not hold the first row's first cell {cell:?} of\n{}",
        c.page_start,
        c.char_start,
        c.char_end,
        c.text
    );
}

/// Every table chunk of the corpus's documents points at its own rows: its offsets
/// cover its first row's first cell (not another column's or another table's row).
#[test]
fn table_chunks_point_at_their_rows() {
    let emb = quire::embed::bert::BertEmbedder::open(util::default_embedder()).expect("embedder");
    let cfg = quire::ingest::split::SplitConfig::default();
    let dir = util::shared().join("corpus/pdfs");
    let mut tables = 0;
    for name in [
        "chemformula-manual.pdf",
        "lshort-zh-cn.pdf",
        "maximabook-19-Sept-2004.pdf",
        "debian-faq.en.pdf",
        "developers-reference.pdf",
        "txfontsdoc.pdf",
        "ctex-faq.pdf",
        // Its code listings and matrices made chunks that pointed at other rows.
        "nicematrix.pdf",
    ] {
        let doc = quire::ingest::pdf::extract(&dir.join(name)).expect("extract");
        let chunks = quire::ingest::split::split(&doc.pages, &emb, &cfg).expect("split");
        for c in chunks
            .iter()
            .filter(|c| quire::retrieve::table_kind(&c.text).is_some())
        {
            let page = &doc.pages[(c.page_start - 1) as usize].text;
            assert_table_chunk_offsets(page, c);
            tables += 1;
        }
    }
    assert!(tables > 100, "{tables} table chunks");
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
    // Poll the database at each progress line (no timers), at most 10 000 times.
    let mut killed_with = None;
    let status = util::run_index_killed_when(util::quire_index(&data).args(&files), 10_000, || {
        let n = util::done_in_db(&db);
        if n >= 1 {
            killed_with = Some(n);
        }
        n >= 1
    });
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
    let (out, events) = util::run_index(util::quire_index(&data).args(&files));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
