//! The whole-document route of an answer: a question about whole documents
//! (`route::question_kind`, or the person's choice) reads every page of the one or
//! few documents it is about, their index and references passed over
//! ([`back_matter`]) — in one prompt when they fit the model's window, else
//! map-reduce: every chunk, in order, in a leaf summary (LlamaIndex's tree_summarize
//! prompt asked the first sentence of DocumentSummaryIndex's question, kept per
//! document in the store), then tree_summarize over the leaves with the question.
//! A question about the whole
//! library answers from the kept summaries. The decision goes out as
//! [`AskEvent::Route`], the pages read as [`AskEvent::Reading`]; Stop cancels between
//! and inside the calls, and the leaves read so far are kept.

use std::borrow::Cow;
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::ask::AnswerRun;
use super::modes::Resolved;
use super::route::{asks_about_library, question_kind, QuestionKind};
use super::{AskEvent, RouteChoice, RouteView};
use crate::retrieve::back_matter::{self, ChunkPages};
use crate::retrieve::{page_kind, PageKind, RetrieveOptions};
use crate::store::{DocStatus, DocumentRow, StoredChunk, SummaryLeaf, SummaryTree};
use crate::synth::summary_tree::{fits_whole, join_in_order, leaf_template, pack_in_order};
use crate::synth::{Blocks, Node, PromptHelper, ResponseMode, Template};
use crate::text::leaders;
use crate::text::overlap::overlaps;
use crate::{Error, Result};

/// At most this many documents are read whole for one question; a whole-document
/// question over more answers from their kept summaries.
pub const MAX_WHOLE_DOCS: usize = 3;

/// Tokens a leaf summary may take.
pub const LEAF_TOKENS: usize = 256;

/// Leaves summarized together (`Llm::complete_batch`: the same text as one by one,
/// the weights read once per generated token for all of them; each leaf's pages
/// count as read once its prompt is). Stop keeps the batches written before it.
/// `quire bench summary-time` on a 40-page manual (8 leaves, the default 0.5B,
/// 2-core Zen 4, runs alternated): batches of 3 took 88.3, 85.8, 85.4, 85.4 s
/// (median 85.6), of 4 85.0, 80.9, 79.9, 92.1 s (median 83.0), all 8 at once
/// 85.8, 86.3 s (their prompts read slower beside eight caches). A last batch of
/// fewer than half this many joins the one before ([`leaf_batches`]).
pub const LEAF_BATCH: usize = 4;

/// The window a leaf's prompt is packed to, when the model's is larger. Attention
/// costs more per token the longer the prompt, and each leaf more is a summary more to
/// write: 2,560 (3,072 until 2026-12-07) made `quire bench summary-time` on a 40-page
/// manual with the default 0.5B ~1 s faster (median 60.1 s against 61.2, 2-core Zen 4)
/// and the whole-document key terms 80% / 70% (tuning / held-out) against 70% / 70%
/// (README, "Leaves of 2,560 tokens"). The window is part of `AnswerRun::leaf_key`, so
/// leaves kept at another size are read again, not mixed.
pub const LEAF_WINDOW: usize = 2560;

/// `todo` in batches of [`LEAF_BATCH`], a last one of fewer than half that joined to
/// the one before: each step of a batch costs a pass over the weights however few
/// leaves it writes, so a leaf or two more in the last batch costs less than a batch
/// of their own (a 40-page manual's 9 leaves: 4 + 5, not 4 + 4 + 1).
fn leaf_batches(todo: &[usize]) -> Vec<&[usize]> {
    let mut out: Vec<&[usize]> = todo.chunks(LEAF_BATCH).collect();
    if out.len() >= 2 && out[out.len() - 1].len() * 2 < LEAF_BATCH {
        out.pop();
        out.pop();
        out.push(&todo[out.len() * LEAF_BATCH..]);
    }
    out
}

/// The window a leaf's prompt is packed to with a model of `window` tokens.
fn leaf_window(window: usize) -> usize {
    window.min(LEAF_WINDOW)
}

/// What a whole-document question reads.
enum Target {
    /// These documents, every page.
    Documents(Vec<i64>),
    /// The kept summaries of these documents.
    Library(Vec<i64>),
}

/// Words of file names too common to name a document in a question.
const GENERIC: &[&str] = &[
    "manual",
    "guide",
    "reference",
    "book",
    "document",
    "user",
    "users",
    "the",
    "and",
    "doc",
    "docs",
    "faq",
    "pdf",
    "short",
    "intro",
];

/// The documents a question names by a distinctive word of their file name
/// ("chemformula" for chemformula-manual.pdf), most words first, at most
/// [`MAX_WHOLE_DOCS`].
fn named_in(question: &str, rows: &[DocumentRow]) -> Vec<i64> {
    let q = question.to_lowercase();
    let words: Vec<&str> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut hits: Vec<(usize, i64)> = rows
        .iter()
        .filter_map(|d| {
            let stem = d.file_name.to_lowercase();
            let stem = stem.strip_suffix(".pdf").unwrap_or(&stem);
            let n = stem
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.chars().count() >= 4 && !GENERIC.contains(w))
                .filter(|w| words.contains(w))
                .count();
            let whole_name = q.contains(stem);
            (n > 0 || whole_name).then_some((n + usize::from(whole_name) * 10, d.id))
        })
        .collect();
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    hits.into_iter().take(MAX_WHOLE_DOCS).map(|h| h.1).collect()
}

/// "a.pdf", "a.pdf and b.pdf", "a.pdf, b.pdf and c.pdf".
fn names(files: &[&str]) -> String {
    match files {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

impl AnswerRun<'_> {
    /// Decide the route and show it; answer here when the question reads whole
    /// documents (`None`: search the top passages as usual).
    pub(super) fn by_whole_documents(&mut self, searched: &str) -> Result<Option<String>> {
        let given = self.given;
        let (settings, turn) = (given.settings, given.turn);
        let mut routed = question_kind(turn.question);
        if routed.kind == QuestionKind::Fact && searched != turn.question {
            routed = question_kind(searched);
        }
        let forced = !turn.route.is_auto();
        let whole = match turn.route {
            RouteChoice::Whole => true,
            RouteChoice::Search => false,
            RouteChoice::Auto => routed.kind == QuestionKind::Whole,
        };
        let search_view = |label: String| RouteView {
            route: "search".into(),
            label,
            forced: forced && !whole,
            cue: None,
            ..RouteView::default()
        };
        if !whole {
            self.show_route(search_view(format!(
                "Searched: top {} passages",
                settings.top_k
            )))?;
            return Ok(None);
        }
        if !given.plan.resolved.uses_llm() {
            self.show_route(search_view(format!(
                "Searched: top {} passages (this mode makes no model call, so it cannot read whole documents)",
                settings.top_k
            )))?;
            return Ok(None);
        }
        self.need_llm()?;
        let cue = routed.cue.filter(|_| !forced);
        match self.target(searched)? {
            Target::Documents(ids) => self.read_whole(&ids, searched, forced, cue).map(Some),
            Target::Library(ids) => self.answer_from_summaries(&ids, searched, forced, cue),
        }
    }

    /// The documents a whole-document question is about: the scope's when it names
    /// a few; else those the question names; else the library, when it asks about
    /// it; else the document of the passage retrieval ranks first.
    fn target(&mut self, searched: &str) -> Result<Target> {
        let given = self.given;
        let scope = &given.turn.scope.docs;
        if !scope.is_empty() {
            return Ok(if scope.len() <= MAX_WHOLE_DOCS {
                Target::Documents(scope.clone())
            } else {
                Target::Library(scope.clone())
            });
        }
        let rows: Vec<DocumentRow> = given
            .engine
            .store()
            .documents()?
            .into_iter()
            .filter(|d| d.status == DocStatus::Done && d.chunks > 0)
            .collect();
        let named = named_in(given.turn.question, &rows);
        if !named.is_empty() {
            return Ok(Target::Documents(named));
        }
        let all: Vec<i64> = rows.iter().map(|d| d.id).collect();
        if asks_about_library(given.turn.question) || rows.len() <= 1 {
            return Ok(if rows.len() == 1 {
                Target::Documents(all)
            } else {
                Target::Library(all)
            });
        }
        let opts = RetrieveOptions {
            top_k: given.settings.top_k.max(1),
            ..RetrieveOptions::default()
        };
        let found = given
            .engine
            .search_with(searched, None, &opts, given.cancel)?;
        Ok(match found.nodes.first().and_then(|n| n.chunk.as_ref()) {
            Some(c) => Target::Documents(vec![c.doc_id]),
            None => Target::Library(all),
        })
    }

    /// The decision, sent and kept with the answer.
    fn show_route(&mut self, view: RouteView) -> Result<()> {
        self.progress.record.route = Some(view.clone());
        (self.send)(AskEvent::Route { route: view })
    }

    /// The sources panel of an answer that read whole documents: no passages, the
    /// notes.
    fn show_no_passages(&mut self) -> Result<()> {
        self.notes.insert(
            0,
            "No passages: this answer reads whole documents, not the top passages".into(),
        );
        let record = &mut self.progress.record;
        record.notes = self.notes.clone();
        (self.send)(AskEvent::Sources {
            sources: Vec::new(),
            notes: self.notes.clone(),
            scope: self.given.turn.scope.label.clone(),
            relevance: None,
        })
    }

    /// The key a document's leaves are kept under: what made them (its content, the
    /// model, its window, the leaf prompt and generation settings).
    fn leaf_key(&self, doc_hash: &str, leaf: &Template, window: usize) -> String {
        let window = leaf_window(window);
        let settings = self.given.settings;
        let model = self
            .llm
            .as_ref()
            .and_then(|l| l.served_name())
            .unwrap_or_else(|| super::models::setting_name(&settings.model));
        let mut h = Sha256::new();
        h.update(
            format!(
                "{model}\n{window}\n{LEAF_TOKENS}\njoined once (8 bytes, table heads), leaders as one …, back matter passed over\n{}\n{}\n{:?}\n{}",
                settings.temperature,
                settings.repeat_penalty,
                settings.template_vars,
                leaf.empty_prompt()
            )
            .as_bytes(),
        );
        let digest: String = h
            .finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{doc_hash}:{digest}")
    }

    /// Every page of `ids`, then the answer: in one prompt with the mode's own
    /// templates when it all fits, else map-reduce with tree_summarize.
    fn read_whole(
        &mut self,
        ids: &[i64],
        searched: &str,
        forced: bool,
        cue: Option<String>,
    ) -> Result<String> {
        let given = self.given;
        let llm = self
            .llm
            .clone()
            .ok_or_else(|| Error::Invalid("no model is loaded to read the documents".into()))?;
        let mut docs: Vec<(DocumentRow, Vec<StoredChunk>)> = Vec::new();
        let mut passed_kinds: Vec<PageKind> = Vec::new();
        for &id in ids {
            let store = given.engine.store();
            let row = store
                .document(id)?
                .ok_or_else(|| Error::NotFound(format!("document {id}")))?;
            let mut chunks = store.load_chunks_of(&[id])?;
            // Its index and references are passed over (`back_matter`).
            let mut page_kinds = Vec::with_capacity(row.pages as usize);
            for p in 1..=row.pages {
                page_kinds.push(store.page_text(id, p)?.as_deref().and_then(page_kind));
            }
            drop(store);
            let pieces: Vec<ChunkPages> = chunks
                .iter()
                .map(|c| ChunkPages {
                    page_start: c.page_start,
                    page_end: c.page_end,
                    text: &c.text,
                })
                .collect();
            let passed = back_matter::passed_over(&page_kinds, &pieces);
            for k in back_matter::kinds_passed_over(&page_kinds, &pieces, &passed) {
                if !passed_kinds.contains(&k) {
                    passed_kinds.push(k);
                }
            }
            drop(pieces);
            let mut passed = passed.into_iter();
            chunks.retain(|_| !passed.next().unwrap_or(false));
            // Read with each run of dot leaders as one `…` (every word and page kept).
            for c in &mut chunks {
                if let Cow::Owned(t) = leaders::collapse(&c.text) {
                    c.text = t;
                }
            }
            if !chunks.is_empty() {
                docs.push((row, chunks));
            }
        }
        if docs.is_empty() {
            return Err(Error::Invalid(
                "the documents to read hold no text: nothing to summarize".into(),
            ));
        }
        let pages: u32 = docs.iter().map(|(d, _)| d.pages).sum();
        let files: Vec<&str> = docs.iter().map(|(d, _)| d.file_name.as_str()).collect();
        let label = format!(
            "Read all {pages} page{} of {}{}",
            if pages == 1 { "" } else { "s" },
            names(&files),
            but(&passed_kinds)
        );
        let mut view = RouteView {
            route: "whole".into(),
            label,
            forced,
            cue,
            documents: docs.iter().map(|(d, _)| d.id).collect(),
            pages,
            how: String::new(),
            passed_over: passed_over(&passed_kinds),
        };
        let count = |t: &str| llm.count_tokens(t);
        let window = llm.context_window();
        let templates = &given.plan.templates;
        let texts: Vec<&str> = docs
            .iter()
            .flat_map(|(_, c)| c.iter().map(|c| c.text.as_str()))
            .collect();
        let helper = PromptHelper::new(window, given.settings.max_tokens, &count);
        let qa = templates.text_qa.partial([("query_str", searched)]);
        let summary = templates.summary.partial([("query_str", searched)]);
        if fits_whole(&helper, &qa, &texts)? && fits_whole(&helper, &summary, &texts)? {
            view.how = "whole".into();
            self.show_route(view)?;
            self.show_no_passages()?;
            self.reading(&files.join(", "), pages, pages, None)?;
            let nodes: Vec<Node> = docs
                .iter()
                .flat_map(|(_, c)| {
                    c.iter()
                        .map(|c| Node::new(c.id.to_string(), c.text.clone()))
                })
                .collect();
            let mut plan = given.plan.clone();
            plan.options.first_step = self.steps;
            let answer = self.synthesize(&plan, searched, &nodes)?;
            self.finish();
            return Ok(answer);
        }

        // Map: every chunk in a leaf, the kept leaves first.
        let leaf = leaf_template(&templates.summary);
        let leaf_helper = PromptHelper::new(leaf_window(window), LEAF_TOKENS, &count);
        let mut plans = Vec::new();
        let mut all_kept = true;
        for (row, chunks) in &docs {
            let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
            let overlaps = overlaps(&texts);
            let groups = pack_in_order(&leaf_helper, &leaf, &texts, &overlaps)?;
            let key = self.leaf_key(&row.hash, &leaf, window);
            let mut tree = given
                .engine
                .store()
                .summary_tree(row.id, &key)?
                .unwrap_or_default();
            let keep = tree
                .leaves
                .iter()
                .zip(&groups)
                .take_while(|(l, g)| {
                    chunks.get(g.start).map(|c| c.id) == Some(l.first_chunk)
                        && chunks.get(g.end - 1).map(|c| c.id) == Some(l.last_chunk)
                })
                .count();
            tree.leaves.truncate(keep);
            all_kept &= keep == groups.len();
            plans.push((key, groups, overlaps, tree));
        }
        view.how = if all_kept { "cached" } else { "map_reduce" }.into();
        self.show_route(view)?;
        self.show_no_passages()?;

        let t0 = Instant::now();
        let (mut read_before, mut new_pages) = (0u32, 0u32);
        let mut nodes = Vec::new();
        for ((row, chunks), (key, groups, overlaps, mut tree)) in docs.iter().zip(plans) {
            let kept_to = tree.leaves.last().map_or(0, |l| l.page_end);
            self.reading(&row.file_name, read_before + kept_to, pages, None)?;
            let todo: Vec<usize> = (tree.leaves.len()..groups.len()).collect();
            for batch in leaf_batches(&todo) {
                let mut leaves = Vec::with_capacity(batch.len());
                let mut labels = Vec::with_capacity(batch.len());
                let mut contexts = Vec::with_capacity(batch.len());
                for &gi in batch {
                    let g = groups[gi].clone();
                    let (first, last) = (&chunks[g.start], &chunks[g.end - 1]);
                    let texts: Vec<&str> =
                        chunks[g.clone()].iter().map(|c| c.text.as_str()).collect();
                    contexts.push(join_in_order(&texts, &overlaps[g]));
                    labels.push(if first.page_start == last.page_end {
                        format!("read {} page {}", row.file_name, first.page_start)
                    } else {
                        format!(
                            "read {} pages {}–{}",
                            row.file_name, first.page_start, last.page_end
                        )
                    });
                    leaves.push(SummaryLeaf {
                        first_chunk: first.id,
                        last_chunk: last.id,
                        page_start: first.page_start,
                        page_end: last.page_end,
                        text: String::new(),
                    });
                }
                let t = &leaf;
                let before = tree.leaves.last().map_or(0, |l| l.page_end);
                // Each leaf's pages count as read once the model has read its prompt
                // (a batch reads its prompts one by one, then writes them together).
                let first_step = self.steps + 1;
                let ends: Vec<u32> = leaves.iter().map(|l| l.page_end).collect();
                let file = row.file_name.clone();
                let mut on_read = |step: usize| {
                    let end = *ends.get(step.checked_sub(first_step)?)?;
                    let read = new_pages + end.saturating_sub(before);
                    let pages_read = read_before + end;
                    let left = time_left(pages_read, pages, read, t0);
                    Some(reading_event(&file, pages_read, pages, left))
                };
                let texts =
                    self.llm_step_reading(llm.as_ref(), LEAF_TOKENS, &mut on_read, |ctx| {
                        let prompts = contexts
                            .iter()
                            .map(|c| ctx.format(t, &[("context_str", c)]))
                            .collect();
                        ctx.call_batch(labels, prompts)
                    })?;
                let mut last_page = before;
                for (mut leaf_done, text) in leaves.into_iter().zip(texts) {
                    leaf_done.text = text.trim().to_string();
                    last_page = leaf_done.page_end;
                    tree.leaves.push(leaf_done);
                }
                tree.complete = tree.leaves.len() == groups.len();
                given.engine.store().put_summary_tree(row.id, &key, &tree)?;
                new_pages += last_page.saturating_sub(before);
                let done = read_before + last_page;
                let left = time_left(done, pages, new_pages, t0);
                self.reading(&row.file_name, done, pages, left)?;
            }
            if !tree.complete && tree.leaves.len() == groups.len() {
                tree.complete = true;
                given.engine.store().put_summary_tree(row.id, &key, &tree)?;
            }
            read_before += row.pages;
            self.reading(&row.file_name, read_before, pages, Some(0.0))?;
            nodes.extend(leaf_nodes(row, &tree, docs.len() > 1));
        }
        self.reduce(searched, &nodes)
    }

    /// Reduce: tree_summarize over the leaves with the question.
    fn reduce(&mut self, searched: &str, nodes: &[Node]) -> Result<String> {
        let mut plan = self.given.plan.clone();
        plan.resolved = Resolved::Blocks(Blocks::of(ResponseMode::TreeSummarize));
        plan.options.first_step = self.steps;
        let answer = self.synthesize(&plan, searched, nodes)?;
        self.finish();
        Ok(answer)
    }

    /// Pages read so far.
    fn reading(
        &mut self,
        file: &str,
        pages_read: u32,
        pages: u32,
        secs_left: Option<f64>,
    ) -> Result<()> {
        (self.send)(reading_event(file, pages_read, pages, secs_left))
    }

    /// A question about the library: tree_summarize over the kept summaries of its
    /// documents, naming those without one; with none kept, search as usual.
    fn answer_from_summaries(
        &mut self,
        ids: &[i64],
        searched: &str,
        forced: bool,
        cue: Option<String>,
    ) -> Result<Option<String>> {
        let given = self.given;
        let window = self.llm.as_ref().map_or(0, |l| l.context_window());
        let leaf = leaf_template(&given.plan.templates.summary);
        let mut nodes = Vec::new();
        let mut with: Vec<DocumentRow> = Vec::new();
        let mut without: Vec<String> = Vec::new();
        for &id in ids {
            let Some(row) = given.engine.store().document(id)? else {
                continue;
            };
            let key = self.leaf_key(&row.hash, &leaf, window);
            match given.engine.store().summary_tree(id, &key)? {
                Some(tree) if tree.complete && !tree.leaves.is_empty() => {
                    nodes.extend(leaf_nodes(&row, &tree, true));
                    with.push(row);
                }
                _ => without.push(row.file_name),
            }
        }
        let none_yet = |list: &[String]| {
            let shown: Vec<&str> = list.iter().take(8).map(String::as_str).collect();
            let more = list.len().saturating_sub(shown.len());
            format!(
                "No summary yet of {}{}: ask to summarize one to read it whole",
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )
        };
        if with.is_empty() {
            self.notes.push(none_yet(&without));
            self.show_route(RouteView {
                route: "search".into(),
                label: format!(
                    "Searched: top {} passages (no document has been read whole yet)",
                    given.settings.top_k
                ),
                forced,
                cue,
                ..RouteView::default()
            })?;
            return Ok(None);
        }
        if !without.is_empty() {
            self.notes.push(none_yet(&without));
        }
        let pages: u32 = with.iter().map(|d| d.pages).sum();
        self.show_route(RouteView {
            route: "library".into(),
            label: format!(
                "Used the kept summaries of {} of {} documents ({pages} pages)",
                with.len(),
                ids.len()
            ),
            forced,
            cue,
            documents: with.iter().map(|d| d.id).collect(),
            pages,
            how: "cached".into(),
            ..RouteView::default()
        })?;
        self.show_no_passages()?;
        self.reduce(searched, &nodes).map(Some)
    }
}

/// What a reading's label says was passed over (`kinds` in any order): " but the
/// index and references".
fn but(kinds: &[PageKind]) -> String {
    let what = passed_over(kinds);
    if what.is_empty() {
        what
    } else {
        format!(" but {what}")
    }
}

/// The back matter of `kinds` passed over, as the label names it: "the index",
/// "the references", "the index and references"; empty for none.
fn passed_over(kinds: &[PageKind]) -> String {
    match (
        kinds.contains(&PageKind::Index),
        kinds.contains(&PageKind::Bibliography),
    ) {
        (true, true) => "the index and references".into(),
        (true, false) => "the index".into(),
        (false, true) => "the references".into(),
        (false, false) => String::new(),
    }
}

/// `pages_read` of `pages` in `file` (never more than `pages`), with the seconds left
/// when known.
fn reading_event(file: &str, pages_read: u32, pages: u32, secs_left: Option<f64>) -> AskEvent {
    AskEvent::Reading {
        file: file.to_string(),
        pages_read: pages_read.min(pages),
        pages,
        secs_left,
    }
}

/// The seconds left to read `pages` with `pages_read` done, at the pace since `t0`, in
/// which `read` pages were read (by this question: kept leaves take no time).
fn time_left(pages_read: u32, pages: u32, read: u32, t0: Instant) -> Option<f64> {
    let pace = t0.elapsed().as_secs_f64() / f64::from(read.max(1));
    Some(pace * f64::from(pages.saturating_sub(pages_read)))
}

/// A document's leaves as tree_summarize's nodes, headed by the file name when
/// several documents are summarized together.
fn leaf_nodes(row: &DocumentRow, tree: &SummaryTree, headed: bool) -> Vec<Node> {
    tree.leaves
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let text = if headed {
                format!(
                    "{} (pages {}–{}):\n{}",
                    row.file_name, l.page_start, l.page_end, l.text
                )
            } else {
                l.text.clone()
            };
            Node::new(format!("{}:{i}", row.id), text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, file: &str) -> DocumentRow {
        DocumentRow {
            id,
            path: format!("/d/{file}"),
            file_name: file.into(),
            hash: String::new(),
            title: None,
            pages: 1,
            chunks: 1,
            status: DocStatus::Done,
            error: None,
        }
    }

    #[test]
    fn a_question_names_a_document_by_a_distinctive_word() {
        let rows = [
            row(1, "chemformula-manual.pdf"),
            row(2, "ctex-faq.pdf"),
            row(3, "debian-faq.en.pdf"),
        ];
        assert_eq!(named_in("Summarize the chemformula manual", &rows), vec![1]);
        assert_eq!(named_in("总结 ctex-faq.pdf", &rows), vec![2]);
        assert_eq!(
            named_in("Give an overview of the Debian FAQ", &rows),
            vec![3]
        );
        assert!(named_in("Summarize this manual", &rows).is_empty());
    }

    #[test]
    fn a_short_last_batch_of_leaves_joins_the_one_before() {
        let sizes = |n: usize| {
            let todo: Vec<usize> = (0..n).collect();
            let b = leaf_batches(&todo);
            assert_eq!(b.concat(), todo, "{n} leaves: each once, in order");
            b.iter().map(|b| b.len()).collect::<Vec<_>>()
        };
        assert_eq!(LEAF_BATCH, 4, "the sizes below are for batches of 4");
        assert_eq!(sizes(0), Vec::<usize>::new());
        assert_eq!(sizes(1), [1]);
        assert_eq!(sizes(4), [4]);
        assert_eq!(sizes(5), [5]);
        assert_eq!(sizes(6), [4, 2]);
        assert_eq!(sizes(8), [4, 4]);
        assert_eq!(sizes(9), [4, 5]);
        assert_eq!(sizes(10), [4, 4, 2]);
        assert_eq!(sizes(13), [4, 4, 5]);
    }

    #[test]
    fn file_names_are_joined_in_words() {
        assert_eq!(names(&["a.pdf"]), "a.pdf");
        assert_eq!(
            names(&["a.pdf", "b.pdf", "c.pdf"]),
            "a.pdf, b.pdf and c.pdf"
        );
    }

    #[test]
    fn what_was_passed_over_is_said_in_words() {
        assert_eq!(passed_over(&[]), "");
        assert_eq!(but(&[]), "");
        assert_eq!(but(&[PageKind::Index]), " but the index");
        assert_eq!(but(&[PageKind::Bibliography]), " but the references");
        assert_eq!(
            but(&[PageKind::Index, PageKind::Bibliography]),
            " but the index and references"
        );
    }
}
