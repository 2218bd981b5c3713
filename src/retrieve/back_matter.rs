//! A document's back matter: its index and bibliography pages, which point into the
//! document's pages or out to other works and say nothing of their own. Reading a
//! document whole (a summary) passes over their chunks: the default 0.5B summarized
//! the two index pages of a 40-page manual as "a book on physical chemistry", and
//! those pages were a tenth of its tokens.
//!
//! A page's kind is [`page_kind`](super::page_kind) of its text. A chunk is passed
//! over when every page it lies on is an index or bibliography page and either the
//! chunk is itself navigation or it starts after the first page of that run of pages:
//! the first page of a bibliography or index often begins with the end of the body
//! ("…the last answer. References [1] …"), and a chunk of that body text is kept.

use super::page_kind::PageKind;

/// Whether a page of `kind` is back matter.
fn is_back(kind: Option<PageKind>) -> bool {
    matches!(kind, Some(PageKind::Index | PageKind::Bibliography))
}

/// One chunk of a document, as [`passed_over`] reads it.
#[derive(Debug, Clone, Copy)]
pub struct ChunkPages<'a> {
    /// Its first and last page (1-based).
    pub page_start: u32,
    pub page_end: u32,
    pub text: &'a str,
}

/// For each of `chunks` (a document's, in order), whether a whole-document reading
/// passes over it; `page_kinds[p − 1]` is page `p`'s kind. All `false` when every
/// chunk would be passed over (a document that is all index is read as it is).
pub fn passed_over(page_kinds: &[Option<PageKind>], chunks: &[ChunkPages<'_>]) -> Vec<bool> {
    let back = |p: u32| p >= 1 && page_kinds.get(p as usize - 1).is_some_and(|&k| is_back(k));
    // The first page of the run of back pages that `p` is in.
    let run_start = |p: u32| {
        let mut q = p;
        while q > 1 && back(q - 1) {
            q -= 1;
        }
        q
    };
    let out: Vec<bool> = chunks
        .iter()
        .map(|c| {
            if c.page_end < c.page_start || !(c.page_start..=c.page_end).all(back) {
                return false;
            }
            let navigation = super::chunk_kind(c.text).is_some_and(PageKind::is_navigation);
            navigation || c.page_start > run_start(c.page_start)
        })
        .collect();
    if out.iter().all(|&o| o) {
        return vec![false; out.len()];
    }
    out
}

/// The kinds of the pages the chunks passed over lie on, index first.
pub fn kinds_passed_over(
    page_kinds: &[Option<PageKind>],
    chunks: &[ChunkPages<'_>],
    passed: &[bool],
) -> Vec<PageKind> {
    let mut kinds = Vec::new();
    for (c, _) in chunks.iter().zip(passed).filter(|(_, &p)| p) {
        for p in c.page_start..=c.page_end {
            let at = (p as usize).checked_sub(1);
            if let Some(Some(k)) = at.and_then(|i| page_kinds.get(i)) {
                if !kinds.contains(k) {
                    kinds.push(*k);
                }
            }
        }
    }
    kinds.sort_by_key(|k| u8::from(*k != PageKind::Index));
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "The package typesets chemical formulas. It loads tikz and\n\
        amstext, and its main command is \\ch. Options are set with \\chemsetup.\n\
        Arrows and bonds have their own options.";
    const INDEX: &str = "adduct-penalty, 13, 37\nadduct-space, 13, 15\n\
        amsmath (package), 2, 37\narrow-min-length, 24\narrow-offset, 24\n\
        arrow-style, 24, 26\nbond-length, 12\nbond-offset, 13";
    const BIB: &str = "[1] D. E. Knuth, The TeXbook, Addison-Wesley, 1984.\n\
        [2] L. Lamport, LaTeX: A Document Preparation System, 1994.\n\
        [3] F. Mittelbach, The LaTeX Companion, 2004.\n\
        [4] T. Oetiker, The Not So Short Introduction to LaTeX, 2021.";

    fn chunk(page_start: u32, page_end: u32, text: &str) -> ChunkPages<'_> {
        ChunkPages {
            page_start,
            page_end,
            text,
        }
    }

    #[test]
    fn the_index_and_references_at_the_back_are_passed_over() {
        let kinds = [
            None,
            None,
            Some(PageKind::Bibliography),
            Some(PageKind::Index),
            Some(PageKind::Index),
        ];
        let chunks = [
            chunk(1, 1, BODY),
            chunk(2, 3, BODY),  // runs onto the bibliography page: kept
            chunk(3, 3, BODY),  // the body text the first back page begins with: kept
            chunk(3, 3, BIB),   // the references themselves
            chunk(3, 4, BODY),  // a piece of entry, no shape of its own, over two back pages
            chunk(4, 4, INDEX), // the index
            chunk(5, 5, BODY),  // an index page's stray piece: after the run's first page
        ];
        assert_eq!(
            passed_over(&kinds, &chunks),
            [false, false, false, true, false, true, true]
        );
        let passed = passed_over(&kinds, &chunks);
        assert_eq!(
            kinds_passed_over(&kinds, &chunks, &passed),
            [PageKind::Index, PageKind::Bibliography]
        );
    }

    #[test]
    fn contents_and_body_pages_are_read() {
        let kinds = [Some(PageKind::Contents), None, Some(PageKind::Figures)];
        let chunks = [chunk(1, 1, INDEX), chunk(2, 2, BODY), chunk(3, 3, INDEX)];
        assert_eq!(passed_over(&kinds, &chunks), [false, false, false]);
    }

    #[test]
    fn a_document_that_is_all_index_is_read() {
        let kinds = [Some(PageKind::Index), Some(PageKind::Index)];
        let chunks = [chunk(1, 1, INDEX), chunk(2, 2, INDEX)];
        assert_eq!(passed_over(&kinds, &chunks), [false, false]);
        assert!(kinds_passed_over(&kinds, &chunks, &[false, false]).is_empty());
    }

    #[test]
    fn pages_out_of_range_are_body() {
        let chunks = [chunk(0, 0, INDEX), chunk(7, 9, INDEX), chunk(2, 1, INDEX)];
        assert_eq!(
            passed_over(&[Some(PageKind::Index)], &chunks),
            [false, false, false]
        );
    }
}
