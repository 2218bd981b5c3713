//! The seven built-in response modes, step for step as llama-index-core runs them.

use super::blocks::{Blocks, Composed};
use super::template::Templates;
use super::{Ctx, Node, ResponseMode, Synthesizer, Vars};
use crate::Result;

/// A built-in mode with its templates.
#[derive(Debug, Clone, Default)]
pub struct Builtin {
    pub mode: ResponseMode,
    pub templates: Templates,
    /// Structured answer filtering (refine and compact).
    pub answer_filter: bool,
}

impl Builtin {
    /// The same mode as building blocks (what it runs as).
    pub fn composed(&self) -> Composed {
        Composed {
            blocks: Blocks::of(self.mode),
            templates: self.templates.clone(),
            answer_filter: self.answer_filter,
        }
    }
}

impl Synthesizer for Builtin {
    fn check(&self, vars: &Vars) -> Result<()> {
        self.composed().check(vars)
    }

    fn answer(&self, ctx: &mut Ctx<'_>, query: &str, nodes: &[Node]) -> Result<String> {
        self.composed().answer(ctx, query, nodes)
    }
}
