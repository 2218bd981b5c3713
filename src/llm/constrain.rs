//! Constrained decoding: output valid by construction.
//!
//! [`Constraint::AnswerFilter`] gives `{"query_satisfied": true|false, "answer": "..."}`:
//! the skeleton tokens are forced, the boolean is the likelier of the two, and inside
//! the string only tokens that keep it a valid JSON string are allowed (no quote,
//! backslash or control character); a quote or an end token closes it, and the closing
//! `"}` is forced early enough to fit in the token budget.

use std::collections::VecDeque;

use candle_core::Tensor;
use candle_transformers::generation::LogitsProcessor;

use super::tokenizer::Tokenizer;
use super::Constraint;
use crate::Result;

enum Phase {
    /// Emitting forced tokens, then moving to `then`.
    Forced(VecDeque<u32>, Box<Phase>),
    Choice,
    Answer,
    Done,
}

/// The state of one constrained generation.
pub struct Constrainer {
    phase: Phase,
    after_bool: Vec<u32>,
    close: Vec<u32>,
    yes: Vec<u32>,
    no: Vec<u32>,
    /// Tokens allowed inside the answer string.
    safe: Vec<bool>,
    /// Tokens that end the answer string (start with a quote, or end generation).
    closers: Vec<bool>,
    used: usize,
    budget: usize,
}

impl Constrainer {
    /// Start a constrained generation of at most `budget` tokens.
    pub fn new(c: Constraint, tok: &Tokenizer, budget: usize) -> Result<Self> {
        match c {
            Constraint::AnswerFilter => {}
        }
        let head = tok.encode("{\"query_satisfied\": ", false)?;
        let after_bool = tok.encode(", \"answer\": \"", false)?;
        let close = tok.encode("\"}", false)?;
        let yes = tok.encode("true", false)?;
        let no = tok.encode("false", false)?;
        let n = tok.vocab_size();
        let mut safe = vec![false; n];
        let mut closers = vec![false; n];
        for id in 0..n as u32 {
            let b = tok.token_bytes(id);
            if tok.is_eog(id) || b.first() == Some(&b'"') {
                closers[id as usize] = true;
            } else if !b.is_empty() && b.iter().all(|&c| c >= 0x20 && c != b'"' && c != b'\\') {
                safe[id as usize] = true;
            }
        }
        Ok(Self {
            phase: Phase::Forced(head.into(), Box::new(Phase::Choice)),
            after_bool,
            close,
            yes,
            no,
            safe,
            closers,
            used: 0,
            budget,
        })
    }

    /// Whether the JSON object is complete.
    pub fn done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// The next token given the model's `logits`; `None` when complete.
    pub fn next(&mut self, logits: &Tensor, sampler: &mut LogitsProcessor) -> Result<Option<u32>> {
        self.used += 1;
        loop {
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return Ok(None),
                Phase::Forced(mut q, then) => match q.pop_front() {
                    Some(t) => {
                        self.phase = if q.is_empty() {
                            *then
                        } else {
                            Phase::Forced(q, then)
                        };
                        return Ok(Some(t));
                    }
                    None => self.phase = *then,
                },
                Phase::Choice => {
                    let l: Vec<f32> = logits.to_vec1()?;
                    let score = |ids: &[u32]| {
                        ids.first()
                            .and_then(|&i| l.get(i as usize))
                            .copied()
                            .unwrap_or(f32::NEG_INFINITY)
                    };
                    let pick = if score(&self.yes) >= score(&self.no) {
                        self.yes.clone()
                    } else {
                        self.no.clone()
                    };
                    let mut q: VecDeque<u32> = pick.into();
                    q.extend(self.after_bool.iter().copied());
                    self.phase = Phase::Forced(q, Box::new(Phase::Answer));
                }
                Phase::Answer => {
                    let closing = || {
                        Phase::Forced(self.close.iter().copied().collect(), Box::new(Phase::Done))
                    };
                    if self.used + self.close.len() > self.budget {
                        self.phase = closing();
                        continue;
                    }
                    let mut l: Vec<f32> = logits.to_vec1()?;
                    for (i, v) in l.iter_mut().enumerate() {
                        let ok = self.safe.get(i).copied().unwrap_or(false)
                            || self.closers.get(i).copied().unwrap_or(false);
                        if !ok {
                            *v = f32::NEG_INFINITY;
                        }
                    }
                    let masked = Tensor::from_vec(l, logits.shape(), logits.device())?;
                    let t = sampler.sample(&masked)?;
                    if self.closers.get(t as usize).copied().unwrap_or(true) {
                        self.phase = closing();
                        continue;
                    }
                    self.phase = Phase::Answer;
                    return Ok(Some(t));
                }
            }
        }
    }
}
