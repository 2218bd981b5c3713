//! Integration tests: one binary, a module per area (faster to link than many).

mod util;

mod pdf;
mod plumbing;
