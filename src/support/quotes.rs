//! The source sentences that best answer a question: "From your documents" under an
//! answer, and the whole answer of the `extractive` mode. A window of one or two
//! sentences of the sources scores by the share of the question's content terms it
//! holds, each weighted by its rarity among the sources' sentences, plus its meaning's
//! closeness to the question (the embedder's cosine, when the caller gives one), plus
//! a little for its source's rank; the best window leads, and up to two more follow
//! that score at least [`KEEP`] of it, from places that do not overlap. A window that
//! opens by pointing back ("而且", "This is done with") is quoted with the sentence
//! before it; a quote takes the sentences after its window that usually hold the
//! answer, reading on into the next chunk of its document when it runs off its own.

use super::rows;
use super::terms::{content_terms, coverage};
use super::{sentence_weights, span_of, windows, Passage, Span};
use crate::text::overlap::after_overlap;

/// How many quotes at most.
pub const MAX_QUOTES: usize = 3;
/// A further quote scores at least this share of the best one's score.
pub const KEEP: f32 = 0.4;
/// Windows longer than this (chars) are not quoted: a table or a run-on extraction.
const MAX_CHARS: usize = 700;
/// The first quote takes up to this many sentences after its window (the answer
/// often follows the words that match the question: tuning half 58% -> 75% of
/// questions with the key terms in the quotes, with [`points_back`]).
pub const FOLLOW: usize = 2;
/// A later quote takes up to this many sentences after its window, and any quote
/// that runs to the end of its chunk reads on into the next one. Decided on the
/// tuning halves only (`quire-bench support --no-llm` over the pooled first-turn
/// questions: the corpus questions, the table questions and the conversations' first
/// turns, 59 tuning questions): key terms in the quotes 71% before, 73% reading on
/// into the next chunk, 71% with 1 or 2 sentences after a later quote, 73% / 75%
/// with both at 1 / 2.
pub const FOLLOW_LATER: usize = 2;
/// A quote grows by the sentences after it only while it is at most this long (chars).
const QUOTE_CHARS: usize = 600;
/// The weight of a window's cosine to the question beside its terms' coverage.
/// Decided on tuning halves only (`quire-bench support --no-llm`, key terms in the
/// quotes at 0 / 0.25 / 0.5 / 1): the conversations' first turns 59% / 66% / 66% / 62%
/// (29 questions), the corpus questions and the table questions flat (75%, 78%).
/// 0.25 and 0.5 tie; the weight already in place was kept.
pub const COSINE: f32 = 0.5;
/// At most this many sentences are embedded for the cosine: the ones that share the
/// most of the question's terms.
pub const EMBEDDED: usize = 40;

/// Words that open a sentence leaning on the one before ("This is done with",
/// "而且"): lower case, the first word (CJK: the opening characters).
const POINTS_BACK: &[&str] = &[
    "this",
    "these",
    "that",
    "those",
    "it",
    "its",
    "they",
    "then",
    "also",
    "and",
    "but",
    "so",
    "thus",
    "hence",
    "therefore",
    "however",
    "moreover",
    "furthermore",
    "otherwise",
    "such",
    "here",
    "there",
    "both",
    "each",
    "likewise",
    "similarly",
    "instead",
    "alternatively",
    "而且",
    "并且",
    "但是",
    "但",
    "因此",
    "所以",
    "此外",
    "另外",
    "这",
    "那",
    "它",
    "其",
    "同时",
    "然后",
    "也",
    "还",
    "即",
    "于是",
    "否则",
];

/// Whether `sentence` opens by pointing back at the one before it.
pub fn points_back(sentence: &str) -> bool {
    let t = sentence.trim_start();
    let first: String = t
        .chars()
        .take_while(|c| c.is_alphanumeric() && !crate::text::is_cjk(*c))
        .flat_map(char::to_lowercase)
        .collect();
    if !first.is_empty() {
        return POINTS_BACK.contains(&first.as_str());
    }
    POINTS_BACK
        .iter()
        .any(|w| w.chars().all(crate::text::is_cjk) && t.starts_with(w))
}

/// The 1–3 passages of `passages` (in rank order) that best answer `question`.
///
/// The first is the window that holds most of the question's weighted terms; each
/// next one is chosen by the terms still uncovered (a question of two parts gets a
/// quote for each), and must score, on the whole question, at least [`KEEP`] of the
/// first. Words the
/// question writes as they are (`1.5-2`, `\\ch`, `apt-mark`) count double when a
/// window holds them verbatim.
pub fn quotes(question: &str, passages: &[Passage<'_>]) -> Vec<Span> {
    quotes_with(question, passages, &|_| None, &|_| None)
}

/// [`quotes`], each window also scored by its meaning: `cosines` gives the cosine of
/// each of a list of sentences to the question (the engine's embedder), or none;
/// `after` gives the chunk that follows a passage (by its index) in its document,
/// its id and text, or none.
pub fn quotes_with(
    question: &str,
    passages: &[Passage<'_>],
    cosines: &dyn Fn(&[&str]) -> Option<Vec<f32>>,
    after: &dyn Fn(usize) -> Option<(i64, String)>,
) -> Vec<Span> {
    let wins = windows(passages, 2);
    if wins.is_empty() {
        return Vec::new();
    }
    let w = sentence_weights(&wins);
    // What each window says: a row with its table's lead-in and header.
    let shown: Vec<String> = wins
        .iter()
        .map(|win| {
            let text = passages[win.source].text;
            if win.row {
                rows::with_header(text, (win.start, win.end))
            } else {
                text[win.start..win.end].to_string()
            }
        })
        .collect();
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
            // A row counts with its header ("| t | 顶部 |" under "| 参数 | 含义 |"); a
            // header is quoted over its rows, not alone.
            let header = win.row && rows::is_header(passages[win.source].text, win.end);
            !header
                && t.chars().count() <= MAX_CHARS
                && shown[i].chars().filter(|c| c.is_alphanumeric()).count() >= 12
        })
        .collect();
    // Each source's sentences, in order: (start, end) bytes.
    let mut sents: Vec<Vec<(usize, usize)>> = vec![Vec::new(); passages.len()];
    for win in wins.iter().filter(|w| w.extra == 0) {
        sents[win.source].push((win.start, win.end));
    }
    let cos = window_cosines(&wins, &shown, &eligible, &q, &w, cosines);
    let score = |i: usize, covered: &std::collections::HashSet<&String>| -> f32 {
        let win = &wins[i];
        let left: Vec<String> = q.iter().filter(|t| !covered.contains(t)).cloned().collect();
        let cov = if left.is_empty() {
            0.0
        } else {
            coverage(&left, &win.terms, &w) * left.len() as f32 / q.len().max(1) as f32
        };
        let text = &shown[i];
        let exact = verbatim
            .iter()
            .filter(|v| text.contains(v.as_str()))
            .count();
        let exact = if verbatim.is_empty() {
            0.0
        } else {
            0.3 * exact as f32 / verbatim.len() as f32
        };
        cov + exact + COSINE * cos[i] - 0.04 * win.extra as f32 + 0.08 / (1.0 + win.source as f32)
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
        let mut end = match (asks, win.next_end) {
            (true, Some(e)) => e,
            _ => win.end,
        };
        // Then the sentences that follow: for the first quote up to [`FOLLOW`] after
        // its window, for a later one up to [`FOLLOW_LATER`], and for any quote
        // those that lead on from it (after a colon, or opening by pointing back),
        // at most three, within [`QUOTE_CHARS`]. A quote that runs to the end of its
        // source reads on into the next chunk of its document (`after`).
        let p = &passages[win.source];
        let mut added = usize::from(end != win.end);
        let follow = if out.is_empty() { FOLLOW } else { FOLLOW_LATER };
        let wants = |quote: &str, next: &str, added: usize, chars: usize| {
            let leads = quote.trim_end().ends_with([':', '：']) || points_back(next);
            !((added >= follow && !leads) || added >= 3 || chars > QUOTE_CHARS)
        };
        // A row is quoted alone; a quote that runs on into a table takes all of it, as
        // one sentence (the caption over its table).
        let mut ran_off = !win.row;
        let mut into_quoted = false;
        while let Some(k) = (!win.row)
            .then(|| sents[win.source].iter().position(|&(a, _)| a >= end))
            .flatten()
        {
            let (a, mut b) = sents[win.source][k];
            for &(ra, rb) in &sents[win.source][k..] {
                if !rows::is_row(&p.text[ra..rb]) {
                    break;
                }
                b = rb;
            }
            // Nor does a quote run on into what another quote already says.
            into_quoted = taken
                .iter()
                .any(|&(s, qa, qb)| s == win.source && a < qb && qa < b);
            if into_quoted
                || !wants(
                    &p.text[win.start..end],
                    &p.text[a..b],
                    added,
                    p.text[win.start..b].chars().count(),
                )
            {
                ran_off = false;
                break;
            }
            end = b;
            added += 1;
        }
        // The words over a table whose rows another quote holds add nothing of their
        // own: not quoted.
        if into_quoted
            && end == win.end
            && rows::is_row(
                sents[win.source]
                    .iter()
                    .find(|&&(a, _)| a >= end)
                    .map_or("", |&(a, b)| &p.text[a..b]),
            )
        {
            taken.push((win.source, win.start, win.end));
            continue;
        }
        let mut tail = String::new();
        if ran_off && added < 3 {
            if let Some((next_id, next)) = after(win.source) {
                let cont = after_overlap(&p.text[..end], &next);
                let skipped = next.len() - cont.len();
                let head = p.text[win.start..end].chars().count();
                for s in super::sentences::split(cont, super::sentences::Lines::Layout) {
                    let quote = format!("{}\n{}", &p.text[win.start..end], &cont[..s.start]);
                    if !wants(&quote, s.text, added, head + cont[..s.end].chars().count()) {
                        break;
                    }
                    tail = cont[..s.end].trim().to_string();
                    added += 1;
                }
                // The next chunk may be a source too: what was read of it is taken.
                if let Some(si) = passages.iter().position(|q| q.chunk_id == next_id) {
                    if !tail.is_empty() {
                        taken.push((si, 0, skipped + cont.find(&tail).unwrap_or(0) + tail.len()));
                    }
                }
            }
        }
        // A window that leans on the sentence before it is quoted with it.
        let start = match win.prev_start {
            Some(p) if points_back(&win.text) => p,
            _ => win.start,
        };
        taken.push((win.source, start, end));
        let mut span = span_of(passages, win, sc.clamp(0.0, 1.0));
        if (start, end) != (win.start, win.end) {
            let p = &passages[win.source];
            span.start = super::sentences::char_offset(p.text, start);
            span.end = super::sentences::char_offset(p.text, end);
            span.text = p.text[start..end].to_string();
        }
        if win.row {
            // The offsets are the row's; the text is the row under its header.
            span.text = shown[i].clone();
        }
        if !tail.is_empty() {
            // The offsets stay the source's; the text reads on.
            span.text = format!("{}\n{tail}", span.text.trim_end());
        }
        out.push(span);
    }
    out
}

/// Each window's cosine to the question (0 for all when `cosines` gives none): the
/// highest of its sentences'. Only the [`EMBEDDED`] eligible sentences that share
/// the most weighted terms with the question are embedded; the others count 0.
fn window_cosines(
    wins: &[super::Window],
    shown: &[String],
    eligible: &[usize],
    q: &[String],
    w: &super::terms::Weights,
    cosines: &dyn Fn(&[&str]) -> Option<Vec<f32>>,
) -> Vec<f32> {
    let mut out = vec![0.0f32; wins.len()];
    let mut single: Vec<(usize, f32)> = eligible
        .iter()
        .copied()
        .filter(|&i| wins[i].extra == 0)
        .map(|i| (i, coverage(q, &wins[i].terms, w)))
        .filter(|&(_, c)| c > 0.0)
        .collect();
    single.sort_by(|a, b| b.1.total_cmp(&a.1));
    single.truncate(EMBEDDED);
    if single.is_empty() {
        return out;
    }
    let texts: Vec<&str> = single.iter().map(|&(i, _)| shown[i].as_str()).collect();
    let Some(c) = cosines(&texts) else {
        return out;
    };
    // (source, start, end) of each embedded sentence -> its cosine.
    let by_place: Vec<((usize, usize, usize), f32)> = single
        .iter()
        .zip(c)
        .map(|(&(i, _), c)| ((wins[i].source, wins[i].start, wins[i].end), c))
        .collect();
    for (i, win) in wins.iter().enumerate() {
        out[i] = by_place
            .iter()
            .filter(|((s, a, b), _)| *s == win.source && *a >= win.start && *b <= win.end)
            .map(|(_, c)| *c)
            .fold(0.0, f32::max);
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
