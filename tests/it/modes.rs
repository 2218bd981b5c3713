//! Every knob of the synthesizer, reachable over HTTP with the real default models: a
//! synthesizer a program registers (examples/custom_synthesizer.rs) and a mode a person
//! composes in Settings are listed and answer; templates are checked when settings are
//! saved; structured answer filtering streams its answer and shows each verdict; the
//! inspector gets what the model read after its chat template; query generation is a
//! step with its (custom) prompt; and the CLI's template flags reach the prompts.

use serde_json::{json, Value};

use crate::server::{
    ask_json, get, index_one, json_request, kind, start_with, until_done, QUESTION,
};
use crate::util;

#[path = "../../examples/custom_synthesizer.rs"]
mod example;

fn of_kind<'a>(events: &'a [Value], k: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| kind(e) == k).collect()
}

fn final_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| kind(e) == "token" && e["final"] == true)
        .filter_map(|e| e["text"].as_str())
        .collect()
}

fn modes(addr: std::net::SocketAddr) -> Vec<Value> {
    let (status, _, body) = get(addr, "/api/modes", "");
    assert_eq!(status, 200);
    serde_json::from_slice::<Vec<Value>>(&body).expect("modes")
}

#[test]
fn a_registered_synthesizer_is_a_mode_over_http() {
    let s = index_one(start_with(
        quire_cli::server::DEFAULT_MAX_UPLOAD,
        example::register,
    ));
    let list = modes(s.addr);
    let names: Vec<&str> = list.iter().filter_map(|m| m["name"].as_str()).collect();
    // LlamaIndex's seven, Quire's extractive, and the registered one.
    assert_eq!(names.len(), 9, "{names:?}");
    let mine = list
        .iter()
        .find(|m| m["name"] == example::NAME)
        .expect("listed");
    assert_eq!(mine["kind"], "library");
    assert_eq!(mine["description"], example::DESCRIPTION);
    // The settings dialog gets the same list.
    let (_, _, view) = get(s.addr, "/api/settings", "");
    let view: Value = serde_json::from_slice(&view).expect("json");
    assert_eq!(view["modes"].as_array().map(Vec::len), Some(9));
    // A name already taken is refused.
    let taken = quire::engine::Engine::open(
        quire::engine::EngineConfig::new(Some(tempfile::tempdir().unwrap().keep())).unwrap(),
    )
    .unwrap()
    .with_synthesizer(
        "compact",
        "",
        std::sync::Arc::new(example::BestFirstRefine::default()),
    );
    assert!(taken.err().unwrap().to_string().contains("already taken"));

    let events = until_done(&mut ask_json(
        s.addr,
        &json!({ "question": QUESTION, "mode": example::NAME, "overrides": { "top_k": 3 } }),
    ));
    let done = events.last().expect("done");
    assert_eq!(kind(done), "done", "{events:?}");
    let sources = of_kind(&events, "sources")[0]["sources"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    let labels: Vec<&str> = of_kind(&events, "step")
        .iter()
        .filter_map(|e| e["label"].as_str())
        .collect();
    assert_eq!(labels.len(), sources, "one call per source: {labels:?}");
    assert_eq!(labels[0], "answer from the best chunk");
    assert!(
        labels[1..]
            .iter()
            .all(|l| l.starts_with("refine with chunk")),
        "{labels:?}"
    );
    // The last refine step reads the second-best chunk (reverse order).
    assert!(
        labels.last().is_some_and(|l| l.ends_with("(rank 2)")),
        "{labels:?}"
    );
    let answer = done["answer"].as_str().unwrap_or("");
    assert!(!answer.trim().is_empty());
    assert_eq!(final_text(&events).trim(), answer.trim());
    // The conversation keeps the mode's name.
    let id = of_kind(&events, "started")[0]["conversation_id"]
        .as_i64()
        .unwrap();
    let c = s.engine.conversation(id).unwrap();
    assert_eq!(
        c.messages.last().unwrap().mode.as_deref(),
        Some(example::NAME)
    );
}

#[test]
fn a_mode_composed_in_settings_is_listed_and_answers_and_templates_are_checked_on_save() {
    let s = index_one(start_with(quire_cli::server::DEFAULT_MAX_UPLOAD, Ok));
    let (_, _, view) = get(s.addr, "/api/settings", "");
    let mut settings: Value = serde_json::from_slice(&view).expect("json");
    assert!(settings["default_templates"]["refine_template"]
        .as_str()
        .is_some_and(|t| t.contains("{existing_answer}")));
    // Blocks that do not fit are refused, naming the problem.
    settings["custom_modes"] = json!([{ "name": "bad", "pack": "compact", "combine": "refine",
        "first": "qa", "next": "qa" }]);
    let (status, e) = json_request(s.addr, "PUT", "/api/settings", &settings);
    assert_eq!(status, 400, "{e}");
    assert!(
        e["error"]
            .as_str()
            .unwrap_or("")
            .contains("refine template"),
        "{e}"
    );
    // A refine template without {existing_answer} is refused at save, naming both.
    settings["custom_modes"] = json!([]);
    settings["refine_template"] = json!("{query_str} {context_msg}");
    let (status, e) = json_request(s.addr, "PUT", "/api/settings", &settings);
    assert_eq!(status, 400, "{e}");
    let msg = e["error"].as_str().unwrap_or("");
    assert!(
        msg.contains("refine template") && msg.contains("{existing_answer}"),
        "{e}"
    );
    // A variable no value is given for, likewise.
    settings["refine_template"] = Value::Null;
    settings["simple_template"] = json!("{context_str} {query_str} for {audience}");
    let (status, e) = json_request(s.addr, "PUT", "/api/settings", &settings);
    assert_eq!(status, 400, "{e}");
    assert!(
        e["error"].as_str().unwrap_or("").contains("audience"),
        "{e}"
    );

    // A tree whose leaves are each chunk answered alone with the QA template.
    settings["simple_template"] = Value::Null;
    settings["custom_modes"] = json!([{ "name": "qa_tree", "description": "QA per chunk, then a summary",
        "pack": "separate", "combine": "tree", "first": "qa", "next": "summary" }]);
    let (status, saved) = json_request(s.addr, "PUT", "/api/settings", &settings);
    assert_eq!(status, 200, "{saved}");
    let list = modes(s.addr);
    let mine = list
        .iter()
        .find(|m| m["name"] == "qa_tree")
        .expect("listed");
    assert_eq!(
        (mine["kind"].as_str(), mine["description"].as_str()),
        (Some("custom"), Some("QA per chunk, then a summary"))
    );
    let events = until_done(&mut ask_json(
        s.addr,
        &json!({ "question": QUESTION, "mode": "qa_tree", "overrides": { "top_k": 2 } }),
    ));
    assert_eq!(events.last().map(kind), Some("done"), "{events:?}");
    let steps: Vec<(&str, &str)> = of_kind(&events, "step")
        .iter()
        .map(|e| (e["label"].as_str().unwrap_or(""), ""))
        .collect();
    let prompts: Vec<&str> = of_kind(&events, "prompt")
        .iter()
        .filter_map(|e| e["prompt"].as_str())
        .collect();
    assert_eq!(steps.len(), 3, "two leaves and their summary: {steps:?}");
    assert!(
        steps[0].0.starts_with("summarize level 1, 1 of 2"),
        "{steps:?}"
    );
    // The leaves read the QA template, the top the summary template.
    let defaults = &settings["default_templates"];
    let head = |t: &str| t.split('{').next().unwrap_or("").to_string();
    let qa_head = head(defaults["text_qa_template"].as_str().unwrap());
    let summary_head = head(defaults["summary_template"].as_str().unwrap());
    assert!(prompts[0].starts_with(&qa_head) && prompts[1].starts_with(&qa_head));
    assert!(prompts[2].starts_with(&summary_head), "{}", prompts[2]);
    assert!(!final_text(&events).trim().is_empty());
}

#[test]
fn structured_filtering_streams_its_answer_and_the_inspector_sees_what_the_model_read() {
    let s = index_one(start_with(quire_cli::server::DEFAULT_MAX_UPLOAD, Ok));
    let events = until_done(&mut ask_json(
        s.addr,
        &json!({ "question": QUESTION, "mode": "compact",
                 "overrides": { "top_k": 2, "structured_answer_filtering": true, "max_tokens": 48 } }),
    ));
    let done = events.last().expect("done");
    assert_eq!(kind(done), "done", "{events:?}");
    let calls = of_kind(&events, "step_done");
    assert!(!calls.is_empty());
    for c in &calls {
        let call = &c["call"];
        assert!(call["query_satisfied"].is_boolean(), "{call}");
        // What the model read: the prompt inside the model's chat template.
        let prompt = call["prompt"].as_str().unwrap();
        let rendered = call["rendered"].as_str().expect("rendered");
        assert!(rendered.contains(prompt) && rendered.len() > prompt.len());
        assert!(
            call["prompt_tokens"].as_u64() > call["text_tokens"].as_u64(),
            "{call}"
        );
    }
    // The final step said the query was satisfied, and its answer streamed as it was
    // decoded: several final pieces, unescaped, adding up to the answer.
    let last = &calls.last().unwrap()["call"];
    assert_eq!(last["query_satisfied"], true, "{last}");
    let pieces = events
        .iter()
        .filter(|e| kind(e) == "token" && e["final"] == true)
        .count();
    assert!(pieces > 1, "the filtered answer did not stream");
    let answer = done["answer"].as_str().unwrap_or("");
    assert!(
        !answer.is_empty() && !answer.contains("query_satisfied"),
        "{answer}"
    );
    assert_eq!(final_text(&events), answer);
}

#[test]
fn query_generation_is_a_step_with_its_custom_prompt() {
    let s = index_one(start_with(quire_cli::server::DEFAULT_MAX_UPLOAD, Ok));
    let template = "Write {num_queries} other ways to ask this, one per line:\n{query}\n";
    let events = until_done(&mut ask_json(
        s.addr,
        &json!({ "question": QUESTION, "mode": "no_text",
                 "overrides": { "num_queries": 2, "query_gen_template": template } }),
    ));
    assert_eq!(events.last().map(kind), Some("done"), "{events:?}");
    let step = of_kind(&events, "step");
    assert_eq!(step.len(), 1, "{events:?}");
    assert_eq!(step[0]["label"], "generate queries");
    let prompt = of_kind(&events, "prompt")[0]["prompt"].as_str().unwrap();
    assert_eq!(
        prompt,
        format!("Write 1 other ways to ask this, one per line:\n{QUESTION}\n")
    );
    let call = &of_kind(&events, "step_done")[0]["call"];
    assert!(call["rendered"]
        .as_str()
        .is_some_and(|r| r.contains(prompt)));
    // A template without {query} is refused before anything runs.
    let (status, e) = json_request(
        s.addr,
        "POST",
        "/api/ask",
        &json!({ "question": QUESTION, "overrides": { "num_queries": 2, "query_gen_template": "Write {num_queries}" } }),
    );
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap_or("").contains("{query}"), "{e}");
}

#[test]
fn the_cli_s_template_flags_reach_the_prompts() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let pdf = util::shared().join("corpus/pdfs/wasysym.pdf");
    let quire = &crate::util::quire_exe();
    let st = Command::new(quire)
        .args(["index", "--json", "--data-dir"])
        .arg(dir.path())
        .arg(&pdf)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let refine = dir.path().join("refine.txt");
    std::fs::write(
        &refine,
        "Q: {query_str}\nSo far: {existing_answer}\nMore ({tone}): {context_msg}\nBetter: ",
    )
    .unwrap();
    let simple = dir.path().join("simple.txt");
    std::fs::write(
        &simple,
        "All of it: {context_str}\nIn {tone}: {query_str}\n",
    )
    .unwrap();
    let run = |mode: &str| {
        let out = Command::new(quire)
            .args([
                "ask",
                QUESTION,
                "--mode",
                mode,
                "--json",
                "--max-tokens",
                "8",
                "--top-k",
                "4",
            ])
            .args(["--chat-mode", "off", "--var", "tone=plain words"])
            .arg("--template-refine")
            .arg(&refine)
            .arg("--template-simple")
            .arg(&simple)
            .arg("--data-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| kind(e) == "prompt")
            .filter_map(|e| e["prompt"].as_str().map(String::from))
            .collect::<Vec<_>>()
    };
    let prompts = run("refine");
    assert!(prompts.len() > 1, "{prompts:?}");
    assert!(
        prompts[1].starts_with(&format!("Q: {QUESTION}\nSo far: ")),
        "{}",
        prompts[1]
    );
    assert!(prompts[1].contains("More (plain words): "));
    let prompts = run("simple_summarize");
    assert_eq!(prompts.len(), 1);
    assert!(prompts[0].starts_with("All of it: ['"), "{}", prompts[0]);
    assert!(prompts[0].ends_with(&format!("In plain words: {QUESTION}\n")));
}
