//! The CPU below everything: the cancellation flag every long run checks
//! ([`Cancel`]), which instructions this machine and its OS allow
//! ([`features`]), f16 scales read by table ([`f16`]), the split of a product's rows
//! across the thread pool ([`split`]), pools as wide as the CPUs the process gets
//! ([`pool`]), questions before indexing ([`priority`]) and weights on transparent huge pages
//! ([`huge`]), and buffers a thread keeps between calls ([`scratch`]). `llm`, `embed` and `retrieve` take these from here; this room imports
//! no other room of the crate.

mod cancel;
pub mod f16;
pub mod features;
pub(crate) mod huge;
pub mod pool;
pub mod priority;
pub mod scratch;
pub(crate) mod simd;
pub mod split;

pub use cancel::Cancel;
pub use f16::{f16_at, f16_table};
pub use features::*;
