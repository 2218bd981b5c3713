//! Speculative decoding on real models: the verification pass computes every row
//! as a one-token step does (the same logits, bit for bit), and a completion decoded
//! with a draft is the completion decoded without one, token for token, whatever
//! the draft proposes.

use quire::llm::model::Drafter;
use quire::llm::speculative::{Adaptive, DRAFT_TOKENS};
use quire::llm::{Cancel, GenParams, GgufLlm, Llm, LoadOptions};
use std::sync::Arc;

use crate::util;

fn qwen2() -> std::path::PathBuf {
    quire::models::default_llm()
        .expect("the default LLM is missing: run `models/fetch.sh` (make test does)")
}

/// A prompt an answer partly copies from: a passage and a question about it.
fn prompt() -> String {
    let page = "tlmgr manages an existing TeX Live installation, both packages and \
        configuration options. The option --dry-run does nothing, only prints what would \
        be done. The action update updates the packages given as arguments to the latest \
        version available at the installation source. With --all, every installed package \
        is updated, except those whose names are given to --exclude. The action install \
        installs each package given, unless it is already installed; --reinstall installs \
        it again. The action remove removes each package given; --force removes it even \
        when another package depends on it.";
    format!(
        "Context information is below.\n---------------------\n{page}\n---------------------\n\
         Rewrite the context above as a bulleted list, one bullet for each action of \
         tlmgr, with its options."
    )
}

fn complete(llm: &GgufLlm, max_tokens: usize) -> quire::llm::Completion {
    let params = GenParams {
        max_tokens,
        ..GenParams::default()
    };
    llm.complete(&prompt(), &params, &Cancel::new(), &mut |_: &str| Ok(true))
        .expect("complete")
}

#[test]
fn verification_rows_are_one_token_steps_bit_for_bit() {
    for path in [qwen2(), util::smollm2()] {
        let llm = GgufLlm::load_with(&path, &LoadOptions::default()).expect("load");
        let ids = llm
            .tokenizer()
            .encode_prompt(&llm.render_prompt(&prompt()).unwrap())
            .unwrap();
        // The greedy continuation, then a run of it as a verification pass.
        let forced = llm.greedy_ids(&ids, 6).unwrap();
        let steps = llm.forced_logits(&ids, &forced).unwrap();
        let rows = llm
            .verified_logits(&ids, &forced)
            .unwrap()
            .expect("the own kernels verify");
        assert_eq!(rows.len(), forced.len());
        for (i, (a, b)) in steps[1..].iter().zip(&rows).enumerate() {
            let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(
                same,
                "{}: row {i} differs from its one-token step",
                path.display()
            );
        }
    }
}

#[test]
fn a_drafted_completion_is_the_plain_one() {
    // The default model drafted by prompt lookup (its proposals often wrong, so
    // both acceptance and rejection are exercised), and SmolLM2 drafted by a second
    // copy of itself (its proposals right), over a long answer.
    let qwen = GgufLlm::load_with(qwen2(), &LoadOptions::default()).expect("load");
    let smol = GgufLlm::load_with(util::smollm2(), &LoadOptions::default()).expect("load");
    let smol_draft =
        Arc::new(GgufLlm::load_with(util::smollm2(), &LoadOptions::default()).expect("load"));
    // And SmolLM2 drafted by prompt lookup where it has a proposal, else by the copy
    // (what `auto` gives a model with a smaller one of its vocabulary installed).
    for (llm, draft) in [
        (&qwen, Drafter::Lookup),
        (&smol, Drafter::Model(smol_draft.clone())),
        (&smol, Drafter::LookupThenModel(smol_draft)),
    ] {
        let plain = complete(llm, 160);
        assert!(plain.draft.is_none());
        assert!(
            plain.output_tokens >= 40,
            "too short a test: {:?}",
            plain.text
        );
        llm.set_draft(Some(draft.clone())).unwrap();
        // Lengths chosen from this machine's costs: the same tokens, however many
        // were drafted.
        let chosen = complete(llm, 160);
        assert_eq!(chosen.text, plain.text);
        assert_eq!(chosen.output_tokens, plain.output_tokens);
        let c = chosen.draft.expect("drafting ran");
        assert_eq!(c.passes.iter().sum::<usize>(), c.steps, "{c:?}");
        // Always the most, so that proposals are verified whatever this machine's
        // costs are.
        llm.set_draft_lengths(Adaptive::fixed(DRAFT_TOKENS));
        let drafted = complete(llm, 160);
        llm.set_draft(None).unwrap();
        assert_eq!(drafted.text, plain.text);
        assert_eq!(drafted.output_tokens, plain.output_tokens);
        assert_eq!(drafted.stop, plain.stop);
        let s = drafted.draft.expect("drafting ran");
        if let Drafter::LookupThenModel(_) = draft {
            assert_eq!(s.by, "prompt lookup + SmolLM2-135M-Instruct.Q4_1.gguf");
        }
        assert!(s.accepted > 0, "{s:?}");
        assert!(s.steps < plain.output_tokens, "{s:?}");
        assert!(s.tokens_per_step() > 1.0, "{s:?}");
        // Sampling decodes plainly.
        llm.set_draft(Some(Drafter::Lookup)).unwrap();
        let sampled = llm
            .complete(
                &prompt(),
                &GenParams {
                    max_tokens: 8,
                    temperature: 0.7,
                    ..GenParams::default()
                },
                &Cancel::new(),
                &mut |_: &str| Ok(true),
            )
            .unwrap();
        assert!(sampled.draft.is_none());
        llm.set_draft(None).unwrap();
    }
}

#[test]
fn a_draft_of_another_vocabulary_is_refused() {
    let qwen = GgufLlm::load_with(qwen2(), &LoadOptions::default()).expect("load");
    let smol =
        Arc::new(GgufLlm::load_with(util::smollm2(), &LoadOptions::default()).expect("load"));
    let err = qwen
        .set_draft(Some(Drafter::Model(smol)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot draft for") && err.contains("another vocabulary"),
        "{err}"
    );
    assert!(qwen.draft().is_none());
}
