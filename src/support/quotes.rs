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
pub const KEEP: f32 = 0.4;
/// Windows longer than this (chars) are not quoted: a table or a run-on extraction.
const MAX_CHARS: usize = 700;

/// The 1–3 passages of `passages` (in rank order) that best answer `question`.
///
/// The first is the window that holds most of the question's weighted terms; each
/// next one is chosen by the terms still uncovered (a question of two parts gets a
/// quote for each), and must score, on the whole question, at least [`KEEP`] of the
/// first. Words the
/// question writes as they are (`1.5-2`, `\\ch`, `apt-mark`) count double when a
/// window holds them verbatim.
pub fn quotes(question: &str, passages: &[Passage<'_>]) -> Vec<Span> {
    let wins = windows(passages, 2);
    if wins.is_empty() {
        return Vec::new();
    }
    let w = sentence_weights(&wins);
    let q = content_terms(question);
    let verbatim: Vec<String> = question
        .split_whitespace()
        .map(|t| t.trim_matches(|c: char| ",.;:?!()\"'“”‘’，。？！".contains(c)))
        .filter(|t| {
            t.chars()
                .any(|c| c.is_ascii_digit() || "\\-_<>=+@/".contains(c))
        })
        .filter(|t| t.chars().count() >= 2)
        .map(str::to_string)
        .collect();
    let eligible: Vec<usize> = (0..wins.len())
        .filter(|&i| {
            let win = &wins[i];
            let t = &passages[win.source].text[win.start..win.end];
            t.chars().count() <= MAX_CHARS
                && t.chars().filter(|c| c.is_alphanumeric()).count() >= 12
        })
        .collect();
    let score = |i: usize, covered: &std::collections::HashSet<&String>| -> f32 {
        let win = &wins[i];
        let left: Vec<String> = q.iter().filter(|t| !covered.contains(t)).cloned().collect();
        let cov = if left.is_empty() {
            0.0
        } else {
            coverage(&left, &win.terms, &w) * left.len() as f32 / q.len().max(1) as f32
        };
        let text = &passages[win.source].text[win.start..win.end];
        let exact = verbatim
            .iter()
            .filter(|v| text.contains(v.as_str()))
            .count();
        let exact = if verbatim.is_empty() {
            0.0
        } else {
            0.3 * exact as f32 / verbatim.len() as f32
        };
        cov + exact - 0.04 * win.extra as f32 + 0.08 / (1.0 + win.source as f32)
    };
    let mut covered: std::collections::HashSet<&String> = std::collections::HashSet::new();
    let mut out: Vec<Span> = Vec::new();
    let mut taken: Vec<(usize, usize, usize)> = Vec::new();
    let mut top = 0.0f32;
    while out.len() < MAX_QUOTES {
        let best = eligible
            .iter()
            .copied()
            .filter(|&i| {
                let win = &wins[i];
                !taken
                    .iter()
                    .any(|&(s, a, b)| s == win.source && win.start < b && a < win.end)
            })
            .map(|i| (i, score(i, &covered)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((i, sc)) = best else { break };
        // Chosen for what it adds; kept if, on the whole question, it scores at
        // least KEEP of the first.
        let whole = score(i, &std::collections::HashSet::new());
        if out.is_empty() {
            top = whole;
        } else if whole < top * KEEP || sc <= 0.1 {
            break;
        }
        let win = &wins[i];
        for t in &q {
            if win.terms.contains(t) {
                covered.insert(t);
            }
        }
        // A window that asks or leads in (a FAQ's question, "do this:") is quoted
        // with the sentence that answers it.
        // The first quote, too: the answer often follows the sentence that matches the
        // question's words.
        let asks = out.is_empty() || win.text.trim_end().ends_with(['?', '？', ':', '：']);
        let end = match (asks, win.next_end) {
            (true, Some(e)) => e,
            _ => win.end,
        };
        taken.push((win.source, win.start, end));
        let mut span = span_of(passages, win, sc.clamp(0.0, 1.0));
        if end != win.end {
            let p = &passages[win.source];
            span.end = super::sentences::char_offset(p.text, end);
            span.text = p.text[win.start..end].to_string();
        }
        out.push(span);
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
        // Without the "(file, p. N)" the line ends with.
        let text = text
            .strip_suffix(&format!(" ({}, p. {})", q.file, q.page))
            .unwrap_or(text);
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
