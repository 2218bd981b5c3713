//! The OpenAI-compatible model-server backend (`llm::remote`) against a real llama.cpp
//! server (llama-cpp-python's, from PyPI) started here on loopback, serving SmolLM2:
//! the same greedy answers as the local model (our kernels are llama.cpp's bit for
//! bit, so the text must be identical), streaming, token counts, cancellation, the
//! errors a person meets, and every response mode through the engine.

use quire::engine::{AskEvent, AskRequest, Engine, EngineConfig};
use quire::llm::chat::Message;
use quire::llm::{Cancel, GenParams, GgufLlm, Llm, RemoteConfig, RemoteLlm, StopReason};
use quire::synth::ResponseMode;
use quire::Error;

use crate::util::{self, llama_server::LlamaServer};

fn serve() -> LlamaServer {
    LlamaServer::start(&util::smollm2(), "smollm2", 2048)
}

fn config(url: &str) -> RemoteConfig {
    RemoteConfig {
        url: url.into(),
        chat: true,
        ..Default::default()
    }
}

fn greedy(max_tokens: usize) -> GenParams {
    GenParams {
        max_tokens,
        temperature: 0.0,
        repeat_penalty: 1.0,
        ..Default::default()
    }
}

/// Complete, keeping the streamed pieces.
fn complete(llm: &dyn Llm, prompt: &str, params: &GenParams) -> (String, Vec<String>, StopReason) {
    let mut pieces = Vec::new();
    let c = llm
        .complete(prompt, params, &Cancel::new(), &mut |p| {
            pieces.push(p.to_string());
            Ok(true)
        })
        .unwrap();
    (c.text, pieces, c.stop)
}

#[test]
fn a_model_server_answers_as_the_local_model_does() {
    let server = serve();
    let local = GgufLlm::load(util::smollm2()).unwrap();
    // The one model it serves is found by itself; llama-cpp-python does not say its
    // context window, so LlamaIndex's default applies unless the settings give one.
    let remote = RemoteLlm::connect(&config(&format!("{}/v1/", server.url))).unwrap();
    assert_eq!(remote.model(), "smollm2");
    assert_eq!(remote.context_window(), 3900);
    assert!(
        remote.describe().contains("server's tokenizer"),
        "{}",
        remote.describe()
    );
    let sized = RemoteLlm::connect(&RemoteConfig {
        context_window: 2048,
        ..config(&server.url)
    })
    .unwrap();
    assert_eq!(sized.context_window(), 2048);

    // Token counts are the model's own, from the server.
    for text in ["Hello world", "Ligatures: ﬁ ﬂ, and 中文 too.", ""] {
        assert_eq!(
            remote.count_tokens(text).unwrap(),
            local.count_tokens(text).unwrap(),
            "{text:?}"
        );
    }

    // Greedy: the server's llama.cpp and our kernels write the same answer, streamed
    // piece by piece.
    let params = greedy(40);
    for prompt in [
        "What is the capital of France? Answer in one sentence.",
        "Context information is below.\n---------------------\nThe wasysym package \
         provides astronomical symbols such as \\sun and \\mercury.\n---------------------\n\
         Given the context information and not prior knowledge, answer the query.\n\
         Query: Which symbols does wasysym provide?\nAnswer: ",
    ] {
        let (want, _, want_stop) = complete(&local, prompt, &params);
        let (got, pieces, stop) = complete(&remote, prompt, &params);
        assert_eq!(got, want, "{}", util::first_diff(&want, &got));
        assert_eq!(stop, want_stop);
        assert!(pieces.len() > 5, "not streamed: {pieces:?}");
        assert_eq!(pieces.concat(), got);
    }
    // A conversation goes as messages; the server lays them out in the model's
    // template, as the local model does.
    let messages = [
        Message::new("system", "You answer in one short sentence."),
        Message::user("Name a primary colour."),
        Message::new("assistant", "Red is a primary colour."),
        Message::user("Name another one."),
    ];
    let chat = |llm: &dyn Llm| {
        llm.chat(&messages, &params, &Cancel::new(), &mut |_| Ok(true))
            .unwrap()
            .text
    };
    assert_eq!(chat(&remote), chat(&local));

    // A completion model gets the prompt as it is (/v1/completions).
    let raw = RemoteLlm::connect(&RemoteConfig {
        chat: false,
        ..config(&server.url)
    })
    .unwrap();
    let (text, pieces, stop) = complete(&raw, "The three primary colours are", &greedy(8));
    assert!(!text.trim().is_empty() && pieces.len() > 1, "{text:?}");
    assert_eq!(stop, StopReason::MaxTokens);
}

#[test]
fn errors_say_what_is_wrong_and_a_cancel_stops_at_once() {
    let mut server = serve();
    // Nothing listens there.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    let e = RemoteLlm::connect(&config(&nobody)).err().unwrap();
    assert!(
        matches!(&e, Error::Server { reason, .. } if reason.contains("cannot reach")),
        "{e}"
    );
    let e = RemoteLlm::connect(&config("localhost:8080")).err().unwrap();
    assert!(matches!(e, Error::Invalid(_)), "{e}");
    // A model it does not serve: the error lists the ones it does.
    let e = RemoteLlm::connect(&RemoteConfig {
        model: "gpt-9".into(),
        ..config(&server.url)
    })
    .err()
    .unwrap();
    assert!(
        e.to_string().contains("\"gpt-9\"") && e.to_string().contains("smollm2"),
        "{e}"
    );

    let remote = RemoteLlm::connect(&config(&server.url)).unwrap();
    let long = greedy(400);
    let prompt = "Write a long story about a lighthouse keeper.";
    // Cancelled after the first piece: the call returns Cancelled, and the server,
    // its connection closed, serves the next request.
    let cancel = Cancel::new();
    let mut seen = 0;
    let r = remote.complete(prompt, &long, &cancel, &mut |_| {
        seen += 1;
        cancel.cancel();
        Ok(true)
    });
    assert!(matches!(r, Err(Error::Cancelled)), "{r:?}");
    assert_eq!(seen, 1);
    // The sink may stop it too.
    let mut n = 0;
    let c = remote
        .complete(prompt, &long, &Cancel::new(), &mut |_| {
            n += 1;
            Ok(n < 3)
        })
        .unwrap();
    assert_eq!((c.stop, c.output_tokens), (StopReason::Sink, 3));
    let (text, _, _) = complete(&remote, "Say hello.", &greedy(8));
    assert!(!text.is_empty());

    // The server dies mid-answer: a clear error, not a short answer.
    let pid = server.pid();
    let r = remote.complete(prompt, &long, &Cancel::new(), &mut |_| {
        if pid == server.pid() {
            server.kill();
        }
        Ok(true)
    });
    match r {
        Err(Error::Server { reason, .. }) => assert!(
            reason.contains("stream ended before the answer")
                || reason.contains("stream broke off"),
            "{reason}"
        ),
        other => panic!("a dropped stream gave {other:?}"),
    }
}

#[test]
fn every_mode_answers_through_a_model_server() {
    let server = serve();
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(Some(dir.path().to_path_buf())).unwrap()).unwrap();
    let pdf = util::shared().join("corpus/pdfs/wasysym.pdf");
    util::index_ok(&engine, &[pdf]);
    // Saving a server that does not serve the model named is refused, saying why.
    let mut s = engine.settings();
    s.llm_server = server.url.clone();
    s.llm_server_model = "nope".into();
    let e = engine.set_settings(s.clone()).err().unwrap();
    assert!(e.to_string().contains("smollm2"), "{e}");
    s.llm_server_model = String::new();
    s.llm_server_context = 2048;
    s.max_tokens = 24;
    s.not_found_threshold = Some(0.0);
    engine.set_settings(s).unwrap();
    let status = engine.status();
    assert!(
        status.llm.as_deref().unwrap_or("").contains(&server.url),
        "{status:?}"
    );
    assert_eq!(engine.llm().unwrap().context_window(), 2048);

    for mode in ResponseMode::ALL {
        for filter in [false, true] {
            if filter && !matches!(mode, ResponseMode::Refine | ResponseMode::Compact) {
                continue;
            }
            let mut events = Vec::new();
            engine
                .ask(
                    AskRequest {
                        question: "Which symbols does wasysym provide?".into(),
                        mode: Some(mode.name().into()),
                        overrides: quire::engine::AskOverrides {
                            top_k: Some(2),
                            structured_answer_filtering: Some(filter),
                            max_tokens: if filter { Some(48) } else { None },
                            ..Default::default()
                        },
                        ..Default::default()
                    },
                    &Cancel::new(),
                    &mut |e| {
                        events.push(e);
                        true
                    },
                )
                .unwrap();
            let calls: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    AskEvent::StepDone { call } => Some(call.clone()),
                    _ => None,
                })
                .collect();
            let answer = events.iter().find_map(|e| match e {
                AskEvent::Done { answer, .. } => Some(answer.clone()),
                _ => None,
            });
            let answer =
                answer.unwrap_or_else(|| panic!("{} gave no answer: {events:?}", mode.name()));
            if mode == ResponseMode::NoText {
                assert!(calls.is_empty() && answer.is_empty(), "{events:?}");
                continue;
            }
            assert!(!calls.is_empty(), "{}: no model call", mode.name());
            assert!(!answer.trim().is_empty(), "{}: empty answer", mode.name());
            for c in &calls {
                assert!(c.output_tokens > 0 && c.prompt_tokens > 0, "{c:?}");
                if filter {
                    // The grammar held the server to the shape; the verdict was read.
                    assert!(c.query_satisfied.is_some(), "{c:?}");
                }
            }
            if filter {
                assert!(!answer.contains("query_satisfied"), "{answer}");
            }
            // The answer is signed with the server's model, not the local file.
            let signed = events.iter().find_map(|e| match e {
                AskEvent::Done { stats, .. } => stats.model.clone(),
                _ => None,
            });
            assert!(
                signed
                    .as_deref()
                    .is_some_and(|m| m.starts_with("smollm2 on 127.0.0.1:")),
                "{signed:?}"
            );
        }
    }
}
