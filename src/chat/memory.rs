//! LlamaIndex's `ChatMemoryBuffer`: the newest messages of a conversation that fit a
//! token limit, never starting with an assistant's message.

use crate::llm::chat::Message;
use crate::Result;

/// `ChatMemoryBuffer.get`: the newest messages whose contents, joined by spaces, take
/// at most `token_limit` tokens; a window that would start with an assistant message
/// drops it too. When not even the newest message fits, that one message alone.
pub fn window(
    history: &[Message],
    token_limit: usize,
    count: &dyn Fn(&str) -> Result<usize>,
) -> Result<Vec<Message>> {
    let n = history.len();
    let tokens = |k: usize| -> Result<usize> {
        if k == 0 {
            return Ok(0);
        }
        let joined: Vec<&str> = history[n - k..]
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        count(&joined.join(" "))
    };
    let mut k = n;
    let mut t = tokens(k)?;
    while t > token_limit && k > 1 {
        k -= 1;
        while k > 1 && matches!(history[n - k].role.as_str(), "assistant" | "tool") {
            k -= 1;
        }
        t = tokens(k)?;
    }
    if t > token_limit || k == 0 {
        return Ok(history[n.saturating_sub(1)..].to_vec());
    }
    Ok(history[n - k..].to_vec())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::synth::splitter::count_chars;

    #[test]
    fn keeps_the_newest_turns_that_fit() {
        let h = vec![
            Message::user("aaaa"),
            Message::assistant("bbbb"),
            Message::user("cc"),
            Message::assistant("dd"),
        ];
        assert_eq!(window(&h, 100, &count_chars).unwrap(), h);
        // "cc dd" = 5 fits; dropping "aaaa" leaves an assistant first, dropped too.
        assert_eq!(window(&h, 6, &count_chars).unwrap(), h[2..].to_vec());
        // Nothing fits: the newest message alone.
        assert_eq!(window(&h, 1, &count_chars).unwrap(), h[3..].to_vec());
        assert!(window(&[], 10, &count_chars).unwrap().is_empty());
    }
}
