//! `quire ask`: the answer streams to stdout, the sources follow on stderr.

use std::io::Write;

use quire::engine::{AskEvent, AskRequest, Engine};

pub fn ask(engine: &Engine, req: AskRequest, json: bool) -> anyhow::Result<()> {
    let cancel = quire::llm::Cancel::new();
    let mut out = std::io::stdout().lock();
    let mut sources = Vec::new();
    let mut on = |ev: AskEvent| -> bool {
        if json {
            let line = serde_json::to_string(&ev).unwrap_or_default();
            // A closed pipe stops the answer.
            return writeln!(out, "{line}").and_then(|_| out.flush()).is_ok();
        }
        match ev {
            AskEvent::Queries { queries } => {
                for q in queries.iter().skip(1) {
                    eprintln!("also searching: {q}");
                }
            }
            AskEvent::Sources { sources: s } => sources = s,
            AskEvent::Token {
                text,
                is_final: true,
                ..
            } => return write!(out, "{text}").and_then(|_| out.flush()).is_ok(),
            AskEvent::Done { stats, .. } => {
                let _ = writeln!(out);
                eprintln!(
                    "\n{} LLM call(s), {} prompt + {} output tokens, {:.1}s ({:.1} tok/s)",
                    stats.llm_calls,
                    stats.prompt_tokens,
                    stats.output_tokens,
                    stats.secs,
                    stats.tokens_per_s
                );
            }
            _ => {}
        }
        true
    };
    engine.ask(req, &cancel, &mut on)?;
    if !json {
        for (i, s) in sources.iter().enumerate() {
            let pages = if s.page_start == s.page_end {
                format!("p. {}", s.page_start)
            } else {
                format!("pp. {}-{}", s.page_start, s.page_end)
            };
            eprintln!("[{}] {} {pages} (score {:.3})", i + 1, s.file, s.score);
        }
    }
    Ok(())
}
