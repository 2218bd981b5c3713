//! Choosing models, with the real files: Settings lists every GGUF and embedding
//! model with what it is; switching the LLM takes effect on the next question without
//! a restart; switching the embedding model makes the index refuse to mix vectors
//! until it is re-embedded (with progress, resumable), and the index records which
//! model made its vectors across a restart.

use std::path::Path;

use quire::engine::{AskEvent, AskRequest, Engine, EngineConfig, IndexEvent, RetrieveOptions};
use quire::llm::Cancel;
use quire::Error;

use crate::util;

const M3E: &str = "m3e-small";

fn engine(dir: &Path) -> Engine {
    Engine::open(EngineConfig::new(Some(dir.to_path_buf())).expect("config")).expect("engine")
}

fn index(engine: &Engine, pdf: &str) -> usize {
    let path = util::shared().join("corpus/pdfs").join(pdf);
    let summary = engine
        .index_summary(&[path], &Cancel::new(), &mut |_| true)
        .expect("index");
    assert!(summary.failed.is_empty(), "{:?}", summary.failed);
    engine
        .index_embedders()
        .expect("models")
        .iter()
        .map(|m| m.chunks)
        .sum()
}

fn set_embedder(engine: &Engine, name: &str) -> quire::Result<()> {
    let mut s = engine.settings();
    s.embedder = name.into();
    engine.set_settings(s).map(|_| ())
}

#[test]
fn settings_list_every_model_with_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let view = engine(dir.path()).settings_view();
    let llm = |name: &str| {
        view.models
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name} not listed: {:?}", view.models))
    };
    let qwen = llm(quire::models::DEFAULT_LLM);
    assert_eq!(qwen.architecture.as_deref(), Some("qwen2"));
    assert_eq!(qwen.speed.as_deref(), Some("fast"));
    assert_eq!(qwen.context, Some(32768));
    assert!(qwen.chat_template);
    assert!(qwen.error.is_none());
    assert_eq!(qwen.bytes, 491_400_064);
    assert_eq!(qwen.size_label.as_deref(), Some("0.5B"));
    assert_eq!(qwen.quantization.as_deref(), Some("Q4_K_M"));
    let p = qwen.parameters.unwrap();
    assert!((400_000_000..700_000_000).contains(&p), "{p}");
    let smol = llm(quire::models::SMOLLM2);
    assert_eq!(smol.architecture.as_deref(), Some("llama"));
    assert!(smol.chat_template);
    // The Gemma 3 270M file we fetch is the base model: the list says so.
    let gemma = llm("gemma-3-270m-q4_k_m.gguf");
    assert_eq!(gemma.architecture.as_deref(), Some("gemma3"));
    assert!(!gemma.chat_template);

    let emb = |name: &str| {
        view.embedders
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name} not listed: {:?}", view.embedders))
    };
    let minilm = emb(quire::models::DEFAULT_EMBEDDER);
    assert_eq!(minilm.dims, Some(384));
    assert_eq!(minilm.layers, Some(6));
    let m3e = emb(M3E);
    assert_eq!(m3e.dims, Some(512));
    assert_eq!(m3e.layers, Some(4));
    assert_eq!(m3e.languages, vec!["zh".to_string()]);
    assert!(m3e.error.is_none(), "{:?}", m3e.error);
    assert!(view.index_embedders.is_empty());
}

#[test]
fn a_bad_model_choice_is_refused_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let err = set_embedder(&e, "no-such-embedder").unwrap_err();
    assert!(err.to_string().contains("no-such-embedder"), "{err}");
    // A folder that is not a BERT model says which file and why.
    let fake = dir.path().join("fake-embedder");
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(fake.join("config.json"), "{}").unwrap();
    std::fs::write(fake.join("model.safetensors"), "").unwrap();
    let err = set_embedder(&e, fake.to_str().unwrap()).unwrap_err();
    assert!(err.to_string().contains("config.json"), "{err}");
    // A GGUF that is not one says so.
    let bad = dir.path().join("notes.gguf");
    std::fs::write(&bad, "not a model").unwrap();
    let mut s = e.settings();
    s.model = bad.display().to_string();
    let err = e.set_settings(s).unwrap_err();
    assert!(err.to_string().contains("not a GGUF"), "{err}");
    assert_eq!(e.settings(), quire::settings::Settings::default());
}

#[test]
fn changing_the_embedding_model_reembeds_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let chunks = index(&e, "ctex-faq.pdf");
    assert!(chunks > 40, "{chunks}");
    let opts = RetrieveOptions::default();
    let question = "有一大段内容暂时不想让 LaTeX 编译，有没有办法一次性把整段屏蔽掉？";
    let before = e.search(question, &opts, &Cancel::new()).expect("search");
    assert!(!before.nodes.is_empty());

    // Another model chosen: searching or indexing would mix two models' vectors, so
    // both refuse with the way out, and the status says it.
    set_embedder(&e, M3E).expect("choose m3e");
    let err = e.search(question, &opts, &Cancel::new()).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("all-MiniLM-L6-v2") && msg.contains(M3E) && msg.contains("re-embed"),
        "{msg}"
    );
    let more = util::shared().join("corpus/pdfs/wasysym.pdf");
    let err = e.index(&[more], &Cancel::new(), &mut |_| true).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert!(e.status().problems.iter().any(|p| p.contains("re-embed")));

    // Stopped after the first step: part of the index is re-embedded, and the rest
    // still refuses.
    let mut seen = Vec::new();
    let err = e
        .reembed(&Cancel::new(), &mut |ev| {
            seen.push(ev.clone());
            !matches!(ev, IndexEvent::Reembedded { done, .. } if done > 0)
        })
        .unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    let models = e.index_embedders().unwrap();
    assert_eq!(models.len(), 2, "{models:?}");
    assert!(e.search(question, &opts, &Cancel::new()).is_err());

    // Resumed in a new engine (a restart): only the rest is done, with progress up to
    // the total, and the index records the new model.
    drop(e);
    let e = engine(dir.path());
    assert_eq!(e.settings().embedder, M3E);
    let mut progress = Vec::new();
    let n = e
        .reembed(&Cancel::new(), &mut |ev| {
            if let IndexEvent::Reembedded { done, total, .. } = ev {
                progress.push((done, total));
            }
            true
        })
        .expect("reembed");
    let (first_done, total) = progress[0];
    assert_eq!(first_done, 0);
    assert_eq!(total, n);
    assert!(n < chunks, "resumed: {n} of {chunks}");
    assert_eq!(progress.last().copied(), Some((n, n)));
    let models = e.index_embedders().unwrap();
    assert_eq!(models.len(), 1);
    assert_eq!((models[0].name.as_str(), models[0].chunks), (M3E, chunks));
    assert!(e.status().problems.iter().all(|p| !p.contains("re-embed")));

    // Searching works again, on the new model's 512-dimensional vectors, and new
    // documents are embedded by it too.
    let after = e.search(question, &opts, &Cancel::new()).expect("search");
    assert!(!after.nodes.is_empty());
    let stored = e.store().load_chunks().unwrap();
    assert!(stored.iter().all(|c| c.embedding.len() == 512));
    index(&e, "wasysym.pdf");
    assert_eq!(e.index_embedders().unwrap().len(), 1);
}

#[test]
fn switching_the_llm_takes_effect_on_the_next_question() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    index(&e, "wasysym.pdf");
    let ask_with = |model: &str| -> String {
        let mut s = e.settings();
        s.model = model.into();
        s.max_tokens = 4;
        e.set_settings(s).expect("settings");
        let req = AskRequest {
            conversation_id: None,
            question: "Which option keeps the integral signs?".into(),
            mode: Some("compact".into()),
            ..Default::default()
        };
        let mut used = None;
        e.ask(req, &Cancel::new(), &mut |ev| {
            if let AskEvent::Done { stats, .. } = ev {
                // Four tokens cannot hold the answer: the stats say it was cut off.
                assert_eq!(stats.cut_off_after, Some(4), "{stats:?}");
                used = stats.model;
            }
            true
        })
        .expect("ask");
        used.expect("stats name the model")
    };
    assert_eq!(ask_with(quire::models::SMOLLM2), quire::models::SMOLLM2);
    assert_eq!(
        ask_with("gemma-3-270m-q4_k_m.gguf"),
        "gemma-3-270m-q4_k_m.gguf"
    );
}
