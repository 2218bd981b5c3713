//! The local index: SQLite schema, migrations and queries.
pub mod conversations;
