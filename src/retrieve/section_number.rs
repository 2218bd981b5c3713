//! The number of a chapter, section or appendix: the one a question names ("what does
//! chapter 4 cover?", "section 2.2", "§5.4", "appendix B", "第四章", "第 4.4 节",
//! "附录 B") and the one a contents entry starts with (`4`, `2.2.1`, `6.5.`, `B.`,
//! `第三章`, `Chapter 4`, `附录 A`), both read as one label: digits and dots, or a
//! letter, lower-cased, Chinese numerals as digits (`第十二章` is `12`). A question
//! that names a part by its number is led through the contents to that part
//! ([`super::search`]), since nothing else in it says what the part is about.

/// The label of the chapter, section or appendix `question` names by its number, if
/// it names one.
pub fn named_section(question: &str) -> Option<String> {
    chinese_named(question).or_else(|| english_named(question))
}

/// Whether `question` names an appendix ("appendix B", "附录 B").
pub fn names_appendix(question: &str) -> bool {
    question.contains("附录") || question.to_lowercase().contains("appendix")
}

/// Whether an entry's title says it is an appendix (`Appendix A …`, `附录 B …`).
pub fn is_appendix_entry(title: &str) -> bool {
    let first = split_first(title).0;
    first.starts_with("附录") || first.eq_ignore_ascii_case("appendix")
}

/// The label an entry's title starts with (`4 Trig through Calculus` → `4`), with the
/// title's words after it (`Trig through Calculus`).
pub fn entry_label(title: &str) -> Option<(String, &str)> {
    let title = title.trim_start();
    // `Chapter 4 …`, `Appendix B …`, `附录 A …`: a word, then the label.
    let (first, rest) = split_first(title);
    if is_part_word(first) || first == "附录" {
        let (label, words) = split_first(rest);
        return plain_label(label).map(|l| (l, words));
    }
    if let Some(letter) = first.strip_prefix("附录") {
        return plain_label(letter).map(|l| (l, rest));
    }
    if let Some(l) = chinese_label(first) {
        return Some((l, rest));
    }
    // A number followed by a comma starts a list of pages (an index), not a title.
    if first.ends_with([',', '，']) {
        return None;
    }
    // `第 4 章 …`
    if first == "第" {
        let (n, after) = split_first(rest);
        let (unit, words) = split_first(after);
        if matches!(unit, "章" | "节") {
            return plain_label(n).map(|l| (l, words));
        }
        return None;
    }
    plain_label(first).map(|l| (l, rest))
}

/// The first whitespace-separated token of `s` and what follows it, trimmed.
fn split_first(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.split_once(char::is_whitespace) {
        Some((a, b)) => (a, b.trim_start()),
        None => (s, ""),
    }
}

/// The English words that name a numbered part.
fn is_part_word(w: &str) -> bool {
    let w = w.trim_end_matches('.').to_lowercase();
    matches!(
        w.as_str(),
        "chapter" | "chap" | "ch" | "section" | "sec" | "subsection" | "appendix" | "§"
    )
}

/// `4`, `2.2.1`, `6.5.` (the last dot dropped), `B`, `B.`, `G.1`: digits and dots, or
/// one letter and then dotted digits; lower-cased.
fn plain_label(token: &str) -> Option<String> {
    let t = token.trim_end_matches(['.', ')', ':', ',', '?', '？', '，', '：', '\'']);
    let t = t.strip_suffix("'s").unwrap_or(t);
    let mut parts = t.split('.');
    let head = parts.next()?;
    let digits = |p: &str| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit());
    let head_ok =
        digits(head) || (head.len() == 1 && head.bytes().all(|b| b.is_ascii_alphabetic()));
    (head_ok && parts.all(digits)).then(|| t.to_lowercase())
}

/// `第三章`, `第12章`, `第4.4节`: the label between 第 and 章 or 节.
fn chinese_label(token: &str) -> Option<String> {
    let inner = token.strip_prefix('第')?;
    let inner = inner
        .strip_suffix('章')
        .or_else(|| inner.strip_suffix('节'))?
        .trim();
    chinese_number(inner).or_else(|| plain_label(inner))
}

/// A Chinese numeral from 一 to 九十九 (`十二`, `二十`, `两`) as digits.
fn chinese_number(s: &str) -> Option<String> {
    let digit = |c: char| {
        "零一二三四五六七八九"
            .chars()
            .position(|d| d == c)
            .or((c == '两').then_some(2))
    };
    let chars: Vec<char> = s.chars().collect();
    let n = match chars.as_slice() {
        ['十'] => 10,
        [d] => digit(*d)?,
        ['十', u] => 10 + digit(*u)?,
        [t, '十'] => digit(*t)? * 10,
        [t, '十', u] => digit(*t)? * 10 + digit(*u)?,
        _ => return None,
    };
    (n > 0).then(|| n.to_string())
}

/// `第四章`, `第 4.4 节`, `第3章`, `附录 B`, `附录B` in a question.
fn chinese_named(q: &str) -> Option<String> {
    let chars: Vec<char> = q.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '第' {
            // Up to the 章 or 节 within a few characters, spaces dropped.
            let Some(end) = chars[i + 1..]
                .iter()
                .take(8)
                .position(|&c| c == '章' || c == '节')
            else {
                continue;
            };
            let inner: String = chars[i + 1..i + 1 + end]
                .iter()
                .filter(|c| !c.is_whitespace())
                .collect();
            if let Some(l) = chinese_number(&inner).or_else(|| plain_label(&inner)) {
                return Some(l);
            }
        }
        if c == '附' && chars.get(i + 1) == Some(&'录') {
            // One Latin letter after it, spaces skipped, and no letter after that.
            let mut after = chars[i + 2..].iter().skip_while(|c| c.is_whitespace());
            if let Some(letter) = after.next().filter(|c| c.is_ascii_alphabetic()) {
                if !after.next().is_some_and(|c| c.is_ascii_alphabetic()) {
                    return Some(letter.to_ascii_lowercase().to_string());
                }
            }
        }
    }
    None
}

/// `chapter 4`, `Section 2.2`, `sec. 5`, `§5.4`, `§ 5.4`, `appendix B` in a question.
fn english_named(q: &str) -> Option<String> {
    let tokens: Vec<&str> = q.split_whitespace().collect();
    for (i, t) in tokens.iter().enumerate() {
        if let Some(rest) = t.strip_prefix('§').filter(|r| !r.is_empty()) {
            if let Some(l) = plain_label(rest) {
                return Some(l);
            }
        }
        if is_part_word(t) {
            let is_appendix = t.to_lowercase().starts_with("appendix");
            if let Some(l) = tokens.get(i + 1).and_then(|n| plain_label(n)) {
                // A lone letter names only an appendix ("section a" is prose).
                if is_appendix || l.starts_with(|c: char| c.is_ascii_digit()) {
                    return Some(l);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_names_a_part_by_its_number() {
        let named = |q: &str| named_section(q);
        assert_eq!(
            named("What does chapter 4 of The Maxima Book cover?"),
            Some("4".into())
        );
        assert_eq!(named("What is Section 2.2 about?"), Some("2.2".into()));
        assert_eq!(named("Summarize sec. 5.11, please"), Some("5.11".into()));
        assert_eq!(named("what does §5.4 say?"), Some("5.4".into()));
        assert_eq!(named("What's in chapter 3's examples?"), Some("3".into()));
        assert_eq!(named("What is in appendix B?"), Some("b".into()));
        assert_eq!(named("lshort 第三章讲了哪些内容？"), Some("3".into()));
        assert_eq!(named("第十二章讲什么"), Some("12".into()));
        assert_eq!(named("第二十一章"), Some("21".into()));
        assert_eq!(named("第十章"), Some("10".into()));
        assert_eq!(named("lshort 第 4.4 节讲的是什么？"), Some("4.4".into()));
        assert_eq!(named("附录 B 讲了什么？"), Some("b".into()));
        assert_eq!(named("附录A"), Some("a".into()));
        // Not a numbered part.
        assert_eq!(
            named("Which chapter explains the Kröger-Vink notation?"),
            None
        );
        assert_eq!(named("What does the section on arrows say?"), None);
        assert_eq!(named("How do I start a new section?"), None);
        assert_eq!(named("第一次使用 LaTeX 要注意什么？"), None);
        assert_eq!(named("附录里有什么"), None);
        assert_eq!(named("附录 ABC"), None);
        assert_eq!(named("用 \\section* 写的章节不会进目录"), None);
    }

    #[test]
    fn an_entry_starts_with_its_label() {
        let label = |t: &str| entry_label(t).map(|(l, w)| (l, w.to_string()));
        let pair = |l: &str, w: &str| Some((l.to_string(), w.to_string()));
        assert_eq!(
            label("4 Trig through Calculus"),
            pair("4", "Trig through Calculus")
        );
        assert_eq!(
            label("2.2.1 Installing the Mode"),
            pair("2.2.1", "Installing the Mode")
        );
        assert_eq!(label("6.5. Bonds"), pair("6.5", "Bonds"));
        assert_eq!(label("B. References"), pair("b", "References"));
        assert_eq!(label("G.1 编号"), pair("g.1", "编号"));
        assert_eq!(label("第三章 文档元素"), pair("3", "文档元素"));
        assert_eq!(label("第 4 章 排版数学公式"), pair("4", "排版数学公式"));
        assert_eq!(
            label("Chapter 7 Beyond Packaging"),
            pair("7", "Beyond Packaging")
        );
        assert_eq!(
            label("附录 A 安装 TEX 发行版"),
            pair("a", "安装 TEX 发行版")
        );
        assert_eq!(label("附录B 排除错误"), pair("b", "排除错误"));
        assert_eq!(label("Preface"), None);
        assert!(is_appendix_entry("附录 A 安装 TEX 发行版") && is_appendix_entry("Appendix B x"));
        assert!(!is_appendix_entry("B 基本概念") && !is_appendix_entry("B. References"));
        assert!(
            names_appendix("lshort 附录 B 讲了什么？") && names_appendix("What is in Appendix A?")
        );
        assert!(!names_appendix("What does chapter 4 cover?"));
        assert_eq!(label("How can I install it?"), None);
        assert_eq!(label("2020 changes"), None);
        assert_eq!(label("9, 13, 36 circletype"), None);
    }
}
