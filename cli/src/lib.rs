//! The shells of the `quire` command line that other code starts too: the HTTP server
//! of `quire serve` ([`server`]). The command line itself is this package's binary
//! (`src/main.rs`, its subcommands in `src/cli/`).
//!
//! The server lives in a package of its own, not behind a feature of the core, so
//! that the core has one feature set: `quire`, `quire-bench` and `quire-desktop` build
//! in one `cargo build --workspace`, and the desktop window does not link axum.

pub mod server;
