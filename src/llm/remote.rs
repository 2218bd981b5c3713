//! An [`Llm`] answered by an OpenAI-compatible model server (llama.cpp's
//! `llama-server`, `llama-cpp-python[server]`, vLLM, Ollama, …) over
//! `/v1/chat/completions` or `/v1/completions`, streamed (server-sent events).
//!
//! - **Prompts.** A chat model ([`RemoteConfig::chat`], the default) gets each
//!   completion prompt as one user message, as LlamaIndex's `OpenAILike` with
//!   `is_chat_model=True` sends it, and conversations as messages: the server applies
//!   its model's chat template. A completion model gets the prompt as it is.
//! - **Token counts**, which the synthesizers pack sources by: the server's own
//!   tokenizer endpoint (llama.cpp's `/tokenize`, llama-cpp-python's
//!   `/extras/tokenize/count`, vLLM's `/tokenize`), found at connection; or a
//!   tokenizer file named in the settings (the model's GGUF, or a `tokenizer.json`).
//! - **Context window:** the settings' when given; else the server's (llama.cpp's
//!   `/props`, vLLM's `max_model_len`); else LlamaIndex's default, 3,900 tokens.
//! - **Structured answer filtering** sends the answer's shape as a GBNF grammar
//!   (`grammar`, which llama.cpp's server and llama-cpp-python take).
//! - **Cancellation** returns at once: the stream is read on a thread of its own, and
//!   the connection is closed as soon as the server sends anything more, which stops
//!   its generation.
//! - **Errors** name the server and what went wrong: unreachable, an API key refused,
//!   a model the server does not serve (it lists those it does), a stream that ends
//!   before the answer does.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::chat::Message;
use super::{Cancel, Completion, Constraint, GenParams, Llm, StopReason, TokenSink};
use crate::{Error, Result};

/// LlamaIndex's `DEFAULT_CONTEXT_WINDOW`, used when neither the settings nor the
/// server give one.
pub const DEFAULT_CONTEXT_WINDOW: usize = 3900;

/// Where the server is and how to talk to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteConfig {
    /// `http(s)://host:port`, with or without the trailing `/v1`.
    pub url: String,
    /// The model to ask for; empty: the first (often only) one the server lists.
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<String>,
    /// Tokens; 0: ask the server.
    pub context_window: usize,
    /// A GGUF or `tokenizer.json` to count tokens with, instead of the server.
    pub tokenizer: Option<PathBuf>,
    /// Chat model (`/v1/chat/completions`) or completion model (`/v1/completions`).
    pub chat: bool,
}

/// How tokens are counted.
enum Counter {
    /// llama-cpp-python: `POST /extras/tokenize/count {"input"}` → `{"count"}`.
    ExtrasCount,
    /// llama.cpp's server: `POST /tokenize {"content"}` → `{"tokens"}`.
    Content,
    /// vLLM: `POST /tokenize {"model", "prompt"}` → `{"count"}`.
    Prompt,
    Gguf(Box<super::tokenizer::Tokenizer>),
    Json(Box<tokenizers::Tokenizer>),
}

/// An OpenAI-compatible model server, connected (see the module's text).
pub struct RemoteLlm {
    /// Without the trailing `/v1`.
    root: String,
    model: String,
    api_key: Option<String>,
    chat: bool,
    context_window: usize,
    counter: Counter,
    agent: ureq::Agent,
    /// Where the context window and the token counts come from, for the status line.
    about: String,
}

/// The shape structured answer filtering asks for, as GBNF:
/// `{"query_satisfied": true|false, "answer": "…"}`.
const ANSWER_FILTER_GBNF: &str = r#"root ::= "{" ws "\"query_satisfied\"" ws ":" ws boolean ws "," ws "\"answer\"" ws ":" ws string ws "}"
boolean ::= "true" | "false"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ["\\/bfnrt] | "\\u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] )* "\""
ws ::= [ \t\n]*"#;

impl RemoteLlm {
    /// Connect: list the server's models, check the one asked for, find how to count
    /// tokens and the context window.
    pub fn connect(cfg: &RemoteConfig) -> Result<Self> {
        let url = cfg.url.trim().trim_end_matches('/');
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::Invalid(format!(
                "model server address {url:?}: give it as http://host:port or https://host:port"
            )));
        }
        let root = url.strip_suffix("/v1").unwrap_or(url).to_string();
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(5))
            .build();
        let mut me = Self {
            root,
            model: cfg.model.trim().to_string(),
            api_key: cfg.api_key.clone().filter(|k| !k.is_empty()),
            chat: cfg.chat,
            context_window: cfg.context_window,
            counter: Counter::Content,
            agent,
            about: String::new(),
        };
        let models = me.get("/v1/models")?;
        let served: Vec<String> = models["data"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|m| m["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if served.is_empty() {
            return Err(me.err("its /v1/models lists no model"));
        }
        if me.model.is_empty() {
            me.model = served[0].clone();
        } else if !served.contains(&me.model) {
            return Err(me.err(format!(
                "it does not serve a model named {:?}; it serves: {}",
                me.model,
                served.join(", ")
            )));
        }
        let entry = models["data"]
            .as_array()
            .and_then(|a| a.iter().find(|m| m["id"] == me.model.as_str()))
            .cloned()
            .unwrap_or(Value::Null);
        let context_from = if cfg.context_window > 0 {
            "the settings"
        } else if let Some(n) = me.server_context(&entry) {
            me.context_window = n;
            "the server"
        } else {
            me.context_window = DEFAULT_CONTEXT_WINDOW;
            "LlamaIndex's default (the server does not say; set it in the settings)"
        };
        me.counter = match &cfg.tokenizer {
            Some(p) => local_counter(p)?,
            None => me.find_counter()?,
        };
        let counted_by = match &me.counter {
            Counter::Gguf(_) | Counter::Json(_) => "a local tokenizer file",
            _ => "the server's tokenizer",
        };
        me.about = format!(
            "{} at {} ({} API; {} tokens of context from {context_from}; counted by {counted_by})",
            me.model,
            me.root,
            if me.chat { "chat" } else { "completion" },
            me.context_window
        );
        Ok(me)
    }

    /// The model's name on the server.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One line for the status: model, server, context and token counting.
    pub fn describe(&self) -> &str {
        &self.about
    }

    fn err(&self, reason: impl Into<String>) -> Error {
        Error::Server {
            url: self.root.clone(),
            reason: reason.into(),
        }
    }

    fn request(&self, method: &str, path: &str) -> ureq::Request {
        let r = self
            .agent
            .request(method, &format!("{}{path}", self.root))
            .set("Accept", "application/json, text/event-stream");
        match &self.api_key {
            Some(k) => r.set("Authorization", &format!("Bearer {k}")),
            None => r,
        }
    }

    /// What a failed call means, in words.
    fn failure(&self, path: &str, e: ureq::Error) -> Error {
        match e {
            ureq::Error::Status(code, resp) => {
                let body = resp.into_string().unwrap_or_default();
                let msg = serde_json::from_str::<Value>(&body)
                    .ok()
                    .and_then(|v| {
                        v["error"]["message"]
                            .as_str()
                            .or(v["error"].as_str())
                            .or(v["detail"].as_str())
                            .or(v["message"].as_str())
                            .map(str::to_owned)
                    })
                    .unwrap_or_else(|| body.chars().take(300).collect());
                match code {
                    401 | 403 => self.err(format!(
                        "{path}: the server refused the API key (HTTP {code}): {msg}"
                    )),
                    _ => self.err(format!("{path}: HTTP {code}: {msg}")),
                }
            }
            ureq::Error::Transport(t) => self.err(format!(
                "cannot reach it ({t}); is the model server running, and is the address right?"
            )),
        }
    }

    fn get(&self, path: &str) -> Result<Value> {
        let resp = self
            .request("GET", path)
            .call()
            .map_err(|e| self.failure(path, e))?;
        resp.into_json()
            .map_err(|e| self.err(format!("{path}: not JSON: {e}")))
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value> {
        let resp = self
            .request("POST", path)
            .send_json(body)
            .map_err(|e| self.failure(path, e))?;
        resp.into_json()
            .map_err(|e| self.err(format!("{path}: not JSON: {e}")))
    }

    /// The context window the server reports: llama.cpp's `/props`, or the model
    /// entry's `max_model_len` (vLLM) or `meta.n_ctx_train`.
    fn server_context(&self, entry: &Value) -> Option<usize> {
        let from_props = self.get("/props").ok().and_then(|p| {
            p["default_generation_settings"]["n_ctx"]
                .as_u64()
                .or(p["n_ctx"].as_u64())
        });
        from_props
            .or(entry["max_model_len"].as_u64())
            .or(entry["meta"]["n_ctx_train"].as_u64())
            .map(|n| n as usize)
            .filter(|&n| n > 0)
    }

    /// The first tokenizer endpoint that answers.
    fn find_counter(&self) -> Result<Counter> {
        for c in [Counter::ExtrasCount, Counter::Content, Counter::Prompt] {
            if self.count_with(&c, "Hello").is_ok_and(|n| n > 0) {
                return Ok(c);
            }
        }
        Err(self.err(
            "it has no tokenizer endpoint Quire knows (/tokenize, /extras/tokenize/count): \
             name the model's GGUF or tokenizer.json in the settings to count tokens with",
        ))
    }

    fn count_with(&self, c: &Counter, text: &str) -> Result<usize> {
        let count = |v: Value, key: &str| match key {
            "tokens" => v["tokens"].as_array().map(Vec::len),
            _ => v["count"].as_u64().map(|n| n as usize),
        };
        let (path, body, key) = match c {
            Counter::ExtrasCount => (
                "/extras/tokenize/count",
                json!({"input": text, "model": self.model}),
                "count",
            ),
            Counter::Content => ("/tokenize", json!({"content": text}), "tokens"),
            Counter::Prompt => (
                "/tokenize",
                json!({"model": self.model, "prompt": text}),
                "count",
            ),
            Counter::Gguf(t) => return Ok(t.encode_prompt(text)?.len()),
            Counter::Json(t) => {
                return t
                    .encode_fast(text, true)
                    .map(|e| e.len())
                    .map_err(|e| Error::Invalid(format!("tokenizer: {e}")))
            }
        };
        let v = self.post(path, &body)?;
        count(v, key).ok_or_else(|| self.err(format!("{path}: no token count in the reply")))
    }

    /// The request body shared by both endpoints.
    fn body(&self, params: &GenParams) -> Value {
        let mut b = json!({
            "model": self.model,
            "stream": true,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "seed": params.seed,
            // llama.cpp's and llama-cpp-python's name, then vLLM's.
            "repeat_penalty": params.repeat_penalty,
            "repetition_penalty": params.repeat_penalty,
        });
        if let Some(k) = params.top_k {
            b["top_k"] = json!(k);
        }
        if let Some(p) = params.top_p {
            b["top_p"] = json!(p);
        }
        if !params.stop.is_empty() {
            b["stop"] = json!(params.stop);
        }
        if params.constraint == Some(Constraint::AnswerFilter) {
            b["grammar"] = json!(ANSWER_FILTER_GBNF);
        }
        b
    }

    /// POST `body` to `path` with streaming, passing each piece of text to `sink`.
    fn stream(
        &self,
        path: &'static str,
        body: Value,
        prompt_tokens: usize,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<Completion> {
        cancel.check()?;
        let t0 = Instant::now();
        let resp = self
            .request("POST", path)
            .send_json(body)
            .map_err(|e| self.failure(path, e))?;
        let chat = path.ends_with("chat/completions");
        let (tx, rx) = mpsc::sync_channel::<std::io::Result<String>>(64);
        // The stream is read on a thread of its own, so that a cancel returns at once;
        // the thread ends (and the connection closes) at the server's next line.
        let reader = resp.into_reader();
        std::thread::Builder::new()
            .name("quire-llm-stream".into())
            .spawn(move || read_lines(reader, tx))
            .map_err(|e| self.err(format!("cannot start the stream reader: {e}")))?;
        let mut text = String::new();
        let mut pieces = 0usize;
        let mut first: Option<Instant> = None;
        let mut finish: Option<String> = None;
        let mut usage: Option<(usize, usize)> = None;
        loop {
            let line = match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Ok(l)) => l,
                Ok(Err(e)) => {
                    return Err(self.err(format!(
                        "the stream broke off after {pieces} pieces of the answer: {e}"
                    )))
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    cancel.check()?;
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            cancel.check()?;
            let Some(data) = line.strip_prefix("data:").map(str::trim) else {
                continue; // comments, event names, blank separators
            };
            if data == "[DONE]" {
                finish.get_or_insert_with(|| "stop".into());
                break;
            }
            let v: Value = serde_json::from_str(data)
                .map_err(|e| self.err(format!("a stream event that is not JSON ({e}): {data}")))?;
            if let Some(msg) = v["error"]["message"].as_str().or(v["error"].as_str()) {
                return Err(self.err(format!("it failed mid-answer: {msg}")));
            }
            if let (Some(p), Some(c)) = (
                v["usage"]["prompt_tokens"].as_u64(),
                v["usage"]["completion_tokens"].as_u64(),
            ) {
                usage = Some((p as usize, c as usize));
            }
            let Some(choice) = v["choices"].get(0) else {
                continue;
            };
            let piece = if chat {
                choice["delta"]["content"].as_str()
            } else {
                choice["text"].as_str()
            }
            .unwrap_or_default();
            if !piece.is_empty() {
                first.get_or_insert_with(Instant::now);
                pieces += 1;
                text.push_str(piece);
                if !sink(piece)? {
                    return Ok(self.done(text, prompt_tokens, pieces, StopReason::Sink, t0, first));
                }
            }
            if let Some(f) = choice["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
        }
        let Some(finish) = finish else {
            return Err(self.err(format!(
                "the stream ended before the answer did ({pieces} pieces, no finish reason): \
                 the server stopped or dropped the connection"
            )));
        };
        let stop = match finish.as_str() {
            "length" => StopReason::MaxTokens,
            _ => StopReason::EndToken,
        };
        let (prompt_tokens, pieces) = usage.unwrap_or((prompt_tokens, pieces));
        Ok(self.done(text, prompt_tokens, pieces, stop, t0, first))
    }

    fn done(
        &self,
        text: String,
        prompt_tokens: usize,
        output_tokens: usize,
        stop: StopReason,
        t0: Instant,
        first: Option<Instant>,
    ) -> Completion {
        let first = first.unwrap_or_else(Instant::now);
        Completion {
            text,
            prompt_tokens,
            output_tokens,
            stop,
            prompt_secs: (first - t0).as_secs_f64(),
            gen_secs: first.elapsed().as_secs_f64(),
            draft: None,
        }
    }

    fn chat_messages(&self, messages: &[Message]) -> Value {
        Value::Array(
            messages
                .iter()
                .map(|m| json!({"role": m.role, "content": m.content}))
                .collect(),
        )
    }
}

/// Lines of the event stream, sent until the stream ends or nobody listens.
fn read_lines(reader: impl Read, tx: mpsc::SyncSender<std::io::Result<String>>) {
    let mut r = BufReader::new(reader);
    loop {
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) => {
                let l = line.trim_end_matches(['\r', '\n']).to_string();
                if tx.send(Ok(l)).is_err() {
                    return; // cancelled: dropping the reader closes the connection
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

/// A token counter from a tokenizer file: a GGUF's, or a `tokenizer.json`.
fn local_counter(path: &std::path::Path) -> Result<Counter> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
    {
        return Ok(Counter::Gguf(Box::new(super::tokenizer::Tokenizer::open(
            path,
        )?)));
    }
    let t = tokenizers::Tokenizer::from_file(path)
        .map_err(|e| Error::model_format(path, format!("not a GGUF or tokenizer.json: {e}")))?;
    Ok(Counter::Json(Box::new(t)))
}

impl Llm for RemoteLlm {
    fn context_window(&self) -> usize {
        self.context_window
    }

    fn served_name(&self) -> Option<String> {
        let host = self.root.split("://").nth(1).unwrap_or(&self.root);
        Some(format!("{} on {host}", self.model))
    }

    fn count_tokens(&self, text: &str) -> Result<usize> {
        self.count_with(&self.counter, text)
    }

    fn complete(
        &self,
        prompt: &str,
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<Completion> {
        if self.chat {
            return self.chat(&[Message::user(prompt)], params, cancel, sink);
        }
        let mut body = self.body(params);
        body["prompt"] = json!(prompt);
        let n = self.count_tokens(prompt)?;
        self.stream("/v1/completions", body, n, cancel, sink)
    }

    fn chat(
        &self,
        messages: &[Message],
        params: &GenParams,
        cancel: &Cancel,
        sink: &mut TokenSink<'_>,
    ) -> Result<Completion> {
        if !self.chat {
            return self.complete(
                &super::chat::messages_to_prompt(messages),
                params,
                cancel,
                sink,
            );
        }
        let mut body = self.body(params);
        body["messages"] = self.chat_messages(messages);
        let n = self.count_tokens(
            &messages
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        )?;
        self.stream("/v1/chat/completions", body, n, cancel, sink)
    }
}
