//! Answers you can check: for every sentence of an answer, the passage of the sources
//! that supports it, and whether it does — **supported**, **partly**, or **not found
//! in the sources** — and, for a sentence that cites `[N]`, whether source N says it
//! (or another source does). Also the source sentences that best answer the question
//! ([`quotes`]), which the answer shows as "From your documents" and the `extractive`
//! mode answers with.
//!
//! The check reads words, not the model: a sentence's content terms (the BM25
//! analyzer's, CJK bigrams, framing words left out) weighted by how rare each is among
//! the sources, and the share of that weight the best window of one to three source
//! sentences holds ([`terms::coverage`]); every number the sentence states must be in
//! that window. Thresholds are calibrated on `bench/data/support.jsonl`'s tuning half
//! (`quire bench support`). No peer checks this at answer time; it costs a few
//! milliseconds per answer.

pub mod quotes;
pub mod restates;
pub mod rows;
pub mod sentences;
pub mod terms;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

pub use quotes::{quotes, quotes_with};
use sentences::{char_offset, Lines};
use terms::{all_terms, coverage, Claim, Weights};

/// At or above this coverage, with every number found, a sentence is supported.
pub const SUPPORTED: f32 = 0.70;
/// At or above this, partly supported; below, not found in the sources.
pub const PARTLY: f32 = 0.60;

/// How far the sources bear a sentence out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Supported,
    Partly,
    NotFound,
    /// Only the question's words said again ([`restates`]): it answers nothing.
    Restates,
    /// No content words to check ("Here is how:"); not counted.
    NoClaim,
}

/// A source passage the check (or the quotes) points at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// The source's index in the answer's sources.
    pub source: usize,
    pub chunk_id: i64,
    pub doc_id: i64,
    pub file: String,
    /// The page the passage is on (1-based).
    pub page: u32,
    /// Char offsets in the source's text.
    pub start: usize,
    pub end: usize,
    pub text: String,
    /// How well it matches (coverage of the sentence, or of the question's terms).
    pub score: f32,
}

/// A cited source that does not say what the sentence says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WrongCitation {
    pub cited: usize,
    /// A cited number whose source does support the sentence, if one does.
    pub better: Option<usize>,
}

/// One sentence of the answer, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentenceSupport {
    pub text: String,
    /// Char offsets in the answer.
    pub start: usize,
    pub end: usize,
    pub verdict: Verdict,
    pub score: f32,
    pub span: Option<Span>,
    pub cited: Vec<usize>,
    pub wrong_citation: Option<WrongCitation>,
    /// What the reader is told beyond the verdict: a wrong citation, a number not in
    /// the sources.
    pub note: Option<String>,
}

/// A whole answer, checked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Support {
    pub sentences: Vec<SentenceSupport>,
    pub supported: usize,
    pub partly: usize,
    pub not_found: usize,
    /// Sentences that only restate the question.
    #[serde(default)]
    pub restates: usize,
    /// Sentences with a claim (all but `no_claim`).
    pub checked: usize,
    /// "4 of 5 sentences found in your documents".
    pub summary: String,
    /// Seconds the check took.
    pub secs: f64,
}

/// A source as the check reads it.
#[derive(Debug, Clone, Copy)]
pub struct Passage<'a> {
    pub chunk_id: i64,
    pub doc_id: i64,
    pub file: &'a str,
    /// The first page the source is on; [`Span::page`] starts as this, and the engine
    /// moves it to the page that holds the span.
    pub page: u32,
    pub text: &'a str,
}

/// A numbered source of a citing answer (`[number]` points at `text`, a piece of the
/// source with `chunk_id`).
#[derive(Debug, Clone, Copy)]
pub struct Cited<'a> {
    pub number: usize,
    pub chunk_id: i64,
    pub text: &'a str,
}

/// A window of one to three consecutive sentences of a source, with its terms.
pub(crate) struct Window {
    pub source: usize,
    /// Byte range in the source text.
    pub start: usize,
    pub end: usize,
    pub terms: HashSet<String>,
    pub numbers: HashSet<String>,
    /// The window's text (for the clause-level checks).
    pub text: String,
    /// Where the sentence after the window ends (none at the passage's end).
    pub next_end: Option<usize>,
    /// Where the sentence before the window starts (none at the passage's start).
    pub prev_start: Option<usize>,
    /// Sentences in the window, less one (a small price on wider windows).
    pub extra: usize,
    /// A table's row ([`rows`]): a window of its own, its terms its header's and
    /// its lead-in's too.
    pub row: bool,
}

/// Every window of up to `width` sentences of every passage.
pub(crate) fn windows(passages: &[Passage<'_>], width: usize) -> Vec<Window> {
    let mut out = Vec::new();
    for (si, p) in passages.iter().enumerate() {
        let sents = sentences::split(p.text, Lines::Layout);
        let row: Vec<bool> = sents.iter().map(|s| rows::is_row(s.text)).collect();
        // A row reads with its table's header and the line that leads into the table
        // (its caption, or "The following functions are defined:"), as it is quoted.
        let read = |i: usize| -> String {
            let s = &sents[i];
            if row[i] {
                rows::with_header(p.text, (s.start, s.end))
            } else {
                s.text.to_string()
            }
        };
        let terms: Vec<HashSet<String>> = (0..sents.len()).map(|i| all_terms(&read(i))).collect();
        // A row's numbers are its own: a header row is often the table's first row of
        // data ("| pt | 1/72.27in |" over "| bp | 1/72in |").
        let nums: Vec<Vec<String>> = sents.iter().map(|s| terms::numbers(s.text)).collect();
        for i in 0..sents.len() {
            let mut t = HashSet::new();
            let mut n = HashSet::new();
            // A row is a window of its own; other sentences join up to `width`, but
            // not into a table.
            let wide = if row[i] {
                1
            } else {
                (i..sents.len().min(i + width))
                    .take_while(|&j| !row[j])
                    .count()
            };
            for k in 0..wide {
                t.extend(terms[i + k].iter().cloned());
                n.extend(nums[i + k].iter().cloned());
                let j = i + k;
                out.push(Window {
                    source: si,
                    start: sents[i].start,
                    end: sents[j].end,
                    terms: t.clone(),
                    numbers: n.clone(),
                    text: p.text[sents[i].start..sents[j].end].to_string(),
                    next_end: sents
                        .get(j + 1)
                        .filter(|_| !row[i] && !row[j + 1])
                        .map(|s| s.end),
                    prev_start: i
                        .checked_sub(1)
                        .filter(|&b| !row[i] && !row[b])
                        .map(|b| sents[b].start),
                    extra: k,
                    row: row[i],
                });
            }
        }
    }
    out
}

/// Rarity over the single sentences of the windows.
pub(crate) fn sentence_weights(windows: &[Window]) -> Weights {
    Weights::over(windows.iter().filter(|w| w.extra == 0).map(|w| &w.terms))
}

/// The numbers and names of `claim` that window `win` lacks.
fn missing_in(claim: &Claim, win: &Window) -> Vec<String> {
    let numbers = claim
        .numbers
        .iter()
        .filter(|n| !win.numbers.contains(*n))
        .cloned();
    let names = claim
        .names
        .iter()
        .filter(|n| !n.iter().all(|t| win.terms.contains(t)))
        .map(|n| n.join(" "));
    numbers.chain(names).collect()
}

/// Whether the clause of `text` closest to `claim` (most of its terms) says no
/// where the claim does not, or the other way round.
fn negation_differs(claim: &Claim, text: &str) -> bool {
    let clause = text
        .split(|c: char| ";,，；。:：!?！？\n".contains(c))
        .map(|c| {
            let t = all_terms(c);
            (claim.terms.iter().filter(|x| t.contains(*x)).count(), c)
        })
        .filter(|&(n, _)| n > 0)
        .max_by_key(|&(n, _)| n);
    clause.is_some_and(|(_, c)| terms::negated(c) != claim.negated)
}

/// How a window bears out a claim.
#[derive(Debug, Clone)]
struct Fit {
    index: usize,
    coverage: f32,
    /// Numbers and names of the claim the window lacks.
    missing: Vec<String>,
    /// Of those, the ones no source holds at all.
    nowhere: usize,
    /// The claim says no where the window does not, or the other way round.
    negation_differs: bool,
}

/// The best window for `claim`: highest coverage less a little per extra sentence;
/// a missing number or name costs a lot.
fn best_window(
    claim: &Claim,
    windows: &[Window],
    w: &Weights,
    only: Option<&dyn Fn(&Window) -> bool>,
) -> Option<Fit> {
    let mut best: Option<(Fit, f32)> = None;
    for (i, win) in windows.iter().enumerate() {
        if only.is_some_and(|f| !f(win)) {
            continue;
        }
        let cov = coverage(&claim.terms, &win.terms, w);
        let missing = missing_in(claim, win);
        let rank = cov - 0.03 * win.extra as f32 - 0.5 * missing.len() as f32;
        if best.as_ref().is_none_or(|b| rank > b.1) {
            let fit = Fit {
                index: i,
                coverage: cov,
                nowhere: 0,
                negation_differs: false,
                missing,
            };
            best = Some((fit, rank));
        }
    }
    let (mut fit, _) = best?;
    let win = &windows[fit.index];
    fit.negation_differs = negation_differs(claim, &win.text);
    fit.nowhere = fit
        .missing
        .iter()
        .filter(|m| {
            let terms: Vec<&str> = m.split(' ').collect();
            !windows
                .iter()
                .any(|win| win.numbers.contains(*m) || terms.iter().all(|t| win.terms.contains(*t)))
        })
        .count();
    Some(fit)
}

fn verdict_of(fit: &Fit) -> Verdict {
    let v = verdict(fit.coverage, &fit.missing);
    if !fit.missing.is_empty() && fit.coverage >= PARTLY {
        // The passage the sentence is closest to states another number or name: the
        // typical wrong claim (2 for 3, \\tag for \\numberwithin).
        Verdict::NotFound
    } else if v == Verdict::Supported && fit.negation_differs {
        // The passage says the opposite.
        Verdict::NotFound
    } else {
        v
    }
}

fn verdict(cov: f32, missing: &[String]) -> Verdict {
    if !missing.is_empty() {
        // A number or name the passage does not state.
        if cov >= SUPPORTED {
            Verdict::Partly
        } else {
            Verdict::NotFound
        }
    } else if cov >= SUPPORTED {
        Verdict::Supported
    } else if cov >= PARTLY {
        Verdict::Partly
    } else {
        Verdict::NotFound
    }
}

/// The span of window `win` of `passages`.
pub(crate) fn span_of(passages: &[Passage<'_>], win: &Window, score: f32) -> Span {
    let p = &passages[win.source];
    Span {
        source: win.source,
        chunk_id: p.chunk_id,
        doc_id: p.doc_id,
        file: p.file.to_string(),
        page: p.page,
        start: char_offset(p.text, win.start),
        end: char_offset(p.text, win.end),
        text: p.text[win.start..win.end].to_string(),
        score,
    }
}

/// The windows and term weights of an answer's sources and of its numbered sources,
/// made once for all its sentences.
struct Sources {
    wins: Vec<Window>,
    weights: Weights,
    cited_wins: Vec<Window>,
}

impl Sources {
    fn of(passages: &[Passage<'_>], cited: &[Cited<'_>]) -> Self {
        let wins = windows(passages, 3);
        let weights = sentence_weights(&wins);
        let cited_passages: Vec<Passage<'_>> = cited
            .iter()
            .map(|c| Passage {
                chunk_id: c.chunk_id,
                doc_id: 0,
                file: "",
                page: 0,
                text: c.text,
            })
            .collect();
        let cited_wins = windows(&cited_passages, 3);
        Sources {
            wins,
            weights,
            cited_wins,
        }
    }
}

/// Check every sentence of `answer` to `question` against `passages` (the answer's
/// sources, in order) and, for `[N]` markers, against `cited` (the numbered sources).
/// A sentence that only says the question again is marked so ([`Verdict::Restates`]),
/// whatever the sources hold.
pub fn check_answer(
    question: &str,
    answer: &str,
    passages: &[Passage<'_>],
    cited: &[Cited<'_>],
) -> Support {
    let t0 = std::time::Instant::now();
    let src = Sources::of(passages, cited);
    let mut out = Support::default();
    for s in sentences::split(answer, Lines::Blocks) {
        let mut checked = check_one(s.text, passages, &src, cited);
        if checked.verdict != Verdict::NoClaim && restates::restates(s.text, question) {
            checked.verdict = Verdict::Restates;
            checked.note = Some("says the question again; it does not answer it".into());
        }
        out.sentences.push(SentenceSupport {
            start: char_offset(answer, s.start),
            end: char_offset(answer, s.end),
            ..checked
        });
    }
    out.tally();
    out.secs = t0.elapsed().as_secs_f64();
    out
}

/// Check one sentence (as [`check_answer`] does each).
pub fn check_sentence(
    sentence: &str,
    passages: &[Passage<'_>],
    cited: &[Cited<'_>],
) -> SentenceSupport {
    check_one(sentence, passages, &Sources::of(passages, cited), cited)
}

fn check_one(
    sentence: &str,
    passages: &[Passage<'_>],
    src: &Sources,
    cited: &[Cited<'_>],
) -> SentenceSupport {
    let (wins, w, cited_wins) = (&src.wins[..], &src.weights, &src.cited_wins[..]);
    let claim = Claim::of(sentence);
    let mut out = SentenceSupport {
        text: sentence.to_string(),
        start: 0,
        end: sentence.chars().count(),
        verdict: Verdict::NoClaim,
        score: 0.0,
        span: None,
        cited: claim.cited.clone(),
        wrong_citation: None,
        note: None,
    };
    if claim.is_empty() || claim.is_lead_in(sentence) {
        return out;
    }
    // The cited sources first: a span there is the one the reader expects.
    let cited_chunks: HashSet<i64> = claim
        .cited
        .iter()
        .filter_map(|n| cited.iter().find(|c| c.number == *n).map(|c| c.chunk_id))
        .collect();
    let in_cited = |win: &Window| cited_chunks.contains(&passages[win.source].chunk_id);
    let overall = best_window(&claim, wins, w, None);
    let preferred = if cited_chunks.is_empty() {
        None
    } else {
        best_window(&claim, wins, w, Some(&in_cited))
    };
    let chosen = match (&overall, &preferred) {
        (Some(o), Some(p)) if verdict_of(p) == verdict_of(o) => Some(p.clone()),
        (Some(o), _) => Some(o.clone()),
        _ => None,
    };
    if let Some(fit) = chosen {
        out.verdict = verdict_of(&fit);
        out.score = fit.coverage;
        if out.verdict != Verdict::NotFound || fit.coverage >= PARTLY / 2.0 {
            out.span = Some(span_of(passages, &wins[fit.index], fit.coverage));
        }
        if !fit.missing.is_empty() {
            let quoted: Vec<String> = fit.missing.iter().map(|m| format!("\"{m}\"")).collect();
            out.note = Some(format!(
                "{} {} not in {}",
                quoted.join(", "),
                if quoted.len() == 1 { "is" } else { "are" },
                if fit.nowhere > 0 {
                    "the sources"
                } else {
                    "this passage"
                }
            ));
        }
    } else {
        out.verdict = Verdict::NotFound;
    }
    // Each marker: does its numbered source hold the claim?
    let cov_of = |number: usize| -> Option<f32> {
        let idx = cited.iter().position(|c| c.number == number)?;
        let only = |win: &Window| win.source == idx;
        best_window(&claim, cited_wins, w, Some(&only)).map(|fit| {
            if fit.missing.is_empty() {
                fit.coverage
            } else {
                fit.coverage.min(PARTLY - 0.01)
            }
        })
    };
    for &n in &claim.cited {
        let Some(c) = cov_of(n) else {
            out.wrong_citation = Some(WrongCitation {
                cited: n,
                better: None,
            });
            out.note = Some(format!("cites [{n}], but there is no source [{n}]"));
            break;
        };
        if c >= PARTLY {
            continue;
        }
        let better = cited
            .iter()
            .filter(|o| o.number != n)
            .filter_map(|o| cov_of(o.number).map(|c| (o.number, c)))
            .filter(|&(_, c)| c >= SUPPORTED)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(m, _)| m);
        out.note = Some(match better {
            Some(m) => format!("cited [{n}], but [{n}] does not say this; [{m}] does"),
            None => format!("cited [{n}], but [{n}] does not say this"),
        });
        out.wrong_citation = Some(WrongCitation { cited: n, better });
        break;
    }
    out
}

impl Support {
    /// Whether every checked sentence only restates the question (and there is one).
    pub fn only_restates(&self) -> bool {
        self.restates > 0 && self.restates == self.checked
    }

    /// Count the verdicts and write the summary.
    pub fn tally(&mut self) {
        let count = |v: Verdict| self.sentences.iter().filter(|s| s.verdict == v).count();
        self.supported = count(Verdict::Supported);
        self.partly = count(Verdict::Partly);
        self.not_found = count(Verdict::NotFound);
        self.restates = count(Verdict::Restates);
        self.checked = self.supported + self.partly + self.not_found + self.restates;
        self.summary = if self.only_restates() {
            "the answer only restates the question".into()
        } else {
            summary(self.supported, self.partly, self.checked)
        };
    }
}

/// "4 of 5 sentences found in your documents"; of one sentence, whether it is found,
/// partly found or not found (`partly`: the sentences only partly found).
pub fn summary(supported: usize, partly: usize, checked: usize) -> String {
    match checked {
        0 => "no sentence to check".into(),
        1 if supported == 1 => "the sentence is found in your documents".into(),
        1 if partly == 1 => "the sentence is partly found in your documents".into(),
        1 => "the sentence is not found in your documents".into(),
        n if supported == n => format!("all {n} sentences found in your documents"),
        n => format!("{supported} of {n} sentences found in your documents"),
    }
}

#[cfg(test)]
mod tests;
