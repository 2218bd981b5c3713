//! `quire ask`: the answer streams to stdout, the sources follow on stderr.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use quire::engine::{AskEvent, AskOverrides, AskRequest, Engine};

/// The options of `quire ask` beyond the question, mode and conversation.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AskArgs {
    /// Source nodes kept after retrieval (default: the settings', 4 unless changed).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// A custom text-QA template file; it must use {context_str} and {query_str}, and
    /// may use variables given with --var.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// A template variable, `name=value` (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Most tokens generated per LLM call (default: the settings').
    #[arg(long)]
    pub max_tokens: Option<usize>,
    /// Print each step's formatted prompt to stderr as the step starts.
    #[arg(long)]
    pub show_prompts: bool,
    /// Print each event as one JSON line instead.
    #[arg(long)]
    pub json: bool,
}

impl AskArgs {
    /// The settings overrides these options name.
    pub fn overrides(&self) -> anyhow::Result<AskOverrides> {
        let template = match &self.template {
            Some(p) => Some(
                std::fs::read_to_string(p)
                    .with_context(|| format!("--template {}", p.display()))?,
            ),
            None => None,
        };
        let mut vars = std::collections::BTreeMap::new();
        for v in &self.vars {
            let (name, value) = v
                .split_once('=')
                .filter(|(n, _)| !n.trim().is_empty())
                .with_context(|| format!("--var {v:?}: expected name=value"))?;
            vars.insert(name.trim().to_string(), value.to_string());
        }
        Ok(AskOverrides {
            top_k: self.top_k,
            template,
            vars,
            max_tokens: self.max_tokens,
        })
    }
}

pub fn ask(engine: &Engine, req: AskRequest, args: &AskArgs) -> anyhow::Result<()> {
    let json = args.json;
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
            AskEvent::Sources { sources: s, .. } => sources = s,
            AskEvent::Step { step, label, .. } if args.show_prompts => {
                eprintln!("\n--- step {step}: {label} ---");
            }
            AskEvent::Prompt { prompt, .. } if args.show_prompts => {
                eprintln!("{prompt}\n--- end of prompt ---");
            }
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
