//! A custom response synthesizer, registered on the engine as a mode of its own
//! (LlamaIndex's "Custom Response Synthesizers").
//!
//! `BestFirstRefine` answers from the highest-scored chunk (retrieval hands the nodes
//! over best first), then refines that answer with the other chunks in reverse order,
//! so the best chunk has the first word and the second best the last. Registered with
//! [`Engine::with_synthesizer`], it is listed beside the built-in modes: in
//! `quire modes`, `GET /api/modes`, and the UI's mode dropdown.
//!
//! ```text
//! cargo run --example custom_synthesizer -- [--data-dir DIR] "a question"
//! cargo run --example custom_synthesizer -- [--data-dir DIR] --serve [PORT]
//! ```
//!
//! The first asks one question through the new mode and streams the answer; the second
//! serves the UI (http://127.0.0.1:PORT, default 8718) with the mode in the dropdown.

use std::io::Write;
use std::sync::Arc;

use quire::engine::{AskEvent, AskRequest, Engine, EngineConfig};
use quire::llm::Cancel;
use quire::synth::{Ctx, Node, Synthesizer, Template, Vars};

/// The mode's name and its line in the dropdown.
pub const NAME: &str = "best_first_refine";
pub const DESCRIPTION: &str =
    "Answers from the best chunk, then refines with the others in reverse order.";

/// Answer from the best chunk, then refine with the rest, last first.
pub struct BestFirstRefine {
    pub qa: Template,
    pub refine: Template,
}

impl Default for BestFirstRefine {
    fn default() -> Self {
        Self {
            qa: Template::text_qa(),
            refine: Template::refine(),
        }
    }
}

impl Synthesizer for BestFirstRefine {
    fn check(&self, vars: &Vars) -> quire::Result<()> {
        let qa = ["context_str", "query_str"];
        let refine = ["query_str", "existing_answer", "context_msg"];
        self.qa.check("QA", &qa, &qa, vars)?;
        self.refine.check("refine", &refine, &refine, vars)
    }

    fn answer(&self, ctx: &mut Ctx<'_>, query: &str, nodes: &[Node]) -> quire::Result<String> {
        let Some((best, rest)) = nodes.split_first() else {
            return Ok(quire::synth::EMPTY_RESPONSE.to_string());
        };
        let qa = self.qa.partial([("query_str", query)]);
        // A chunk longer than the window is cut to fit (room kept for the answer).
        let fit = |ctx: &Ctx<'_>, t: &Template, text: &str| -> quire::Result<String> {
            Ok(ctx.helper().truncate(t, &[text], 5)?.concat())
        };
        let context = fit(ctx, &qa, &best.text)?;
        let prompt = ctx.format(&qa, &[("context_str", &context)]);
        let mut answer = ctx.call("answer from the best chunk", prompt, rest.is_empty(), None)?;
        let n = rest.len();
        for (i, node) in rest.iter().rev().enumerate() {
            let t = self
                .refine
                .partial([("query_str", query), ("existing_answer", &answer)]);
            let context = fit(ctx, &t, &node.text)?;
            let prompt = ctx.format(&t, &[("context_msg", &context)]);
            let label = format!("refine with chunk {} of {n} (rank {})", i + 1, n + 1 - i);
            let out = ctx.call(label, prompt, i + 1 == n, None)?;
            if !out.trim().is_empty() {
                answer = out;
            }
        }
        Ok(answer)
    }
}

/// `engine` with the mode registered.
pub fn register(engine: Engine) -> quire::Result<Engine> {
    engine.with_synthesizer(NAME, DESCRIPTION, Arc::new(BestFirstRefine::default()))
}

#[allow(dead_code)] // A test includes this file for `register`; `main` is the example's.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut data_dir = None;
    if let Some(i) = args.iter().position(|a| a == "--data-dir") {
        data_dir = Some(args.get(i + 1).ok_or("--data-dir needs a folder")?.into());
        args.drain(i..i + 2);
    }
    let engine = register(Engine::open(EngineConfig::new(data_dir)?)?)?;
    if args.first().map(String::as_str) == Some("--serve") {
        let port: u16 = args.get(1).map(|p| p.parse()).transpose()?.unwrap_or(8718);
        let opts = quire_cli::server::ServeOptions {
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            token: Some(quire_cli::server::random_token()?),
            max_upload: quire_cli::server::DEFAULT_MAX_UPLOAD,
            ui_dir: None,
            allowed_hosts: Vec::new(),
        };
        eprintln!("the mode {NAME} is in the UI's mode menu");
        tokio::runtime::Runtime::new()?
            .block_on(quire_cli::server::serve(Arc::new(engine), opts))?;
        return Ok(());
    }
    let question = args.join(" ");
    if question.trim().is_empty() {
        return Err("usage: custom_synthesizer [--data-dir DIR] QUESTION | --serve [PORT]".into());
    }
    let req = AskRequest {
        question,
        mode: Some(NAME.into()),
        ..Default::default()
    };
    let mut out = std::io::stdout().lock();
    engine.ask(req, &Cancel::new(), &mut |ev| {
        match ev {
            AskEvent::Step { step, label, .. } => eprintln!("step {step}: {label}"),
            AskEvent::Token {
                text,
                is_final: true,
                ..
            } => {
                let _ = write!(out, "{text}");
                let _ = out.flush();
            }
            AskEvent::Done { .. } => {
                let _ = writeln!(out);
            }
            _ => {}
        }
        true
    })?;
    Ok(())
}
