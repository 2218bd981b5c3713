//! Integration tests of the benchmarks that need the real models and the shared corpus
//! (one binary, a module per benchmark).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod util;

mod answer;
mod ingest;
mod library;
mod llm;
mod matmul;
mod memory;
mod retrieval;
mod serving;
mod store;
mod tables;
