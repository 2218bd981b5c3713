//! Query generation: the LLM writes variants of the user's question (RAG-fusion),
//! with LlamaIndex's `QueryFusionRetriever` prompt.

use std::collections::BTreeMap;

use crate::cpu::Cancel;
use crate::llm::{GenParams, Llm};
use crate::Result;

/// LlamaIndex's `QUERY_GEN_PROMPT`, with `{num_queries}` and `{query}`.
pub const QUERY_GEN_PROMPT: &str = "You are a helpful assistant that generates multiple \
search queries based on a single input query. Generate {num_queries} search queries, one \
on each line, related to the following input query:\nQuery: {query}\nQueries:\n";

/// Tokens allowed per generated query.
const TOKENS_PER_QUERY: usize = 40;

/// The prompt asking for `num_queries − 1` variants (as LlamaIndex formats it).
pub fn prompt(query: &str, num_queries: usize) -> String {
    prompt_from(None, query, num_queries, &BTreeMap::new())
}

/// The prompt from `template` (LlamaIndex's when `None`), filled in one pass as
/// Python's `str.format` does: `{num_queries}` (the variants wanted), `{query}`, and
/// the template variables `vars`; other braces stay as written.
pub fn prompt_from(
    template: Option<&str>,
    query: &str,
    num_queries: usize,
    vars: &BTreeMap<String, String>,
) -> String {
    let template = template.unwrap_or(QUERY_GEN_PROMPT);
    let n = num_queries.saturating_sub(1).to_string();
    let value = |name: &str| -> Option<&str> {
        match name {
            "query" => Some(query),
            "num_queries" => Some(n.as_str()),
            other => vars.get(other).map(String::as_str),
        }
    };
    let mut out = String::with_capacity(template.len() + query.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find('}')
            .and_then(|close| Some((close, value(&after[..close])?)))
        {
            Some((close, v)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Generation parameters for asking `want` variants.
pub fn params(want: usize) -> GenParams {
    GenParams {
        max_tokens: TOKENS_PER_QUERY * want + 16,
        repeat_penalty: 1.1,
        ..GenParams::default()
    }
}

/// Whether `text` (generated so far) holds `want` usable variants on complete lines:
/// generation may stop there.
pub fn enough(text: &str, query: &str, want: usize) -> bool {
    let done = text.ends_with('\n') || text.matches('\n').count() > want;
    done && parse_queries(text, query, want).len() >= want
}

/// The user's query followed by up to `num_queries − 1` generated ones.
pub fn generate_queries(
    llm: &dyn Llm,
    query: &str,
    num_queries: usize,
    cancel: &Cancel,
) -> Result<Vec<String>> {
    generate_queries_with(llm, None, query, num_queries, cancel)
}

/// [`generate_queries`] with a custom prompt template ([`prompt_from`]).
pub fn generate_queries_with(
    llm: &dyn Llm,
    template: Option<&str>,
    query: &str,
    num_queries: usize,
    cancel: &Cancel,
) -> Result<Vec<String>> {
    let want = num_queries.saturating_sub(1);
    if want == 0 {
        return Ok(vec![query.to_string()]);
    }
    let params = params(want);
    let mut text = String::new();
    // Stop as soon as enough complete lines are in.
    let mut sink = |piece: &str| -> Result<bool> {
        text.push_str(piece);
        Ok(!enough(&text, query, want))
    };
    let prompt = prompt_from(template, query, num_queries, &BTreeMap::new());
    let completion = llm.complete(&prompt, &params, cancel, &mut sink)?;
    let text = if text.is_empty() {
        completion.text
    } else {
        text
    };
    let mut out = vec![query.to_string()];
    out.extend(parse_queries(&text, query, want));
    Ok(out)
}

/// The generated queries in `text`, cleaned: one per line, numbering and bullets
/// removed (LlamaIndex also splits "1. a 2. b" on the numbers, so do we, without
/// breaking decimals such as 1.5), surrounding quotes dropped, blank lines,
/// headings ending in `:`, repeats and the original query skipped; at most `max`.
pub fn parse_queries(text: &str, original: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
    for line in text.lines() {
        for part in split_numbered(line) {
            let q = clean(part);
            if q.is_empty() || q.ends_with(':') || same(&q, original) {
                continue;
            }
            if out.iter().any(|o| same(o, &q)) {
                continue;
            }
            out.push(q);
            if out.len() == max {
                return out;
            }
        }
    }
    out
}

/// Split a line at list numbers ("1." at the start or after a space, followed by a
/// space or the end).
fn split_numbered(line: &str) -> Vec<&str> {
    let b = line.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        let at_word = i == 0 || b[i - 1].is_ascii_whitespace();
        if at_word && b[i].is_ascii_digit() {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j < b.len() && b[j] == b'.' && (j + 1 == b.len() || b[j + 1].is_ascii_whitespace()) {
                parts.push(&line[start..i]);
                start = j + 1;
                i = j + 1;
                continue;
            }
            i = j;
            continue;
        }
        i += 1;
    }
    parts.push(&line[start..]);
    parts
}

/// Strip bullets, "1)" numbering, a "Query:" label and quotes.
fn clean(s: &str) -> String {
    let mut s = s.trim();
    loop {
        let before = s;
        s = s.trim_start_matches(['-', '*', '•', '·']).trim_start();
        // "1)" or "1:" numbering.
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && s[digits..].starts_with([')', ':']) {
            s = s[digits + 1..].trim_start();
        }
        for label in ["query", "search query"] {
            if s.len() > label.len()
                && s.is_char_boundary(label.len())
                && s[..label.len()].eq_ignore_ascii_case(label)
            {
                let rest = s[label.len()..].trim_start();
                let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
                if let Some(r) = rest.strip_prefix(':') {
                    s = r.trim_start();
                }
            }
        }
        if s == before {
            break;
        }
    }
    let s = s.trim();
    let s = s
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .unwrap_or(s);
    s.trim().to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::llm::{Completion, StopReason, TokenSink};
    use std::sync::Mutex;

    #[test]
    fn prompt_is_llamaindex_s_with_n_minus_one() {
        assert_eq!(
            prompt("what is apt?", 4),
            "You are a helpful assistant that generates multiple search queries based on a \
             single input query. Generate 3 search queries, one on each line, related to the \
             following input query:\nQuery: what is apt?\nQueries:\n"
        );
    }

    #[test]
    fn parse_cleans_numbering_blanks_and_repeats() {
        let text =
            "1. How to hold a package\n\n2) apt-mark hold usage\n- \"pin version 1.5 in apt\"\n\
                    Query 4: hold a package\nQueries:\n";
        assert_eq!(
            parse_queries(text, "keep apt from upgrading", 10),
            vec![
                "How to hold a package",
                "apt-mark hold usage",
                "pin version 1.5 in apt",
                "hold a package"
            ]
        );
        assert_eq!(
            parse_queries("1. a b 2. c d 3. keep apt", "keep apt", 10),
            vec!["a b", "c d"]
        );
        assert_eq!(parse_queries("x\ny\nz", "q", 2), vec!["x", "y"]);
        assert!(parse_queries("\n \n1.\n", "q", 3).is_empty());
    }

    /// An LLM that streams a fixed answer and records the prompt.
    struct Scripted {
        answer: &'static str,
        prompts: Mutex<Vec<String>>,
    }

    impl Llm for Scripted {
        fn context_window(&self) -> usize {
            2048
        }
        fn count_tokens(&self, text: &str) -> Result<usize> {
            Ok(text.split_whitespace().count())
        }
        fn complete(
            &self,
            prompt: &str,
            _params: &GenParams,
            _cancel: &Cancel,
            sink: &mut TokenSink<'_>,
        ) -> Result<Completion> {
            self.prompts.lock().unwrap().push(prompt.to_string());
            let mut text = String::new();
            let mut stop = StopReason::EndToken;
            for piece in self.answer.split_inclusive(' ') {
                text.push_str(piece);
                if !sink(piece)? {
                    stop = StopReason::Sink;
                    break;
                }
            }
            Ok(Completion {
                text,
                prompt_tokens: 0,
                output_tokens: 0,
                stop,
                prompt_secs: 0.0,
                gen_secs: 0.0,
                draft: None,
            })
        }
    }

    #[test]
    fn generation_keeps_the_original_first_and_stops_when_enough() {
        let llm = Scripted {
            answer: "1. apt hold package\n2. apt-mark unhold\n3. one too many\n4. more\n",
            prompts: Mutex::new(Vec::new()),
        };
        let qs = generate_queries(&llm, "keep a package", 3, &Cancel::new()).unwrap();
        assert_eq!(
            qs,
            vec!["keep a package", "apt hold package", "apt-mark unhold"]
        );
        assert_eq!(llm.prompts.lock().unwrap()[0], prompt("keep a package", 3));
        // One query asked for: no LLM call.
        let qs = generate_queries(&llm, "q", 1, &Cancel::new()).unwrap();
        assert_eq!(qs, vec!["q"]);
        assert_eq!(llm.prompts.lock().unwrap().len(), 1);
    }
}
