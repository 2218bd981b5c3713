//! LlamaIndex's `CitationQueryEngine`: each source re-split (its `SentenceSplitter`,
//! `citation_chunk_size` and overlap) into numbered `Source N:` nodes, answered with
//! its citation QA and refine templates, so that the answer can say `[N]`.

use crate::synth::sentence_splitter::SentenceSplitter;
use crate::synth::{Node, Template, Templates};
use crate::Result;

/// LlamaIndex's default `citation_chunk_size`.
pub const CHUNK_SIZE: usize = 512;
/// LlamaIndex's default `citation_chunk_overlap`.
pub const CHUNK_OVERLAP: usize = 20;

const INTRO: &str = "Please provide an answer based solely on the provided sources. When \
referencing information from a source, cite the appropriate source(s) using their \
corresponding numbers. Every answer should include at least one source citation. Only cite a \
source when you are explicitly referencing it. If none of the sources are helpful, you should \
indicate that. For example:\nSource 1:\nThe sky is red in the evening and blue in the \
morning.\nSource 2:\nWater is wet when the sky is red.\nQuery: When is water wet?\nAnswer: \
Water will be wet when the sky is red [2], which occurs in the evening [1].\nNow it's your \
turn. ";

/// `CITATION_QA_TEMPLATE`.
pub fn qa_template() -> String {
    format!(
        "{INTRO}Below are several numbered sources of information:\n------\n{{context_str}}\n\
         ------\nQuery: {{query_str}}\nAnswer: "
    )
}

/// `CITATION_REFINE_TEMPLATE`.
pub fn refine_template() -> String {
    format!(
        "{INTRO}We have provided an existing answer: {{existing_answer}}Below are several \
         numbered sources of information. Use them to refine the existing answer. If the \
         provided sources are not helpful, you will repeat the existing answer.\nBegin \
         refining!\n------\n{{context_msg}}\n------\nQuery: {{query_str}}\nAnswer: "
    )
}

/// The citation engine's templates: its QA and refine ones, the default summary one
/// (LlamaIndex passes only those two to the synthesizer).
pub fn templates() -> Templates {
    Templates {
        text_qa: Template::new(qa_template()),
        refine: Template::new(refine_template()),
        ..Templates::default()
    }
}

/// Quire's instruction to cite, appended to `condense_plus_context`'s system message
/// when its sources are numbered (LlamaIndex's `system_prompt` argument).
pub const CITE_SYSTEM_PROMPT: &str = "The documents are numbered sources (Source 1, Source 2, \
...). When referencing information from a source, cite the appropriate source(s) using their \
corresponding numbers in square brackets, e.g. [1] or [2][3]. Every answer should include at \
least one source citation. Only cite a source when you are explicitly referencing it.";

/// One numbered source: which of the given nodes it came from, and its text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Numbered {
    /// 1-based, as the answer cites it.
    pub number: usize,
    /// Index into the nodes given to [`number_sources`].
    pub node: usize,
    pub text: String,
}

/// `_create_citation_nodes`: every node split into pieces of `chunk_size` tokens, each
/// piece a node `Source N:\n{piece}\n`, numbered across all nodes in order.
pub fn number_sources(
    nodes: &[Node],
    chunk_size: usize,
    chunk_overlap: usize,
    count: &dyn Fn(&str) -> Result<usize>,
) -> Result<(Vec<Node>, Vec<Numbered>)> {
    let splitter = SentenceSplitter::new(chunk_size, chunk_overlap, count);
    let mut out = Vec::new();
    let mut numbered = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        for piece in splitter.split_text(&n.text)? {
            let number = out.len() + 1;
            out.push(Node::new(
                format!("{}#{number}", n.id),
                format!("Source {number}:\n{piece}\n"),
            ));
            numbered.push(Numbered {
                number,
                node: i,
                text: piece,
            });
        }
    }
    Ok((out, numbered))
}
