//! Which kind of question this is: one about whole documents (summarize, overview,
//! list all, compare, what changed — in English and Chinese), answered by reading
//! every page, or a fact lookup, answered from the top retrieved passages. A rule of
//! cue phrases, measured by `quire bench route` on `bench/data/route.jsonl` (tuned on
//! its tuning half only).

use serde::{Deserialize, Serialize};

/// What a question asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    /// Whole documents: read every page.
    Whole,
    /// A fact: search the top passages.
    Fact,
}

/// The kind of a question and the cue that decided it (none for a fact lookup).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routed {
    pub kind: QuestionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cue: Option<String>,
}

/// English phrases that ask about a document as a whole, anywhere in the question
/// (matched on the lowercased question, at word starts).
const EN_WHOLE: &[&str] = &[
    "summarize",
    "summarise",
    "summary of",
    "give a summary",
    "an overview",
    "overview of",
    "main topics",
    "main points",
    "key points",
    "key topics",
    "main ideas",
    "outline of",
    "outline the",
    "what changed",
    "what has changed",
    "what is new in",
    "tl;dr",
    "in a nutshell",
    "gist of",
    "compare the documents",
    "compare these",
    "compare the two",
    "compare the versions",
    "topics covered",
    "topics does",
    "what does this document cover",
    "what does the document cover",
    "what does this manual cover",
    "what does the manual cover",
    "chapter by chapter",
    "section by section",
    "every chapter",
    "each chapter",
    "all chapters",
];

/// English openings of a list request; they ask for everything only when "all",
/// "every" or "each" follows.
const EN_LIST: &[&str] = &[
    "list ",
    "enumerate ",
    "name all",
    "give me a list",
    "make a list",
];

/// Words of a list request that ask for everything.
const EN_ALL: &[&str] = &[" all ", " every ", " each ", " all the "];

/// "What is … about?" — of a document, a manual, these files.
const EN_ABOUT_OBJECTS: &[&str] = &[
    "document",
    "documents",
    "manual",
    "book",
    "faq",
    "file",
    "files",
    "pdf",
    "pdfs",
    "guide",
    "paper",
    "library",
    "package documentation",
];

/// Chinese cues (no word boundaries in Chinese: matched as substrings).
const ZH_WHOLE: &[&str] = &[
    "总结",
    "概述",
    "概括",
    "摘要",
    "综述",
    "梗概",
    "要点",
    "主要内容",
    "讲了什么",
    "讲了哪些",
    "讲的是什么",
    "讲些什么",
    "介绍了哪些",
    "涵盖了哪些",
    "包括哪些章节",
    "哪些章节",
    "逐章",
    "每一章的内容",
    "每一章讲",
    "有什么变化",
    "有哪些变化",
    "改了什么",
    "比较这",
    "对比这",
    "比较一下这",
    "对比一下这",
    "是关于什么的",
    "关于什么",
];

/// Chinese list requests: whole-document only when not asked how to do them.
const ZH_LIST: &[&str] = &["列出所有", "列出全部", "列举所有", "列举全部", "列出每"];

/// Chinese words of a how-to question.
const ZH_HOW: &[&str] = &["怎么", "怎样", "如何", "为什么", "能否"];

/// Whether `needle` occurs in `hay` at the start of a word.
fn at_word(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(i, _)| {
        hay[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
    })
}

/// Decide whether `question` asks about whole documents or looks up a fact.
pub fn question_kind(question: &str) -> Routed {
    let q = format!(" {} ", question.trim().to_lowercase());
    let whole = |cue: &str| Routed {
        kind: QuestionKind::Whole,
        cue: Some(cue.to_string()),
    };
    for cue in EN_WHOLE {
        if at_word(&q, cue) {
            return whole(cue);
        }
    }
    let start = q.trim_start();
    for cue in EN_LIST {
        // "List all …" as a request, at the start or after "please" / "can you".
        let opening = [
            "",
            "please ",
            "can you ",
            "could you ",
            "would you ",
            "now ",
        ]
        .iter()
        .any(|p| start.starts_with(&format!("{p}{cue}")));
        if opening && EN_ALL.iter().any(|a| q.contains(a)) {
            return whole(cue.trim());
        }
    }
    // "What is this manual about?", "What are these documents about?"
    let t = q.trim().trim_end_matches(['?', '.', '!', ' ']);
    if t.ends_with(" about") && (t.starts_with("what ") || t.starts_with("tell me what ")) {
        let words: Vec<&str> = t.split_whitespace().collect();
        if words
            .iter()
            .any(|w| EN_ABOUT_OBJECTS.contains(&w.trim_matches(|c: char| !c.is_alphanumeric())))
        {
            return whole("what … about");
        }
    }
    for cue in ZH_WHOLE {
        if q.contains(cue) {
            return whole(cue);
        }
    }
    // "列出所有…" as a request; "怎么列出所有…" asks how to do it.
    if !ZH_HOW.iter().any(|h| q.contains(h)) {
        for cue in ZH_LIST {
            if q.contains(cue) {
                return whole(cue);
            }
        }
    }
    Routed {
        kind: QuestionKind::Fact,
        cue: None,
    }
}

/// Phrases that ask about the whole library rather than one document.
const LIBRARY: &[&str] = &[
    "these documents",
    "these files",
    "these pdfs",
    "my documents",
    "my files",
    "my library",
    "the library",
    "all documents",
    "all the documents",
    "all my",
    "each document",
    "every document",
    "这些文档",
    "这些文件",
    "所有文档",
    "全部文档",
    "文档库",
    "每个文档",
];

/// Whether a whole-document question asks about the library as a whole.
pub fn asks_about_library(question: &str) -> bool {
    let q = question.to_lowercase();
    LIBRARY.iter().any(|c| q.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(q: &str) -> QuestionKind {
        question_kind(q).kind
    }

    #[test]
    fn summaries_and_overviews_read_the_whole_document() {
        for q in [
            "Summarize the chemformula manual.",
            "Give me an overview of txfontsdoc.pdf",
            "What are the main topics of the Debian FAQ?",
            "What is this manual about?",
            "What are these documents about?",
            "List all the options the package defines.",
            "Please list every symbol font described.",
            "What changed between version 1 and 2?",
            "总结一下这份文档",
            "概述 ctex-faq 的主要内容",
            "列出所有的宏包选项",
            "这本书讲了什么？",
        ] {
            assert_eq!(kind(q), QuestionKind::Whole, "{q}");
        }
    }

    #[test]
    fn fact_questions_that_say_list_or_all_stay_lookups() {
        for q in [
            "Which command lists all installed packages?",
            "Does \\ch accept all arrow types?",
            "What does the list environment do?",
            "How do I typeset all caps in a chemical name?",
            "What is the default value of the cellspacelimits key?",
            "What is a package about to be removed called?",
            "为什么所有的中文都显示成方框？",
            "tlmgr 怎么列出所有可以更新的宏包？",
            "如何让每一章都从奇数页开始？",
            "怎样在列表环境中改变项目符号？",
        ] {
            assert_eq!(kind(q), QuestionKind::Fact, "{q}");
        }
    }

    #[test]
    fn the_cue_is_said() {
        assert_eq!(
            question_kind("Summarize it").cue.as_deref(),
            Some("summarize")
        );
        assert_eq!(question_kind("How old is Debian?").cue, None);
    }

    #[test]
    fn library_questions_are_told_from_one_document() {
        assert!(asks_about_library("What are these documents about?"));
        assert!(asks_about_library("总结这些文档"));
        assert!(!asks_about_library("Summarize the chemformula manual"));
    }
}
