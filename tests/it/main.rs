//! Integration tests: one binary, a module per area (faster to link than many).

mod util;

mod plumbing;
mod synth;
mod synth_parity;
