//! LlamaIndex's `SentenceSplitter` (llama-index-core 0.14.25, `split_text`), which
//! CitationQueryEngine uses to re-split nodes: split a text that is over `chunk_size`
//! tokens by paragraphs (`"\n\n\n"`), then sentences (nltk Punkt), then phrases
//! (`[^,.;。？！]+[,.;。？！]?|[,.;。？！]`), then words (`" "`), then characters; and
//! merge the pieces into chunks of at most `chunk_size` tokens, with up to
//! `chunk_overlap` tokens of whole pieces carried over from the previous chunk.
//!
//! The sentence tokenizer is a port of nltk 3.10's `PunktSentenceTokenizer` (its
//! tokenization, not its training). LlamaIndex uses it *untrained*
//! (`PunktSentenceTokenizer()`: no abbreviations, collocations, sentence starters
//! or orthographic statistics), so that is the default here too; nltk's English
//! model ([`PunktParams::english`]) is there for other uses.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::LazyLock;

use crate::synth::splitter::{py_space, py_strip, Counter};
use crate::{Error, Result};

// Punkt parameters

// Orthographic context flags: upper case at the beginning of a sentence (1 << 1), in
// the middle (1 << 2), at an unknown position (1 << 3); lower case likewise (4, 5, 6).
const ORTHO_MID_UC: u32 = 1 << 2;
const ORTHO_BEG_LC: u32 = 1 << 4;
const ORTHO_UC: u32 = (1 << 1) | (1 << 2) | (1 << 3);
const ORTHO_LC: u32 = (1 << 4) | (1 << 5) | (1 << 6);

/// A Punkt model: nltk's `PunktParameters`.
#[derive(Debug, Clone, Default)]
pub struct PunktParams {
    /// Abbreviations (lower case, without the final period).
    pub abbrev_types: HashSet<String>,
    /// Word-type pairs around a period that is not a sentence break.
    pub collocations: HashSet<(String, String)>,
    /// Word types that often start a sentence.
    pub sent_starters: HashSet<String>,
    /// Orthographic context flags of word types.
    pub ortho_context: HashMap<String, u32>,
}

/// Lines of a punkt_tab file, as nltk's `TabDecoder` reads them.
fn tab_lines(s: &str) -> impl Iterator<Item = Vec<&str>> {
    s.split_terminator('\n').map(|l| l.split('\t').collect())
}

impl PunktParams {
    /// nltk's English model (`punkt_tab/english`, as bundled with LlamaIndex).
    pub fn english() -> Self {
        let set = |s: &str| s.split_terminator('\n').map(String::from).collect();
        Self {
            abbrev_types: set(include_str!("punkt_english/abbrev_types.txt")),
            sent_starters: set(include_str!("punkt_english/sent_starters.txt")),
            collocations: tab_lines(include_str!("punkt_english/collocations.tab"))
                .filter(|f| f.len() == 2)
                .map(|f| (f[0].to_string(), f[1].to_string()))
                .collect(),
            ortho_context: tab_lines(include_str!("punkt_english/ortho_context.tab"))
                .filter_map(|f| match f[..] {
                    [a, b] => Some((a.to_string(), b.parse().ok()?)),
                    _ => None,
                })
                .collect(),
        }
    }
}

// Punkt tokens (PunktToken)

static RE_NUMERIC: LazyLock<fancy_regex::Regex> =
    LazyLock::new(|| fancy_regex::Regex::new(r"^-?[.,]?\d[\d,.\-]*\.?$").expect("regex"));
static RE_INITIAL: LazyLock<fancy_regex::Regex> =
    LazyLock::new(|| fancy_regex::Regex::new(r"^[^\W\d]\.$").expect("regex"));

const NUMBER: &str = "##number##";

struct Tok<'t> {
    tok: &'t str,
    typ: String,
    period_final: bool,
    sentbreak: bool,
    abbr: bool,
    ellipsis: bool,
}

impl<'t> Tok<'t> {
    fn new(tok: &'t str) -> Self {
        let lower = tok.to_lowercase();
        let numeric = RE_NUMERIC.is_match(&lower).unwrap_or(false);
        Self {
            tok,
            typ: if numeric { NUMBER.to_string() } else { lower },
            period_final: tok.ends_with('.'),
            sentbreak: false,
            abbr: false,
            ellipsis: false,
        }
    }

    fn type_no_period(&self) -> &str {
        if self.typ.chars().nth(1).is_some() && self.typ.ends_with('.') {
            &self.typ[..self.typ.len() - 1]
        } else {
            &self.typ
        }
    }

    fn type_no_sentperiod(&self) -> &str {
        if self.sentbreak {
            self.type_no_period()
        } else {
            &self.typ
        }
    }

    fn first_upper(&self) -> bool {
        self.tok.chars().next().is_some_and(char::is_uppercase)
    }

    fn first_lower(&self) -> bool {
        self.tok.chars().next().is_some_and(char::is_lowercase)
    }

    /// `\.\.+$`
    fn is_ellipsis(&self) -> bool {
        self.tok.len() >= 2 && self.tok.bytes().all(|b| b == b'.')
    }

    fn is_initial(&self) -> bool {
        RE_INITIAL.is_match(self.tok).unwrap_or(false)
    }
}

// Punkt word tokenization (PunktLanguageVars.word_tokenize, hand-compiled)

/// `\s` of the `regex` module nltk uses: Unicode White_Space.
fn re_space(c: char) -> bool {
    c.is_whitespace()
}

/// `_re_non_word_chars`: characters that cannot appear within words.
fn non_word(c: char) -> bool {
    ")\";}]*:@'({[\u{2018}\u{2019}\u{201c}\u{201d}\u{ab}\u{bb}?!".contains(c)
}

/// `_re_word_start`: characters that may start a word token.
fn word_start(c: char) -> bool {
    !"(\"`{[:;&#*@)}]-,".contains(c)
}

/// `_re_multi_char_punct` (`\-{2,}|\.{2,}|(?:\.\s){2,}\.`) at `i`: its end.
fn multi_char(cs: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| cs.get(k).copied();
    for d in ['-', '.'] {
        if at(i) == Some(d) && at(i + 1) == Some(d) {
            let mut j = i;
            while at(j) == Some(d) {
                j += 1;
            }
            return Some(j);
        }
    }
    let (mut pairs, mut j) = (0, i);
    while at(j) == Some('.') && at(j + 1).is_some_and(re_space) {
        pairs += 1;
        j += 2;
    }
    if pairs >= 2 && at(j) == Some('.') {
        Some(j + 1)
    } else if pairs >= 3 {
        Some(j - 1)
    } else {
        None
    }
}

/// The end-of-word lookahead of the word regex at `q`.
fn word_end(cs: &[char], q: usize) -> bool {
    let Some(&c) = cs.get(q) else { return true };
    if re_space(c) || non_word(c) || multi_char(cs, q).is_some() {
        return true;
    }
    c == ','
        && cs
            .get(q + 1)
            .is_none_or(|&n| re_space(n) || non_word(n) || multi_char(cs, q + 1).is_some())
}

/// `PunktLanguageVars.word_tokenize` of one line.
fn word_tokenize(line: &str) -> Vec<&str> {
    let cs: Vec<char> = line.chars().collect();
    let mut offs: Vec<usize> = line.char_indices().map(|(b, _)| b).collect();
    offs.push(line.len());
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        if re_space(cs[i]) {
            i += 1;
            continue;
        }
        let end = if let Some(e) = multi_char(&cs, i) {
            e
        } else if word_start(cs[i]) {
            let mut q = i + 1;
            while !word_end(&cs, q) {
                q += 1;
            }
            q
        } else {
            i + 1
        };
        out.push(&line[offs[i]..offs[end]]);
        i = end;
    }
    out
}

// Punkt sentence tokenizer

/// A potential sentence end: `[.?!]` followed by other punctuation, or by
/// whitespace and a token.
struct EndMatch {
    /// Where the `[.?!]` is (the match ends one byte later).
    start: usize,
    /// End of the `after_tok` lookahead group.
    after_end: usize,
    /// Start of the `next_tok` group, when it matched.
    next_tok: Option<usize>,
}

/// `period_context_re().finditer(text)`.
fn end_matches(text: &str) -> Vec<EndMatch> {
    let mut out = Vec::new();
    for (p, c) in text.char_indices() {
        if !matches!(c, '.' | '?' | '!') {
            continue;
        }
        let end = p + 1;
        let rest = &text[end..];
        let Some(n) = rest.chars().next() else {
            continue;
        };
        let (after_end, next_tok) = if non_word(n) {
            (end + n.len_utf8(), None)
        } else if re_space(n) {
            let ws = rest.len() - rest.trim_start_matches(re_space).len();
            let tok = &rest[ws..];
            let len = tok.len() - tok.trim_start_matches(|c: char| !re_space(c)).len();
            if len == 0 {
                continue;
            }
            (end + ws + len, Some(end + ws))
        } else {
            continue;
        };
        let start = p;
        out.push(EndMatch {
            start,
            after_end,
            next_tok,
        });
    }
    out
}

/// `text[a:b]` as Python slices it.
fn py_slice(text: &str, a: usize, b: usize) -> &str {
    let b = b.min(text.len());
    if a >= b {
        ""
    } else {
        &text[a..b]
    }
}

/// `re_boundary_realignment.match(s)`: `["')\]}‘’“”«»]+?(?:\s+|(?=--)|$)` (multiline),
/// as (length of the quotes, length of the match).
fn realignment(s: &str) -> Option<(usize, usize)> {
    let quote = |c: char| "\"')]}\u{2018}\u{2019}\u{201c}\u{201d}\u{ab}\u{bb}".contains(c);
    let mut pos = 0;
    for c in s.chars() {
        if !quote(c) {
            return None;
        }
        pos += c.len_utf8();
        let rest = &s[pos..];
        let ws = rest.len() - rest.trim_start_matches(re_space).len();
        if ws > 0 {
            return Some((pos, pos + ws));
        }
        if rest.starts_with("--") || rest.is_empty() || rest.starts_with('\n') {
            return Some((pos, pos));
        }
    }
    None
}

/// nltk's `PunktSentenceTokenizer`, tokenization only.
#[derive(Debug, Clone, Default)]
pub struct Punkt {
    pub params: PunktParams,
}

impl Punkt {
    /// A tokenizer with the model `params` (default: untrained, as LlamaIndex's).
    pub fn new(params: PunktParams) -> Self {
        Self { params }
    }

    /// `span_tokenize(text)`: sentence spans, as byte offsets into `text`.
    pub fn span_tokenize(&self, text: &str) -> Vec<(usize, usize)> {
        self.realign_boundaries(text, &self.slices_from_text(text))
    }

    /// LlamaIndex's `split_by_sentence_tokenizer`: each sentence runs from its span's
    /// start to the next span's start (or the end of the text).
    pub fn sentences<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let spans = self.span_tokenize(text);
        (0..spans.len())
            .map(|i| {
                let end = spans.get(i + 1).map_or(text.len(), |s| s.0);
                py_slice(text, spans[i].0, end)
            })
            .collect()
    }

    /// `_match_potential_end_contexts`: matches and their contexts (as ranges).
    fn potential_end_contexts(text: &str) -> Vec<(EndMatch, (usize, usize))> {
        let mut out = Vec::new();
        let mut prev_slice = (0usize, 0usize);
        let mut prev: Option<EndMatch> = None;
        for m in end_matches(text) {
            let before = &text.as_bytes()[prev_slice.1..m.start];
            let last_ws = before
                .iter()
                .rposition(|b| b" \t\n\r\x0b\x0c".contains(b))
                .unwrap_or(0);
            let start = if last_ws != 0 {
                last_ws + prev_slice.1 + 1
            } else {
                prev_slice.0
            };
            let word = (start, m.start);
            if let Some(pm) = prev.take() {
                if prev_slice.1 <= word.0 {
                    let ctx = (prev_slice.0, pm.after_end);
                    out.push((pm, ctx));
                }
            }
            prev = Some(m);
            prev_slice = word;
        }
        if let Some(pm) = prev {
            let ctx = (prev_slice.0, pm.after_end);
            out.push((pm, ctx));
        }
        out
    }

    /// `_slices_from_text`.
    fn slices_from_text(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut last_break = 0;
        for (m, (a, b)) in Self::potential_end_contexts(text) {
            if self.text_contains_sentbreak(&text[a..b]) {
                out.push((last_break, m.start + 1));
                last_break = m.next_tok.unwrap_or(m.start + 1);
            }
        }
        out.push((last_break, text.trim_end_matches(py_space).len()));
        out
    }

    /// `_realign_boundaries`.
    fn realign_boundaries(&self, text: &str, slices: &[(usize, usize)]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut realign = 0;
        for (k, &(a, b)) in slices.iter().enumerate() {
            let s1 = (a + realign, b);
            // The last slice is never realigned.
            let next = slices.get(k + 1);
            let m = next.and_then(|s2| realignment(py_slice(text, s2.0, s2.1)).map(|m| (s2.0, m)));
            if let Some((s2_start, (quotes, len))) = m {
                out.push((s1.0, s2_start + quotes));
                realign = len;
            } else {
                realign = 0;
                if !py_slice(text, s1.0, s1.1).is_empty() {
                    out.push(s1);
                }
            }
        }
        out
    }

    /// `text_contains_sentbreak`: a sentence break before the last token.
    fn text_contains_sentbreak(&self, text: &str) -> bool {
        let mut toks: Vec<Tok> = text
            .split('\n')
            .filter(|l| !py_strip(l).is_empty())
            .flat_map(word_tokenize)
            .map(Tok::new)
            .collect();
        for t in &mut toks {
            self.first_pass(t);
        }
        for i in 0..toks.len().saturating_sub(1) {
            let (a, b) = toks.split_at_mut(i + 1);
            self.second_pass(&mut a[i], &b[0]);
            if a[i].sentbreak {
                return true;
            }
        }
        false
    }

    /// `_first_pass_annotation`.
    fn first_pass(&self, t: &mut Tok) {
        let tok = t.tok;
        if matches!(tok, "." | "?" | "!") {
            t.sentbreak = true;
        } else if t.is_ellipsis() {
            t.ellipsis = true;
        } else if t.period_final && !tok.ends_with("..") {
            let lower = tok[..tok.len() - 1].to_lowercase();
            let abbrevs = &self.params.abbrev_types;
            if abbrevs.contains(&lower)
                || lower
                    .rsplit('-')
                    .next()
                    .is_some_and(|s| abbrevs.contains(s))
            {
                t.abbr = true;
            } else {
                t.sentbreak = true;
            }
        }
    }

    /// `_second_pass_annotation`.
    fn second_pass(&self, t1: &mut Tok, t2: &Tok) {
        if !t1.period_final {
            return;
        }
        let p = &self.params;
        let typ = t1.type_no_period().to_string();
        let next_typ = t2.type_no_sentperiod();
        let is_initial = t1.is_initial();
        if !p.collocations.is_empty()
            && p.collocations
                .contains(&(typ.clone(), next_typ.to_string()))
        {
            t1.sentbreak = false;
            t1.abbr = true;
            return;
        }
        if (t1.abbr || t1.ellipsis) && !is_initial {
            if self.ortho_heuristic(t2) == Some(true) {
                t1.sentbreak = true;
                return;
            }
            if t2.first_upper() && p.sent_starters.contains(next_typ) {
                t1.sentbreak = true;
                return;
            }
        }
        if is_initial || typ == NUMBER {
            let starter = self.ortho_heuristic(t2);
            if starter == Some(false) {
                t1.sentbreak = false;
                t1.abbr = true;
                return;
            }
            let ctx = p.ortho_context.get(next_typ).copied().unwrap_or(0);
            if starter.is_none() && is_initial && t2.first_upper() && ctx & ORTHO_LC == 0 {
                t1.sentbreak = false;
                t1.abbr = true;
            }
        }
    }

    /// `_ortho_heuristic`: whether `t` starts a sentence (`None`: unknown).
    fn ortho_heuristic(&self, t: &Tok) -> Option<bool> {
        if matches!(t.tok, ";" | ":" | "," | "." | "!" | "?") {
            return Some(false);
        }
        let ctx = self
            .params
            .ortho_context
            .get(t.type_no_sentperiod())
            .copied()
            .unwrap_or(0);
        if t.first_upper() && ctx & ORTHO_LC != 0 && ctx & ORTHO_MID_UC == 0 {
            return Some(true);
        }
        if t.first_lower() && (ctx & ORTHO_UC != 0 || ctx & ORTHO_BEG_LC == 0) {
            return Some(false);
        }
        None
    }
}

// SentenceSplitter

/// LlamaIndex's `DEFAULT_PARAGRAPH_SEP`.
pub const PARAGRAPH_SEP: &str = "\n\n\n";

/// LlamaIndex's `CHUNKING_REGEX` (the secondary, sub-sentence split).
pub const CHUNKING_REGEX: &str = "[^,.;。？！]+[,.;。？！]?|[,.;。？！]";

fn phrase_end(c: char) -> bool {
    matches!(c, ',' | '.' | ';' | '。' | '？' | '！')
}

/// `re.findall(CHUNKING_REGEX, text)`.
fn split_by_chunking_regex(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let mut n = if phrase_end(c) {
            0
        } else {
            rest.len() - rest.trim_start_matches(|c| !phrase_end(c)).len()
        };
        if let Some(p) = rest[n..].chars().next().filter(|&p| phrase_end(p)) {
            n += p.len_utf8();
        }
        out.push(rest[..n].to_string());
        rest = &rest[n..];
    }
    out
}

/// `split_text_keep_separator`: the separator kept in front of every part but the
/// first; empty parts dropped.
fn split_keep_sep(text: &str, sep: &str) -> Vec<String> {
    let mut parts = text.split(sep);
    let first = parts.next().map(String::from);
    let rest = parts.map(|s| format!("{sep}{s}"));
    first
        .into_iter()
        .chain(rest)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `_Split`: (text, is_sentence, token_size).
type Split = (String, bool, usize);

/// A sentence splitter.
pub struct SentenceSplitter<'a> {
    pub chunk_size: usize,
    pub chunk_overlap: usize,
    count: &'a Counter<'a>,
    punkt: Punkt,
}

impl<'a> SentenceSplitter<'a> {
    /// A splitter of `chunk_size` tokens with `chunk_overlap` overlap (at most
    /// `chunk_size`: LlamaIndex refuses more), counting with `count`, and
    /// LlamaIndex's untrained Punkt sentence tokenizer.
    pub fn new(chunk_size: usize, chunk_overlap: usize, count: &'a Counter<'a>) -> Self {
        Self {
            chunk_size,
            chunk_overlap: chunk_overlap.min(chunk_size),
            count,
            punkt: Punkt::default(),
        }
    }

    /// The same splitter with another sentence tokenizer.
    pub fn with_punkt(mut self, punkt: Punkt) -> Self {
        self.punkt = punkt;
        self
    }

    /// Split `text` into chunks (an empty text gives one empty chunk). Fails when a
    /// single character is over `chunk_size` tokens.
    pub fn split_text(&self, text: &str) -> Result<Vec<String>> {
        if text.is_empty() {
            return Ok(vec![String::new()]);
        }
        let mut splits = Vec::new();
        self.split(text, &mut splits)?;
        self.merge(&splits)
    }

    /// `_get_splits_by_fns`: the first split function that splits.
    fn splits_by_fns(&self, text: &str) -> (Vec<String>, bool) {
        let by_para = split_keep_sep(text, PARAGRAPH_SEP);
        if by_para.len() > 1 {
            return (by_para, true);
        }
        let by_sentence = self.punkt.sentences(text);
        if by_sentence.len() > 1 {
            return (by_sentence.into_iter().map(String::from).collect(), true);
        }
        let by_phrase = split_by_chunking_regex(text);
        if by_phrase.len() > 1 {
            return (by_phrase, false);
        }
        let by_word = split_keep_sep(text, " ");
        if by_word.len() > 1 {
            return (by_word, false);
        }
        (text.chars().map(String::from).collect(), false)
    }

    /// `_split`: pieces of at most `chunk_size` tokens (but indivisible ones).
    fn split(&self, text: &str, out: &mut Vec<Split>) -> Result<()> {
        let tokens = (self.count)(text)?;
        if tokens <= self.chunk_size {
            out.push((text.to_string(), true, tokens));
            return Ok(());
        }
        let (splits, is_sentence) = self.splits_by_fns(text);
        let single = splits.len() == 1;
        for s in splits {
            let tokens = (self.count)(&s)?;
            if tokens <= self.chunk_size || single {
                out.push((s, is_sentence, tokens));
            } else {
                self.split(&s, out)?;
            }
        }
        Ok(())
    }

    /// `_merge` and `_postprocess_chunks`.
    fn merge(&self, splits: &[Split]) -> Result<Vec<String>> {
        let (size, overlap) = (self.chunk_size, self.chunk_overlap);
        let mut chunks: Vec<String> = Vec::new();
        let mut cur: VecDeque<(&str, usize)> = VecDeque::new();
        let mut cur_len = 0;
        let mut new_chunk = true;
        let mut close = |cur: &mut VecDeque<(&str, usize)>, cur_len: &mut usize| {
            chunks.push(cur.iter().map(|c| c.0).collect());
            let last = std::mem::take(cur);
            *cur_len = 0;
            for &(s, n) in last.iter().rev() {
                if *cur_len + n > overlap {
                    break;
                }
                *cur_len += n;
                cur.push_front((s, n));
            }
        };
        let mut i = 0;
        while i < splits.len() {
            let (text, is_sentence, tokens) = (&splits[i].0, splits[i].1, splits[i].2);
            if tokens > size {
                return Err(Error::Invalid("Single token exceeded chunk size".into()));
            }
            if cur_len + tokens > size && !new_chunk {
                close(&mut cur, &mut cur_len);
                new_chunk = true;
                continue;
            }
            if new_chunk {
                while cur_len + tokens > size {
                    let Some((_, n)) = cur.pop_front() else { break };
                    cur_len -= n;
                }
            }
            if is_sentence || cur_len + tokens <= size || new_chunk {
                cur_len += tokens;
                cur.push_back((text, tokens));
                i += 1;
                new_chunk = false;
            } else {
                close(&mut cur, &mut cur_len);
                new_chunk = true;
            }
        }
        if !new_chunk {
            chunks.push(cur.iter().map(|c| c.0).collect());
        }
        Ok(chunks
            .iter()
            .map(|c| py_strip(c))
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::synth::splitter::count_chars;

    #[test]
    fn sentences_as_llamaindex_splits_them() {
        let p = Punkt::default();
        let t = "See e.g. Fig. 3 for Mr. Smith. He said so.  Then U.S. goes.";
        let want = [
            "See e.g. ",
            "Fig. ",
            "3 for Mr. ",
            "Smith. ",
            "He said so.  ",
            "Then U.S. ",
            "goes.",
        ];
        assert_eq!(p.sentences(t), want);
        assert_eq!(
            p.sentences("Very bad acting!!! I promise."),
            ["Very bad acting!!! ", "I promise."]
        );
        assert_eq!(p.sentences("(Sent1.) Sent2."), ["(Sent1.) ", "Sent2."]);
        assert_eq!(
            p.sentences("J. Smith went home. a. b. He left... Then he came back."),
            [
                "J. Smith went home. ",
                "a. b. He left... Then he came back."
            ]
        );
        assert!(p.sentences("  \n ").is_empty());
    }

    #[test]
    fn merges_with_overlap_and_falls_back_to_phrases() {
        let sp = SentenceSplitter::new(20, 8, &count_chars);
        let t = "One two three. Four five six seven. Eight, nine; ten. Eleven twelve thirteen fourteen.";
        let want = [
            "One two three.",
            "Four five six seven.",
            "Eight, nine; ten.",
            "Eleven twelve",
            "twelve thirteen",
            "fourteen.",
        ];
        assert_eq!(sp.split_text(t).unwrap(), want);
        let sp = SentenceSplitter::new(10, 0, &count_chars);
        let t = "中文句子。这是第二句！第三句？还有，逗号；分号。";
        assert_eq!(
            sp.split_text(t).unwrap(),
            ["中文句子。", "这是第二句！第三句？", "还有，逗号；分号。"]
        );
        assert_eq!(sp.split_text("").unwrap(), [""]);
        assert!(sp.split_text("   ").unwrap().is_empty());
    }

    #[test]
    fn english_model_loads() {
        let p = PunktParams::english();
        assert!(p.abbrev_types.contains("u.s") && p.sent_starters.contains("he"));
        assert!(p
            .collocations
            .contains(&("##number##".to_string(), "international".to_string())));
        assert_eq!(p.ortho_context.get("coverage"), Some(&36));
    }

    #[derive(serde::Deserialize)]
    struct Case {
        source: String,
        text: String,
        chunk_size: usize,
        chunk_overlap: usize,
        chunks: Vec<String>,
        sentences: Option<Vec<String>>,
        english_spans: Option<Vec<(usize, usize)>>,
    }

    /// tests/data/sentence_splitter_llamaindex.jsonl, from
    /// scripts/llamaindex_sentence_splitter.py (llama-index-core 0.14.25, nltk 3.10).
    #[test]
    fn matches_llamaindex_sentence_splitter() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/sentence_splitter_llamaindex.jsonl"
        );
        let data = std::fs::read_to_string(path).unwrap();
        let english = Punkt::new(PunktParams::english());
        let (mut n, mut failed) = (0, Vec::new());
        for (line, rec) in data.lines().enumerate() {
            let c: Case = serde_json::from_str(rec).unwrap();
            let what = format!(
                "line {} ({}, {}/{})",
                line + 1,
                c.source,
                c.chunk_size,
                c.chunk_overlap
            );
            n += 1;
            if let Some(want) = &c.sentences {
                let got = Punkt::default().sentences(&c.text);
                if got != *want {
                    let k = got
                        .iter()
                        .zip(want)
                        .position(|(a, b)| a != b)
                        .unwrap_or(got.len().min(want.len()));
                    failed.push(format!(
                        "{what}: sentence {k}: {:?} != {:?}",
                        got.get(k),
                        want.get(k)
                    ));
                }
            }
            if let Some(want) = &c.english_spans {
                let cp = |b: usize| c.text[..b].chars().count();
                let got: Vec<_> = english
                    .span_tokenize(&c.text)
                    .into_iter()
                    .map(|(a, b)| (cp(a), cp(b)))
                    .collect();
                if got != *want {
                    let k = got
                        .iter()
                        .zip(want)
                        .position(|(a, b)| a != b)
                        .unwrap_or(got.len().min(want.len()));
                    failed.push(format!(
                        "{what}: english span {k}: {:?} != {:?}",
                        got.get(k),
                        want.get(k)
                    ));
                }
            }
            let got = SentenceSplitter::new(c.chunk_size, c.chunk_overlap, &count_chars)
                .split_text(&c.text)
                .unwrap();
            if got != c.chunks {
                let k = got
                    .iter()
                    .zip(&c.chunks)
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.len().min(c.chunks.len()));
                failed.push(format!(
                    "{what}: chunk {k}: {:?} != {:?}",
                    got.get(k),
                    c.chunks.get(k)
                ));
            }
        }
        assert!(n > 400, "{n} cases");
        assert!(
            failed.is_empty(),
            "{} of {n} cases differ; first: {}",
            failed.len(),
            failed[0]
        );
    }
}
