//! The bodies of the `quire` subcommands (the binary's own modules, not the library's).

pub mod ask;
pub mod collections;
pub mod folders;
pub mod generate;
pub mod index;
pub mod search;
