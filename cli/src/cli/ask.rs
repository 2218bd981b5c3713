//! `quire ask`: the answer streams to stdout, the sources follow on stderr.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use quire::engine::{AskEvent, AskOverrides, AskRequest, Engine};

/// Which conversation a question goes to, and its response mode (`quire ask`,
/// `quire chat`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TurnArgs {
    /// Response mode (default: the settings' mode, compact unless changed).
    #[arg(long)]
    pub mode: Option<String>,
    /// Continue this conversation.
    #[arg(long)]
    pub conversation: Option<i64>,
    /// Which documents to search: `all` (the default), `collection:NAME`, or
    /// documents (ids, paths or file names) separated by commas.
    #[arg(long, value_name = "SCOPE")]
    pub scope: Option<String>,
}

/// The options of `quire ask` beyond the question, mode and conversation.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AskArgs {
    /// Source nodes kept after retrieval (default: the settings', 4 unless changed).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// A custom text-QA template file; it must use {context_str} and {query_str}, and
    /// may use variables given with --var.
    #[arg(long, visible_alias = "template-qa", value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// A custom refine template file (refine, compact): {query_str},
    /// {existing_answer} and {context_msg}.
    #[arg(long, value_name = "FILE")]
    pub template_refine: Option<PathBuf>,
    /// A custom summary template file (tree_summarize): {context_str}, {query_str}.
    #[arg(long, value_name = "FILE")]
    pub template_summary: Option<PathBuf>,
    /// A custom simple_summarize template file: {context_str}, {query_str} (default:
    /// the QA template).
    #[arg(long, value_name = "FILE")]
    pub template_simple: Option<PathBuf>,
    /// A custom query-generation prompt file for --num-queries above 1: {query}, and
    /// {num_queries}.
    #[arg(long, value_name = "FILE")]
    pub template_query_gen: Option<PathBuf>,
    /// Queries in all, the question included; above 1 the LLM writes variants.
    #[arg(long)]
    pub num_queries: Option<usize>,
    /// LlamaIndex's structured answer filtering (refine, compact and custom modes that
    /// refine): each step says whether its context answered the question, and only
    /// those that did shape the answer.
    #[arg(long)]
    pub answer_filter: bool,
    /// A template variable, `name=value` (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Most tokens generated per LLM call (default: the settings').
    #[arg(long)]
    pub max_tokens: Option<usize>,
    /// How a follow-up uses the conversation: condense_plus_context, condense_question
    /// or off (default: the settings', condense_plus_context unless changed).
    #[arg(long, value_name = "MODE")]
    pub chat_mode: Option<String>,
    /// Answer with numbered sources and [N] citations.
    #[arg(long)]
    pub cite: bool,
    /// Let the LLM rerank the retrieved sources before answering.
    #[arg(long)]
    pub rerank: bool,
    /// Print each step's formatted prompt to stderr as the step starts.
    #[arg(long)]
    pub show_prompts: bool,
    /// Print each event as one JSON line instead.
    #[arg(long)]
    pub json: bool,
    /// Read the whole documents (every page), whatever the question's kind.
    #[arg(long, conflicts_with = "search")]
    pub whole: bool,
    /// Answer from the top passages, whatever the question's kind.
    #[arg(long)]
    pub search: bool,
}

impl AskArgs {
    /// The route `--whole` / `--search` force, else by the question's kind.
    pub fn route(&self) -> quire::engine::RouteChoice {
        use quire::engine::RouteChoice;
        match (self.whole, self.search) {
            (true, _) => RouteChoice::Whole,
            (_, true) => RouteChoice::Search,
            _ => RouteChoice::Auto,
        }
    }

    /// The settings overrides these options name.
    pub fn overrides(&self) -> anyhow::Result<AskOverrides> {
        let read = |flag: &str, p: &Option<PathBuf>| -> anyhow::Result<Option<String>> {
            match p {
                Some(p) => Ok(Some(
                    std::fs::read_to_string(p)
                        .with_context(|| format!("--{flag} {}", p.display()))?,
                )),
                None => Ok(None),
            }
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
            template: read("template", &self.template)?,
            refine_template: read("template-refine", &self.template_refine)?,
            summary_template: read("template-summary", &self.template_summary)?,
            simple_template: read("template-simple", &self.template_simple)?,
            query_gen_template: read("template-query-gen", &self.template_query_gen)?,
            structured_answer_filtering: self.answer_filter.then_some(true),
            num_queries: self.num_queries,
            temperature: None,
            vars,
            max_tokens: self.max_tokens,
            chat_mode: self.chat_mode.clone(),
            cite_sources: self.cite.then_some(true),
            rerank: self.rerank.then_some(true),
        })
    }
}

/// Ask one question; returns its conversation's id.
pub fn ask(engine: &Engine, req: AskRequest, args: &AskArgs) -> anyhow::Result<i64> {
    let json = args.json;
    let cancel = quire::llm::Cancel::new();
    let mut out = std::io::stdout().lock();
    let mut sources = Vec::new();
    let mut citations = Vec::new();
    let mut quotes = Vec::new();
    let mut support = None;
    let mut conversation = req.conversation_id.unwrap_or_default();
    let mut on = |ev: AskEvent| -> bool {
        if let AskEvent::Started {
            conversation_id, ..
        } = &ev
        {
            conversation = *conversation_id;
        }
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
            AskEvent::Condensed { question } => eprintln!("searched for: {question}"),
            AskEvent::Route { route } => eprintln!("{}", route.label),
            AskEvent::Reading {
                file,
                pages_read,
                pages,
                secs_left,
            } => match secs_left {
                Some(s) if pages_read < pages => {
                    eprintln!("reading {file}: {pages_read} of {pages} pages, about {s:.0} s left")
                }
                _ => eprintln!("reading {file}: {pages_read} of {pages} pages"),
            },
            AskEvent::Sources {
                sources: s,
                notes,
                scope,
                relevance,
            } => {
                eprintln!("searched: {scope}");
                for n in notes {
                    eprintln!("note: {n}");
                }
                if let Some(r) = relevance {
                    eprintln!("{}", r.reason);
                }
                sources = s;
            }
            AskEvent::Citations { citations: c } => citations = c,
            AskEvent::Quotes { quotes: q } => quotes = q,
            AskEvent::Support { support: s } => support = Some(s),
            AskEvent::Step { step, label, .. } if args.show_prompts => {
                eprintln!("\n--- step {step}: {label} ---");
            }
            AskEvent::Prompt { prompt, .. } if args.show_prompts => {
                eprintln!("{prompt}\n--- end of prompt ---");
            }
            AskEvent::StepDone { call } => {
                if args.show_prompts {
                    if let Some(r) = &call.rendered {
                        eprintln!(
                            "--- step {}: what the model read, after its chat template ({} tokens) ---\n{r}\n--- end ---",
                            call.step, call.prompt_tokens
                        );
                    }
                }
                if let Some(v) = call.query_satisfied {
                    let verdict = if v { "satisfied" } else { "not satisfied" };
                    eprintln!("step {} ({}): query {verdict}", call.step, call.label);
                }
            }
            AskEvent::Token {
                text,
                is_final: true,
                ..
            } => return write!(out, "{text}").and_then(|_| out.flush()).is_ok(),
            AskEvent::Done { stats, answer, .. } => {
                if stats.llm_calls == 0 && !answer.is_empty() {
                    // No model streamed it (the "not found" answer).
                    let _ = write!(out, "{answer}");
                }
                let _ = writeln!(out);
                eprintln!(
                    "\n{} LLM call(s), {} prompt + {} output tokens, {:.1}s ({:.1} tok/s)",
                    stats.llm_calls,
                    stats.prompt_tokens,
                    stats.output_tokens,
                    stats.secs,
                    stats.tokens_per_s
                );
                if let Some(n) = stats.cut_off_after {
                    eprintln!("cut off at {n} tokens: raise max_tokens in the settings for more");
                }
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
            let rerank = s
                .rerank_score
                .map(|r| format!(", rerank {r:.0}"))
                .unwrap_or_default();
            let kind = s.kind.map(|k| format!(", {k} page")).unwrap_or_default();
            eprintln!(
                "[{}] {} {pages} (score {:.3}{rerank}{kind})",
                i + 1,
                s.file,
                s.score
            );
        }
        for c in &citations {
            if let Some(i) = sources.iter().position(|s| s.chunk_id == c.chunk_id) {
                eprintln!("  source {} is in [{}]", c.number, i + 1);
            }
        }
        print_support(&quotes, support.as_ref());
    }
    Ok(conversation)
}

/// "From your documents" and the support check, after the sources.
fn print_support(quotes: &[quire::engine::Span], support: Option<&quire::engine::Support>) {
    use quire::engine::Verdict;
    if !quotes.is_empty() {
        eprintln!("\nFrom your documents:");
        for q in quotes {
            let text = q.text.split_whitespace().collect::<Vec<_>>().join(" ");
            eprintln!("  \"{text}\" ({}, p. {})", q.file, q.page);
        }
    }
    let Some(s) = support else { return };
    eprintln!("\nChecked against the sources: {}", s.summary);
    for x in &s.sentences {
        let mark = match x.verdict {
            Verdict::Supported => "supported",
            Verdict::Partly => "partly",
            Verdict::NotFound => "NOT FOUND in the sources",
            Verdict::Restates => "only restates the question",
            Verdict::NoClaim => continue,
        };
        let at = x
            .span
            .as_ref()
            .map(|p| format!(" ({}, p. {})", p.file, p.page))
            .unwrap_or_default();
        eprintln!("  [{mark}]{at} {}", x.text);
        if let Some(n) = &x.note {
            eprintln!("      {n}");
        }
    }
}

/// `quire chat`: an interactive conversation on stdin, one question a line (the
/// history goes with each follow-up); an empty line or end of input ends it.
pub fn chat(engine: &Engine, turn: TurnArgs, args: &AskArgs) -> anyhow::Result<()> {
    use std::io::BufRead;
    let overrides = args.overrides()?;
    let scope = match &turn.scope {
        Some(s) => engine.parse_scope(s)?,
        None => Default::default(),
    };
    let mut conversation = turn.conversation;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if !args.json {
            eprint!("> ");
        }
        let Some(line) = lines.next() else { break };
        let line = line?;
        let question = line.trim();
        if question.is_empty() || question == "/exit" {
            break;
        }
        let req = AskRequest {
            conversation_id: conversation,
            question: question.to_string(),
            mode: turn.mode.clone(),
            overrides: overrides.clone(),
            scope: scope.clone(),
            route: args.route(),
            ..Default::default()
        };
        match ask(engine, req, args) {
            Ok(id) => conversation = Some(id),
            Err(e) => eprintln!("error: {e:#}"),
        }
    }
    if let (Some(id), false) = (conversation, args.json) {
        eprintln!("conversation {id} (continue it with `quire chat --conversation {id}`)");
    }
    Ok(())
}

/// `quire modes`: every response mode, with where it comes from and what it does.
pub fn modes(engine: &Engine, json: bool) -> anyhow::Result<()> {
    let modes = engine.modes();
    if json {
        println!("{}", serde_json::to_string_pretty(&modes)?);
        return Ok(());
    }
    for m in modes {
        let kind = match m.kind {
            quire::engine::ModeKind::Builtin => "built-in",
            quire::engine::ModeKind::Library => "registered",
            quire::engine::ModeKind::Custom => "custom",
            quire::engine::ModeKind::Quire => "Quire's own",
        };
        println!("{:<20} {:<10} {}", m.name, kind, m.description);
    }
    Ok(())
}
