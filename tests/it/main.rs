//! Integration tests: one binary, a module per area (faster to link than many).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod util;

mod archs;
mod auto_model;
mod calibrate;
mod chat;
mod chat_parity;
mod embed;
mod folders;
mod fuzz_corpus;
mod gpu;
mod hostile;
mod index;
mod layout;
mod library;
mod live_index;
mod llm;
mod models;
mod modes;
mod navigation;
mod ocr;
mod openai;
mod optimizer_parity;
mod pdf;
mod plumbing;
mod postgres;
mod questions_first;
mod queue;
mod remote_llm;
mod scope;
mod server;
mod server_guard;
mod speculative;
mod support;
mod synth;
mod synth_model;
mod synth_parity;
mod threads;
mod whole;
