//! Integration tests: one binary, a module per area (faster to link than many).

mod util;

mod plumbing;

mod embed;
mod index;
mod llm;
