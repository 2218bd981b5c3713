//! Whether a sentence of an answer only says the question again ("Which apt command
//! replaces apt-get dist-upgrade?" — "The apt command replaces apt-get
//! dist-upgrade."). Its words are all in the sources, because they are the
//! question's, so the term check alone would call it supported; it answers nothing.
//!
//! A sentence restates the question when it has content terms, every one of them is
//! a term of the question (stemmed, CJK bigrams), every number it states is in the
//! question, and it does not say no where the question does not. A yes-or-no
//! question is never restated: "Yes, X supports Y" answers "Does X support Y?".

use std::collections::HashSet;

use super::terms::{all_terms, numbers, Claim};

/// Whether `sentence` only restates `question`.
pub fn restates(sentence: &str, question: &str) -> bool {
    if question.trim().is_empty() || yes_or_no(question) {
        return false;
    }
    let claim = Claim::of(sentence);
    if claim.terms.is_empty() {
        return false;
    }
    let asked = Claim::of(question);
    if claim.negated && !asked.negated {
        return false;
    }
    let words = all_terms(question);
    let said: HashSet<String> = numbers(question).into_iter().collect();
    claim.terms.iter().all(|t| words.contains(t)) && claim.numbers.iter().all(|n| said.contains(n))
}

/// Whether `question` asks for a yes or a no: an English question that opens with an
/// auxiliary verb ("Does …", "Can …", "Is it …"), a Chinese one with 吗 at its end or
/// 是否, 能否, 可否, 是不是, 有没有, 能不能 in it.
pub fn yes_or_no(question: &str) -> bool {
    const AUX: &[&str] = &[
        "is", "are", "was", "were", "am", "do", "does", "did", "can", "could", "will", "would",
        "should", "shall", "may", "might", "must", "has", "have", "had",
    ];
    let q = question.trim();
    let first = q
        .replace('\u{2019}', "'")
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_lowercase();
    // "Isn't", "doesn't", "can't", "won't": the auxiliary before the "n't".
    let first = match first.strip_suffix("n't") {
        Some("ca") => "can",
        Some("wo") => "will",
        Some("sha") => "shall",
        Some(aux) => aux,
        None => first.split('\'').next().unwrap_or(""),
    };
    if AUX.contains(&first) {
        return true;
    }
    let end = q.trim_end_matches(['?', '？', '.', '。', ' ', '!', '！']);
    end.ends_with('吗')
        || [
            "是否",
            "能否",
            "可否",
            "是不是",
            "有没有",
            "能不能",
            "会不会",
            "对不对",
        ]
        .iter()
        .any(|z| q.contains(z))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_with_only_the_questions_words_restates_it() {
        let q = "Which apt command replaces apt-get dist-upgrade?";
        assert!(restates(
            "The apt command replaces apt-get dist-upgrade.",
            q
        ));
        assert!(restates(
            "The txfonts command typesets an upright Greek alpha.",
            "Which txfonts command typesets an upright Greek alpha?"
        ));
        assert!(restates("bp 是多长？", "长度单位 bp 是多长？"));
        // One word the question lacks is an answer (right or wrong: the term check
        // says which).
        assert!(!restates("The apt command full-upgrade replaces it.", q));
        assert!(!restates(
            "The arc cosine function in Maxima is `acos`.",
            "Which Maxima function is the arc cosine?"
        ));
        assert!(!restates("\\textsf", "\\sffamily 对应的字体命令是什么？"));
        assert!(!restates(
            "\\tabcolsep 的默认值是 6pt。",
            "\\tabcolsep 的默认值是多少？"
        ));
    }

    #[test]
    fn numbers_negations_and_yes_or_no_questions_are_answers() {
        assert!(!restates(
            "The limit is 26 in the alph counter.",
            "What is the limit of the alph counter?"
        ));
        assert!(!restates(
            "The apt command does not replace apt-get dist-upgrade.",
            "Which apt command replaces apt-get dist-upgrade?"
        ));
        assert!(!restates(
            "Yes, chemformula supports bonds.",
            "Does chemformula support bonds?"
        ));
        assert!(!restates("可以使用 \\ch 命令。", "能否使用 \\ch 命令？"));
        assert!(!restates("xparse 支持星号。", "xparse 支持星号吗？"));
        // Nothing to restate with.
        assert!(!restates("Here it is:", "What is it?"));
        assert!(!restates("The apt command.", ""));
    }

    #[test]
    fn yes_or_no_questions_are_told_from_the_others() {
        assert!(yes_or_no("Does chemformula support bonds?"));
        assert!(yes_or_no("Can't I use \\ch here?"));
        assert!(yes_or_no("Isn't 6pt the default of \\tabcolsep?"));
        assert!(yes_or_no("Doesn't apt upgrade replace apt-get upgrade?"));
        assert!(yes_or_no("Won't the old command still work?"));
        assert!(yes_or_no("Isn\u{2019}t it 6pt?"));
        assert!(!yes_or_no("What's the default of \\tabcolsep?"));
        assert!(yes_or_no("xparse 支持星号吗？"));
        assert!(yes_or_no("是否可以省略参数？"));
        assert!(!yes_or_no(
            "Which apt command replaces apt-get dist-upgrade?"
        ));
        assert!(!yes_or_no("What does \\ch do?"));
        assert!(!yes_or_no("长度单位 bp 是多长？"));
    }
}
