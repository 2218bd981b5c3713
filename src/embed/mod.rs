//! Text embeddings: the [`Embedder`] trait and the candle BERT model files ([`bert`]).

pub mod bert;

use crate::Result;

/// Turns texts into vectors for the vector retriever.
pub trait Embedder: Send + Sync {
    /// Vector length.
    fn dims(&self) -> usize;
    /// Longest input in the model's tokens; longer text must be split before.
    fn max_tokens(&self) -> usize;
    /// Same order as input, L2-normalized.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}
