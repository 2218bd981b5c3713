//! Speculative decoding (greedy): a draft proposes the next few tokens, the target
//! model scores them all in one verification pass, and the target's own choice is
//! taken at every position, so the output is the tokens plain decoding gives.
//!
//! One step: the token the target chose last, followed by the draft's `k` proposals,
//! goes through the target at once ([`Target::verify`]), each row computed exactly as
//! a one-token step would be. The decoder then chooses from the logits after each
//! row in turn, as it would have one step at a time: while its choice equals the next
//! proposal the pass has already computed what comes after it; at the first
//! difference (or after the last proposal) its choice is the next step's first
//! token, and the cache keeps only the rows that were chosen. A step emits between
//! one and `k + 1` tokens for one pass over the target's weights, which a one-token
//! step reads for one token only.
//!
//! Only greedy decoding is sped up this way (the choice is a function of the logits,
//! so a proposal is kept exactly when plain decoding would have made it); sampling
//! would need the rejection scheme of Leviathan et al. and decodes plainly.
//! The drafts: a smaller model of the same vocabulary ([`Draft`] on a `GgufLlm`), and
//! prompt lookup ([`PromptLookup`]: the tokens that followed the latest earlier
//! occurrence of the last few tokens, free to compute and often right when an
//! answer quotes its sources).

use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use std::path::{Path, PathBuf};

use super::tokenizer::Tokenizer;
use crate::cpu::Cancel;
use crate::Result;

/// Tokens proposed per step.
pub const DRAFT_TOKENS: usize = 4;

/// What speculative decoding did over one completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DraftStats {
    /// What drafted: a model's file name, or "prompt lookup".
    pub by: String,
    /// Verification passes of the target.
    pub steps: usize,
    /// Tokens proposed.
    pub drafted: usize,
    /// Proposals the target chose too.
    pub accepted: usize,
}

impl DraftStats {
    /// The statistics of several completions together; `None` for none.
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a DraftStats>) -> Option<DraftStats> {
        all.into_iter().fold(None, |acc: Option<DraftStats>, s| {
            let mut t = acc.unwrap_or_else(|| DraftStats {
                by: s.by.clone(),
                ..DraftStats::default()
            });
            t.steps += s.steps;
            t.drafted += s.drafted;
            t.accepted += s.accepted;
            Some(t)
        })
    }

    /// Tokens emitted per pass over the target (1 without drafting).
    pub fn tokens_per_step(&self) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            (self.steps + self.accepted) as f64 / self.steps as f64
        }
    }
}

/// The model being decoded, seen by the verification loop.
pub trait Target {
    /// Positions in the cache.
    fn cached(&self) -> usize;
    /// Run `tokens` at the end of the cache; the logits after each of them, each row
    /// computed as a one-token step would compute it.
    fn verify(&mut self, tokens: &[u32]) -> Result<Vec<Tensor>>;
    /// Keep the first `len` positions of the cache.
    fn keep(&mut self, len: usize);
}

/// Proposes what follows a sequence.
pub trait Draft {
    /// Up to `k` tokens likely to follow `seq` (the prompt and the output so far).
    fn propose(&self, seq: &[u32], k: usize, cancel: &Cancel) -> Result<Vec<u32>>;
    /// What drafts, for the statistics.
    fn name(&self) -> String;
}

/// Decode from `first` (the token the target chose after `seq`) until `choose` says
/// the completion is over: `choose` is the decoder, given the logits after each
/// token in turn, returning the next token or `None` at the end. `seq` is the
/// prompt (and anything already emitted); the target's cache holds all of it but
/// its last token is not yet in it: `first` is not.
pub fn decode(
    target: &mut dyn Target,
    draft: &dyn Draft,
    mut seq: Vec<u32>,
    first: u32,
    k: usize,
    choose: &mut dyn FnMut(Tensor) -> Result<Option<u32>>,
    cancel: &Cancel,
) -> Result<DraftStats> {
    let mut stats = DraftStats {
        by: draft.name(),
        ..DraftStats::default()
    };
    let mut next = first;
    loop {
        cancel.check()?;
        seq.push(next);
        let proposal = draft.propose(&seq, k, cancel)?;
        let pos = target.cached();
        let mut run = Vec::with_capacity(proposal.len() + 1);
        run.push(next);
        run.extend_from_slice(&proposal);
        let rows = target.verify(&run)?;
        stats.steps += 1;
        stats.drafted += proposal.len();
        // Rows of `run` kept in the cache: `next`, then each proposal chosen.
        let mut kept = 1;
        let mut chosen = None;
        for (i, logits) in rows.into_iter().enumerate() {
            let Some(t) = choose(logits)? else {
                break;
            };
            match proposal.get(i) {
                Some(&p) if p == t => {
                    kept += 1;
                    stats.accepted += 1;
                    seq.push(t);
                }
                _ => {
                    chosen = Some(t);
                    break;
                }
            }
        }
        target.keep(pos + kept);
        match chosen {
            Some(t) => next = t,
            None => return Ok(stats),
        }
    }
}

/// Whether two tokenizers have the same vocabulary, token for token, and the same
/// end tokens: what a draft model needs.
pub fn same_vocabulary(a: &Tokenizer, b: &Tokenizer) -> bool {
    let n = a.vocab_size();
    n == b.vocab_size()
        && a.eog_tokens() == b.eog_tokens()
        && (0..n as u32).all(|i| a.token_text(i) == b.token_text(i))
}

/// The draft model for `target` among `files`: the smallest GGUF of at most half the
/// target's size with the same vocabulary (files that cannot be read are passed
/// over).
pub fn find_draft(target: &Path, tokenizer: &Tokenizer, files: &[PathBuf]) -> Option<PathBuf> {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).ok();
    let limit = size(target)? / 2;
    let mut small: Vec<(u64, &PathBuf)> = files
        .iter()
        .filter(|p| p.as_path() != target)
        .filter_map(|p| Some((size(p)?, p)))
        .filter(|(n, _)| *n <= limit)
        .collect();
    small.sort();
    small
        .into_iter()
        .map(|(_, p)| p)
        .find(|p| Tokenizer::open(p).is_ok_and(|t| same_vocabulary(tokenizer, &t)))
        .cloned()
}

/// Prompt lookup: the `k` tokens that followed the latest earlier occurrence of the
/// sequence's last `NGRAM` tokens (or shorter, down to 2), nothing when there is none.
#[derive(Debug, Default, Clone, Copy)]
pub struct PromptLookup;

/// The longest suffix prompt lookup matches.
const NGRAM: usize = 4;

impl PromptLookup {
    fn lookup(seq: &[u32], k: usize) -> Vec<u32> {
        for n in (2..=NGRAM.min(seq.len().saturating_sub(1))).rev() {
            let tail = &seq[seq.len() - n..];
            // The latest match that is not the tail itself.
            if let Some(at) = (0..seq.len() - n).rev().find(|&i| &seq[i..i + n] == tail) {
                let from = at + n;
                return seq[from..(from + k).min(seq.len())].to_vec();
            }
        }
        Vec::new()
    }
}

impl Draft for PromptLookup {
    fn propose(&self, seq: &[u32], k: usize, _cancel: &Cancel) -> Result<Vec<u32>> {
        Ok(Self::lookup(seq, k))
    }

    fn name(&self) -> String {
        "prompt lookup".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// A target whose greedy choice after a sequence is a fixed function of it:
    /// logits with one hot entry, at `rule(seq)`.
    struct Rule {
        seq: Vec<u32>,
        cached: usize,
        passes: usize,
    }

    const VOCAB: usize = 16;

    fn rule(seq: &[u32]) -> u32 {
        (seq.iter().sum::<u32>() * 7 + seq.len() as u32) % VOCAB as u32
    }

    fn hot(t: u32) -> Tensor {
        let mut v = vec![0f32; VOCAB];
        v[t as usize] = 1.0;
        Tensor::from_vec(v, VOCAB, &Device::Cpu).expect("tensor")
    }

    impl Target for Rule {
        fn cached(&self) -> usize {
            self.cached
        }
        fn verify(&mut self, tokens: &[u32]) -> Result<Vec<Tensor>> {
            self.passes += 1;
            self.seq.truncate(self.cached);
            let mut out = Vec::new();
            for &t in tokens {
                self.seq.push(t);
                out.push(hot(rule(&self.seq)));
            }
            self.cached = self.seq.len();
            Ok(out)
        }
        fn keep(&mut self, len: usize) {
            self.cached = self.cached.min(len);
        }
    }

    /// Proposes the rule's tokens, except every `wrong`-th proposal.
    struct Oracle {
        wrong: usize,
        calls: std::cell::Cell<usize>,
    }

    impl Draft for Oracle {
        fn propose(&self, seq: &[u32], k: usize, _: &Cancel) -> Result<Vec<u32>> {
            let mut s = seq.to_vec();
            let mut out = Vec::new();
            for _ in 0..k {
                let n = self.calls.get() + 1;
                self.calls.set(n);
                let mut t = rule(&s);
                if self.wrong > 0 && n.is_multiple_of(self.wrong) {
                    t = (t + 1) % VOCAB as u32;
                }
                out.push(t);
                s.push(t);
            }
            Ok(out)
        }
        fn name(&self) -> String {
            "oracle".into()
        }
    }

    fn argmax(l: &Tensor) -> u32 {
        l.argmax(0)
            .and_then(|t| t.to_scalar::<u32>())
            .expect("argmax")
    }

    /// Plain greedy decoding of `n` tokens after `prompt`.
    fn plain(prompt: &[u32], n: usize) -> Vec<u32> {
        let mut s = prompt.to_vec();
        let mut out = Vec::new();
        for _ in 0..n {
            let t = rule(&s);
            out.push(t);
            s.push(t);
        }
        out
    }

    #[test]
    fn speculative_output_is_plain_decodings_whatever_the_draft() {
        let prompt = vec![3u32, 1, 4, 1, 5, 9, 2, 6];
        for wrong in [0, 1, 2, 3, 5] {
            for k in [1, 2, 4, 7] {
                let n = 40;
                let mut target = Rule {
                    seq: prompt.clone(),
                    cached: prompt.len(),
                    passes: 0,
                };
                let first = rule(&prompt);
                let mut out = vec![first];
                let mut choose = |l: Tensor| -> Result<Option<u32>> {
                    if out.len() >= n {
                        return Ok(None);
                    }
                    let t = argmax(&l);
                    out.push(t);
                    Ok(Some(t))
                };
                let draft = Oracle {
                    wrong,
                    calls: Default::default(),
                };
                let stats = decode(
                    &mut target,
                    &draft,
                    prompt.clone(),
                    first,
                    k,
                    &mut choose,
                    &Cancel::new(),
                )
                .expect("decode");
                assert_eq!(out, plain(&prompt, n), "wrong every {wrong}, k {k}");
                // The cache holds the prompt and the output, as plain decoding leaves
                // it (the last token fed before the decoder says it is done).
                assert_eq!(target.cached, prompt.len() + n, "wrong {wrong}, k {k}");
                assert_eq!(
                    &target.seq[..target.cached],
                    &[&prompt[..], &out[..]].concat()[..]
                );
                assert_eq!(stats.steps, target.passes);
                if wrong == 0 {
                    // A perfect draft: k + 1 tokens a pass.
                    assert!(stats.steps <= n.div_ceil(k + 1) + 1, "{stats:?}");
                }
                if wrong == 1 {
                    assert_eq!(stats.accepted, 0);
                }
            }
        }
    }

    #[test]
    fn prompt_lookup_continues_the_latest_earlier_match() {
        let seq = [1, 2, 3, 4, 5, 9, 2, 3, 4, 6, 7, 2, 3, 4];
        // "2 3 4" last seen followed by 6 7 …
        assert_eq!(PromptLookup::lookup(&seq, 3), vec![6, 7, 2]);
        assert_eq!(PromptLookup::lookup(&seq, 10), vec![6, 7, 2, 3, 4]);
        assert_eq!(PromptLookup::lookup(&[1, 2, 3], 4), Vec::<u32>::new());
        assert_eq!(PromptLookup::lookup(&[], 4), Vec::<u32>::new());
        assert_eq!(PromptLookup::lookup(&[5, 5], 4), Vec::<u32>::new());
        assert_eq!(PromptLookup::lookup(&[5, 5, 5], 4), vec![5]);
    }
}
