//! The source sentences that best answer a question: "From your documents" under an
//! answer, and the whole answer of the `extractive` mode. A window of one or two
//! sentences of the sources scores by the share of the question's content terms it
//! holds, each weighted by its rarity among the sources' sentences, plus a little for
//! its source's rank; the best window leads, and up to two more follow that score at
//! least [`KEEP`] of it, from places that do not overlap.

use super::terms::{content_terms, coverage};
use super::{sentence_weights, span_of, windows, Passage, Span};

/// How many quotes at most.
pub const MAX_QUOTES: usize = 3;
/// A further quote scores at least this share of the best one's score.
pub const KEEP: f32 = 0.6;
/// Windows longer than this (chars) are not quoted: a table or a run-on extraction.
const MAX_CHARS: usize = 700;

/// The 1–3 passages of `passages` (in rank order) that best answer `question`.
pub fn quotes(question: &str, passages: &[Passage<'_>]) -> Vec<Span> {
    let wins = windows(passages, 2);
    if wins.is_empty() {
        return Vec::new();
    }
    let w = sentence_weights(&wins);
    let q = content_terms(question);
    let mut scored: Vec<(usize, f32)> = wins
        .iter()
        .enumerate()
        .filter(|(_, win)| {
            let t = &passages[win.source].text[win.start..win.end];
            t.chars().count() <= MAX_CHARS
                && t.chars().filter(|c| c.is_alphanumeric()).count() >= 12
        })
        .map(|(i, win)| {
            let cov = if q.is_empty() {
                0.0
            } else {
                coverage(&q, &win.terms, &w)
            };
            let prior = 0.08 / (1.0 + win.source as f32);
            (i, cov - 0.04 * win.extra as f32 + prior)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    let Some(&(_, top)) = scored.first() else {
        return Vec::new();
    };
    let mut out: Vec<Span> = Vec::new();
    let mut taken: Vec<(usize, usize, usize)> = Vec::new();
    for (i, score) in scored {
        if out.len() == MAX_QUOTES || (score < top * KEEP && !out.is_empty()) {
            break;
        }
        let win = &wins[i];
        let overlaps = taken
            .iter()
            .any(|&(s, a, b)| s == win.source && win.start < b && a < win.end);
        if overlaps {
            continue;
        }
        taken.push((win.source, win.start, win.end));
        out.push(span_of(passages, win, score.clamp(0.0, 1.0)));
    }
    out
}

/// The quotes as the `extractive` mode's answer: one per line, `> text (file, p. N)`.
pub fn as_answer(quotes: &[Span]) -> String {
    quotes
        .iter()
        .map(|q| {
            let text = q.text.split_whitespace().collect::<Vec<_>>().join(" ");
            format!("> {text} ({}, p. {})", q.file, q.page)
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The check of an [`as_answer`] answer: each quote is its own supported sentence,
/// its span the quote itself (nothing to search: the words are the sources').
pub fn support_of(answer: &str, quotes: &[Span]) -> super::Support {
    let mut out = super::Support::default();
    let mut from = 0;
    for (q, line) in quotes.iter().zip(answer.split("\n\n")) {
        let Some(at) = answer[from..].find(line).map(|i| from + i) else {
            continue;
        };
        from = at + line.len();
        let text = line.strip_prefix("> ").unwrap_or(line);
        let start = super::sentences::char_offset(answer, at + (line.len() - text.len()));
        out.sentences.push(super::SentenceSupport {
            text: text.to_string(),
            start,
            end: start + text.chars().count(),
            verdict: super::Verdict::Supported,
            score: 1.0,
            span: Some(q.clone()),
            cited: Vec::new(),
            wrong_citation: None,
            note: None,
        });
    }
    out.tally();
    out
}
