//! LlamaIndex's two chat engines, their default prompts word for word:
//! `condense_question` rewrites a follow-up into a standalone question and answers it
//! like any question; `condense_plus_context` rewrites it for retrieval, then answers
//! the original message with the retrieved context and the conversation in a chat
//! prompt (a system message, the history, the user's message).

use crate::llm::chat::{messages_to_history, Message};
use crate::synth::{ChatPart, Ctx, Template, Templates, Vars};
use crate::{Error, Result};

/// `CondenseQuestionChatEngine`'s `DEFAULT_TEMPLATE`.
pub const CONDENSE_QUESTION_PROMPT: &str = "Given a conversation (between Human and Assistant) \
and a follow up message from Human, rewrite the message to be a standalone question that \
captures all relevant context from the conversation.\n\n<Chat History>\n{chat_history}\n\n\
<Follow Up Message>\n{question}\n\n<Standalone question>\n";

/// `CondensePlusContextChatEngine`'s `DEFAULT_CONDENSE_PROMPT_TEMPLATE`.
pub const CONDENSE_PLUS_CONTEXT_PROMPT: &str = "\n  Given the following conversation between \
a user and an AI assistant and a follow up question from user,\n  rephrase the follow up \
question to be a standalone question.\n\n  Chat History:\n  {chat_history}\n  Follow Up \
Input: {question}\n  Standalone question:";

/// `DEFAULT_CONTEXT_PROMPT_TEMPLATE`: the system message of an answer.
pub const CONTEXT_PROMPT: &str = "\n  The following is a friendly conversation between a user \
and an AI assistant.\n  The assistant is talkative and provides lots of specific details from \
its context.\n  If the assistant does not know the answer to a question, it truthfully says \
it\n  does not know.\n\n  Here are the relevant documents for the context:\n\n  \
{context_str}\n\n  Instruction: Based on the above documents, provide a detailed answer for \
the user question below.\n  Answer \"don't know\" if not present in the document.\n  ";

/// `DEFAULT_CONTEXT_REFINE_PROMPT_TEMPLATE`: the system message of a refining step.
pub const CONTEXT_REFINE_PROMPT: &str = "\n  The following is a friendly conversation between a \
user and an AI assistant.\n  The assistant is talkative and provides lots of specific details \
from its context.\n  If the assistant does not know the answer to a question, it truthfully \
says it\n  does not know.\n\n  Here are the relevant documents for the context:\n\n  \
{context_msg}\n\n  Existing Answer:\n  {existing_answer}\n\n  Instruction: Refine the existing \
answer using the provided context to assist the user.\n  If the context isn't helpful, just \
repeat the existing answer and nothing more.\n  ";

/// How a question in a conversation is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChatMode {
    /// Each question stands alone (no history is used).
    Off,
    /// Condense the follow-up into a standalone question, then answer that question.
    CondenseQuestion,
    /// Condense for retrieval, then answer with the context and the history.
    #[default]
    CondensePlusContext,
}

impl ChatMode {
    pub const ALL: [ChatMode; 3] = [
        ChatMode::CondensePlusContext,
        ChatMode::CondenseQuestion,
        ChatMode::Off,
    ];

    /// The name in settings and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            ChatMode::Off => "off",
            ChatMode::CondenseQuestion => "condense_question",
            ChatMode::CondensePlusContext => "condense_plus_context",
        }
    }

    /// The condense prompt, or none when questions stand alone.
    pub fn condense_prompt(self) -> Option<&'static str> {
        match self {
            ChatMode::Off => None,
            ChatMode::CondenseQuestion => Some(CONDENSE_QUESTION_PROMPT),
            ChatMode::CondensePlusContext => Some(CONDENSE_PLUS_CONTEXT_PROMPT),
        }
    }
}

impl std::str::FromStr for ChatMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let k = s.trim().to_ascii_lowercase().replace('-', "_");
        ChatMode::ALL
            .into_iter()
            .find(|m| m.name() == k)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "unknown chat mode {s:?} (one of: condense_plus_context, condense_question, off)"
                ))
            })
    }
}

/// The condense prompt filled with the conversation and the follow-up.
pub fn condense_prompt(template: &str, history: &[Message], message: &str) -> String {
    let mut vals = Vars::new();
    vals.insert("chat_history".into(), messages_to_history(history));
    vals.insert("question".into(), message.to_string());
    Template::new(template).format(&vals)
}

/// The standalone question for `message`: the message itself when there is no
/// history (or the mode uses none), else what the LLM rewrites it to (the message
/// again if the model writes nothing).
pub fn condense(
    ctx: &mut Ctx<'_>,
    mode: ChatMode,
    history: &[Message],
    message: &str,
) -> Result<String> {
    let Some(template) = mode.condense_prompt() else {
        return Ok(message.to_string());
    };
    if history.is_empty() {
        return Ok(message.to_string());
    }
    let prompt = condense_prompt(template, history, message);
    let out = ctx.call("condense the question", prompt, false, None)?;
    Ok(if out.trim().is_empty() {
        message.to_string()
    } else {
        out
    })
}

/// `get_prefix_messages_with_context`: the context template plus the system prompt as
/// the system message, the history (kept as written), and the user's `{query_str}`.
fn with_context(template: &str, system_prompt: &str, history: &[Message]) -> Template {
    let mut parts = vec![ChatPart::template(
        "system",
        format!("{template}{}", system_prompt.trim()),
    )];
    parts.extend(
        history
            .iter()
            .map(|m| ChatPart::literal(m.role.clone(), m.content.clone())),
    );
    parts.push(ChatPart::template("user", "{query_str}"));
    Template::chat(parts)
}

/// The templates `condense_plus_context` answers with (its CompactAndRefine's QA and
/// refine chat prompts; the QA one also summarizes for tree_summarize).
pub fn context_templates(history: &[Message], system_prompt: &str) -> Templates {
    let qa = with_context(CONTEXT_PROMPT, system_prompt, history);
    Templates {
        text_qa: qa.clone(),
        refine: with_context(CONTEXT_REFINE_PROMPT, system_prompt, history),
        summary: qa,
        simple: None,
    }
}
