//! What a sentence claims, as terms: the BM25 analyzer's words (lowercased, stemmed,
//! stop words out) and CJK bigrams, less the words any answer uses to frame a claim
//! ("based on the context", "根据文档"); the numbers it states; the `[N]` markers it
//! cites. And how much of a claim a passage holds: the share of the claim's terms,
//! each weighted by how rare it is among the sources, that the passage contains.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use crate::text::analyzer::analyze;

/// Words that frame a claim rather than make it; they count neither way.
const FRAMING: &str = "answer answers answered question questions context contexts information \
    provided provide provides based base according source sources document documents text \
    passage passages mention mentioned mentions state states stated says said described \
    describes following follows hope helps help note noted here also however therefore thus \
    yes please sure let know summary overall specifically given example instance way ways use \
    used uses using can may might must need needs also further additionally finally first \
    second third one simply just like information details detail refer refers see \
    found find look looking below above shown show shows
    根据 文档 提供 信息 上下文 以下 如下 总之 总结 可以 使用 需要 如果 我们 你可以 通过 进行";

static FRAMING_TERMS: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let mut set = HashSet::new();
    analyze(FRAMING, |t| {
        set.insert(t.to_string());
    });
    set
});

/// A sentence's terms, numbers and citation markers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claim {
    /// Distinct content terms.
    pub terms: Vec<String>,
    /// Distinct numbers as written (`21`, `1.5`, `2018`).
    pub numbers: Vec<String>,
    /// The `[N]` markers, in order, without repeats.
    pub cited: Vec<usize>,
    /// Names the claim turns on, each as its analyzer terms: commands (`\ch`), code
    /// (`` `apt-mark hold` ``), and words written as names (`pdfTeX`, `Type1`, `DVI`).
    /// Swapping one for another is the typical wrong claim, so each must be there.
    pub names: Vec<Vec<String>>,
    /// Whether it says no (not, never, 不, 没有): a claim and its negation share
    /// every other word.
    pub negated: bool,
}

/// The distinct terms of `text` that can carry a claim: analyzer terms, less framing
/// words, less single CJK characters (their bigrams carry the meaning; a character
/// alone matches almost any Chinese passage).
pub fn content_terms(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    analyze(text, |t| {
        let single_cjk = t.chars().count() == 1 && t.chars().all(crate::text::is_cjk);
        if !single_cjk && !FRAMING_TERMS.contains(t) && seen.insert(t.to_string()) {
            out.push(t.to_string());
        }
    });
    out
}

/// The terms of `text` for matching (every analyzer term, CJK characters too).
pub fn all_terms(text: &str) -> HashSet<String> {
    let mut set = HashSet::new();
    analyze(text, |t| {
        set.insert(t.to_string());
    });
    set
}

/// The numbers written in `text`: runs of digits, with inner `.` or `,` between
/// digits (`1.5`, `10,000`), not part of a word (`h2o`, `utf8` are words).
pub fn numbers(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let word_before = i > 0 && (chars[i - 1].is_alphabetic() || chars[i - 1] == '_');
        if c.is_ascii_digit() && !word_before {
            let mut j = i;
            let mut s = String::new();
            while j < chars.len() {
                let d = chars[j];
                let inner =
                    matches!(d, '.' | ',') && j + 1 < chars.len() && chars[j + 1].is_ascii_digit();
                if d.is_ascii_digit() || inner {
                    s.push(d);
                } else {
                    break;
                }
                j += 1;
            }
            let word_after = j < chars.len() && (chars[j].is_alphabetic() || chars[j] == '_');
            if !word_after && !out.contains(&s) {
                out.push(s);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// `text` with its citation markers (`[1]`, `[2, 3]`, `[1][2]`) taken out, and the
/// numbers they cite.
pub fn strip_citations(text: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut cited = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find(']');
        let inner = close.map(|c| &after[..c]);
        let nums: Option<Vec<usize>> = inner.and_then(|s| {
            if s.trim().is_empty() {
                return None;
            }
            s.split(',')
                .map(|n| n.trim().parse::<usize>().ok())
                .collect()
        });
        match (close, nums) {
            (Some(c), Some(ns)) => {
                for n in ns {
                    if !cited.contains(&n) {
                        cited.push(n);
                    }
                }
                rest = &after[c + 1..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (out, cited)
}

/// `text` without a leading list number ("2. ", "3) ").
fn without_list_number(text: &str) -> &str {
    let t = text.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &t[digits..];
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return r;
        }
    }
    t
}

/// The names in `text` (see [`Claim::names`]), each as its analyzer terms.
pub fn names(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut push = |name: &str| {
        let mut t = Vec::new();
        analyze(name, |x| t.push(x.to_string()));
        if !t.is_empty() && !out.contains(&t) {
            out.push(t);
        }
    };
    // Code spans.
    let mut parts = text.split('`');
    parts.next();
    while let (Some(code), Some(_)) = (parts.next(), parts.next()) {
        if code.chars().count() <= 60 {
            push(code);
        }
    }
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\\' && chars.get(i + 1).is_some_and(|c| c.is_ascii_alphabetic()) {
            let j = (i + 1..chars.len())
                .find(|&j| !chars[j].is_ascii_alphabetic() && chars[j] != '@')
                .unwrap_or(chars.len());
            push(&chars[i + 1..j].iter().collect::<String>());
            i = j;
            continue;
        }
        if chars[i].is_ascii_alphanumeric() && (i == 0 || !chars[i - 1].is_ascii_alphanumeric()) {
            let j = (i..chars.len())
                .find(|&j| !chars[j].is_ascii_alphanumeric())
                .unwrap_or(chars.len());
            let w: String = chars[i..j].iter().collect();
            let upper_inside = w.chars().skip(1).any(|c| c.is_ascii_uppercase());
            let letters = w.chars().filter(char::is_ascii_alphabetic).count();
            let digits = w.chars().filter(char::is_ascii_digit).count();
            let after_backslash = i > 0 && chars[i - 1] == '\\';
            if !after_backslash && letters >= 2 && (upper_inside || (digits > 0 && letters > 0)) {
                push(&w);
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Whether `text` says no.
pub fn negated(text: &str) -> bool {
    const EN: &[&str] = &[
        "not", "no", "never", "cannot", "without", "neither", "nor", "none",
    ];
    let lower = text.to_lowercase();
    let en = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .any(|w| EN.contains(&w) || w.ends_with("n't"));
    en || ["不", "没", "无法", "未", "非"]
        .iter()
        .any(|z| text.contains(z))
}

impl Claim {
    /// What `sentence` claims.
    pub fn of(sentence: &str) -> Self {
        let (plain, cited) = strip_citations(sentence);
        // A list number at the start is not a claim's number.
        let plain = without_list_number(&plain);
        Claim {
            terms: content_terms(plain),
            numbers: numbers(plain),
            cited,
            names: names(plain),
            negated: negated(plain),
        }
    }

    /// Whether the sentence claims nothing checkable.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.numbers.is_empty()
    }

    /// Whether `sentence` (with this claim) only leads into what follows: a few words
    /// ending in a colon ("The steps are:", "结论如下：").
    pub fn is_lead_in(&self, sentence: &str) -> bool {
        let s = sentence.trim_end();
        (s.ends_with(':') || s.ends_with('：')) && self.numbers.is_empty() && self.terms.len() <= 4
    }
}

/// Term rarity over a set of passages: a term in few of them weighs more; a term in
/// none (a word the sources never use) weighs most.
#[derive(Debug, Clone, Default)]
pub struct Weights {
    df: HashMap<String, usize>,
    n: usize,
}

impl Weights {
    /// Rarity over `passages` (each a set of terms).
    pub fn over<'a>(passages: impl IntoIterator<Item = &'a HashSet<String>>) -> Self {
        let mut df: HashMap<String, usize> = HashMap::new();
        let mut n = 0;
        for p in passages {
            n += 1;
            for t in p {
                *df.entry(t.clone()).or_default() += 1;
            }
        }
        Weights { df, n }
    }

    /// The weight of `term`: `1 + ln((n + 1) / (df + 1))`.
    pub fn of(&self, term: &str) -> f32 {
        let df = self.df.get(term).copied().unwrap_or(0);
        1.0 + ((self.n as f32 + 1.0) / (df as f32 + 1.0)).ln()
    }
}

/// The weighted share of `terms` that `passage` holds (1 when there are no terms).
pub fn coverage(terms: &[String], passage: &HashSet<String>, w: &Weights) -> f32 {
    let mut total = 0.0;
    let mut held = 0.0;
    for t in terms {
        let x = w.of(t);
        total += x;
        if passage.contains(t) {
            held += x;
        }
    }
    if total > 0.0 {
        held / total
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_leave_out_framing_words_and_markers() {
        let c = Claim::of("Based on the context, use \\ch{H2O} for water [2].");
        assert_eq!(c.terms, vec!["ch", "h2o", "water"]);
        assert_eq!(c.cited, vec![2]);
        assert!(Claim::of("Here is the answer:").is_empty());
        let c = Claim::of("根据文档，可以用 \\iffalse 包起来 [1, 3]。");
        assert!(c.terms.contains(&"iffals".to_string()) && c.terms.contains(&"包起".to_string()));
        assert!(!c.terms.contains(&"根据".to_string()) && !c.terms.contains(&"包".to_string()));
        assert_eq!(c.cited, vec![1, 3]);
    }

    #[test]
    fn names_are_commands_code_and_words_written_as_names() {
        assert_eq!(
            names("Use `apt-mark hold` or \\CJKindent with pdfTeX, Type1 fonts and DVI files, not foo."),
            vec![
                vec!["apt".to_string(), "mark".into(), "hold".into()],
                vec!["cjkindent".to_string()],
                vec!["pdftex".to_string()],
                vec!["type1".to_string()],
                vec!["dvi".to_string()],
            ]
        );
        assert!(negated("This is not so") && negated("没有括号") && !negated("It is so."));
        assert_eq!(Claim::of("2. Edit the file").numbers, Vec::<String>::new());
    }

    #[test]
    fn numbers_are_whole_and_not_inside_words() {
        assert_eq!(
            numbers("H2O weighs 18.02 g, 10,000 times; utf8 v2 2018."),
            vec!["18.02", "10,000", "2018"]
        );
        assert_eq!(strip_citations("a [x] b [12] c [").0, "a [x] b  c [");
    }

    #[test]
    fn rare_terms_weigh_more_and_coverage_is_their_share() {
        let p1 = all_terms("the resonance arrow");
        let p2 = all_terms("the equilibrium arrow");
        let w = Weights::over([&p1, &p2]);
        assert!(w.of("resonanc") > w.of("arrow"));
        assert!(w.of("unseen") > w.of("resonanc"));
        let terms = vec!["resonanc".to_string(), "arrow".to_string()];
        assert_eq!(coverage(&terms, &p1, &w), 1.0);
        let c2 = coverage(&terms, &p2, &w);
        assert!(c2 > 0.0 && c2 < 0.5, "{c2}");
    }
}
