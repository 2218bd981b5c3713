//! An answer you can check, as the engine makes it: the quotes ("From your
//! documents") for a question and the support check of a finished answer, over the
//! answer's sources, with every span moved to the page of its source that holds it.

use super::{Citation, Engine, Source};
use crate::embed::Embedder;
use crate::support::{self, Cited, Passage, Span, Support};

impl Engine {
    /// The source sentences that best answer `searched` (the standalone question).
    /// Each sentence is also scored by the embedder's cosine to the question (when
    /// the embedder is not at hand, by its terms alone).
    pub(super) fn quotes_for(&self, searched: &str, sources: &[Source]) -> Vec<Span> {
        let cosines = |texts: &[&str]| -> Option<Vec<f32>> {
            let emb = self.embedder().ok()?;
            let q = emb.embed_query(searched).ok()?;
            let vs = emb.embed(texts).ok()?;
            Some(vs.iter().map(|v| dot(&q, v)).collect())
        };
        // A quote that runs to the end of its source reads on into the next chunk.
        let after = |i: usize| -> Option<(i64, String)> {
            let src = sources.get(i)?;
            self.store().next_chunk(src.chunk_id).ok()?
        };
        let mut quotes = support::quotes_with(searched, &passages(sources), &cosines, &after);
        for q in &mut quotes {
            self.place(q, sources);
        }
        quotes
    }

    /// Every sentence of `answer` to `question` checked against `sources` and, for
    /// its `[N]` markers, against the numbered `citations`.
    pub(super) fn support_for(
        &self,
        question: &str,
        answer: &str,
        sources: &[Source],
        citations: &[Citation],
    ) -> Support {
        let cited: Vec<Cited<'_>> = citations
            .iter()
            .map(|c| Cited {
                number: c.number,
                chunk_id: c.chunk_id,
                text: &c.text,
            })
            .collect();
        let mut checked = support::check_answer(question, answer, &passages(sources), &cited);
        for s in &mut checked.sentences {
            if let Some(span) = &mut s.span {
                self.place(span, sources);
            }
        }
        checked
    }

    /// Move `span` to the page of its source that holds its words (a source can run
    /// over a page break); it stays on the source's first page when none does.
    fn place(&self, span: &mut Span, sources: &[Source]) {
        let Some(src) = sources.get(span.source) else {
            return;
        };
        if src.page_end <= src.page_start {
            return;
        }
        let want = letters(&span.text);
        let head: String = want.chars().take(60).collect();
        if head.is_empty() {
            return;
        }
        for page in src.page_start..=src.page_end {
            if let Ok(Some(text)) = self.store().page_text(src.doc_id, page) {
                if letters(&text).contains(&head) {
                    span.page = page;
                    return;
                }
            }
        }
    }
}

/// The answer's sources as the check reads them.
fn passages(sources: &[Source]) -> Vec<Passage<'_>> {
    sources
        .iter()
        .map(|s| Passage {
            chunk_id: s.chunk_id,
            doc_id: s.doc_id,
            file: &s.file,
            page: s.page_start,
            text: &s.text,
        })
        .collect()
}

/// Letters and digits only, lower case: the same words however lines were broken.
fn letters(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The dot product: the cosine of two L2-normalized vectors.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
