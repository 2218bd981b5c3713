//! Response synthesis over the scripted LLM: mode names, custom templates and their
//! errors, events and streaming (accumulate included), cancellation, the per-call
//! record, structured answer filtering, and a user-written synthesizer.

#![allow(clippy::unwrap_used)]

use quire::llm::{Cancel, Constraint, GenParams};
use quire::synth::{
    run, synthesize, Ctx, Event, Node, Request, Response, ResponseMode, RunOptions, ScriptedLlm,
    Synthesizer, Template, Templates, Vars,
};
use quire::{Error, Result};

const TONE_QA: &str = "Context information is below.\n---------------------\n{context_str}\n\
---------------------\nGiven the context information and not prior knowledge, answer the query.\n\
Please also write the answer in the tone of {tone_name}.\nQuery: {query_str}\nAnswer: ";

fn nodes(n: usize, len: usize) -> Vec<Node> {
    (0..n)
        .map(|i| {
            let words: Vec<String> = (0..len / 6).map(|w| format!("w{i}x{w:02}")).collect();
            Node::new(format!("n{i}"), words.join(" "))
        })
        .collect()
}

fn request(mode: ResponseMode) -> Request {
    Request {
        mode,
        options: RunOptions {
            context_window: Some(1000),
            params: GenParams {
                max_tokens: 32,
                ..GenParams::default()
            },
            ..RunOptions::default()
        },
        ..Request::default()
    }
}

/// Run and collect every event.
fn run_collect(llm: &ScriptedLlm, req: &Request, nodes: &[Node]) -> (Result<Response>, Vec<Event>) {
    let mut events = Vec::new();
    let r = synthesize(llm, req, "what is it?", nodes, &Cancel::new(), &mut |e| {
        events.push(e);
        Ok(true)
    });
    (r, events)
}

/// The concatenated final tokens: the answer as a streaming client sees it.
fn streamed_answer(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Token {
                text,
                is_final: true,
                ..
            } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn labels(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Step { label, .. } => Some(label.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn mode_names_parse_and_display() {
    for m in ResponseMode::ALL {
        assert_eq!(m.to_string().parse::<ResponseMode>().unwrap(), m);
    }
    assert_eq!(
        "tree_summarize".parse::<ResponseMode>().unwrap(),
        ResponseMode::TreeSummarize
    );
    assert_eq!(ResponseMode::default(), ResponseMode::Compact);
    let e = "summarise".parse::<ResponseMode>().unwrap_err().to_string();
    assert!(
        e.contains("summarise") && e.contains("compact_accumulate"),
        "{e}"
    );
}

#[test]
fn zero_nodes_is_empty_response_without_llm_calls() {
    for m in ResponseMode::ALL {
        let llm = ScriptedLlm::new(1000);
        let (r, events) = run_collect(&llm, &request(m), &[]);
        let r = r.unwrap();
        assert_eq!(r.answer, "Empty Response", "{m}");
        assert!(r.calls.is_empty() && llm.prompts().is_empty(), "{m}");
        assert!(matches!(events.last(), Some(Event::Answer { text }) if text == "Empty Response"));
    }
}

#[test]
fn custom_template_with_query_time_variable() {
    for mode in [
        ResponseMode::Refine,
        ResponseMode::Compact,
        ResponseMode::TreeSummarize,
        ResponseMode::SimpleSummarize,
        ResponseMode::Accumulate,
    ] {
        let llm = ScriptedLlm::new(1000);
        let mut req = request(mode);
        req.templates = Templates::custom(Template::new(TONE_QA));
        req.options
            .vars
            .insert("tone_name".into(), "a Shakespeare play".into());
        let (r, _) = run_collect(&llm, &req, &nodes(2, 200));
        r.unwrap();
        let first = &llm.prompts()[0];
        assert!(
            first.contains("in the tone of a Shakespeare play.\nQuery: what is it?"),
            "{mode}: {first}"
        );
        assert!(
            !first.contains('{'),
            "{mode}: unfilled placeholder in {first}"
        );
    }
}

#[test]
fn template_errors_come_before_any_llm_call() {
    let cases: Vec<(ResponseMode, &str, Vars, &str)> = vec![
        // a variable nobody supplied
        (ResponseMode::Compact, TONE_QA, Vars::new(), "tone_name"),
        (
            ResponseMode::TreeSummarize,
            TONE_QA,
            Vars::new(),
            "tone_name",
        ),
        // missing required placeholders
        (
            ResponseMode::Refine,
            "Context: {context_str}\nAnswer: ",
            Vars::new(),
            "{query_str}",
        ),
        (
            ResponseMode::Accumulate,
            "Query: {query_str}\nAnswer: ",
            Vars::new(),
            "{context_str}",
        ),
        // a variable the synthesizer fills itself
        (
            ResponseMode::Compact,
            "{context_str} {query_str}",
            Vars::from([("query_str".to_string(), "x".to_string())]),
            "query_str",
        ),
    ];
    for (mode, tmpl, vars, needle) in cases {
        let llm = ScriptedLlm::new(1000);
        let mut req = request(mode);
        req.templates = Templates::custom(Template::new(tmpl));
        req.options.vars = vars;
        let (r, events) = run_collect(&llm, &req, &nodes(2, 100));
        match r {
            Err(Error::Template(msg)) => assert!(msg.contains(needle), "{mode}: {msg}"),
            other => panic!("{mode}: expected a template error, got {other:?}"),
        }
        assert!(llm.prompts().is_empty(), "{mode}: the LLM was called");
        assert!(events.is_empty(), "{mode}: events were sent");
    }
}

#[test]
fn refine_events_name_steps_and_stream_the_final_answer() {
    let llm = ScriptedLlm::new(1000);
    let (r, events) = run_collect(&llm, &request(ResponseMode::Refine), &nodes(3, 300));
    let r = r.unwrap();
    let n = r.calls.len();
    assert!(n >= 3, "{n} calls");
    let l = labels(&events);
    assert_eq!(l.len(), n);
    assert!(l[0].starts_with("refine 1 of "), "{l:?}");
    assert_eq!(l[n - 1], format!("refine {n} of {n}"));
    assert_eq!(r.answer, format!("answer {n}"));
    assert_eq!(streamed_answer(&events), r.answer);
    // per step: Step, Token(s), StepDone, in order; the Answer last
    let mut expect_step = 1;
    for w in events.windows(2) {
        if let (Event::StepDone { call }, next) = (&w[0], &w[1]) {
            assert_eq!(call.step, expect_step);
            expect_step += 1;
            assert!(matches!(next, Event::Step { .. } | Event::Answer { .. }));
        }
    }
    assert!(matches!(events.last(), Some(Event::Answer { text }) if *text == r.answer));
}

#[test]
fn tree_summarize_labels_levels() {
    let llm = ScriptedLlm::new(600);
    let mut req = request(ResponseMode::TreeSummarize);
    req.options.context_window = Some(600);
    let (r, events) = run_collect(&llm, &req, &nodes(4, 300));
    let r = r.unwrap();
    let l = labels(&events);
    assert!(l[0].starts_with("summarize level 1, 1 of "), "{l:?}");
    assert!(l.last().unwrap().ends_with("final answer"), "{l:?}");
    assert_eq!(streamed_answer(&events), r.answer);
    assert_eq!(r.answer, format!("answer {}", r.calls.len()));
}

/// With batching on, a tree_summarize level's calls are announced together and their
/// tokens carry their own step; the calls (prompts, outputs, order) are the same as
/// one by one.
#[test]
fn a_batched_tree_level_makes_the_same_calls() {
    let llm = ScriptedLlm::new(600);
    let mut req = request(ResponseMode::TreeSummarize);
    req.options.context_window = Some(600);
    let (one, _) = run_collect(&llm, &req, &nodes(4, 300));
    req.options.batch = true;
    // A fresh scripted LLM: it numbers its answers by call.
    let (batched, events) = run_collect(&ScriptedLlm::new(600), &req, &nodes(4, 300));
    let (one, batched) = (one.unwrap(), batched.unwrap());
    assert_eq!(one.answer, batched.answer);
    let calls = |r: &Response| -> Vec<(usize, String, String, String)> {
        r.calls
            .iter()
            .map(|c| (c.step, c.label.clone(), c.prompt.clone(), c.output.clone()))
            .collect()
    };
    assert_eq!(calls(&one), calls(&batched));
    let level1 = one
        .calls
        .iter()
        .filter(|c| c.label.starts_with("summarize level 1,"))
        .count();
    assert!(level1 >= 2, "the test needs a level of several calls");
    // Events: the level's steps are all announced before the first token, and each
    // step's tokens are its own output.
    let first_token = events
        .iter()
        .position(|e| matches!(e, Event::Token { .. }))
        .unwrap();
    let announced = events[..first_token]
        .iter()
        .filter(|e| matches!(e, Event::Step { .. }))
        .count();
    assert_eq!(announced, level1);
    for c in &batched.calls {
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                Event::Token { step, text, .. } if *step == c.step => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, c.output, "step {}", c.step);
    }
}

#[test]
fn accumulate_streams_each_response_as_generated() {
    for mode in [ResponseMode::Accumulate, ResponseMode::CompactAccumulate] {
        let llm = ScriptedLlm::new(1000);
        let (r, events) = run_collect(&llm, &request(mode), &nodes(3, 300));
        let r = r.unwrap();
        assert!(r
            .answer
            .starts_with("Response 1: answer 1\n---------------------\n"));
        assert_eq!(streamed_answer(&events), r.answer, "{mode}");
        // the first answer's tokens arrive before the second step starts
        let first_token = events.iter().position(|e| {
            matches!(
                e,
                Event::Token {
                    step: 1,
                    is_final: true,
                    ..
                }
            )
        });
        let second_step = events
            .iter()
            .position(|e| matches!(e, Event::Step { step: 2, .. }));
        if let Some(s2) = second_step {
            assert!(first_token.unwrap() < s2, "{mode}");
        }
    }
}

#[test]
fn response_records_every_call() {
    let llm = ScriptedLlm::new(1000);
    let ns = nodes(3, 300);
    let (r, _) = run_collect(&llm, &request(ResponseMode::Compact), &ns);
    let r = r.unwrap();
    assert_eq!(r.sources, ns);
    let prompts = llm.prompts();
    assert_eq!(r.calls.len(), prompts.len());
    for (i, (c, p)) in r.calls.iter().zip(&prompts).enumerate() {
        assert_eq!(c.step, i + 1);
        assert_eq!(&c.prompt, p);
        assert_eq!(c.prompt_tokens, p.chars().count());
        assert_eq!(c.output, format!("answer {}", i + 1));
        assert_eq!(c.output_tokens, c.output.chars().count());
        assert!(
            c.prompt_tokens + 32 <= 1000,
            "prompt too long for the window"
        );
    }
    assert_eq!(
        r.output_tokens(),
        r.calls
            .iter()
            .map(|c| c.output.chars().count())
            .sum::<usize>()
    );
}

#[test]
fn no_text_makes_no_call_and_returns_sources() {
    let llm = ScriptedLlm::new(1000);
    let ns = nodes(2, 100);
    let (r, _) = run_collect(&llm, &request(ResponseMode::NoText), &ns);
    let r = r.unwrap();
    assert_eq!((r.answer.as_str(), r.sources.len()), ("", 2));
    assert!(llm.prompts().is_empty());
}

#[test]
fn a_receiver_that_stops_cancels_synthesis() {
    let llm = ScriptedLlm::new(1000);
    let cancel = Cancel::new();
    let mut seen = 0;
    let r = synthesize(
        &llm,
        &request(ResponseMode::Refine),
        "q",
        &nodes(3, 300),
        &cancel,
        &mut |e| {
            if matches!(e, Event::Token { .. }) {
                seen += 1;
            }
            Ok(seen < 2)
        },
    );
    assert!(matches!(r, Err(Error::Cancelled)), "{r:?}");
    assert!(cancel.is_cancelled());
    assert_eq!(llm.prompts().len(), 1);

    // an already-cancelled flag stops before any call
    let llm = ScriptedLlm::new(1000);
    let cancel = Cancel::new();
    cancel.cancel();
    let r = synthesize(
        &llm,
        &request(ResponseMode::Compact),
        "q",
        &nodes(2, 100),
        &cancel,
        &mut |_| Ok(true),
    );
    assert!(matches!(r, Err(Error::Cancelled)));
    assert!(llm.prompts().is_empty());
}

fn filter_reply(satisfied: bool, answer: &str) -> String {
    format!("{{\"query_satisfied\": {satisfied}, \"answer\": \"{answer}\"}}")
}

#[test]
fn answer_filtering_keeps_only_satisfied_steps() {
    // the JSON-schema instruction is long: give the prompts room
    let request = |mode| {
        let mut r = request(mode);
        r.options.context_window = Some(2000);
        r
    };
    let ns = nodes(3, 600);
    // how many calls refine makes for these nodes
    let probe = ScriptedLlm::new(1000);
    let mut req = request(ResponseMode::Refine);
    req.answer_filter = true;
    run_collect(&probe, &req, &ns).0.unwrap();
    let n = probe.prompts().len();
    assert!(n >= 3);

    // only step 2 is satisfied: its answer stands
    let replies: Vec<String> = (1..=n)
        .map(|k| filter_reply(k == 2, &format!("a{k}")))
        .collect();
    let llm = ScriptedLlm::replaying(2000, replies);
    let (r, events) = run_collect(&llm, &req, &ns);
    let r = r.unwrap();
    assert_eq!(r.answer, "a2");
    for p in llm.params() {
        assert_eq!(p.constraint, Some(Constraint::AnswerFilter));
    }
    for p in llm.prompts() {
        assert!(p.contains("\"query_satisfied\"") && p.ends_with("do not repeat the schema.\n"));
    }
    // constrained JSON is not streamed as answer text; the Answer event has it
    assert!(streamed_answer(&events).is_empty());
    assert!(matches!(events.last(), Some(Event::Answer { text }) if text == "a2"));

    // none satisfied
    let replies: Vec<String> = (1..=n)
        .map(|k| filter_reply(false, &format!("a{k}")))
        .collect();
    let llm = ScriptedLlm::replaying(1000, replies);
    assert_eq!(
        run_collect(&llm, &req, &ns).0.unwrap().answer,
        "Empty Response"
    );

    // compact too, and a later satisfied step overrides an earlier one
    let mut req = request(ResponseMode::Compact);
    req.answer_filter = true;
    let probe = ScriptedLlm::new(1000);
    run_collect(&probe, &req, &ns).0.unwrap();
    let n = probe.prompts().len();
    let replies: Vec<String> = (1..=n)
        .map(|k| filter_reply(true, &format!("c{k}")))
        .collect();
    let llm = ScriptedLlm::replaying(1000, replies);
    assert_eq!(
        run_collect(&llm, &req, &ns).0.unwrap().answer,
        format!("c{n}")
    );

    // the filter does not apply to other modes
    let mut req = request(ResponseMode::TreeSummarize);
    req.answer_filter = true;
    let llm = ScriptedLlm::new(1000);
    run_collect(&llm, &req, &ns).0.unwrap();
    assert!(llm.params().iter().all(|p| p.constraint.is_none()));
}

/// A user-written mode: answer from each node separately and keep the longest answer.
struct Longest;

impl Synthesizer for Longest {
    fn answer(&self, ctx: &mut Ctx<'_>, query: &str, nodes: &[Node]) -> Result<String> {
        let t = Template::text_qa();
        let mut best = String::new();
        for (i, n) in nodes.iter().enumerate() {
            let prompt = ctx.format(&t, &[("query_str", query), ("context_str", &n.text)]);
            let out = ctx.call(
                format!("node {} of {}", i + 1, nodes.len()),
                prompt,
                false,
                None,
            )?;
            if out.len() > best.len() {
                best = out;
            }
        }
        Ok(best)
    }
}

#[test]
fn a_custom_synthesizer_runs_through_the_same_machinery() {
    let replies = vec![
        "short".to_string(),
        "the longest one".into(),
        "mid one".into(),
    ];
    let llm = ScriptedLlm::replaying(1000, replies);
    let ns = nodes(3, 60);
    let mut events = Vec::new();
    let r = run(
        &Longest,
        &llm,
        &RunOptions::default(),
        "why?",
        &ns,
        &Cancel::new(),
        &mut |e| {
            events.push(e);
            Ok(true)
        },
    )
    .unwrap();
    assert_eq!(r.answer, "the longest one");
    assert_eq!(r.calls.len(), 3);
    assert_eq!(
        labels(&events),
        vec!["node 1 of 3", "node 2 of 3", "node 3 of 3"]
    );
    assert!(llm.prompts()[1].contains(&ns[1].text) && llm.prompts()[1].contains("Query: why?"));
}
