//! The PostgreSQL index (`--store postgres://…`) against a real PostgreSQL 16 with
//! pgvector, started on loopback by the test (`util::postgres`) and stopped after:
//! the store keeps what SQLite keeps, retrieval in the database ranks the corpus as the
//! in-memory indexes over SQLite do, and two processes share one database.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use quire::engine::{Cancel, Engine, EngineConfig, IndexEvent};
use quire::ingest::split::Chunk;
use quire::ingest::ExtractedPage;
use quire::retrieve::{RetrieveOptions, RetrieverKind};
use quire::store::{NewDocument, NewMessage, Role, Store, SummaryLeaf, SummaryTree};

use crate::util;
use crate::util::postgres::Postgres;

fn pg_engine(dir: &Path, url: &str) -> Engine {
    Engine::open(EngineConfig {
        data_dir: dir.to_path_buf(),
        store: Some(url.to_string()),
        ..EngineConfig::default()
    })
    .expect("engine on postgres")
}

fn sqlite_engine(dir: &Path) -> Engine {
    Engine::open(EngineConfig {
        data_dir: dir.to_path_buf(),
        store: None,
        ..EngineConfig::default()
    })
    .expect("engine on sqlite")
}

fn chunk(page: u32, text: &str) -> Chunk {
    Chunk {
        text: text.into(),
        page_start: page,
        page_end: page,
        char_start: 0,
        char_end: text.chars().count(),
        tokens: 3,
    }
}

fn page(number: u32, text: &str, ocr: bool) -> ExtractedPage {
    ExtractedPage {
        number,
        text: text.into(),
        ocr,
        has_images: false,
        tables: Vec::new(),
    }
}

/// The same operations on a store, and everything it then says, as text: two stores
/// that keep the same things give the same transcript.
fn exercise(s: &mut Store) -> Vec<String> {
    let mut t = Vec::new();
    let pages = [page(1, "alpha beta. gamma", false), page(2, "delta", true)];
    let chunks = [chunk(1, "alpha beta."), chunk(2, "gamma delta")];
    let embs = [vec![1.0, 0.0, 0.5], vec![0.0, -1.5, 0.25]];
    let doc =
        |path: &'static str, chunks: &'static [Chunk], embs: &'static [Vec<f32>]| NewDocument {
            path,
            hash: "h1",
            bytes: 10,
            title: Some("T"),
            pages: Box::leak(Box::new(pages.clone())),
            chunks,
            embeddings: embs,
            model: "m",
        };
    let chunks: &'static [Chunk] = Box::leak(Box::new(chunks));
    let embs: &'static [Vec<f32>] = Box::leak(Box::new(embs));
    let g0 = s.generation().unwrap();
    let a = s.insert_document(&doc("/x/a.pdf", chunks, embs)).unwrap();
    let b = s
        .insert_document(&doc("/x/b.pdf", &chunks[..1], &embs[..1]))
        .unwrap();
    t.push(format!(
        "generation moved: {}",
        s.generation().unwrap() > g0
    ));
    t.push(format!("{:?}", s.documents().unwrap()));
    t.push(format!("{:?}", s.load_chunks().unwrap()));
    t.push(format!("{:?}", s.load_chunks_of(&[b]).unwrap()));
    t.push(format!("{:?}", s.done_with_hash("h1").unwrap()));
    t.push(format!("{:?}", s.ocr_pages(a).unwrap()));
    t.push(format!("{:?}", s.page_text(a, 1).unwrap()));
    // The chunk after each of a's: its text, and none after the last.
    for c in s.load_chunks_of(&[a]).unwrap() {
        t.push(format!("{:?}", s.next_chunk(c.id).unwrap().map(|n| n.1)));
    }
    t.push(format!("{:?}", s.embedding_models().unwrap()));
    // Collections survive their document being indexed again.
    let c = s.create_collection(" Manuals ").unwrap();
    t.push(format!(
        "{:?}",
        s.create_collection("MANUALS").map_err(|e| e.to_string())
    ));
    assert!(s.set_collection_documents(c, &[a, b]).unwrap());
    t.push(format!(
        "{:?}",
        s.set_collection_documents(c, &[a, 999])
            .map_err(|e| e.to_string())
    ));
    // A document's summary tree: kept, replaced, read back by key.
    let mut tree = SummaryTree {
        leaves: vec![SummaryLeaf {
            first_chunk: 1,
            last_chunk: 2,
            page_start: 1,
            page_end: 2,
            text: "about alphabets 字母".into(),
        }],
        complete: false,
    };
    s.put_summary_tree(a, "k", &tree).unwrap();
    tree.complete = true;
    s.put_summary_tree(a, "k", &tree).unwrap();
    t.push(format!("{:?}", s.summary_tree(a, "k").unwrap()));
    t.push(format!("{:?}", s.summary_tree(a, "other").unwrap()));
    t.push(format!("trees of a: {}", s.summary_trees_of(a).unwrap()));
    let a2 = s
        .insert_document(&doc("/x/a.pdf", &chunks[1..], &embs[1..]))
        .unwrap();
    t.push(format!("reindexed gets a new id: {}", a2 > b));
    // Indexed again: its summary tree is gone.
    t.push(format!(
        "trees of the old a: {}",
        s.summary_trees_of(a).unwrap()
    ));
    s.put_summary_tree(a, "k", &tree).unwrap();
    t.push(format!(
        "a removed document keeps none: {}",
        s.summary_trees_of(a).unwrap()
    ));
    let col = s.collection_by_name("manuals").unwrap().unwrap();
    t.push(format!("{:?} {:?}", col.name, col.documents == vec![b, a2]));
    assert!(s.rename_collection(c, "Guides").unwrap());
    t.push(format!(
        "{:?}",
        s.collections()
            .unwrap()
            .iter()
            .map(|c| &c.name)
            .collect::<Vec<_>>()
    ));
    // Re-embedding.
    t.push(format!(
        "{:?}",
        s.chunks_not_embedded_by("m2", 10).unwrap().len()
    ));
    let ids: Vec<i64> = s.load_chunks().unwrap().iter().map(|c| c.id).collect();
    s.replace_embeddings("m2", &[(ids[0], vec![0.5, 0.5, 0.5, 0.5])])
        .unwrap();
    t.push(format!("{:?}", s.embedding_models().unwrap()));
    // Failures replace, removal removes.
    s.insert_failed("/x/b.pdf", "h3", 3, "broken").unwrap();
    t.push(format!(
        "{:?}",
        s.documents()
            .unwrap()
            .iter()
            .map(|d| (&d.status, &d.error, d.chunks))
            .collect::<Vec<_>>()
    ));
    t.push(format!("{:?}", s.searchable_documents().unwrap().len()));
    assert!(s.remove_document(a2).unwrap());
    assert!(!s.remove_document(a2).unwrap());
    t.push(format!("{:?}", s.check().unwrap()));
    assert!(s.remove_collection(c).unwrap());
    // Conversations.
    let conv = s
        .create_conversation("What is BM25? ".repeat(10).as_str())
        .unwrap();
    let mut extra = serde_json::Map::new();
    extra.insert("sources".into(), serde_json::json!([{"file": "a.pdf"}]));
    let q = s
        .add_message(&NewMessage {
            conversation: conv,
            role: Role::User,
            content: "What is BM25?",
            mode: None,
            query: None,
            extra: &Default::default(),
        })
        .unwrap();
    let r = s
        .add_message(&NewMessage {
            conversation: conv,
            role: Role::Assistant,
            content: "A ranking.",
            mode: Some("compact"),
            query: Some("bm25"),
            extra: &extra,
        })
        .unwrap();
    let got = s.conversation(conv).unwrap().unwrap();
    t.push(format!(
        "{:?} {:?}",
        got.info.title,
        got.messages
            .iter()
            .map(|m| (&m.role, &m.content, &m.mode, &m.query, &m.extra))
            .collect::<Vec<_>>()
    ));
    t.push(format!("{}", s.remove_messages(conv, &[r, 12345]).unwrap()));
    t.push(format!(
        "{}",
        s.conversation(conv).unwrap().unwrap().messages.len()
    ));
    t.push(format!("{}", s.conversations().unwrap().len()));
    assert!(s.remove_conversation(conv).unwrap());
    assert!(s.conversation(conv).unwrap().is_none());
    let _ = q;
    // The queue.
    let ids = s
        .enqueue(&[("/a.pdf".into(), 1), ("/b.pdf".into(), 2)])
        .unwrap();
    t.push(format!(
        "{:?}",
        s.enqueue(&[("/a.pdf".into(), 1)]).unwrap() == vec![ids[0]]
    ));
    let row = s.claim().unwrap().unwrap();
    t.push(format!(
        "{} {} {}",
        row.id == ids[0],
        row.state,
        s.waiting().unwrap()
    ));
    s.progress(ids[0], 0.5, Some(3.0)).unwrap();
    let r0 = s.queue_row(ids[0]).unwrap().unwrap();
    t.push(format!("{} {:?}", r0.progress, r0.eta_secs));
    s.finish(ids[0], Some(7), None).unwrap();
    t.push(format!(
        "{:?}",
        s.cancel(Some(ids[1])).unwrap() == vec![ids[1]]
    ));
    t.push(format!("{}", s.wanted(ids[1]).unwrap()));
    t.push(format!("{:?}", s.claim().unwrap().map(|r| r.id)));
    s.finish(ids[1], None, Some("late")).unwrap();
    t.push(format!(
        "{:?}",
        s.queue()
            .unwrap()
            .iter()
            .map(|r| (&r.path, &r.state, &r.doc_id))
            .collect::<Vec<_>>()
    ));
    let new = s.enqueue(&[("/c.pdf".into(), 3)]).unwrap();
    t.push(format!("{} {}", s.queue().unwrap().len(), new[0] > ids[1]));
    // A long document: its chunks are written in several batches (PostgreSQL sends
    // them as arrays), and each keeps its own text, pages, vector and terms.
    let n = 1300u32;
    let pages: Vec<ExtractedPage> = (1..=n / 10)
        .map(|p| page(p, &format!("page {p}"), false))
        .collect();
    let chunks: Vec<Chunk> = (0..n)
        .map(|i| chunk(i / 10 + 1, &format!("chunk{i} word{} shared", i % 7)))
        .collect();
    let embs: Vec<Vec<f32>> = (0..n).map(|i| vec![i as f32, 1.0, -(i as f32)]).collect();
    let long = s
        .insert_document(&NewDocument {
            path: "/x/long.pdf",
            hash: "h4",
            bytes: 99,
            title: None,
            pages: &pages,
            chunks: &chunks,
            embeddings: &embs,
            model: "m2",
        })
        .unwrap();
    let stored = s.load_chunks_of(&[long]).unwrap();
    assert_eq!(stored.len(), n as usize);
    for (i, c) in stored.iter().enumerate() {
        assert_eq!(c.text, format!("chunk{i} word{} shared", i % 7));
        assert_eq!(c.embedding, vec![i as f32, 1.0, -(i as f32)]);
        assert_eq!(c.page_start, i as u32 / 10 + 1);
    }
    t.push(format!("{:?}", s.page_text(long, n / 10).unwrap()));
    t.push(format!("{:?}", s.check().unwrap()));
    t
}

#[test]
fn postgres_keeps_what_sqlite_keeps() {
    let pg = Postgres::start();
    let mut p = Store::connect(&pg.url, "test:/a").unwrap();
    let mut q = Store::open_in_memory().unwrap();
    assert_eq!(p.kind(), "postgres");
    let (tp, tq) = (exercise(&mut p), exercise(&mut q));
    for (a, b) in tp.iter().zip(&tq) {
        assert_eq!(a, b, "postgres (left) and sqlite (right) differ");
    }
    assert_eq!(tp.len(), tq.len());
    // Opened again (a second process, a restart): the schema is not migrated twice.
    let again = Store::connect(&pg.url, "test:/a").unwrap();
    assert_eq!(again.version().unwrap(), p.version().unwrap());
    assert!(again.check().unwrap().is_empty());
    // A server that is not there says so, with the address (and no password).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = Store::connect(&format!("postgres://quire:secret@127.0.0.1:{port}/x"), "o")
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("cannot connect to postgres://quire:***@127.0.0.1"),
        "{err}"
    );
    assert!(!err.contains("secret"), "{err}");
}

/// The files of the corpus the parity test indexes: an English manual, a Chinese FAQ,
/// a font manual and a short one (117 pages, 9 of the corpus questions).
const PARITY_FILES: &[&str] = &[
    "chemformula-manual.pdf",
    "ctex-faq.pdf",
    "txfontsdoc.pdf",
    "wasysym.pdf",
];

/// Copy every document of `from` into `to`, in id order (so chunks get the same ids).
fn copy(from: &Store, to: &mut Store) {
    let model = from.embedding_models().unwrap()[0].0.clone();
    for d in from.documents().unwrap() {
        let pages: Vec<ExtractedPage> = (1..=d.pages)
            .map(|n| {
                page(
                    n,
                    &from.page_text(d.id, n).unwrap().unwrap_or_default(),
                    false,
                )
            })
            .collect();
        let stored = from.load_chunks_of(&[d.id]).unwrap();
        let chunks: Vec<Chunk> = stored
            .iter()
            .map(|c| Chunk {
                text: c.text.clone(),
                page_start: c.page_start,
                page_end: c.page_end,
                char_start: 0,
                char_end: 0,
                tokens: 0,
            })
            .collect();
        let embs: Vec<Vec<f32>> = stored.iter().map(|c| c.embedding.clone()).collect();
        to.insert_document(&NewDocument {
            path: &d.path,
            hash: &d.hash,
            bytes: 1,
            title: d.title.as_deref(),
            pages: &pages,
            chunks: &chunks,
            embeddings: &embs,
            model: &model,
        })
        .unwrap();
    }
}

/// The library a page at a time: the same documents give the same pages, searches,
/// filters, sorts and counts in both stores.
#[test]
fn postgres_pages_the_library_as_sqlite_does() {
    let pg = Postgres::start();
    let mut p = Store::connect(&pg.url, "test:/lib").unwrap();
    let mut q = Store::open_in_memory().unwrap();
    let (tp, tq) = (
        crate::library::library_transcript(&mut p),
        crate::library::library_transcript(&mut q),
    );
    assert_eq!(tp, tq, "postgres (left) and sqlite (right) differ");
}

#[test]
fn postgres_retrieval_ranks_the_corpus_as_sqlite_does() {
    let _alone = util::heavy();
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let corpus = util::shared().join("corpus/pdfs");
    let paths: Vec<PathBuf> = PARITY_FILES.iter().map(|f| corpus.join(f)).collect();
    let lite = sqlite_engine(&dir.path().join("lite"));
    util::index(&lite, &paths);
    let pgdir = dir.path().join("pg");
    {
        let from = Store::open(&dir.path().join("lite/index.sqlite")).unwrap();
        let mut to = Store::connect(&pg.url, "test").unwrap();
        // Three documents merged into a block, the fourth waiting: both ways of
        // reading a list are ranked.
        postgres::Client::connect(&pg.url, postgres::NoTls)
            .unwrap()
            .batch_execute("UPDATE meta SET value = 3 WHERE key = 'block_docs'")
            .unwrap();
        copy(&from, &mut to);
        assert_eq!(from.load_chunks().unwrap(), to.load_chunks().unwrap());
        assert!(to.check().unwrap().is_empty(), "{:?}", to.check());
    }
    let post = pg_engine(&pgdir, &pg.url);
    let questions = util::jsonl(&util::shared().join("corpus/questions.jsonl"));
    let ids = |e: &Engine, q: &str, opts: &RetrieveOptions| -> Vec<i64> {
        e.search(q, opts, &Cancel::new())
            .unwrap()
            .nodes
            .iter()
            .map(|n| n.chunk_id)
            .collect()
    };
    let fused = RetrieveOptions {
        top_k: 4,
        ..Default::default()
    };
    let single = |k: RetrieverKind| RetrieveOptions {
        top_k: 10,
        retrievers: vec![k],
        ..Default::default()
    };
    let mut differ = BTreeMap::new();
    for q in &questions {
        let text = q["question"].as_str().unwrap();
        let id = q["id"].as_str().unwrap();
        let (a, b) = (ids(&lite, text, &fused), ids(&post, text, &fused));
        assert_eq!(a.len(), 4, "{id}");
        if a != b {
            differ.insert(id.to_string(), (a, b));
        }
        // Each retriever alone, ten deep: BM25 and the vectors exactly (a library of
        // this size is not ranked through HNSW, which can miss a neighbour).
        let bm = single(RetrieverKind::Bm25);
        assert_eq!(ids(&lite, text, &bm), ids(&post, text, &bm), "{id}: bm25");
        // The "not found" check weighs the question's terms alike in both.
        let weights = |e: &Engine| e.search(text, &bm, &Cancel::new()).unwrap().term_weights;
        let w = weights(&post);
        assert!(!w.is_empty(), "{id}: no term weights from PostgreSQL");
        assert_eq!(weights(&lite), w, "{id}: term weights");
        // Chunks of equal similarity (a repeated table row, a repeated code line) may
        // come in either order: the cosines must agree place by place, and so must the
        // chunk at each place whose cosine no other chunk there shares.
        let vec = single(RetrieverKind::Vector);
        let scored = |e: &Engine| -> Vec<(i64, f64)> {
            e.search(text, &vec, &Cancel::new())
                .unwrap()
                .nodes
                .iter()
                .map(|n| {
                    (
                        n.chunk_id,
                        n.evidence.first().map_or(f64::NAN, |e| e.score as f64),
                    )
                })
                .collect()
        };
        let (va, vb) = (scored(&lite), scored(&post));
        assert_eq!(va.len(), vb.len(), "{id}: vector");
        for (i, ((ia, sa), (ib, sb))) in va.iter().zip(&vb).enumerate() {
            assert!(
                (sa - sb).abs() < 1e-4,
                "{id}: vector score {i}: {va:?} {vb:?}"
            );
            let tied = va
                .iter()
                .enumerate()
                .any(|(j, (_, s))| j != i && (s - sa).abs() < 1e-4);
            if !tied {
                assert_eq!(ia, ib, "{id}: vector {i}: {va:?} {vb:?}");
            }
        }
        // The source nodes carry the same text and pages.
        let sa = lite.search(text, &fused, &Cancel::new()).unwrap();
        let sb = post.search(text, &fused, &Cancel::new()).unwrap();
        assert_eq!(
            sa.nodes.iter().map(|n| n.chunk.clone()).collect::<Vec<_>>(),
            sb.nodes.iter().map(|n| n.chunk.clone()).collect::<Vec<_>>(),
            "{id}"
        );
    }
    assert!(differ.is_empty(), "top 4 differ: {differ:?}");
    // A scope (some documents only) is ranked exactly in the database too.
    let wasysym = util::document_id(&post, "wasysym.pdf");
    let scoped = RetrieveOptions {
        top_k: 3,
        filter: Some(quire::retrieve::DocFilter::new([wasysym])),
        ..Default::default()
    };
    let q = "Which symbol does wasysym offer for a smiley?";
    let (a, b) = (ids(&lite, q, &scoped), ids(&post, q, &scoped));
    assert_eq!(a, b);
    assert!(!b.is_empty());
    // A database of the schema before the lists were merged by block (version 6),
    // before each term's document frequency had its table (version 5), before BM25's postings were a list per term and document
    // (version 4), or before each posting carried its chunk's length and document
    // (version 3), is migrated in place: the lists come out byte for byte as
    // the writes make them, and rank as before.
    drop(post);
    let mut sql = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    sql.batch_execute("CREATE TABLE written AS SELECT * FROM term_docs")
        .unwrap();
    for (version, older) in [
        (6, ""),
        (5, ""),
        (4, ""),
        (
            3,
            "ALTER TABLE postings DROP CONSTRAINT postings_pkey;
             ALTER TABLE postings DROP COLUMN len, DROP COLUMN doc_id;
             ALTER TABLE postings ADD PRIMARY KEY (term, chunk_id);",
        ),
    ] {
        let stats_before = if version < 6 {
            "DROP TABLE term_stats;"
        } else {
            ""
        };
        let lists_before = if version < 5 {
            format!("{POSTINGS_FROM_LISTS} {older} DROP TABLE term_docs;")
        } else {
            String::new()
        };
        sql.batch_execute(&format!(
            "{BLOCKS_BEFORE} {lists_before} {stats_before}
             UPDATE quire_schema SET version = {version};"
        ))
        .unwrap();
        let post = pg_engine(&pgdir, &pg.url);
        // Each term's document frequency is counted from its lists (`check` compares).
        assert!(
            post.store().check().unwrap().is_empty(),
            "migrated from {version}"
        );
        let (lists, off): (i64, i64) = {
            let r = sql
                .query_one(
                    "SELECT count(*),
                            count(*) FILTER (WHERE w.postings IS DISTINCT FROM t.postings)
                     FROM written w FULL JOIN term_docs t USING (term, doc_id)",
                    &[],
                )
                .unwrap();
            (r.get(0), r.get(1))
        };
        assert!(lists > 100, "version {version}: {lists} lists");
        assert_eq!(
            off, 0,
            "version {version}: postings lists the migration got wrong"
        );
        let bm = single(RetrieverKind::Bm25);
        for q in questions.iter().take(6) {
            let text = q["question"].as_str().unwrap();
            assert_eq!(
                ids(&lite, text, &bm),
                ids(&post, text, &bm),
                "migrated from {version}: {text}"
            );
        }
        assert_eq!(ids(&lite, q, &scoped), ids(&post, q, &scoped));
    }
}

/// The schema before the lists were merged by block (version 6).
const BLOCKS_BEFORE: &str = "DROP TABLE term_blocks, dead_docs;
     DROP SEQUENCE term_blocks_ids;
     ALTER TABLE documents DROP COLUMN block;
     DELETE FROM meta WHERE key = 'block_docs';";

/// The version-4 `postings` table (a row per posting, with its chunk's length and
/// document) made from the lists, to migrate again.
const POSTINGS_FROM_LISTS: &str = "CREATE TABLE postings (
         term     TEXT NOT NULL,
         chunk_id BIGINT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
         tf       INTEGER NOT NULL,
         len      INTEGER NOT NULL,
         doc_id   BIGINT NOT NULL,
         PRIMARY KEY (term, chunk_id) INCLUDE (tf, len, doc_id)
     );
     CREATE INDEX postings_by_chunk ON postings(chunk_id);
     INSERT INTO postings (term, chunk_id, tf, len, doc_id)
         SELECT t.term,
                ('x' || encode(substring(t.postings FROM i * 16 + 1 FOR 8), 'hex'))::bit(64)::bigint,
                ('x' || encode(substring(t.postings FROM i * 16 + 9 FOR 4), 'hex'))::bit(32)::int,
                ('x' || encode(substring(t.postings FROM i * 16 + 13 FOR 4), 'hex'))::bit(32)::int,
                t.doc_id
         FROM term_docs t, generate_series(0, length(t.postings) / 16 - 1) AS i;";

#[test]
fn two_processes_index_into_one_database() {
    let _alone = util::heavy();
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let corpus = util::shared().join("corpus/pdfs");
    let (da, db) = (dir.path().join("a"), dir.path().join("b"));
    std::thread::scope(|s| {
        let one = s.spawn(|| {
            let e = pg_engine(&da, &pg.url);
            util::index(&e, &[corpus.join("wasysym.pdf")])
        });
        let two = s.spawn(|| {
            let e = pg_engine(&db, &pg.url);
            util::index(&e, &[corpus.join("txfontsdoc.pdf")])
        });
        for ev in [one.join().unwrap(), two.join().unwrap()] {
            assert!(
                ev.iter().any(|e| matches!(e, IndexEvent::FileDone { .. })),
                "{ev:?}"
            );
        }
    });
    // Each sees both documents, answers from both, and the index is consistent.
    let a = pg_engine(&da, &pg.url);
    let b = pg_engine(&db, &pg.url);
    let names = |e: &Engine| {
        let mut n: Vec<String> = e
            .documents()
            .unwrap()
            .into_iter()
            .map(|d| d.file_name)
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(&a), ["txfontsdoc.pdf", "wasysym.pdf"]);
    assert_eq!(names(&a), names(&b));
    assert!(a.store().check().unwrap().is_empty());
    let hits = b
        .search(
            "wasysym smiley symbol",
            &RetrieveOptions::default(),
            &Cancel::new(),
        )
        .unwrap();
    assert!(hits
        .nodes
        .iter()
        .any(|n| n.chunk.as_ref().is_some_and(|c| c.file == "wasysym.pdf")));
    // Each keeps its own queue.
    let qa: Vec<String> = a
        .store()
        .queue()
        .unwrap()
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert!(qa.len() == 1 && qa[0].ends_with("wasysym.pdf"), "{qa:?}");

    // A row a live process runs is its own: opening the database again elsewhere
    // does not requeue it; once that process is gone, it waits again.
    let origin = "host:/shared";
    let mut live = Store::connect(&pg.url, origin).unwrap();
    let id = live.enqueue(&[("/x.pdf".into(), 1)]).unwrap()[0];
    assert_eq!(live.claim().unwrap().unwrap().id, id);
    let mut other = Store::connect(&pg.url, origin).unwrap();
    assert_eq!(other.requeue_interrupted().unwrap(), 0);
    assert_eq!(other.queue_row(id).unwrap().unwrap().state, "running");
    drop(live);
    // The server ends the closed session's backend a moment later: poll for it.
    let mut requeued = 0;
    for _ in 0..5000 {
        requeued = other.requeue_interrupted().unwrap();
        if requeued > 0 {
            break;
        }
    }
    assert_eq!(requeued, 1);
    assert_eq!(other.queue_row(id).unwrap().unwrap().state, "queued");
    // Two indexers never take the same row.
    let more = other
        .enqueue(
            &(0..20)
                .map(|i| (format!("/f{i}.pdf"), 1))
                .collect::<Vec<_>>(),
        )
        .unwrap();
    let url = pg.url.clone();
    let taken: Vec<i64> = std::thread::scope(|s| {
        let h: Vec<_> = (0..2)
            .map(|_| {
                let st = Store::connect(&url, origin).unwrap();
                s.spawn(move || {
                    let mut got = Vec::new();
                    while let Some(r) = st.claim().unwrap() {
                        got.push(r.id);
                    }
                    got
                })
            })
            .collect();
        h.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut sorted = taken.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), taken.len(), "a row was taken twice");
    assert_eq!(sorted.len(), more.len() + 1);
}

#[test]
fn the_settings_choose_the_shared_index_for_the_next_start() {
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let e = sqlite_engine(dir.path());
    assert!(e.settings_view().store_in_use.starts_with("sqlite: "));
    let mut s = e.settings();
    // Not a PostgreSQL URL, or one nobody answers: refused, nothing saved.
    s.store = "mysql://db/quire".into();
    assert!(e.set_settings(s.clone()).is_err());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    s.store = format!("postgres://quire@127.0.0.1:{port}/quire");
    let err = e.set_settings(s.clone()).unwrap_err().to_string();
    assert!(err.contains("cannot connect"), "{err}");
    assert_eq!(e.settings().store, "");
    // A reachable one is saved, and the next start uses it.
    s.store = pg.url.clone();
    e.set_settings(s).unwrap();
    drop(e);
    let again = sqlite_engine(dir.path());
    assert_eq!(again.store().kind(), "postgres");
    assert!(again
        .settings_view()
        .store_in_use
        .starts_with("postgres: postgres://"));
}

/// A `quire serve` process of its own (the real binary), killed when dropped.
struct ServeProcess {
    child: std::process::Child,
    addr: std::net::SocketAddr,
}

impl ServeProcess {
    /// `quire serve --port 0 --no-token` over `data_dir`, its index in `store`; the
    /// address from the line it prints once listening. (What is tested here is the
    /// shared database; the token is tests/it/server_guard.rs's.)
    fn start(data_dir: &Path, store: &str) -> Self {
        let (child, url) = crate::util::spawn_serve(
            std::process::Command::new(crate::util::quire_exe())
                .args([
                    "serve",
                    "--port",
                    "0",
                    "--no-token",
                    "--store",
                    store,
                    "--data-dir",
                ])
                .arg(data_dir),
        );
        let addr = crate::util::serve_addr(&url);
        Self { child, addr }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two `quire serve` OS processes (each its own data directory and connections) on
/// one database: a PDF uploaded to each at the same time is listed and searched by
/// both, and the index stays consistent after both are killed.
#[test]
fn two_serve_processes_share_one_database() {
    use crate::server::{ask, kind, until_done, upload};
    let _alone = util::heavy();
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let corpus = util::shared().join("corpus/pdfs");
    let a = ServeProcess::start(&dir.path().join("a"), &pg.url);
    let b = ServeProcess::start(&dir.path().join("b"), &pg.url);
    std::thread::scope(|s| {
        let up = |addr, name: &str| {
            let bytes = std::fs::read(corpus.join(name)).unwrap();
            let name = name.to_string();
            s.spawn(move || upload(addr, &name, &bytes))
        };
        let (one, two) = (up(a.addr, "wasysym.pdf"), up(b.addr, "txfontsdoc.pdf"));
        for events in [one.join().unwrap(), two.join().unwrap()] {
            assert!(events.iter().any(|e| kind(e) == "file_done"), "{events:?}");
        }
    });
    for (server, other_file, question) in [
        (&a, "txfontsdoc.pdf", "Some HP laser printers fail to print my documents that use the TX fonts. What does the TX fonts manual recommend?"),
        (&b, "wasysym.pdf", "Which wasysym package option keeps LaTeX's own integral signs untouched?"),
    ] {
        let (status, _, listed) = crate::server::get(server.addr, "/api/documents", "");
        assert_eq!(status, 200);
        let listed: serde_json::Value = serde_json::from_slice(&listed).unwrap();
        let mut names: Vec<&str> = listed["items"]
            .as_array()
            .expect("a page of documents")
            .iter()
            .filter_map(|d| d["file_name"].as_str())
            .collect();
        names.sort();
        assert_eq!(names, ["txfontsdoc.pdf", "wasysym.pdf"], "{listed}");
        // Each finds the document the other process indexed.
        let events = until_done(&mut ask(server.addr, question, "no_text"));
        let sources = events
            .iter()
            .find(|e| kind(e) == "sources")
            .unwrap_or_else(|| panic!("no sources: {events:?}"));
        assert_eq!(
            sources["sources"][0]["file"], other_file,
            "{}",
            sources["sources"]
        );
    }
    drop((a, b));
    let store = Store::connect(&pg.url, "check").expect("store");
    assert_eq!(store.check().expect("check"), Vec::<String>::new());
}

#[test]
fn a_question_refuses_vectors_another_process_made_with_another_model() {
    let _alone = util::heavy();
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let a = pg_engine(&dir.path().join("a"), &pg.url);
    util::index(&a, &[util::shared().join("corpus/pdfs/wasysym.pdf")]);
    let q = "Which symbol does wasysym offer for a smiley?";
    let opts = RetrieveOptions::default();
    // Asked twice: the second time the embedding models are the ones counted at this
    // store generation, not counted again.
    for _ in 0..2 {
        assert!(!a.search(q, &opts, &Cancel::new()).unwrap().nodes.is_empty());
    }
    // Another process re-embeds (part of) the index with another model.
    let b = pg_engine(&dir.path().join("b"), &pg.url);
    let mut s = b.settings();
    s.embedder = "m3e-small".into();
    b.set_settings(s).unwrap();
    let _ = b.reembed(
        &Cancel::new(),
        &mut |ev| !matches!(ev, IndexEvent::Reembedded { done, .. } if done > 0),
    );
    // The first process sees the generation move on, counts again, and refuses to
    // compare its model's vectors with the other's.
    let err = a.search(q, &opts, &Cancel::new()).unwrap_err();
    assert!(matches!(err, quire::Error::Conflict(_)), "{err}");
    assert!(err.to_string().contains("m3e-small"), "{err}");
}

/// A common term's list (a row in more than 256 documents) is kept between
/// questions, and dropped when the index changes, also when another process
/// changed it: the next question ranks what was written.
#[test]
fn postgres_bm25_keeps_a_common_terms_list_until_the_index_changes() {
    use quire::store::postgres::PgSearch;
    let pg = Postgres::start();
    let mut s = Store::connect(&pg.url, "test:/a").unwrap();
    let pages = [page(1, "p", false)];
    let write = |s: &mut Store, i: usize, text: &str| {
        s.insert_document(&NewDocument {
            path: &format!("/lib/{i}.pdf"),
            hash: &format!("h{i}"),
            bytes: 1,
            title: None,
            pages: &pages,
            chunks: &[chunk(1, text)],
            embeddings: &[vec![1.0, i as f32]],
            model: "m",
        })
        .unwrap();
    };
    for i in 0..300 {
        write(
            &mut s,
            i,
            &format!("shared library text number{i} and more words here"),
        );
    }
    let search = PgSearch::new(&pg.url);
    let (first, reads) = search.bm25_reads("shared", 3, None).unwrap();
    assert_eq!(first.0.len(), 3);
    assert_eq!((reads.rows, reads.cached_terms), (300, 0));
    let (again, reads) = search.bm25_reads("shared", 3, None).unwrap();
    assert_eq!(reads.cached_terms, 1, "{reads:?}");
    let ids =
        |r: &(Vec<quire::retrieve::Hit>, _)| r.0.iter().map(|h| h.chunk_id).collect::<Vec<_>>();
    assert_eq!(ids(&first), ids(&again));
    // Another process writes a short chunk that says "shared" three times: the
    // next question reads the list again and ranks it first.
    let mut other = Store::connect(&pg.url, "test:/b").unwrap();
    write(&mut other, 300, "shared shared shared");
    let (after, reads) = search.bm25_reads("shared", 3, None).unwrap();
    assert_eq!((reads.rows, reads.cached_terms), (301, 0), "{reads:?}");
    let doc_300 = |s: &Store| {
        s.documents()
            .unwrap()
            .into_iter()
            .find(|d| d.path == "/lib/300.pdf")
            .unwrap()
            .id
    };
    let newest = other.load_chunks_of(&[doc_300(&other)]).unwrap()[0].id;
    assert_eq!(after.0[0].chunk_id, newest, "{after:?}");
    // A removal too.
    let gone = doc_300(&other);
    assert!(other.remove_document(gone).unwrap());
    let (last, reads) = search.bm25_reads("shared", 3, None).unwrap();
    assert_eq!((reads.rows, reads.cached_terms), (300, 0), "{reads:?}");
    assert_eq!(ids(&last), ids(&first));
    assert!(s.check().unwrap().is_empty());
}

/// BM25's top `k` for `query` computed here from the documents' own lists
/// (`term_docs`, what the writes write) and the statistics: what the blocks must
/// rank alike. (chunk, score), best first, ties to the lower id.
fn bm25_from_document_lists(sql: &mut postgres::Client, query: &str, k: usize) -> Vec<(i64, f64)> {
    use quire::text::bm25::{B, K1};
    let mut terms: Vec<String> = Vec::new();
    quire::text::analyzer::analyze(query, |t| {
        if !terms.iter().any(|x| x == t) {
            terms.push(t.to_string());
        }
    });
    let r = sql
        .query_one(
            "SELECT (SELECT value FROM meta WHERE key = 'chunks'),
                    (SELECT value FROM meta WHERE key = 'terms')",
            &[],
        )
        .unwrap();
    let (n, total): (i64, i64) = (r.get(0), r.get(1));
    let (n, avg) = (n as f64, total as f64 / n as f64);
    let (k1, b) = (f64::from(K1), f64::from(B));
    let mut scores: BTreeMap<i64, f64> = BTreeMap::new();
    for term in &terms {
        let rows = sql
            .query("SELECT postings FROM term_docs WHERE term = $1", &[term])
            .unwrap();
        let lists: Vec<Vec<u8>> = rows.iter().map(|r| r.get(0)).collect();
        let df = lists.iter().map(|l| l.len() / 16).sum::<usize>() as f64;
        let w = (1.0 + (n - df + 0.5) / (df + 0.5)).ln() * (k1 + 1.0);
        for p in lists.iter().flat_map(|l| l.chunks_exact(16)) {
            let id = i64::from_be_bytes(p[..8].try_into().unwrap());
            let tf = f64::from(i32::from_be_bytes(p[8..12].try_into().unwrap()));
            let len = f64::from(i32::from_be_bytes(p[12..].try_into().unwrap()));
            *scores.entry(id).or_default() += w * tf / (tf + k1 * (1.0 - b + b * len / avg));
        }
    }
    let mut best: Vec<(i64, f64)> = scores.into_iter().collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    best.truncate(k);
    best
}

#[test]
fn postgres_bm25_merges_lists_by_block_and_ranks_as_the_documents_lists_do() {
    use quire::store::postgres::PgSearch;
    let pg = Postgres::start();
    let mut s = Store::connect(&pg.url, "test:/a").unwrap();
    let mut sql = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    sql.batch_execute("UPDATE meta SET value = 8 WHERE key = 'block_docs'")
        .unwrap();
    let pages = [page(1, "p", false)];
    let words = ["licence", "source", "patent", "notice", "warranty", "copy"];
    let text = |i: usize, v: usize| {
        format!(
            "{} {} {} document{i} version{v} and the shared words {}",
            words[i % 6],
            words[(i * 7 + v) % 6],
            words[(i + 3) % 6],
            "shared ".repeat(1 + i % 3)
        )
    };
    let write = |s: &mut Store, i: usize, v: usize| {
        let (a, b) = (
            text(i, v),
            format!("second chunk of {i}: {}", words[(i + v) % 6]),
        );
        s.insert_document(&NewDocument {
            path: &format!("/lib/{i}.pdf"),
            hash: &format!("h{i}.{v}"),
            bytes: 1,
            title: None,
            pages: &pages,
            chunks: &[chunk(1, &a), chunk(1, &b)],
            embeddings: &[vec![1.0, i as f32], vec![i as f32, 1.0]],
            model: "m",
        })
        .unwrap();
    };
    let layout = |sql: &mut postgres::Client| -> (i64, i64, i64, i64) {
        let r = sql
            .query_one(
                "SELECT (SELECT count(*) FROM documents WHERE block IS NULL),
                        (SELECT count(DISTINCT block) FROM documents),
                        (SELECT count(DISTINCT block) FROM term_blocks),
                        (SELECT count(*) FROM dead_docs)",
                &[],
            )
            .unwrap();
        (r.get(0), r.get(1), r.get(2), r.get(3))
    };
    let queries = [
        "shared licence",
        "patent notice warranty",
        "document3 copy",
        "source version0 shared",
        "second chunk licence",
        "document7",
    ];
    // Each ranking, from a search of its own (no list kept from before), as the
    // documents' lists rank.
    let same = |sql: &mut postgres::Client, when: &str| {
        let search = PgSearch::new(&pg.url);
        for q in queries {
            let (got, _) = search.bm25(q, 5, None).unwrap();
            let want = bm25_from_document_lists(sql, q, 5);
            assert_eq!(got.len(), want.len(), "{when}: {q}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.chunk_id, w.0, "{when}: {q}: {got:?} {want:?}");
                assert!((f64::from(g.score) - w.1).abs() < 1e-4, "{when}: {q}");
            }
        }
    };
    for i in 0..10 {
        write(&mut s, i, 0);
    }
    // A block of eight, two documents waiting.
    assert_eq!(layout(&mut sql), (2, 1, 1, 0));
    same(&mut sql, "merged");
    let id = |s: &Store, i: usize| {
        s.documents()
            .unwrap()
            .into_iter()
            .find(|d| d.path == format!("/lib/{i}.pdf"))
            .unwrap()
            .id
    };
    // A merged document removed: its postings stay in the block, skipped.
    let gone = id(&s, 1);
    let gone_chunks: Vec<i64> = s
        .load_chunks_of(&[gone])
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert!(s.remove_document(gone).unwrap());
    assert_eq!(layout(&mut sql), (2, 1, 1, 1));
    same(&mut sql, "one removed");
    let (hits, _) = PgSearch::new(&pg.url)
        .bm25("document1 shared", 20, None)
        .unwrap();
    assert!(
        !hits.iter().any(|h| gone_chunks.contains(&h.chunk_id)),
        "{hits:?}"
    );
    assert!(s.check().unwrap().is_empty(), "{:?}", s.check());
    // A quarter of the block gone: it is taken apart, and its six documents left
    // are merged again with the two that were waiting.
    let second = id(&s, 2);
    assert!(s.remove_document(second).unwrap());
    assert_eq!(layout(&mut sql), (0, 1, 1, 0));
    same(&mut sql, "block merged again");
    // A document written again (another text): the old one dead in its block, the
    // new one waiting; another process sees the same.
    write(&mut s, 6, 1);
    assert_eq!(layout(&mut sql), (1, 1, 1, 1));
    same(&mut sql, "one rewritten");
    for i in 10..17 {
        write(&mut s, i, 0);
    }
    assert_eq!(layout(&mut sql), (0, 2, 2, 1));
    same(&mut sql, "a second block");
    let other = Store::connect(&pg.url, "test:/b").unwrap();
    assert!(other.check().unwrap().is_empty(), "{:?}", other.check());
    // A scope: only its documents' chunks, in blocks or not.
    let scope = quire::retrieve::DocFilter::new([id(&s, 0), id(&s, 6)]);
    let (hits, _) = PgSearch::new(&pg.url)
        .bm25("shared second document0 document6", 10, Some(&scope))
        .unwrap();
    let allowed: Vec<i64> = s
        .load_chunks_of(&[id(&s, 0), id(&s, 6)])
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(hits.len(), 4, "{hits:?}");
    assert!(
        hits.iter().all(|h| allowed.contains(&h.chunk_id)),
        "{hits:?}"
    );
    // A block whose bytes were damaged is found by the check.
    sql.batch_execute(
        "UPDATE term_blocks SET postings = substring(postings FROM 1 FOR 12)
         WHERE ctid = (SELECT ctid FROM term_blocks
                       WHERE block NOT IN (SELECT block FROM dead_docs)
                       AND octet_length(postings) > 40 LIMIT 1)",
    )
    .unwrap();
    let problems = s.check().unwrap();
    assert!(problems.iter().any(|p| p.contains("block")), "{problems:?}");
}
