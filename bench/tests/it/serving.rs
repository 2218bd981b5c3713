//! The serving load test, bounded by a number of asks: `quire serve` (the binary beside
//! the tests, which `make test` builds first) answers 4 clients at once while a PDF
//! indexes; half the asks are dropped by their client after the first piece. Nothing
//! may be lost or mixed, the batch must index, and the server must answer after it all.

use quire_bench::serving::{run, Options, Outcome};

use crate::util;

#[test]
fn concurrent_asks_while_indexing_lose_and_mix_nothing() {
    let exe = std::env::current_exe().unwrap();
    // target/debug/deps/it-… → target/debug/quire
    let quire = exe.parent().unwrap().parent().unwrap().join("quire");
    assert!(
        quire.is_file(),
        "{} missing: cargo build -p quire-cli first (or cargo build --workspace)",
        quire.display()
    );
    let seed = util::shared().join("corpus/pdfs/wasysym.pdf");
    let questions: Vec<String> =
        std::fs::read_to_string(util::shared().join("corpus/questions.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|q| q["file"] == "wasysym.pdf")
            .map(|q| q["question"].as_str().unwrap().to_owned())
            .collect();
    let opts = Options {
        quire,
        clients: 4,
        secs: None,
        asks_per_client: Some(2),
        seed_pdf: seed,
        batch: vec![util::shared().join("corpus/pdfs/txfontsdoc.pdf")],
        model: Some(quire::models::SMOLLM2.into()),
        max_tokens: 24,
        cancel_every: 2,
        questions,
    };
    let r = run(&opts, &mut |m| eprintln!("{m}")).unwrap();
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
    assert_eq!(
        (r.answered, r.cancelled, r.failed),
        (4, 4, 0),
        "{:#?}",
        r.asks
    );
    assert_eq!((r.batch_indexed, r.batch_failed), (1, 0));
    for a in r.asks.iter().filter(|a| a.outcome == Outcome::Answered) {
        assert!(a.first_token.is_some() && a.queued.is_some(), "{a:?}");
    }
}
