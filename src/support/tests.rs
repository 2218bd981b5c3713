//! The checker on hand-made cases.
#![allow(clippy::unwrap_used)]

use super::*;

const CHEM: &str = "The main command is \\ch{...}, for example \\ch{H2O} for water. \
Blanks in the input only separate the parts of a formula; a blank never becomes a blank \
in the output. Use <-> for a resonance arrow and <=> for an equilibrium arrow.";
const APT: &str = "To keep a package at its version, run apt-mark hold with the package's \
name. The Debian archive has 21 sections. Packages are upgraded with apt full-upgrade.";
const CTEX: &str = "如果要注释掉一大段内容，可以用 \\iffalse 和 \\fi 把它包起来。\
也可以加载 verbatim 宏包，使用 comment 环境。";

fn passages() -> Vec<Passage<'static>> {
    vec![
        Passage {
            chunk_id: 10,
            doc_id: 1,
            file: "chemformula-manual.pdf",
            page: 3,
            text: CHEM,
        },
        Passage {
            chunk_id: 20,
            doc_id: 2,
            file: "debian-faq.en.pdf",
            page: 40,
            text: APT,
        },
        Passage {
            chunk_id: 30,
            doc_id: 3,
            file: "ctex-faq.pdf",
            page: 15,
            text: CTEX,
        },
    ]
}

fn check(s: &str) -> SentenceSupport {
    check_sentence(s, &passages(), &[])
}

#[test]
fn a_sentence_copied_verbatim_is_supported_at_its_place() {
    let s = check("Blanks in the input only separate the parts of a formula.");
    assert_eq!(s.verdict, Verdict::Supported, "{s:?}");
    let span = s.span.unwrap();
    assert_eq!(
        (span.source, span.file.as_str(), span.page),
        (0, "chemformula-manual.pdf", 3)
    );
    assert!(
        span.text.starts_with("Blanks in the input"),
        "{}",
        span.text
    );
    let start = CHEM.chars().take(span.start).count();
    assert_eq!(
        CHEM.chars().skip(start).take(6).collect::<String>(),
        "Blanks"
    );
}

#[test]
fn a_changed_number_is_not_supported() {
    assert_eq!(
        check("The Debian archive has 21 sections.").verdict,
        Verdict::Supported
    );
    let s = check("The Debian archive has 12 sections.");
    assert_ne!(s.verdict, Verdict::Supported, "{s:?}");
    assert!(s.note.as_deref().unwrap_or("").contains("12"), "{s:?}");
}

#[test]
fn a_swapped_name_and_an_invented_claim_are_not_found() {
    let s = check("To keep a package at its version, run dpkg-freeze with its name.");
    assert_ne!(s.verdict, Verdict::Supported, "{s:?}");
    let s = check("Chemformula was written by Donald Knuth in Stanford for TeXbook readers.");
    assert_eq!(s.verdict, Verdict::NotFound, "{s:?}");
}

#[test]
fn a_close_paraphrase_is_supported_and_framing_words_do_not_count() {
    let s = check(
        "Based on the context, an equilibrium arrow is written <=> and a resonance arrow <->.",
    );
    assert_eq!(s.verdict, Verdict::Supported, "{s:?}");
    assert_eq!(check("Here is what I found:").verdict, Verdict::NoClaim);
}

#[test]
fn chinese_sentences_are_checked_by_bigrams() {
    let s = check("可以用 \\iffalse 和 \\fi 把一大段内容包起来。");
    assert_eq!(s.verdict, Verdict::Supported, "{s:?}");
    assert_eq!(s.span.unwrap().file, "ctex-faq.pdf");
    let s = check("可以用 \\begin{ignore} 环境一次性删除整章的页眉。");
    assert_ne!(s.verdict, Verdict::Supported, "{s:?}");
}

#[test]
fn a_wrong_marker_names_the_source_that_does_say_it() {
    let cited = [
        Cited {
            number: 1,
            chunk_id: 10,
            text: CHEM,
        },
        Cited {
            number: 2,
            chunk_id: 20,
            text: APT,
        },
    ];
    let right = check_sentence("Use <-> for a resonance arrow [1].", &passages(), &cited);
    assert_eq!(right.verdict, Verdict::Supported);
    assert!(right.wrong_citation.is_none(), "{right:?}");
    let wrong = check_sentence("Use <-> for a resonance arrow [2].", &passages(), &cited);
    assert_eq!(
        wrong.wrong_citation,
        Some(WrongCitation {
            cited: 2,
            better: Some(1)
        })
    );
    assert_eq!(
        wrong.note.as_deref(),
        Some("cited [2], but [2] does not say this; [1] does")
    );
    let missing = check_sentence("Resonance arrows are <-> [7].", &passages(), &cited);
    assert_eq!(missing.wrong_citation.unwrap().cited, 7);
}

#[test]
fn a_whole_answer_is_tallied_with_offsets_in_chars() {
    let answer = "结论如下：\n- The Debian archive has 21 sections.\n- Chemformula was invented on Mars in 1802.";
    let s = check_answer("What does the archive hold?", answer, &passages(), &[]);
    let verdicts: Vec<Verdict> = s.sentences.iter().map(|x| x.verdict).collect();
    assert_eq!(
        verdicts,
        vec![Verdict::NoClaim, Verdict::Supported, Verdict::NotFound]
    );
    assert_eq!((s.supported, s.checked), (1, 2));
    assert_eq!(s.summary, "1 of 2 sentences found in your documents");
    let chars: Vec<char> = answer.chars().collect();
    let second = &s.sentences[1];
    assert_eq!(
        chars[second.start..second.end].iter().collect::<String>(),
        second.text
    );
}

#[test]
fn quotes_answer_the_question_from_the_best_place() {
    let q = quotes(
        "How do I get a resonance arrow in chemformula?",
        &passages(),
    );
    assert!(!q.is_empty() && q.len() <= quotes::MAX_QUOTES);
    assert!(q[0].text.contains("<->"), "{q:?}");
    let q = quotes("怎么注释掉一大段内容？", &passages());
    assert!(q[0].text.contains("iffalse"), "{q:?}");
    let a = quotes::as_answer(&q[..1]);
    assert!(
        a.starts_with("> ") && a.ends_with("(ctex-faq.pdf, p. 15)"),
        "{a}"
    );
}

/// Old selection: the sentence that matches the question's words, and the one after.
/// The answer here is the sentence before ("而且" leans on it) and two after.
#[test]
fn a_quote_that_points_back_takes_the_sentence_before_it() {
    let text = "使用 dvipdfmx 生成 PDF 文件可以直接使用两种字库。\
而且直接使用 TrueType 字库时生成的 PDF 文件能正常复制粘贴中文。\
两种字库不会冲突。";
    let p = [Passage {
        chunk_id: 1,
        doc_id: 1,
        file: "ctex-faq.pdf",
        page: 14,
        text,
    }];
    let q = quotes("什么 PDF 文件能正常复制粘贴中文？", &p);
    assert!(q[0].text.contains("dvipdfmx"), "{q:?}");
    assert!(quotes::points_back("This is done with the forget command:"));
    assert!(quotes::points_back("而且直接使用"));
    assert!(!quotes::points_back("Thistle is a plant."));
    assert!(!quotes::points_back("在导言区"));
}

#[test]
fn the_first_quote_takes_two_sentences_after_its_match() {
    let text = "This file defines the package wasysym, which makes characters of the \
wasy fonts available. These fonts were provided by Roland Waldi. The package requires \
version 2 (1992) of these fonts. Some symbols are already in TS1. Others are new.";
    let p = [Passage {
        chunk_id: 1,
        doc_id: 1,
        file: "wasysym.pdf",
        page: 1,
        text,
    }];
    let q = quotes("Which fonts does the wasysym package define?", &p);
    assert!(q[0].text.contains("1992"), "{q:?}");
    assert!(!q[0].text.contains("TS1"), "{q:?}");
}

/// Two sentences with the same share of the question's terms: the embedder's cosine
/// (here given by hand) decides which leads.
#[test]
fn the_cosine_to_the_question_breaks_a_tie_of_terms() {
    let text = "Fonts are scaled by the printer.\n\nFonts are downloaded in part by default.";
    let p = [Passage {
        chunk_id: 1,
        doc_id: 1,
        file: "txfontsdoc.pdf",
        page: 3,
        text,
    }];
    let by_hand = |texts: &[&str]| -> Option<Vec<f32>> {
        Some(
            texts
                .iter()
                .map(|t| if t.contains("downloaded") { 0.8 } else { 0.2 })
                .collect(),
        )
    };
    let q = quotes_with("What about the fonts?", &p, &by_hand, &|_| None);
    assert!(q[0].text.starts_with("Fonts are downloaded"), "{q:?}");
    let other_way = |texts: &[&str]| -> Option<Vec<f32>> {
        Some(
            texts
                .iter()
                .map(|t| if t.contains("scaled") { 0.8 } else { 0.2 })
                .collect(),
        )
    };
    let q = quotes_with("What about the fonts?", &p, &other_way, &|_| None);
    assert!(q[0].text.starts_with("Fonts are scaled"), "{q:?}");
}

/// A quote that runs to the end of its chunk reads on into the next one, past the
/// sentences the chunks share; what it read of a next chunk that is a source too is
/// not quoted again.
#[test]
fn a_quote_reads_on_into_the_next_chunk() {
    let first = "Sometimes it is appropriate to let others know that you are unavailable. \
In order to inform the other developers, there are two things that you should do.";
    let second = "In order to inform the other developers, there are two things that you \
should do. First send a mail to debian-private with [VAC] in the subject. Then mark \
yourself as on vacation in the database. Ideally, sign up for key signing.";
    let p = [
        Passage {
            chunk_id: 10,
            doc_id: 1,
            file: "developers-reference.pdf",
            page: 19,
            text: first,
        },
        Passage {
            chunk_id: 11,
            doc_id: 1,
            file: "developers-reference.pdf",
            page: 20,
            text: second,
        },
    ];
    let next = |i: usize| (i == 0).then(|| (11, second.to_string()));
    let question = "How do I let others know that I am unavailable?";
    let q = quotes_with(question, &p[..1], &|_| None, &next);
    assert!(q[0].text.contains("[VAC]"), "{q:?}");
    assert_eq!(
        q[0].text.matches("In order to inform").count(),
        1,
        "the sentence both chunks hold is quoted once: {q:?}"
    );
    assert!(!q[0].text.contains("Ideally"), "{q:?}");
    // The offsets stay within the chunk the quote starts in.
    assert_eq!(q[0].end, first.chars().count());
    // Without the next chunk, the quote stops at its own chunk's end.
    let q = quotes_with(question, &p[..1], &|_| None, &|_| None);
    assert!(!q[0].text.contains("[VAC]"), "{q:?}");
    // With the next chunk among the sources, what was read of it is not quoted again.
    let q = quotes_with(question, &p, &|_| None, &next);
    assert!(q[0].text.contains("[VAC]"), "{q:?}");
    assert!(q[1..].iter().all(|x| !x.text.contains("[VAC]")), "{q:?}");
}

/// A later quote, too, takes the sentences after its window (two), not more.
#[test]
fn a_later_quote_takes_the_sentences_after_it() {
    let a = "To undo the hold later and resume upgrades, run apt-mark unhold.";
    let b = "To hold a package with apt-mark, run apt-mark hold and the package name. \
Names are required. Logs record everything. Mirrors are checked daily. Other tools exist.";
    let p = [
        Passage {
            chunk_id: 1,
            doc_id: 1,
            file: "debian-faq.en.pdf",
            page: 40,
            text: a,
        },
        Passage {
            chunk_id: 7,
            doc_id: 1,
            file: "debian-faq.en.pdf",
            page: 41,
            text: b,
        },
    ];
    let q = quotes(
        "How do I hold a package with apt-mark, and how do I undo the hold later to resume \
         upgrades?",
        &p,
    );
    assert_eq!(q[0].chunk_id, 1, "{q:?}");
    let later = q.get(1).expect("a quote of the second");
    assert!(later.text.starts_with("To hold a package"), "{q:?}");
    assert!(later.text.contains("Logs record"), "{q:?}");
    assert!(!later.text.contains("Other tools"), "{q:?}");
}

const KEYS: &str = "2.2.2 Maxima-mode — Indentation\n\n| Key | Description |\n| --- | --- |\n| TAB | Indent line. |\n| M-C-q | Indent form. |\n| C-c C-k | Kill the current Maxima core. All data is lost. |";
/// debian-faq.en.pdf p. 44, as the extractor writes it.
const APT_TABLE: &str = "8.1.2 APT — and new commands:\n\n| apt-get update | -> | apt update |\n| --- | --- | --- |\n| apt-get upgrade | -> | apt upgrade |\n| apt-get dist-upgrade | -> | apt full-upgrade |\n| apt-get install package | -> | apt install package |\n| apt-get remove package | -> | apt remove package |\n| apt-get autoremove | -> | apt autoremove |";

fn table_passages() -> Vec<Passage<'static>> {
    vec![
        Passage {
            chunk_id: 40,
            doc_id: 4,
            file: "maximabook.pdf",
            page: 13,
            text: KEYS,
        },
        Passage {
            chunk_id: 50,
            doc_id: 2,
            file: "debian-faq.en.pdf",
            page: 44,
            text: APT_TABLE,
        },
    ]
}

#[test]
fn a_row_bears_out_a_sentence_with_its_header_and_lead_in_and_two_rows_do_not() {
    let p = table_passages();
    // The row, its header ("Key") and the table's lead-in ("Maxima-mode") hold it all.
    let s = check_sentence("In Maxima mode, the key TAB indents the line.", &p, &[]);
    assert_eq!(s.verdict, Verdict::Supported, "{s:?}");
    let span = s.span.unwrap();
    assert_eq!(span.text, "| TAB | Indent line. |");
    // One cell from each of two rows: no row says it (the whole table would).
    let s = check_sentence("M-C-q kills the current Maxima core.", &p, &[]);
    assert_ne!(s.verdict, Verdict::Supported, "{s:?}");
    assert!(s.score < SUPPORTED, "{s:?}");
    let s = check_sentence(
        "The new command for apt-get upgrade is apt upgrade.",
        &p,
        &[],
    );
    assert_eq!(s.verdict, Verdict::Supported, "{s:?}");
}

#[test]
fn a_row_is_quoted_under_its_header_and_a_caption_with_its_whole_table() {
    let p = table_passages();
    let q = quotes("In Maxima mode, which key kills the current core?", &p);
    assert_eq!(
        q[0].text,
        "2.2.2 Maxima-mode — Indentation\n\n| Key | Description |\n| --- | --- |\n| C-c C-k | Kill the current Maxima core. All data is lost. |"
    );
    // No later quote is the caption alone, its rows quoted already.
    assert!(
        q.iter()
            .all(|x| x.text.trim() != "2.2.2 Maxima-mode — Indentation"),
        "{q:?}"
    );
    // The offsets are the row's, for the viewer to mark.
    let row = "| C-c C-k | Kill the current Maxima core. All data is lost. |";
    let at = KEYS.find(row).unwrap();
    assert_eq!(
        (q[0].start, q[0].end),
        (
            KEYS[..at].chars().count(),
            KEYS[..at + row.len()].chars().count()
        )
    );
    // A quote of the words over a table runs on into all of it.
    let caption = [Passage {
        chunk_id: 60,
        doc_id: 5,
        file: "wasysym.pdf",
        page: 6,
        text: "2.10 Astronomical symbols\n\n| \\mercury | \\venus |\n| --- | --- |\n| \\earth | \\mars |\n\nThe next section is about other symbols.",
    }];
    let q = quotes("Which astronomical symbols are there?", &caption);
    assert!(
        q[0].text.contains("\\mercury") && q[0].text.contains("\\mars"),
        "{}",
        q[0].text
    );
}

#[test]
fn the_summary_of_one_sentence_says_how_it_is_found() {
    assert_eq!(summary(1, 0, 1), "the sentence is found in your documents");
    assert_eq!(
        summary(0, 1, 1),
        "the sentence is partly found in your documents"
    );
    assert_eq!(
        summary(0, 0, 1),
        "the sentence is not found in your documents"
    );
    assert_eq!(summary(2, 1, 3), "2 of 3 sentences found in your documents");
    assert_eq!(summary(3, 0, 3), "all 3 sentences found in your documents");
    assert_eq!(summary(0, 0, 0), "no sentence to check");
}
