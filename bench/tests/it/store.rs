//! `quire-bench store` on a real PostgreSQL with pgvector (the pgserver wheel's, which
//! `scripts/setup.sh --test` installs; `scripts/pg-test-server.sh` starts it on
//! loopback and stops it): two corpus PDFs written to both stores, every question
//! about them ranked the same by the database as by the in-memory indexes.

use std::process::Command;

use quire::embed::Embedder;

use crate::util;

/// A PostgreSQL server for the test, stopped when dropped.
struct Pg {
    dir: tempfile::TempDir,
    url: String,
}

fn script(args: &[&std::ffi::OsStr]) -> String {
    let s = util::repo().join("scripts/pg-test-server.sh");
    let out = Command::new(&s).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        s.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

impl Pg {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = script(&["start".as_ref(), dir.path().as_os_str()]);
        Self { dir, url }
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let _ = Command::new(util::repo().join("scripts/pg-test-server.sh"))
            .args(["stop".as_ref(), self.dir.path().as_os_str()])
            .output();
    }
}

#[test]
fn postgres_ranks_as_the_in_memory_indexes_and_is_timed_beside_them() {
    let pg = Pg::start();
    let corpus = tempfile::tempdir().unwrap();
    for f in ["wasysym.pdf", "txfontsdoc.pdf"] {
        std::fs::copy(
            util::shared().join("corpus/pdfs").join(f),
            corpus.path().join(f),
        )
        .unwrap();
    }
    let emb =
        quire::embed::bert::BertEmbedder::open(quire::models::default_embedder().unwrap()).unwrap();
    let chunks = quire_bench::retrieval::index_pdf_dir(corpus.path(), &emb).unwrap();
    let questions: Vec<String> =
        quire_bench::retrieval::load_questions(&util::shared().join("corpus/questions.jsonl"))
            .unwrap()
            .into_iter()
            .filter(|q| q.file == "wasysym.pdf" || q.file == "txfontsdoc.pdf")
            .map(|q| q.question)
            .collect();
    assert_eq!(questions.len(), 4);
    let r = quire_bench::store::compare(
        &chunks,
        &questions,
        &emb as &dyn Embedder,
        &pg.url,
        2,
        |_| {},
    )
    .unwrap();
    assert_eq!((r.documents, r.questions), (2, 4));
    assert_eq!(r.same_top4, 4, "{r}");
    assert!(
        r.postgres.query_p50_ms > 0.0 && r.sqlite.query_p50_ms > 0.0,
        "{r}"
    );
    // A second run on the same database starts from an empty index.
    let again =
        quire_bench::store::compare(&chunks, &questions[..1], &emb, &pg.url, 1, |_| {}).unwrap();
    assert_eq!(again.same_top4, 1, "{again}");
}
