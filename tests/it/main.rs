//! Integration tests: one binary, a module per area (faster to link than many).

mod util;

mod pdf;
mod plumbing;

mod embed;
mod llm;
mod server;
mod synth_parity;
mod retrieve;
mod index;
mod llm;
