//! Structured answer filtering's answer, as it streams: the text of the `answer`
//! string inside `{"query_satisfied": …, "answer": "…"}`, unescaped as the model's
//! pieces arrive, and the `query_satisfied` verdict once it has been read.
//!
//! The local model's constrained decoding never writes a backslash inside the string,
//! but a server's JSON mode may (`\n`, `\"`, `\u00e9`, surrogate pairs); all of JSON's
//! escapes are decoded, and an escape split across pieces waits for its end.

/// Where the reader is in the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Outside any string value we care about.
    Scan,
    /// Inside the `answer` string.
    Answer,
}

/// Reads a structured answer piece by piece (see the module docs).
#[derive(Debug, Clone)]
pub struct AnswerStream {
    state: State,
    /// Text seen while scanning (keys, the boolean), kept until it is understood.
    scanned: String,
    /// An escape sequence not yet complete (starts with `\`).
    pending: String,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
    satisfied: Option<bool>,
    /// The `answer` string has been read to its end.
    answered: bool,
}

impl Default for AnswerStream {
    fn default() -> Self {
        Self::new()
    }
}

impl AnswerStream {
    pub fn new() -> Self {
        Self {
            state: State::Scan,
            scanned: String::new(),
            pending: String::new(),
            high: None,
            satisfied: None,
            answered: false,
        }
    }

    /// The verdict, once `"query_satisfied": true|false` has been read.
    pub fn satisfied(&self) -> Option<bool> {
        self.satisfied
    }

    /// Feed the next piece of output; returns the answer text it completes (unescaped).
    pub fn push(&mut self, piece: &str) -> String {
        let mut out = String::new();
        for c in piece.chars() {
            match self.state {
                State::Scan if self.answered && self.satisfied.is_some() => {}
                State::Scan => {
                    self.scanned.push(c);
                    self.read_scanned();
                }
                State::Answer => self.answer_char(c, &mut out),
            }
        }
        out
    }

    /// Look at what was scanned: the verdict, and the opening quote of `answer`'s value.
    fn read_scanned(&mut self) {
        let s = &self.scanned;
        if self.satisfied.is_none() {
            if let Some(at) = s.find("\"query_satisfied\"") {
                let rest = s[at + "\"query_satisfied\"".len()..].trim_start();
                if let Some(rest) = rest.strip_prefix(':') {
                    let rest = rest.trim_start();
                    if rest.starts_with("true") {
                        self.satisfied = Some(true);
                    } else if rest.starts_with("false") {
                        self.satisfied = Some(false);
                    }
                }
            }
        }
        if self.answered {
            return;
        }
        if let Some(at) = s.find("\"answer\"") {
            let rest = s[at + "\"answer\"".len()..].trim_start();
            if let Some(rest) = rest.strip_prefix(':') {
                if rest.trim_start().starts_with('"') {
                    self.state = State::Answer;
                    self.scanned.clear();
                }
            }
        }
    }

    fn answer_char(&mut self, c: char, out: &mut String) {
        if self.pending.is_empty() {
            match c {
                '"' => {
                    self.flush_high(out);
                    // The verdict may come after the answer (a server's JSON mode
                    // need not keep the schema's order): scanning goes on.
                    self.answered = true;
                    self.state = State::Scan;
                }
                '\\' => self.pending.push(c),
                c => {
                    self.flush_high(out);
                    out.push(c);
                }
            }
            return;
        }
        self.pending.push(c);
        let p = self.pending.clone();
        let simple = match p.as_str() {
            "\\\"" => Some('"'),
            "\\\\" => Some('\\'),
            "\\/" => Some('/'),
            "\\b" => Some('\u{8}'),
            "\\f" => Some('\u{c}'),
            "\\n" => Some('\n'),
            "\\r" => Some('\r'),
            "\\t" => Some('\t'),
            _ => None,
        };
        if let Some(ch) = simple {
            self.flush_high(out);
            out.push(ch);
            self.pending.clear();
            return;
        }
        if p.starts_with("\\u") {
            if p.len() < 6 {
                return;
            }
            self.pending.clear();
            let Ok(unit) = u16::from_str_radix(&p[2..6], 16) else {
                return;
            };
            match (self.high.take(), unit) {
                (Some(h), 0xDC00..=0xDFFF) => {
                    let code =
                        0x10000 + ((u32::from(h) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                    out.extend(char::from_u32(code));
                }
                (h, 0xD800..=0xDBFF) => {
                    if h.is_some() {
                        out.push('\u{fffd}');
                    }
                    self.high = Some(unit);
                }
                (h, u) => {
                    if h.is_some() {
                        out.push('\u{fffd}');
                    }
                    out.push(char::from_u32(u32::from(u)).unwrap_or('\u{fffd}'));
                }
            }
            return;
        }
        // An escape JSON does not have: keep it as written.
        out.push_str(&p);
        self.pending.clear();
    }

    fn flush_high(&mut self, out: &mut String) {
        if self.high.take().is_some() {
            out.push('\u{fffd}');
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn stream(pieces: &[&str]) -> (String, Option<bool>) {
        let mut s = AnswerStream::new();
        let mut out = String::new();
        for p in pieces {
            out.push_str(&s.push(p));
        }
        (out, s.satisfied())
    }

    #[test]
    fn the_answer_streams_as_the_pieces_come() {
        let mut s = AnswerStream::new();
        assert_eq!(s.push("{\"query_satisfied\": "), "");
        assert_eq!(s.satisfied(), None);
        assert_eq!(s.push("true, \"answer\": \""), "");
        assert_eq!(s.satisfied(), Some(true));
        assert_eq!(s.push("The sky"), "The sky");
        assert_eq!(s.push(" is blue"), " is blue");
        assert_eq!(s.push(".\"}"), ".");
        assert_eq!(s.push(" trailing"), "");
    }

    #[test]
    fn escapes_are_decoded_even_when_split() {
        let (a, v) = stream(&[
            "{\"query_satisfied\":false,\"answer\":\"a\\",
            "nb \\\"q\\\" \\u00",
            "e9 \\ud83d",
            "\\ude00\"}",
        ]);
        assert_eq!(a, "a\nb \"q\" é 😀");
        assert_eq!(v, Some(false));
    }

    #[test]
    fn a_verdict_after_the_answer_is_read() {
        let (a, v) = stream(&["{\"answer\": \"x y\", \"query_satisfied\": true}"]);
        assert_eq!(a, "x y");
        assert_eq!(v, Some(true));
    }
}
