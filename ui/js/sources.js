// The sources panel beside the chat, for one answer: what was searched for, the
// generated queries and notes, each source with its retrievers' ranks, its rerank score,
// its kind when it is a navigation page (table of contents, index…) or a table's rows
// (drawn as a table, cells as text) and the citations
// that name it; a citation `[N]` selects its source and opens the
// page. Source text is untrusted: it is shown through ./dom.js as text only.
import { el, clear, highlighted, queryTerms, langOf, tableView } from "./dom.js";
import { openDocument } from "./viewer.js";
import { tableCells } from "./locate.js";

const $ = (id) => document.getElementById(id);

/** The label of a navigation page's kind (a source's `kind`; absent for body text). */
const KIND_LABELS = { contents: "table of contents", figures: "list of figures", index: "index", bibliography: "bibliography" };

/** "Searched for: …" as elements: the question searched (a follow-up as condensed),
 *  then every other query fused with it (the thread query of a follow-up, generated
 *  variants), so the line says all that was searched. */
export function searchedParts(searched, queries) {
  const parts = ["Searched for: ", el("q", {}, searched)];
  for (const x of (queries || []).filter((x) => x !== searched)) parts.push(" and ", el("q", {}, x));
  return parts;
}

/** The side panel for one answer: what was searched for, generated queries, notes,
 *  and each source with its retrievers' ranks, its rerank score and its citations. */
export function showSources(view) {
  const terms = queryTerms(view.searchedFor || view.query || "");
  const q = clear($("queries"));
  if (view.searchedFor) q.append(el("div", { class: "searched" }, ...searchedParts(view.searchedFor, view.queries)));
  if (view.scope && !view.scope.hidden) q.append(el("div", { class: "scope-line" }, "Searched: ", el("strong", {}, view.scope.textContent)));
  if (view.relevance) {
    const r = view.relevance;
    q.append(el("div", { class: `relevance ${r.covered ? "covered" : "not-covered"}`, title: "Whether the documents seem to cover the question (Settings: “Not found” threshold)" },
      r.covered ? "" : el("strong", {}, "Not found in the documents: "), r.covered ? r.reason : r.reason.replace(/^not found: /, ""),
      r.covered ? "" : el("div", {}, "The sources below are the closest passages; no model answered from them.")));
  }
  for (const n of view.notes || []) q.append(el("div", { class: "note" }, n));
  if (!view.searchedFor && view.queries && view.queries.length > 1) {
    q.append(el("div", {}, "Generated queries:"), el("ul", {}, view.queries.map((x) => el("li", {}, x))));
  }
  const ol = clear($("sources"));
  for (const s of view.sources || []) {
    const pages = s.page_start === s.page_end ? `p. ${s.page_start}` : `pp. ${s.page_start}–${s.page_end}`;
    const ranks = (s.evidence || []).map((e) => `${e.retriever} #${e.rank + 1}${e.query_index ? ` (q${e.query_index + 1})` : ""}`).join(", ");
    const cites = (view.citations || []).filter((c) => c.chunk_id === s.chunk_id);
    const cells = s.kind === "table" ? tableCells(s.text) : null;
    // A table scrolls in its box: it takes the keyboard's focus so that it can be
    // scrolled and opened without a mouse.
    const scrolls = cells ? { tabindex: "0", role: "region", "aria-label": `Table from ${s.file}, ${pages}` } : {};
    const text = el("div", { class: `src-text${cells ? " src-table" : ""}`, title: "Click to expand", lang: langOf(s.text || ""), ...scrolls },
      cells ? tableView(cells, terms) : sourceText(s.text || "", cites, terms));
    text.addEventListener("click", () => text.classList.toggle("open"));
    if (cells) text.addEventListener("keydown", (e) => { if (e.key === "Enter") text.classList.toggle("open"); });
    ol.append(el("li", { class: "source", dataset: { file: s.file, pages, chunkId: s.chunk_id } },
      el("div", { class: "src-head" },
        el("button", { type: "button", class: "src-open", title: `Open ${s.file} at ${pages}, the passage highlighted`, onclick: () => openSource(s) },
          el("span", { class: "src-file" }, s.file), " ",
          el("span", { class: "src-pages" }, pages)),
        el("span", { class: "src-score" }, `score ${Number(s.score).toFixed(4)}`),
        s.ocr ? el("span", { class: "ocr-mark", title: "This passage was read from a scanned page by text recognition" }, "text from OCR") : null,
        KIND_LABELS[s.kind] ? el("span", { class: "src-kind", dataset: { kind: s.kind }, title: "A navigation page: it lists the document's contents rather than answering, so it is ranked lower" }, KIND_LABELS[s.kind]) : null,
        cells ? el("span", { class: "src-kind", dataset: { kind: "table" }, title: "Rows of a table in the document, under its header; opening it marks the rows on the page" }, "table") : null,
        s.rerank_score != null ? el("span", { class: "src-rerank", title: "The LLM reranker's relevance, 1–10" }, `rerank ${Number(s.rerank_score).toFixed(0)}/10`) : null,
        cites.length ? el("span", { class: "src-cites" }, `cited as ${cites.map((c) => `[${c.number}]`).join(" ")}`) : null),
      el("div", { class: "src-ranks" }, ranks),
      text));
  }
}

/** A source's text with the query's terms marked, and each numbered piece a citation
 *  names wrapped so that the citation can point at it. */
function sourceText(text, cites, terms) {
  if (!cites.length) return highlighted(text, terms);
  const frag = document.createDocumentFragment();
  let at = 0;
  for (const c of cites) {
    const i = text.indexOf(c.text, at);
    if (i < 0) continue;
    if (i > at) frag.append(highlighted(text.slice(at, i), terms));
    frag.append(el("span", { class: "cited", dataset: { n: c.number }, title: `Source ${c.number}` }, highlighted(c.text, terms)));
    at = i + c.text.length;
  }
  if (at < text.length) frag.append(highlighted(text.slice(at), terms));
  return frag;
}

/** Show the answer's sources and select the one `[n]` cites, scrolled into view. */
export function showCitation(view, n) {
  showSources(view);
  const c = (view.citations || []).find((x) => x.number === n);
  if (!c) return;
  for (const li of $("sources").querySelectorAll("li.source")) li.classList.remove("selected");
  const li = $("sources").querySelector(`li.source[data-chunk-id="${c.chunk_id}"]`);
  if (!li) return;
  li.classList.add("selected");
  li.querySelector(".src-text")?.classList.add("open");
  for (const piece of li.querySelectorAll(".cited")) piece.classList.toggle("current", piece.dataset.n === String(n));
  li.scrollIntoView({ block: "nearest" });
  const s = (view.sources || []).find((x) => x.chunk_id === c.chunk_id);
  if (s) openSource(s, c.text);
}

/** Open a source's document in the viewer at its page, with `passage` (the source's
 *  text, or the piece a citation names) highlighted. */
export function openSource(s, passage) {
  openDocument({ docId: s.doc_id, name: s.file, page: s.page_start, pageEnd: s.page_end, passage: passage || s.text });
}
