//! How a follow-up is searched, Quire's choice beside LlamaIndex's condensing (which
//! stays as it is): `condensed` searches the standalone question the LLM wrote, as
//! LlamaIndex does; `thread` also searches the follow-up as typed joined to the
//! previous question, and retrieval fuses both; `thread_only` (the default) searches
//! the thread query alone, and in `condense_plus_context`, where the condensed
//! question is only ever searched, does not condense at all. A small model often
//! keeps the old topic and drops what the follow-up asks (or the reverse, or answers
//! instead of asking, or translates); the thread query holds both questions' words
//! exactly as the person wrote them. `condense_question` answers the condensed
//! question, so it still condenses, and there `thread_only` searches as `thread`.

use super::ChatMode;
use crate::llm::chat::Message;
use crate::{Error, Result};

/// How a follow-up question is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FollowUpSearch {
    /// The condensed question alone (LlamaIndex's chat engines).
    Condensed,
    /// The condensed question and the thread query, fused.
    Thread,
    /// The thread query alone, without condensing where the answer does not need
    /// the condensed question.
    #[default]
    ThreadOnly,
}

impl FollowUpSearch {
    pub const ALL: [FollowUpSearch; 3] = [
        FollowUpSearch::ThreadOnly,
        FollowUpSearch::Thread,
        FollowUpSearch::Condensed,
    ];

    /// The name in settings and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            FollowUpSearch::Condensed => "condensed",
            FollowUpSearch::Thread => "thread",
            FollowUpSearch::ThreadOnly => "thread_only",
        }
    }

    /// Whether a follow-up in chat mode `mode` is condensed by the LLM: always but
    /// with `thread_only` in `condense_plus_context`, whose condensed question would
    /// only be searched (its answer reads the conversation and the message itself).
    pub fn condenses(self, mode: ChatMode) -> bool {
        mode != ChatMode::Off
            && !(self == FollowUpSearch::ThreadOnly && mode == ChatMode::CondensePlusContext)
    }
}

impl std::str::FromStr for FollowUpSearch {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let k = s.trim().to_ascii_lowercase();
        FollowUpSearch::ALL
            .into_iter()
            .find(|m| m.name() == k)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "unknown follow-up search {s:?} (one of: thread_only, thread, condensed)"
                ))
            })
    }
}

/// The thread query of a follow-up: the conversation's last question (the user's
/// newest message in `history`) joined to the follow-up as typed. `None` without a
/// previous question.
pub fn thread_query(history: &[Message], message: &str) -> Option<String> {
    let previous = history
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .map(|m| m.content.trim())
        .filter(|q| !q.is_empty())?;
    Some(format!("{previous}\n{}", message.trim()))
}

/// The queries to search for a follow-up, the condensed question (or, where nothing
/// was condensed, the thread query) first: with `thread`, and `thread_only` where
/// the question was condensed, the thread query after it (unless it repeats a query
/// already there).
pub fn queries(
    how: FollowUpSearch,
    history: &[Message],
    message: &str,
    condensed: &str,
) -> Vec<String> {
    let mut out = vec![condensed.to_string()];
    if how != FollowUpSearch::Condensed {
        if let Some(t) = thread_query(history, message) {
            if !out.iter().any(|q| q.trim() == t.trim()) {
                out.push(t);
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn history() -> Vec<Message> {
        vec![
            Message::user("Which option of chemformula sets the arrow's label font?"),
            Message::assistant("The option label-style, by default \\footnotesize."),
        ]
    }

    #[test]
    fn the_thread_query_joins_the_last_question_and_the_follow_up() {
        let mut h = history();
        h.push(Message::user("  How do I circle the charges?  "));
        h.push(Message::assistant("With circled=all."));
        assert_eq!(
            thread_query(&h, " And its default? ").as_deref(),
            Some("How do I circle the charges?\nAnd its default?")
        );
        assert_eq!(thread_query(&[], "And its default?"), None);
        assert_eq!(
            thread_query(&[Message::assistant("hello")], "And its default?"),
            None
        );
    }

    #[test]
    fn thread_search_adds_the_thread_query_after_the_condensed_one() {
        let q = queries(
            FollowUpSearch::Thread,
            &history(),
            "What is its default?",
            "What is the default of label-style?",
        );
        assert_eq!(
            q,
            vec![
                "What is the default of label-style?".to_string(),
                "Which option of chemformula sets the arrow's label font?\nWhat is its default?"
                    .to_string()
            ]
        );
        let c = queries(FollowUpSearch::Condensed, &history(), "x", "y");
        assert_eq!(c, vec!["y".to_string()]);
        // Without a previous question there is nothing to add.
        assert_eq!(queries(FollowUpSearch::Thread, &[], "x", "y"), vec!["y"]);
    }

    #[test]
    fn thread_only_skips_condensing_only_where_the_answer_does_not_read_it() {
        use FollowUpSearch::*;
        assert!(!ThreadOnly.condenses(ChatMode::CondensePlusContext));
        assert!(ThreadOnly.condenses(ChatMode::CondenseQuestion));
        for how in FollowUpSearch::ALL {
            assert!(!how.condenses(ChatMode::Off));
        }
        for how in [Thread, Condensed] {
            assert!(how.condenses(ChatMode::CondensePlusContext));
            assert!(how.condenses(ChatMode::CondenseQuestion));
        }
        // Not condensed: the thread query is the searched question, searched once.
        let t = thread_query(&history(), "What is its default?").expect("a thread");
        assert_eq!(
            queries(ThreadOnly, &history(), "What is its default?", &t),
            vec![t.clone()]
        );
        // Condensed (condense_question): searched as `thread` does.
        assert_eq!(
            queries(ThreadOnly, &history(), "What is its default?", "y"),
            vec!["y".to_string(), t]
        );
        assert_eq!(FollowUpSearch::default(), ThreadOnly);
    }

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for m in FollowUpSearch::ALL {
            assert_eq!(m.name().parse::<FollowUpSearch>().expect("parses"), m);
        }
        assert!("fused".parse::<FollowUpSearch>().is_err());
    }
}
