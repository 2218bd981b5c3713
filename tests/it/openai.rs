//! Quire as an OpenAI-compatible RAG server, through the official `openai` Python
//! client from PyPI (installed by `scripts/setup.sh --test` into `.venv-test`):
//! `tests/openai/client.py` lists the models, gets a whole and a streamed answer with
//! their sources, a follow-up, stops a stream early, and checks the errors, against a
//! server started here on loopback with the real default models.

use std::process::Command;

use crate::server::{index_one, start_on, QUESTION};
use crate::util;
use crate::util::postgres::Postgres;

#[test]
fn the_official_openai_client_gets_answers_with_sources() {
    client_passes(None);
}

/// The same with the index in PostgreSQL (retrieval in the database).
#[test]
fn the_official_openai_client_gets_answers_with_sources_from_postgres() {
    let pg = Postgres::start();
    client_passes(Some(&pg.url));
}

fn client_passes(store: Option<&str>) {
    let python = util::repo().join(".venv-test/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `scripts/setup.sh --test` (it installs the openai client)",
        python.display()
    );
    let s = index_one(start_on(store, quire_cli::server::DEFAULT_MAX_UPLOAD, Ok));
    let out = Command::new(&python)
        .arg(util::repo().join("tests/openai/client.py"))
        .arg(format!("http://{}/v1", s.addr))
        .arg(QUESTION)
        .output()
        .expect("run the client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.trim_end().ends_with("ok"), "{stdout}");
}
