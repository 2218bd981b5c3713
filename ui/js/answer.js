// One answer's content, drawn into its message (a `view` from ./messages.js): the
// Markdown with its citation markers as buttons, the sentences the support check
// marked, "From your documents", which documents it searched and what for, its steps
// and prompts, and its statistics line. Model output is untrusted: the Markdown is
// built as elements and text nodes (./markdown.js), never HTML.
import { el, clear, citationParts, langOf } from "./dom.js";
import { openDocument } from "./viewer.js";
import { renderMarkdown, morph } from "./markdown.js";
import { markSentences, summaryChip, quotesView, quotesLead } from "./support.js";
import { showSources, showCitation, searchedParts } from "./sources.js";

/** Which documents an answer searched, on the answer; and, when the documents did not
 *  seem to cover the question, the answer marked as such. */
export function showScope(view, scope, relevance) {
  view.relevance = relevance || null;
  if (scope) {
    view.scope.textContent = scope;
    view.scope.title = `Searched: ${scope}`;
    view.scope.hidden = false;
  }
  view.root.classList.toggle("not-found", !!relevance && relevance.covered === false);
}

export function setSearchedFor(view, q, queries) {
  view.searchedFor = q;
  clear(view.searched).append(...searchedParts(q, queries));
  view.searched.hidden = false;
}

/** The answer as Markdown (./markdown.js: elements and text nodes, never HTML), with
 *  each `[N]` that names a numbered source as a link to it. The whole text is parsed
 *  again as it streams (at most once a frame), so a marker or a table split across
 *  tokens becomes whole once it is; only the blocks that changed are replaced. */
export function renderAnswer(view, text, { now = false } = {}) {
  view.text = text;
  const draw = () => {
    view.frame = null;
    const lang = langOf(view.text);
    if (lang) view.body.lang = lang;
    morph(view.body, renderMarkdown(view.text, citeHook(view)));
    if (view.support) {
      try {
        markSentences(view.body, view.support, (span) => openSpan(view, span));
      } catch (e) {
        // The marks are a help; the answer is shown whatever happens to them.
        console.error("support marks:", e);
      }
    }
  };
  if (now || document.hidden) {
    if (view.frame) cancelAnimationFrame(view.frame);
    draw();
  } else if (!view.frame) {
    view.frame = requestAnimationFrame(draw);
  }
}

/** How much of the answer the documents support: the header's summary, the sentences
 *  marked (./support.js), and "From your documents" below the answer, or above it when
 *  the answer is mostly unsupported, failed or not found. */
export function showSupport(view) {
  clear(view.supportSlot).append(summaryChip(view.support) || "");
  if (view.support && view.text) renderAnswer(view, view.text, { now: true });
  showQuotes(view);
}

export function showQuotes(view) {
  view.quotesBox?.remove();
  view.quotesBox = null;
  // An extractive answer is the quotes themselves.
  if (view.mode === "extractive") return;
  const notFound = view.root.classList.contains("not-found");
  const lead = quotesLead({ support: view.support, failed: view.failed, notFound });
  const restated = !!view.support && view.support.restates > 0 && view.support.restates === view.support.checked;
  const why = notFound ? "Your documents do not seem to answer this; these are their closest passages."
    : view.failed ? "There is no answer from the model; these passages of your documents answer the question best."
      : restated ? "The answer below only restates the question; these passages of your documents answer it best."
        : lead ? "Most of the answer below is not in your documents; these passages are." : "";
  const box = quotesView(view.quotes, (q) => openSpan(view, q), { lead, why });
  if (!box) return;
  view.quotesBox = box;
  if (lead) view.body.before(box);
  else view.body.after(box);
}

/** Open a span (a quote, or the passage that supports a sentence) in the viewer at its
 *  page, the span highlighted. */
function openSpan(view, span) {
  showSources(view);
  openDocument({ docId: span.doc_id, name: span.file, page: span.page, passage: span.text });
}

/** Draw the answer's text now if a frame is still pending. */
export function flush(view) {
  if (view.frame) renderAnswer(view, view.text, { now: true });
}

/** Text with the answer's citation markers as buttons. */
function citeHook(view) {
  const known = new Set((view.citations || []).map((c) => c.number));
  return (text) => {
    const frag = document.createDocumentFragment();
    for (const part of citationParts(text, known)) {
      if (typeof part === "string") { frag.append(document.createTextNode(part)); continue; }
      const n = part.n;
      frag.append(el("button", {
        type: "button", class: "cite", title: `Show source ${n}`, dataset: { n },
        onclick: (e) => { e.stopPropagation(); showCitation(view, n); },
      }, `[${n}]`));
    }
    return frag;
  };
}

export function stepView(view, ev) {
  let sv = view.stepViews.get(ev.step);
  if (!sv) {
    view.steps.hidden = false;
    const out = el("div", { class: "out" });
    const prompt = el("details", {}, el("summary", {}, "prompt"), el("pre", { class: "prompt" }));
    const label = el("div", { class: "label" }, ev.label || `step ${ev.step}`);
    const node = el("div", { class: "step" }, label, out, prompt);
    view.steps.append(node);
    sv = { out, prompt, label };
    view.stepViews.set(ev.step, sv);
  }
  return sv;
}
