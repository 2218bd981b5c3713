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
//! How many tokens to draft is chosen before each pass ([`Lengths`]): verifying more
//! rows costs more, and on a few compute-bound cores a pass of `k + 1` rows can cost
//! nearly `k + 1` one-token steps, so drafting that is seldom right slows decoding.
//! [`Adaptive`] keeps what this completion has measured — the seconds of a pass of
//! each width, the seconds a draft takes per proposal, and how often a proposal is
//! taken — and drafts the `k` (0 included: a plain step) that maximizes the expected
//! tokens a second. Prompt lookup's proposals cost nothing, so they are scored even
//! when not verified (against the target's own choice); a model's are drafted now and
//! then to keep its rate current. The choice changes only the speed: every token is
//! still the target's own.
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
use std::time::Instant;

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
    /// Passes without a proposal (the length chosen was 0, or the draft had none).
    #[serde(default)]
    pub plain_steps: usize,
    /// Verification passes by their rows (index 0: one row).
    #[serde(default)]
    pub passes: Vec<usize>,
    /// Their seconds, by rows as `passes`.
    #[serde(default)]
    pub pass_secs: Vec<f64>,
}

/// `a += b`, element by element, `a` lengthened as needed.
fn add<T: Copy + Default + std::ops::AddAssign>(a: &mut Vec<T>, b: &[T]) {
    if a.len() < b.len() {
        a.resize(b.len(), T::default());
    }
    for (x, &y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl DraftStats {
    /// The statistics of several completions together; `None` for none.
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a DraftStats>) -> Option<DraftStats> {
        all.into_iter().fold(None, |acc: Option<DraftStats>, s| {
            let mut t = acc.unwrap_or_else(|| DraftStats {
                by: s.by.clone(),
                ..DraftStats::default()
            });
            add(&mut t.passes, &s.passes);
            add(&mut t.pass_secs, &s.pass_secs);
            t.steps += s.steps;
            t.drafted += s.drafted;
            t.accepted += s.accepted;
            t.plain_steps += s.plain_steps;
            Some(t)
        })
    }

    /// The mean seconds of a pass of each number of rows (index 0: one row); `None`
    /// where none ran.
    pub fn mean_pass_secs(&self) -> Vec<Option<f64>> {
        self.passes
            .iter()
            .zip(&self.pass_secs)
            .map(|(&n, &s)| (n > 0).then(|| s / n as f64))
            .collect()
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
    /// Tokens of `seq` the draft would run before it can propose (a model draft's
    /// cache behind the sequence: the whole prompt at the start of a completion, or
    /// the tokens of plain steps since it last drafted).
    fn lag(&self, _seq: &[u32]) -> usize {
        0
    }
    /// Whether proposing costs nothing next to a pass (so proposals are worth
    /// scoring even when they are not verified).
    fn free(&self) -> bool {
        false
    }
}

/// How many tokens to draft before each pass, from what drafting has cost and
/// earned: the seconds of a pass of each width, the seconds a proposal takes, and how
/// often one is taken, each a decaying mean, kept across completions (the costs are
/// the machine's and the model's; a new draft starts afresh).
#[derive(Debug, Clone)]
pub struct Adaptive {
    /// The most tokens drafted.
    max: usize,
    /// Always `max` (for tests and comparisons), never chosen.
    fixed: bool,
    /// Seconds of a pass of `r + 1` rows.
    pass: Vec<Mean>,
    /// Seconds a proposal of the draft takes.
    propose: Mean,
    /// Proposals taken and refused, decayed.
    taken: f64,
    refused: f64,
    /// Passes made, and the pass count at the last pass of each width (index as
    /// `pass`; index 0, a pass without proposals).
    count: usize,
    last: Vec<usize>,
    /// Seconds a draft takes per token to catch up with the sequence ([`Draft::lag`]).
    catch_up: Mean,
    /// Tokens a completion emits.
    emits: Mean,
}

/// A decaying mean.
#[derive(Debug, Clone, Copy, Default)]
struct Mean {
    sum: f64,
    weight: f64,
}

/// How much an observation counts against the one before it.
const DECAY: f64 = 0.95;

/// The slope assumed for a pass's cost per row before two widths are measured: a pass
/// of `r` rows costs `1 + SLOPE·(r − 1)` one-row passes.
const PRIOR_SLOPE: f64 = 0.5;

/// After this many passes since the last one a row wider than the length chosen,
/// one that wide is made anyway, so that what it costs and earns stays measured:
/// with 0 chosen, one token is drafted; with `k`, `k + 1` (one slow pass of a width,
/// measured on a busy machine, would otherwise keep it from being chosen for good).
const EXPLORE_AFTER: usize = 16;

/// After this many passes with proposals, one is made without, so that a plain
/// pass's cost stays measured (one slow pass measured early would otherwise keep
/// drafting chosen for good).
const EXPLORE_PLAIN_AFTER: usize = 32;

/// A draft this many tokens behind or fewer is drafting as usual (the token the
/// target chose, and the last proposal taken): its seconds are a proposal's cost.
const STEADY_LAG: usize = 2;

/// A catch-up of this many tokens or more measures the seconds per token (a few
/// tokens cost about what one does: a pass's fixed part).
const MEASURED_LAG: usize = 64;

/// Tokens a completion is expected to emit before any has been measured.
const PRIOR_EMITS: f64 = 128.0;

impl Mean {
    fn add(&mut self, x: f64) {
        self.sum = self.sum * DECAY + x;
        self.weight = self.weight * DECAY + 1.0;
    }

    fn get(&self) -> Option<f64> {
        (self.weight > 0.0).then(|| self.sum / self.weight)
    }
}

impl Adaptive {
    /// Chosen lengths, up to `max`.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            fixed: false,
            pass: vec![Mean::default(); max + 1],
            propose: Mean::default(),
            taken: 0.0,
            refused: 0.0,
            count: 0,
            last: vec![0; max + 1],
            catch_up: Mean::default(),
            emits: Mean::default(),
        }
    }

    /// Always `max` tokens (what the draft proposes, up to it).
    pub fn fixed(max: usize) -> Self {
        Self {
            fixed: true,
            ..Self::new(max)
        }
    }

    /// The most tokens drafted.
    pub fn max(&self) -> usize {
        self.max
    }

    /// A pass of `rows` rows took `secs`.
    pub fn passed(&mut self, rows: usize, secs: f64) {
        self.count += 1;
        let at = rows.saturating_sub(1);
        if let Some(m) = self.pass.get_mut(at) {
            m.add(secs);
            self.last[at] = self.count;
        }
    }

    /// The draft made `n` proposals in `secs`.
    pub fn proposed(&mut self, n: usize, secs: f64) {
        if n > 0 {
            self.propose.add(secs / n as f64);
        }
    }

    /// A draft `lag` tokens behind caught up and made `n` proposals in `secs`: the
    /// seconds beyond its proposals' are the catch-up's.
    pub fn caught_up(&mut self, lag: usize, n: usize, secs: f64) {
        if lag > 0 {
            let proposals = n as f64 * self.propose.get().unwrap_or(0.0);
            self.catch_up.add((secs - proposals).max(0.0) / lag as f64);
        }
    }

    /// A completion emitted `n` tokens.
    pub fn completed(&mut self, n: usize) {
        self.emits.add(n as f64);
    }

    /// Whether a draft `lag` tokens behind is worth catching up, `emitted` tokens into
    /// a completion: whether the seconds drafting is expected to save over the rest
    /// of the completion (the tokens a completion emits, less those emitted) exceed
    /// the catch-up's. Unmeasured, it is (which measures it).
    pub fn worth_catching_up(&self, lag: usize, emitted: usize) -> bool {
        if lag <= STEADY_LAG || self.fixed {
            return true;
        }
        let (Some(c), Some(plain)) = (self.catch_up.get(), self.rate(0, false)) else {
            return true;
        };
        let best = (1..=self.max)
            .filter_map(|k| self.rate(k, false))
            .fold(0.0, f64::max);
        if best <= plain {
            return false;
        }
        let remaining = (self.emits.get().unwrap_or(PRIOR_EMITS) - emitted as f64).max(0.0);
        remaining * (1.0 / plain - 1.0 / best) > lag as f64 * c
    }

    /// A proposal was taken (`true`) or refused.
    pub fn scored(&mut self, taken: bool) {
        self.taken *= DECAY;
        self.refused *= DECAY;
        if taken {
            self.taken += 1.0;
        } else {
            self.refused += 1.0;
        }
    }

    /// The chance that a proposal is taken, given the ones before it were (Laplace's
    /// rule over the decayed counts).
    pub fn acceptance(&self) -> f64 {
        (self.taken + 1.0) / (self.taken + self.refused + 2.0)
    }

    /// The seconds a pass of `rows` rows is expected to take: as measured, else on the
    /// least-squares line through the widths measured (one width: [`PRIOR_SLOPE`]).
    fn cost(&self, rows: usize) -> Option<f64> {
        if let Some(c) = self.pass.get(rows - 1).and_then(Mean::get) {
            return Some(c);
        }
        let pts: Vec<(f64, f64)> = self
            .pass
            .iter()
            .enumerate()
            .filter_map(|(i, m)| Some(((i + 1) as f64, m.get()?)))
            .collect();
        let r = rows as f64;
        match pts.as_slice() {
            [] => None,
            [(w, t)] => Some(t * (1.0 + PRIOR_SLOPE * (r - 1.0)) / (1.0 + PRIOR_SLOPE * (w - 1.0))),
            _ => {
                let n = pts.len() as f64;
                let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
                let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
                let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
                let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
                let b = (sxy / sxx).max(0.0);
                let lo = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
                Some((my + b * (r - mx)).max(lo * 0.5))
            }
        }
    }

    /// Expected tokens per second with `k` proposals: a pass emits `Σ_{i≤k} αⁱ` tokens
    /// (each proposal taken with chance α once the ones before it were, then the
    /// target's own) and costs `k` proposals and a pass of `k + 1` rows.
    fn rate(&self, k: usize, free: bool) -> Option<f64> {
        let a = self.acceptance();
        let tokens: f64 = (0..=k).map(|i| a.powi(i as i32)).sum();
        let draft = if free || k == 0 {
            0.0
        } else {
            self.propose.get()? * k as f64
        };
        Some(tokens / (draft + self.cost(k + 1)?))
    }

    /// How many tokens to draft next; `free`: proposals cost nothing to make.
    pub fn length(&self, free: bool) -> usize {
        if self.fixed {
            return self.max;
        }
        let mut best = (self.max, f64::MIN);
        for k in 0..=self.max {
            // Anything unmeasured: draft the most, which measures it.
            let Some(r) = self.rate(k, free) else {
                return self.max;
            };
            if r > best.1 {
                best = (k, r);
            }
        }
        if best.0 < self.max && self.count - self.last[best.0 + 1] >= EXPLORE_AFTER {
            return best.0 + 1;
        }
        if best.0 > 0 && self.count - self.last[0] >= EXPLORE_PLAIN_AFTER {
            return 0;
        }
        best.0
    }
}

/// One way of drafting, with what it has measured (how many tokens to draft).
pub struct Source<'a> {
    pub draft: &'a dyn Draft,
    pub lengths: &'a mut Adaptive,
}

/// Decode from `first` (the token the target chose after `seq`) until `choose` says
/// the completion is over: `choose` is the decoder, given the logits after each
/// token in turn, returning the next token or `None` at the end. `seq` is the
/// prompt (and anything already emitted); the target's cache holds all of it but
/// its last token is not yet in it: `first` is not. `lengths` chooses how many
/// tokens are drafted before each pass, and learns from each.
pub fn decode(
    target: &mut dyn Target,
    draft: &dyn Draft,
    seq: Vec<u32>,
    first: u32,
    lengths: &mut Adaptive,
    choose: &mut dyn FnMut(Tensor) -> Result<Option<u32>>,
    cancel: &Cancel,
) -> Result<DraftStats> {
    decode_from(
        target,
        &mut [Source { draft, lengths }],
        seq,
        first,
        choose,
        cancel,
    )
}

/// [`decode`] with several drafts, tried in order before each pass: a free one
/// (prompt lookup) drafts when it has a proposal, else the next one does (a model),
/// each choosing its own lengths from what it has measured; every pass's seconds
/// count for all of them (the pass is the target's, whoever drafted). With none
/// proposing, the pass is plain.
pub fn decode_from(
    target: &mut dyn Target,
    sources: &mut [Source<'_>],
    mut seq: Vec<u32>,
    first: u32,
    choose: &mut dyn FnMut(Tensor) -> Result<Option<u32>>,
    cancel: &Cancel,
) -> Result<DraftStats> {
    assert!(!sources.is_empty(), "decode needs a draft");
    let max = sources.iter().map(|s| s.lengths.max()).max().unwrap_or(0);
    let mut stats = DraftStats {
        by: sources
            .iter()
            .map(|s| s.draft.name())
            .collect::<Vec<_>>()
            .join(" + "),
        passes: vec![0; max + 1],
        pass_secs: vec![0.0; max + 1],
        ..DraftStats::default()
    };
    let mut next = first;
    let emitted = |s: &DraftStats| s.steps + s.accepted;
    loop {
        cancel.check()?;
        seq.push(next);
        // Which draft: the first free one with a proposal (asked for the most, so
        // that the proposals beyond the length chosen are scored too), else the
        // first that is not free, else the first.
        let mut pick = None;
        for (i, s) in sources.iter().enumerate() {
            if s.draft.free() {
                let t0 = Instant::now();
                let p = s.draft.propose(&seq, s.lengths.max(), cancel)?;
                if !p.is_empty() {
                    pick = Some((i, Some((p, t0.elapsed().as_secs_f64()))));
                    break;
                }
            } else {
                pick = Some((i, None));
                break;
            }
        }
        let (at, free_proposal) = pick.unwrap_or((0, None));
        let src = &mut sources[at];
        let free = src.draft.free();
        let lengths = &mut *src.lengths;
        let mut want = lengths.length(free);
        // (Asked only before a proposal: a plain step needs no lock on the draft.)
        let lag = if free || want == 0 {
            0
        } else {
            src.draft.lag(&seq)
        };
        // A model draft far behind (the prompt at the start, plain steps since) first
        // runs what it missed: only where drafting will pay for that.
        if want > 0 && !lengths.worth_catching_up(lag, emitted(&stats)) {
            want = 0;
        }
        let ask = if free { lengths.max() } else { want };
        let (mut proposal, secs) = match free_proposal {
            Some(p) => p,
            None if ask == 0 || free => (Vec::new(), 0.0),
            None => {
                let t0 = Instant::now();
                let p = src.draft.propose(&seq, ask, cancel)?;
                (p, t0.elapsed().as_secs_f64())
            }
        };
        if lag <= STEADY_LAG {
            lengths.proposed(proposal.len(), secs);
        } else if lag >= MEASURED_LAG && ask > 0 {
            lengths.caught_up(lag, proposal.len(), secs);
        }
        let spare = proposal.split_off(want.min(proposal.len()));
        let pos = target.cached();
        let mut run = Vec::with_capacity(proposal.len() + 1);
        run.push(next);
        run.extend_from_slice(&proposal);
        let t1 = Instant::now();
        let rows = target.verify(&run)?;
        let secs = t1.elapsed().as_secs_f64();
        for s in sources.iter_mut() {
            s.lengths.passed(run.len(), secs);
        }
        let lengths = &mut *sources[at].lengths;
        stats.passes[run.len() - 1] += 1;
        stats.pass_secs[run.len() - 1] += secs;
        stats.steps += 1;
        stats.drafted += proposal.len();
        if proposal.is_empty() {
            stats.plain_steps += 1;
        }
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
                    lengths.scored(true);
                    seq.push(t);
                }
                Some(_) => {
                    lengths.scored(false);
                    chosen = Some(t);
                    break;
                }
                None => {
                    // Every proposal taken: the first one not verified is scored
                    // against the target's choice, at no cost.
                    if let Some(&p) = spare.first() {
                        lengths.scored(p == t);
                    }
                    chosen = Some(t);
                    break;
                }
            }
        }
        target.keep(pos + kept);
        match chosen {
            Some(t) => next = t,
            None => {
                for s in sources.iter_mut() {
                    s.lengths.completed(emitted(&stats));
                }
                return Ok(stats);
            }
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

    fn free(&self) -> bool {
        true
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
        /// What a pass costs: a fixed part, and a part per row.
        base: std::time::Duration,
        per_row: std::time::Duration,
    }

    impl Rule {
        fn new(prompt: &[u32]) -> Self {
            Rule {
                seq: prompt.to_vec(),
                cached: prompt.len(),
                passes: 0,
                base: Default::default(),
                per_row: Default::default(),
            }
        }
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
            std::thread::sleep(self.base + self.per_row * tokens.len() as u32);
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

    /// Greedy decoding of `n` tokens after the target's prompt, drafted by an oracle
    /// wrong every `wrong`-th proposal: the tokens and the statistics.
    fn drafted(
        target: &mut Rule,
        prompt: &[u32],
        wrong: usize,
        lengths: &mut Adaptive,
        n: usize,
    ) -> (Vec<u32>, DraftStats) {
        let draft = Oracle {
            wrong,
            calls: Default::default(),
        };
        drafted_by(target, prompt, &draft, lengths, n)
    }

    /// Greedy decoding of `n` tokens after the target's prompt, drafted by `draft`.
    fn drafted_by(
        target: &mut Rule,
        prompt: &[u32],
        draft: &dyn Draft,
        lengths: &mut Adaptive,
        n: usize,
    ) -> (Vec<u32>, DraftStats) {
        drafted_from(target, prompt, &mut [Source { draft, lengths }], n)
    }

    /// Greedy decoding of `n` tokens after the target's prompt, drafted by `sources`.
    fn drafted_from(
        target: &mut Rule,
        prompt: &[u32],
        sources: &mut [Source<'_>],
        n: usize,
    ) -> (Vec<u32>, DraftStats) {
        let first = rule(prompt);
        let mut out = vec![first];
        let mut choose = |l: Tensor| -> Result<Option<u32>> {
            if out.len() >= n {
                return Ok(None);
            }
            let t = argmax(&l);
            out.push(t);
            Ok(Some(t))
        };
        let stats = decode_from(
            target,
            sources,
            prompt.to_vec(),
            first,
            &mut choose,
            &Cancel::new(),
        )
        .expect("decode");
        (out, stats)
    }

    #[test]
    fn speculative_output_is_plain_decodings_whatever_the_draft() {
        let prompt = vec![3u32, 1, 4, 1, 5, 9, 2, 6];
        for (wrong, k, adaptive) in [0, 1, 2, 3, 5]
            .into_iter()
            .flat_map(|w| [1, 2, 4, 7].map(move |k| (w, k)))
            .flat_map(|(w, k)| [(w, k, false), (w, k, true)])
        {
            {
                let n = 40;
                let mut target = Rule::new(&prompt);
                // Fixed lengths, and chosen ones (whatever they choose, the tokens
                // are the same).
                let mut lengths = if adaptive {
                    Adaptive::new(k)
                } else {
                    Adaptive::fixed(k)
                };
                let (out, stats) = drafted(&mut target, &prompt, wrong, &mut lengths, n);
                assert_eq!(out, plain(&prompt, n), "wrong every {wrong}, k {k}");
                // The cache holds the prompt and the output, as plain decoding leaves
                // it (the last token fed before the decoder says it is done).
                assert_eq!(target.cached, prompt.len() + n, "wrong {wrong}, k {k}");
                assert_eq!(
                    &target.seq[..target.cached],
                    &[&prompt[..], &out[..]].concat()[..]
                );
                assert_eq!(stats.steps, target.passes);
                assert_eq!(stats.passes.iter().sum::<usize>(), stats.steps);
                if wrong == 0 && !adaptive {
                    // A perfect draft: k + 1 tokens a pass.
                    assert!(stats.steps <= n.div_ceil(k + 1) + 1, "{stats:?}");
                }
                if wrong == 1 {
                    assert_eq!(stats.accepted, 0);
                }
            }
        }
    }

    /// A free draft with proposals (the rule's tokens) only after a sequence of even
    /// length, counting the passes it proposed for.
    struct EvenOnly {
        proposed: std::cell::Cell<usize>,
    }

    impl Draft for EvenOnly {
        fn propose(&self, seq: &[u32], k: usize, _: &Cancel) -> Result<Vec<u32>> {
            if !seq.len().is_multiple_of(2) {
                return Ok(Vec::new());
            }
            self.proposed.set(self.proposed.get() + 1);
            Ok(plain(seq, k))
        }
        fn name(&self) -> String {
            "even".into()
        }
        fn free(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_free_draft_with_a_proposal_drafts_and_the_next_one_only_without() {
        let prompt = vec![3u32, 1, 4, 1, 5, 9, 2, 6];
        let n = 60;
        let mut target = Rule::new(&prompt);
        let even = EvenOnly {
            proposed: Default::default(),
        };
        let oracle = Oracle {
            wrong: 3,
            calls: Default::default(),
        };
        let (mut a, mut b) = (Adaptive::fixed(3), Adaptive::fixed(2));
        let sources = &mut [
            Source {
                draft: &even,
                lengths: &mut a,
            },
            Source {
                draft: &oracle,
                lengths: &mut b,
            },
        ];
        let (out, stats) = drafted_from(&mut target, &prompt, sources, n);
        assert_eq!(out, plain(&prompt, n));
        assert_eq!(stats.by, "even + oracle");
        assert_eq!(stats.steps, target.passes);
        // Every pass drafted: by the free draft where it had a proposal, else by the
        // oracle, two proposals (its length) a pass.
        let by_even = even.proposed.get();
        let by_oracle = stats.steps - by_even;
        assert!(by_even > 0 && by_oracle > 0, "{stats:?}");
        assert_eq!(oracle.calls.get(), 2 * by_oracle, "{stats:?}");
        assert_eq!(stats.plain_steps, 0, "{stats:?}");
        assert!(stats.accepted > 0, "{stats:?}");
    }

    /// A policy that has measured passes costing `cost(rows)` and proposals taken
    /// `taken` of `of` times.
    fn measured(max: usize, cost: impl Fn(usize) -> f64, taken: usize, of: usize) -> Adaptive {
        let mut a = Adaptive::new(max);
        for rows in 1..=max + 1 {
            for _ in 0..4 {
                a.passed(rows, cost(rows));
            }
        }
        // Spread evenly (the counts decay: the latest weigh most).
        for i in 0..of {
            a.scored((i + 1) * taken / of > i * taken / of);
        }
        a
    }

    #[test]
    fn the_length_is_the_one_with_the_most_tokens_a_second() {
        // Nothing measured yet: the most, which measures it.
        assert_eq!(Adaptive::new(4).length(true), 4);
        // A pass of r rows costing r one-row passes: drafting never pays.
        let a = measured(4, |r| r as f64, 95, 100);
        assert!(a.acceptance() > 0.85, "{}", a.acceptance());
        assert_eq!(a.length(true), 0);
        // Rows for free: draft the most, even when proposals are often wrong.
        assert_eq!(measured(4, |_| 1.0, 30, 100).length(true), 4);
        // Cheap rows, proposals seldom right: not worth a row.
        assert_eq!(
            measured(4, |r| 1.0 + 0.2 * (r - 1) as f64, 3, 100).length(true),
            0
        );
        // Cheap rows, proposals mostly right: the most.
        assert_eq!(
            measured(4, |r| 1.0 + 0.2 * (r - 1) as f64, 85, 100).length(true),
            4
        );
        // A draft model at half a pass a proposal, taken 60%: one token (1.6 tokens
        // for 1.5 passes; two would be 1.96 for 2).
        let mut m = measured(4, |_| 1.0, 60, 100);
        m.proposed(2, 1.0);
        assert_eq!(m.length(false), 1);
        // The same proposals free (prompt lookup): the most.
        assert_eq!(m.length(true), 4);
        // Fixed: always the most.
        let mut f = Adaptive::fixed(3);
        f.passed(1, 1.0);
        f.passed(4, 4.0);
        assert_eq!(f.length(true), 3);
    }

    #[test]
    fn unmeasured_widths_are_read_off_the_measured_ones() {
        let mut a = Adaptive::new(4);
        a.passed(5, 3.0);
        // One width: the prior slope, 1 + 0.5·(r − 1) passes of one row.
        assert!((a.cost(1).expect("a cost") - 1.0).abs() < 1e-9);
        assert!((a.cost(3).expect("a cost") - 2.0).abs() < 1e-9);
        a.passed(1, 1.0);
        // Two: the line through them.
        assert!((a.cost(3).expect("a cost") - 2.0).abs() < 1e-9);
        assert!((a.cost(2).expect("a cost") - 1.5).abs() < 1e-9);
        assert!((a.cost(5).expect("a cost") - 3.0).abs() < 1e-9);
    }

    #[test]
    fn a_draft_that_does_not_pay_is_dropped_and_tried_again_now_and_then() {
        let prompt = vec![3u32, 1, 4, 1, 5, 9, 2, 6];
        // Costs are slept, so a pass's fixed part is long enough that a busy machine's
        // scheduling (a millisecond or more) does not decide the length.
        let run = |wrong: usize, base_ms: u64, per_row_ms: u64, n: usize| {
            let mut target = Rule::new(&prompt);
            target.base = std::time::Duration::from_millis(base_ms);
            target.per_row = std::time::Duration::from_millis(per_row_ms);
            let (out, stats) = drafted(&mut target, &prompt, wrong, &mut Adaptive::new(4), n);
            assert_eq!(out, plain(&prompt, n));
            stats
        };
        // Always wrong, every row dearer than a pass's fixed part: plain steps, but
        // for the first and one drafted token after every 16 plain steps (and, where
        // a busy machine made a plain pass look slow, up to 32 drafted passes before
        // a plain one is measured again).
        let s = run(1, 2, 4, 240);
        assert_eq!(s.accepted, 0);
        assert!(s.plain_steps >= s.steps * 3 / 4, "{s:?}");
        assert!(s.passes[1] >= 2 && s.passes[4] <= 2, "{s:?}");
        // Always right, rows nearly free: the most every pass (where a busy machine
        // made a pass of the most look slow, up to 16 passes one narrower before it
        // is measured again).
        let s = run(0, 20, 0, 400);
        assert!(s.passes[4] >= s.steps * 3 / 4, "{s:?}");
        assert!(s.tokens_per_step() > 4.0, "{s:?}");
    }

    #[test]
    fn one_slow_wide_pass_does_not_keep_that_width_from_being_chosen_for_good() {
        // Proposals always taken, rows free: every pass costs 1, but the first pass of
        // five rows took 1.5 (a busy machine), so four tokens for 1 looked better than
        // five for 1.5. The wider pass is measured again now and then, and then chosen.
        let mut a = Adaptive::new(4);
        let mut widest = 0;
        for i in 0..200 {
            let k = a.length(true);
            a.passed(k + 1, if k == 4 && i < 5 { 1.5 } else { 1.0 });
            for _ in 0..k {
                a.scored(true);
            }
            if i >= 100 && k == 4 {
                widest += 1;
            }
        }
        assert!(widest >= 90, "{widest} passes of five rows of the last 100");
    }

    #[test]
    fn one_slow_plain_pass_does_not_keep_drafting_chosen_for_good() {
        // Proposals never taken, rows dear: a pass of r rows costs 1 + 2r; the one
        // plain pass measured first took 8 (a busy machine), more than a pass of two
        // rows. Plain passes are measured again now and then, and then chosen.
        let mut a = Adaptive::new(1);
        a.passed(1, 8.0);
        let mut plain = 0;
        for i in 0..200 {
            let k = a.length(true);
            a.passed(k + 1, 1.0 + 2.0 * (k + 1) as f64);
            if k > 0 {
                a.scored(false);
            } else if i >= 100 {
                plain += 1;
            }
        }
        assert!(plain >= 90, "{plain} plain passes of the last 100");
    }

    #[test]
    fn a_draft_far_behind_catches_up_only_where_drafting_pays_for_it() {
        // Unmeasured: catch up (which measures it).
        assert!(Adaptive::new(4).worth_catching_up(500, 0));
        // Passes of r rows costing 1 + 0.2·(r − 1) s, proposals taken 85% at 0.1 s
        // each: drafting saves ~0.4 s a token against plain steps of 1 s.
        let mut a = measured(4, |r| 1.0 + 0.2 * (r - 1) as f64, 85, 100);
        a.proposed(1, 0.1);
        a.caught_up(100, 0, 1.0); // 0.01 s a token
        a.completed(100);
        // 500 tokens behind: 5 s to catch up, ~40 s saved over 100 tokens.
        assert!(a.worth_catching_up(500, 0));
        // 5,000 behind (50 s), or 5 tokens left to emit (~2 s saved): not worth it.
        assert!(!a.worth_catching_up(5_000, 0));
        assert!(!a.worth_catching_up(500, 95));
        // Drafting as usual (a token or two behind): always.
        assert!(a.worth_catching_up(2, 99));
        // Where drafting does not pay at all, never.
        let mut b = measured(4, |r| r as f64, 50, 100);
        b.proposed(1, 0.1);
        b.caught_up(100, 0, 0.001);
        assert!(!b.worth_catching_up(10, 0));
    }

    /// Proposes the rule's tokens, but runs what it has not seen of the sequence
    /// first, as a model draft does: `lag` is the sequence past its cache.
    struct Behind {
        cached: std::cell::RefCell<Vec<u32>>,
        calls: std::cell::Cell<usize>,
    }

    impl Draft for Behind {
        fn propose(&self, seq: &[u32], k: usize, _: &Cancel) -> Result<Vec<u32>> {
            self.calls.set(self.calls.get() + 1);
            let mut s = seq.to_vec();
            let mut out = Vec::new();
            for _ in 0..k {
                let t = rule(&s);
                out.push(t);
                s.push(t);
            }
            *self.cached.borrow_mut() = seq.to_vec();
            Ok(out)
        }
        fn name(&self) -> String {
            "behind".into()
        }
        fn lag(&self, seq: &[u32]) -> usize {
            let c = self.cached.borrow();
            seq.len() - c.iter().zip(seq).take_while(|(a, b)| a == b).count()
        }
    }

    #[test]
    fn a_draft_not_worth_catching_up_is_never_asked_and_the_output_is_unchanged() {
        let prompt: Vec<u32> = (0..40).map(|i| (i * 7 % 16) as u32).collect();
        let n = 30;
        for (catch_up, asked) in [(1.0, false), (1e-12, true)] {
            let mut lengths = measured(4, |r| 1.0 + 0.2 * (r - 1) as f64, 85, 100);
            lengths.proposed(1, 0.1);
            lengths.caught_up(1, 0, catch_up);
            lengths.completed(40);
            let mut target = Rule::new(&prompt);
            let draft = Behind {
                cached: Default::default(),
                calls: Default::default(),
            };
            let (out, stats) = drafted_by(&mut target, &prompt, &draft, &mut lengths, n);
            assert_eq!(out, plain(&prompt, n), "catch-up {catch_up}");
            assert_eq!(
                draft.calls.get() > 0,
                asked,
                "catch-up {catch_up}: {stats:?}"
            );
            assert_eq!(stats.drafted > 0, asked, "catch-up {catch_up}: {stats:?}");
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
