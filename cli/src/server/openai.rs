//! Quire as an OpenAI-compatible RAG server: `GET /v1/models` lists one model per
//! response mode (`quire-compact`, `quire-refine`, …, registered and custom modes
//! too), and `POST /v1/chat/completions` answers the last user message from the index
//! with that mode, the earlier messages being the conversation, streamed as
//! `chat.completion.chunk` server-sent events or returned whole. The sources go in an
//! extra field, `quire` (`sources`, `conversation_id`, `message_id`), on the response
//! or on the last chunk. Same access rules as the rest of the API: loopback, or the
//! token (here also as `Authorization: Bearer <token>`, what OpenAI clients send).

use std::convert::Infallible;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{json, Value};

use super::AppState;
use quire::engine::{self, AskEvent, AskOverrides, AskRequest, ChatTurn};

/// The prefix of every model name: `quire-` + a response mode.
pub const PREFIX: &str = "quire-";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/models", get(models))
        .route("/chat/completions", post(chat_completions))
}

/// An error as OpenAI's API writes it.
fn error(status: StatusCode, message: impl Into<String>, code: &str) -> Response {
    let kind = if status == StatusCode::UNAUTHORIZED {
        "authentication_error"
    } else {
        "invalid_request_error"
    };
    (
        status,
        Json(json!({ "error": { "message": message.into(), "type": kind, "param": null, "code": code } })),
    )
        .into_response()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

async fn models(State(st): State<AppState>) -> Json<Value> {
    let data: Vec<Value> = st
        .engine
        .modes()
        .into_iter()
        .map(|m| {
            json!({
                "id": format!("{PREFIX}{}", m.name),
                "object": "model",
                "created": 0,
                "owned_by": "quire",
                "description": m.description,
            })
        })
        .collect();
    Json(json!({ "object": "list", "data": data }))
}

#[derive(Debug, Deserialize)]
struct ChatRequest {
    model: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    max_tokens: Option<usize>,
    #[serde(default)]
    max_completion_tokens: Option<usize>,
    #[serde(default)]
    temperature: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Content,
}

/// A message's content: a string, or OpenAI's list of parts (the text parts count).
#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Value>),
    #[default]
    None,
}

impl Content {
    fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            Content::None => String::new(),
        }
    }
}

/// The ask a chat request stands for: the last user message is the question, the
/// messages before it the conversation.
fn ask_request(req: &ChatRequest) -> Result<AskRequest, Box<Response>> {
    let bad = |m: &str| Box::new(error(StatusCode::BAD_REQUEST, m, "invalid_request"));
    let mode = req
        .model
        .strip_prefix(PREFIX)
        .ok_or_else(|| {
            Box::new(error(
                StatusCode::NOT_FOUND,
                format!(
                    "The model '{}' does not exist: Quire's models are named {PREFIX}<mode>, e.g. {PREFIX}compact (GET /v1/models lists them)",
                    req.model
                ),
                "model_not_found",
            ))
        })?
        .to_string();
    let last = req
        .messages
        .iter()
        .rposition(|m| m.role == "user")
        .ok_or_else(|| bad("messages hold no user message to answer"))?;
    let question = req.messages[last].content.text();
    if question.trim().is_empty() {
        return Err(bad("the last user message is empty"));
    }
    let history = req.messages[..last]
        .iter()
        .filter(|m| m.role == "user" || m.role == "assistant")
        .map(|m| ChatTurn {
            role: m.role.clone(),
            content: m.content.text(),
        })
        .collect();
    Ok(AskRequest {
        question,
        mode: Some(mode),
        overrides: AskOverrides {
            max_tokens: req.max_completion_tokens.or(req.max_tokens),
            temperature: req.temperature,
            ..AskOverrides::default()
        },
        history,
        ..AskRequest::default()
    })
}

async fn chat_completions(State(st): State<AppState>, Json(req): Json<ChatRequest>) -> Response {
    let ask = match ask_request(&req) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    if let Err(e) = st.engine.check_ask(&ask) {
        let (status, code) = match e {
            quire::Error::Invalid(ref m) if m.starts_with("unknown response mode") => {
                (StatusCode::NOT_FOUND, "model_not_found")
            }
            _ => (StatusCode::BAD_REQUEST, "invalid_request"),
        };
        let message = match (&e, code) {
            (_, "model_not_found") => format!(
                "The model '{}' does not exist ({e}; GET /v1/models lists them)",
                req.model
            ),
            _ => e.to_string(),
        };
        return error(status, message, code);
    }
    let handle = engine::spawn_ask(st.engine.clone(), ask);
    if req.stream {
        stream(handle, req.model).into_response()
    } else {
        whole(handle, req.model).await
    }
}

/// The fields an answer carries besides its text.
#[derive(Default)]
struct Extra {
    id: String,
    sources: Value,
    /// The quotes and the support check (Quire's own fields; plain OpenAI clients
    /// ignore them).
    quotes: Value,
    support: Value,
    conversation_id: Option<i64>,
}

impl Extra {
    fn take(&mut self, ev: &AskEvent) {
        match ev {
            AskEvent::Started {
                ask_id,
                conversation_id,
                ..
            } => {
                self.id = format!("chatcmpl-quire-{ask_id}");
                self.conversation_id = Some(*conversation_id);
            }
            AskEvent::Sources { sources, .. } => {
                self.sources = serde_json::to_value(sources).unwrap_or(Value::Null)
            }
            AskEvent::Quotes { quotes } => {
                self.quotes = serde_json::to_value(quotes).unwrap_or(Value::Null)
            }
            AskEvent::Support { support } => {
                self.support = serde_json::to_value(support).unwrap_or(Value::Null)
            }
            _ => {}
        }
    }

    fn quire(&self, message_id: Option<i64>) -> Value {
        json!({
            "sources": self.sources,
            "quotes": self.quotes,
            "support": self.support,
            "conversation_id": self.conversation_id,
            "message_id": message_id,
        })
    }
}

fn usage(stats: &engine::AskStats) -> Value {
    json!({
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.output_tokens,
        "total_tokens": stats.prompt_tokens + stats.output_tokens,
    })
}

/// The whole answer as one `chat.completion`.
async fn whole(mut handle: engine::AskHandle, model: String) -> Response {
    let mut extra = Extra::default();
    while let Some(ev) = handle.events.recv().await {
        extra.take(&ev);
        match ev {
            AskEvent::Done {
                answer,
                stats,
                message_id,
            } => {
                return Json(json!({
                    "id": extra.id,
                    "object": "chat.completion",
                    "created": now(),
                    "model": model,
                    "choices": [{
                        "index": 0,
                        "message": { "role": "assistant", "content": answer },
                        "finish_reason": "stop",
                    }],
                    "usage": usage(&stats),
                    "quire": extra.quire(Some(message_id)),
                }))
                .into_response();
            }
            AskEvent::Error { message } => {
                return error(StatusCode::INTERNAL_SERVER_ERROR, message, "quire_error")
            }
            AskEvent::Cancelled => {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the answer was stopped",
                    "cancelled",
                )
            }
            _ => {}
        }
    }
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the answer ended without a result",
        "quire_error",
    )
}

/// One `chat.completion.chunk` event, with `more` top-level fields.
fn chunk(
    extra: &Extra,
    model: &str,
    delta: Value,
    finish: Option<&str>,
    more: Vec<(&str, Value)>,
) -> Event {
    let mut v = json!({
        "id": extra.id,
        "object": "chat.completion.chunk",
        "created": now(),
        "model": model,
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
    });
    for (k, x) in more {
        v[k] = x;
    }
    Event::default().data(v.to_string())
}

/// State of a streamed answer.
struct Streaming {
    handle: engine::AskHandle,
    model: String,
    extra: Extra,
    /// The stream has ended (after `[DONE]`).
    ended: bool,
}

/// The answer as `chat.completion.chunk` events, then `[DONE]`; the client going away
/// drops the handle, which stops the answer.
fn stream(
    handle: engine::AskHandle,
    model: String,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let state = Streaming {
        handle,
        model,
        extra: Extra::default(),
        ended: false,
    };
    let s = futures_util::stream::unfold(state, |mut s| async move {
        if s.ended {
            return None;
        }
        loop {
            let Some(ev) = s.handle.events.recv().await else {
                s.ended = true;
                return Some((Ok(Event::default().data("[DONE]")), s));
            };
            s.extra.take(&ev);
            let out = match ev {
                AskEvent::Started { .. } => Some(chunk(
                    &s.extra,
                    &s.model,
                    json!({ "role": "assistant", "content": "" }),
                    None,
                    vec![],
                )),
                AskEvent::Token {
                    text,
                    is_final: true,
                    ..
                } => Some(chunk(
                    &s.extra,
                    &s.model,
                    json!({ "content": text }),
                    None,
                    vec![],
                )),
                AskEvent::Done {
                    answer,
                    stats,
                    message_id,
                } => {
                    // A "not found" answer made no LLM call: its text comes whole here.
                    let delta = if stats.llm_calls == 0 && !answer.is_empty() {
                        json!({ "content": answer })
                    } else {
                        json!({})
                    };
                    let fields = vec![
                        ("usage", usage(&stats)),
                        ("quire", s.extra.quire(Some(message_id))),
                    ];
                    Some(chunk(&s.extra, &s.model, delta, Some("stop"), fields))
                }
                AskEvent::Error { message } => Some(
                    Event::default().data(
                        json!({ "error": { "message": message, "type": "server_error", "code": "quire_error" } })
                            .to_string(),
                    ),
                ),
                AskEvent::Cancelled => Some(chunk(
                    &s.extra,
                    &s.model,
                    json!({}),
                    Some("stop"),
                    vec![],
                )),
                _ => None,
            };
            if let Some(e) = out {
                return Some((Ok(e), s));
            }
        }
    });
    Sse::new(s).keep_alive(KeepAlive::default())
}
