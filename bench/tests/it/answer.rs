//! The answer benchmark end to end: index a PDF through the engine and ask with the
//! real default model.

use quire::llm::Cancel;
use quire::synth::ResponseMode;
use quire_bench::answer::{answer_bench, load_questions, AnswerBenchOptions};

use crate::util;

#[test]
fn answer_bench_goes_through_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let pdfs = dir.path().join("pdfs");
    std::fs::create_dir(&pdfs).unwrap();
    std::fs::copy(
        util::shared().join("corpus/pdfs/wasysym.pdf"),
        pdfs.join("wasysym.pdf"),
    )
    .unwrap();
    let questions: Vec<_> = load_questions(&util::shared().join("corpus/questions.jsonl"))
        .unwrap()
        .into_iter()
        .filter(|q| q.id == "A23")
        .collect();
    assert_eq!(questions.len(), 1);
    let opts = AnswerBenchOptions {
        pdfs,
        data_dir: dir.path().join("data"),
        questions,
        modes: vec![ResponseMode::NoText, ResponseMode::SimpleSummarize],
        overrides: quire::engine::AskOverrides {
            top_k: Some(2),
            max_tokens: Some(8),
            ..Default::default()
        },
        model: None,
        optimizer_percentile: None,
        optimizer_threshold: None,
    };
    let mut lines = Vec::new();
    let r = answer_bench(&opts, &Cancel::new(), &mut |l| lines.push(l.to_string())).unwrap();
    assert_eq!(r.documents, 1);
    assert_eq!((r.top_k, r.max_tokens), (2, 8));
    assert_eq!(r.modes.len(), 2);
    let (none, simple) = (&r.modes[0], &r.modes[1]);
    assert_eq!(none.mode, ResponseMode::NoText);
    assert_eq!(none.calls_per_question, 0.0);
    assert_eq!(none.tokens_total, 0);
    // no_text answers nothing, so it holds no required string
    assert_eq!(none.must_contain_share, 0.0);
    assert_eq!(simple.questions, 1);
    assert_eq!(simple.calls_per_question, 1.0);
    assert!((1..=8).contains(&simple.tokens_total), "{simple:?}");
    assert!(simple.median_secs > 0.0);
    // both modes saw the same sources
    assert_eq!(none.sources_share, simple.sources_share);
    assert!(lines
        .iter()
        .any(|l| l.starts_with("simple_summarize 1/1 A23")));
    assert!(r.to_string().contains("simple_summarize"));
}
