//! The BM25 analyzer: text to index terms, the same for chunks and queries.
//!
//! Latin-script (and other spaced) text is split into words of letters and digits,
//! lowercased, stripped of a short English stop list and lightly stemmed (plurals,
//! `-ing`, `-ed`, final `e`), so "upgrading" meets "upgrade". Chinese, Japanese and
//! Korean text has no spaces, so each CJK run is indexed as character unigrams and
//! bigrams: a two-character query such as 宏包 matches its bigram exactly, and
//! single characters still match. Latin words inside Chinese text (`tlmgr 的 dry-run
//! 选项`) are words as anywhere else, full-width letters and digits folded to ASCII.
//!
//! Word segmentation (the jieba-rs dictionary, words alone, with the bigrams, with
//! both, search mode, with a stop list) was measured against this on the corpus's
//! Chinese questions and ranked no better: a question and its page often segment
//! the same idea into different words (中文/英文 against 中英文), where characters
//! and bigrams still meet (README, "Chinese retrieval").

use super::is_cjk;

/// Words too common to help ranking; dropping them also keeps postings small.
const STOP_WORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but", "by",
    "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "him",
    "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our",
    "she", "should", "so", "such", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "was", "we", "were", "what", "when", "where", "which",
    "who", "whom", "why", "will", "with", "would", "you", "your",
];

fn is_stop_word(w: &str) -> bool {
    STOP_WORDS.binary_search(&w).is_ok()
}

/// A light English stemmer: the same stem for the usual inflections of a word.
/// Only all-ASCII-letter words of five or more letters are touched.
pub fn stem(word: &str) -> &str {
    let b = word.as_bytes();
    if b.len() < 5 || !b.iter().all(u8::is_ascii_lowercase) {
        return word;
    }
    let mut w = word;
    // Plurals and third person.
    if w.ends_with("ies") && !w.ends_with("eies") && !w.ends_with("aies") {
        // "queries" -> "queri"; [`analyze`] folds "query" to "queri" too.
        w = &w[..w.len() - 2];
    } else if w.ends_with("sses") {
        w = &w[..w.len() - 2];
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w = &w[..w.len() - 1];
    }
    let mut suffixed = false;
    if w.len() >= 6 && w.ends_with("ing") {
        w = &w[..w.len() - 3];
        suffixed = true;
    } else if w.len() >= 5 && w.ends_with("ed") && !w.ends_with("eed") {
        w = &w[..w.len() - 2];
        suffixed = true;
    }
    let wb = w.as_bytes();
    let n = wb.len();
    if suffixed && n >= 3 && wb[n - 1] == wb[n - 2] && !matches!(wb[n - 1], b'l' | b's' | b'z') {
        // "stopped" -> "stopp" -> "stop"
        w = &w[..n - 1];
    }
    if w.len() >= 4 && w.ends_with('e') {
        w = &w[..w.len() - 1];
    }
    w
}

/// The ASCII letter or digit that a full-width form (ＡＢＣ, ａｂｃ, １２３, as Chinese
/// input methods type them) stands for; any other character unchanged.
fn fold_width(c: char) -> char {
    match c {
        '\u{FF10}'..='\u{FF19}' | '\u{FF21}'..='\u{FF3A}' | '\u{FF41}'..='\u{FF5A}' => {
            char::from_u32(c as u32 - 0xFEE0).unwrap_or(c)
        }
        _ => c,
    }
}

/// Feed the index terms of `text` to `emit`, in order.
pub fn analyze(text: &str, mut emit: impl FnMut(&str)) {
    let mut word = String::new();
    let mut term = String::new();
    let mut prev_cjk: Option<char> = None;
    let mut flush = |word: &mut String, emit: &mut dyn FnMut(&str)| {
        if word.is_empty() {
            return;
        }
        if !is_stop_word(word) {
            let s = stem(word);
            term.clear();
            term.push_str(s);
            // Fold a final y to i so "query" meets "queries" (stemmed to "queri").
            if term.len() >= 4 && term.ends_with('y') && term.is_ascii() {
                term.pop();
                term.push('i');
            }
            emit(&term);
        }
        word.clear();
    };
    let mut buf = [0u8; 8];
    for c in text.chars().map(fold_width) {
        if is_cjk(c) {
            flush(&mut word, &mut emit);
            emit(c.encode_utf8(&mut buf));
            if let Some(p) = prev_cjk {
                let mut bigram = String::with_capacity(8);
                bigram.push(p);
                bigram.push(c);
                emit(&bigram);
            }
            prev_cjk = Some(c);
        } else if c.is_alphanumeric() {
            prev_cjk = None;
            for l in c.to_lowercase() {
                word.push(l);
            }
        } else {
            prev_cjk = None;
            flush(&mut word, &mut emit);
        }
    }
    flush(&mut word, &mut emit);
}

/// The index terms of `text` as owned strings (for tests and tools).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    analyze(text, |t| out.push(t.to_string()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn english_words_are_lowercased_stemmed_and_stopped() {
        assert_eq!(
            terms("How do I keep APT from upgrading packages?"),
            vec!["keep", "apt", "upgrad", "packag"]
        );
        assert_eq!(terms("upgrade upgraded upgrades"), vec!["upgrad"; 3]);
        assert_eq!(terms("query queries"), vec!["queri", "queri"]);
        assert_eq!(terms("stopped stopping stop"), vec!["stop"; 3]);
        assert_eq!(terms("class classes"), vec!["class", "class"]);
        assert_eq!(terms(r"\ch{H2O} 1.5-2"), vec!["ch", "h2o", "1", "5", "2"]);
    }

    #[test]
    fn cjk_runs_become_unigrams_and_bigrams() {
        assert_eq!(terms("宏包"), vec!["宏", "包", "宏包"]);
        assert_eq!(
            terms("使用CJK宏包。"),
            vec!["使", "用", "使用", "cjk", "宏", "包", "宏包"]
        );
        // Punctuation breaks a run: no bigram across it.
        assert_eq!(terms("字，距"), vec!["字", "距"]);
        assert_eq!(
            terms("如何注释掉一大段内容？"),
            vec![
                "如", "何", "如何", "注", "何注", "释", "注释", "掉", "释掉", "一", "掉一", "大",
                "一大", "段", "大段", "内", "段内", "容", "内容"
            ]
        );
    }

    #[test]
    fn english_words_inside_chinese_are_words() {
        let want = vec!["tlmgr", "的", "dry", "run", "选", "项", "选项"];
        assert_eq!(terms("tlmgr 的 dry-run 选项"), want);
        // No spaces between the scripts: the same terms.
        assert_eq!(terms("tlmgr的dry-run选项"), want);
        // Full-width letters, as a Chinese input method may type them.
        assert_eq!(terms("ｔｌｍｇｒ 的 ＤＲＹ－ＲＵＮ 选项"), want);
        assert_eq!(
            terms("用LaTeX编译"),
            vec!["用", "latex", "编", "译", "编译"]
        );
        assert_eq!(terms("第２章"), vec!["第", "2", "章"]);
    }
}
