// How much of an answer the documents support, on the answer itself: each sentence the
// engine's support check labelled (the `support` event, or a reopened message's
// `support`) is found again in the rendered Markdown and marked. A supported sentence
// is a link to the passage that supports it (the viewer opens at its page, the span
// highlighted); a partly supported or unsupported one carries a tag in words; a `[N]`
// that names the wrong source carries the check's note. "From your documents" lists
// the quotes (the `quotes` event): the source sentences that best answer the question.
// Text only through ./dom.js: sentences, quotes and notes are untrusted.
import { el, tableView } from "./dom.js";
import { normalize, locate, quoteTable } from "./locate.js";

/** What each verdict shows: the class, the tag's words (none for "supported"), and
 *  the words a screen reader and a tooltip give. */
export function verdictLabel(s) {
  const where = s.span ? `${s.span.file}, p. ${s.span.page}` : "";
  switch (s.verdict) {
    case "supported":
      return { cls: "supported", tag: null, title: `Found in your documents (${where}): open the passage` };
    case "partly":
      return {
        cls: "partly", tag: "partly in your documents",
        title: s.span ? `Only partly found in your documents; the closest passage is in ${where}: open it` : "Only partly found in your documents",
      };
    case "not_found":
      return { cls: "not-found", tag: "not in your documents", title: "Not found in your documents: the model may have made this up" };
    case "restates":
      return { cls: "restates", tag: "restates the question", title: "Only the question's words said again: this sentence does not answer it" };
    default:
      return null; // no_claim: nothing to check
  }
}

/** Whether "From your documents" leads (shown above the answer): the answer is mostly
 *  unsupported (or only restates the question), failed, or the documents did not
 *  cover the question. */
export function quotesLead({ support, failed = false, notFound = false } = {}) {
  if (failed || notFound) return true;
  return !!support && support.checked > 0 && support.supported * 2 < support.checked;
}

/** The answer's summary line and its tone: "good" (all checked sentences supported),
 *  "mixed", "poor" (fewer than half). */
export function summaryOf(support) {
  if (!support || !support.checked) return null;
  const text = support.summary || `${support.supported} of ${support.checked} sentences found in your documents`;
  // A sentence partly found counts half.
  const tone = support.supported === support.checked ? "good"
    : support.supported * 2 + (support.partly || 0) < support.checked ? "poor" : "mixed";
  return { text, tone };
}

/** Where each sentence lies in `hay` (the rendered answer's text in locate.js's normal
 *  form): `[{ index, start, end }]`, in order and not overlapping. A sentence is looked
 *  for after the previous one found, whole first, then as locate.js finds a passage
 *  (Markdown marks, a link's address, spacing may differ); one not found is left out. */
export function sentenceRanges(hay, sentences) {
  const out = [];
  let at = 0;
  sentences.forEach((s, index) => {
    const needle = normalize(s.text || "").text;
    if (!needle) return;
    let start = hay.indexOf(needle, at);
    let end = start + needle.length;
    if (start < 0) {
      const hit = locate(needle, hay.slice(at), 0.5);
      if (!hit || hit.found < 0.5) return;
      start = at + hit.start;
      end = at + hit.end;
    }
    if (end <= start) return;
    out.push({ index, start, end });
    at = end;
  });
  return out;
}

const SKIP = ".md-code-head, .support-tag, .support-note";
const PUNCT = /[^\s\p{L}\p{N}]/u;

/** The text nodes of `root` that carry the answer's words, as one normal-form string
 *  with, for each normal character, its node and offset. */
function textMap(root) {
  const nodes = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement?.closest(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
  let text = "";
  const node = [];
  const offset = [];
  nodes.forEach((n, k) => {
    const m = normalize(n.data);
    text += m.text;
    for (const o of m.at) { node.push(k); offset.push(o); }
  });
  return { nodes, text, node, offset };
}

/** Mark the sentences of `support` in the rendered answer `body`. `open(span)` opens
 *  the viewer at a span. Returns how many sentences were found and marked; a sentence
 *  that cannot be found is left as it is (the summary still counts it). */
export function markSentences(body, support, open) {
  const sentences = support?.sentences || [];
  if (!sentences.length) return 0;
  const map = textMap(body);
  if (!map.text) return 0;
  const found = sentenceRanges(map.text, sentences).filter((r) => verdictLabel(sentences[r.index]));
  // Each sentence as pieces of text nodes: [{ k, from, to }].
  const pieces = [];
  for (const r of found) {
    let k0 = map.node[r.start], from = map.offset[r.start];
    let k1 = map.node[r.end - 1], to = map.offset[r.end - 1];
    to += charLength(map.nodes[k1].data, to);
    // Take in the punctuation either side ("word." and “quoted”), and a citation
    // marker's closing text ("[2]." when the sentence ends in the marker's button).
    while (from > 0 && PUNCT.test(map.nodes[k0].data[from - 1])) from--;
    if (inButton(map.nodes[k1]) && k1 + 1 < map.nodes.length) { k1++; to = 0; }
    const d = map.nodes[k1].data;
    while (to < d.length && PUNCT.test(d[to])) to++;
    const list = [];
    const buttons = [];
    for (let k = k0; k <= k1; k++) {
      if (inButton(map.nodes[k])) { buttons.push(map.nodes[k].parentElement.closest("button")); continue; }
      const d = map.nodes[k].data;
      let a = k === k0 ? from : 0;
      let b = k === k1 ? to : d.length;
      // Spaces at a piece's ends stay outside the mark (no underlined gap before a
      // citation marker).
      while (a < b && /\s/.test(d[a])) a++;
      while (b > a && /\s/.test(d[b - 1])) b--;
      if (b > a) list.push({ k, from: a, to: b });
    }
    if (list.length) pieces.push({ r, list, buttons });
  }
  // Wrap from the last piece back, so that the offsets still to wrap stay valid.
  const all = pieces.flatMap((p) => p.list.map((x) => ({ ...x, owner: p })));
  all.sort((a, b) => b.k - a.k || b.from - a.from);
  for (const x of all) {
    const n = map.nodes[x.k];
    const mid = x.from > 0 ? n.splitText(x.from) : n;
    if (x.to - x.from < mid.data.length) mid.splitText(x.to - x.from);
    const span = el("span", {});
    mid.replaceWith(span);
    span.append(mid);
    x.span = span;
  }
  for (const p of pieces) {
    const s = sentences[p.r.index];
    const label = verdictLabel(s);
    const spans = all.filter((x) => x.owner === p).map((x) => x.span).reverse();
    const openIt = s.span && (s.verdict === "supported" || s.verdict === "partly") ? () => open(s.span) : null;
    const why = s.note && !s.wrong_citation ? ` (${s.note})` : "";
    spans.forEach((span, i) => {
      span.className = `sent ${label.cls}`;
      span.dataset.sentence = String(p.r.index);
      span.title = label.title + why;
      if (!openIt) return;
      span.classList.add("linked");
      span.addEventListener("click", openIt);
      if (i === 0) {
        // One stop for the keyboard per sentence; its other pieces answer the mouse.
        span.tabIndex = 0;
        span.setAttribute("role", "link");
        span.addEventListener("keydown", (e) => {
          if (e.key === "Enter" || e.key === " ") { e.preventDefault(); e.stopPropagation(); openIt(); }
        });
      }
    });
    const after = [];
    if (label.tag) after.push(el("span", { class: `support-tag ${label.cls}`, title: label.title + why }, label.tag));
    // A wrong [N] is said on the page; any other note (why a sentence was not found)
    // goes with the sentence's and the tag's titles.
    if (s.note && s.wrong_citation) {
      after.push(el("span", { class: "support-note wrong-cite", role: "note" }, s.note));
      // The marker itself says so too.
      for (const b of p.buttons) {
        if (b.dataset.n !== String(s.wrong_citation.cited)) continue;
        b.classList.add("wrong");
        b.title = `${b.title}: ${s.note}`;
      }
    }
    if (after.length) outermost(spans[spans.length - 1]).after(...after);
  }
  return pieces.length;
}

function inButton(n) {
  return !!n.parentElement?.closest("button");
}

/** The outermost inline element that `span` ends (so that a tag after a sentence that
 *  ends in bold is not bold). */
function outermost(span) {
  let n = span;
  while (n.parentElement && /^(EM|STRONG|S|CODE|SPAN)$/.test(n.parentElement.tagName) && n.parentElement.lastChild === n) n = n.parentElement;
  return n;
}

function charLength(s, i) {
  const c = s.codePointAt(i);
  return c !== undefined && c > 0xffff ? 2 : 1;
}

/** The chip in the answer's header: "4 of 5 sentences found in your documents". */
export function summaryChip(support) {
  const sum = summaryOf(support);
  if (!sum) return null;
  const n = support.not_found || 0;
  const p = support.partly || 0;
  const more = [p ? `${p} partly found` : "", n ? `${n} not found: marked in the answer` : ""].filter(Boolean).join("; ");
  return el("span", { class: `support-summary ${sum.tone}`, title: more ? `${sum.text}; ${more}` : sum.text }, sum.text);
}

/** A quote as it reads: a table's rows as a table under its header, else its text. */
function quoteBody(text) {
  const t = quoteTable(text);
  return t ? el("blockquote", { class: "quote-table" }, tableView(t)) : el("blockquote", {}, text);
}

/** "From your documents": each quote with its file and page, a link into the viewer.
 *  `lead`: shown above the answer, with a line saying why. */
export function quotesView(quotes, open, { lead = false, why = "" } = {}) {
  if (!quotes || !quotes.length) return null;
  const list = el("ol", { class: "quote-list" });
  for (const q of quotes) {
    list.append(el("li", { class: "quote", dataset: { file: q.file, page: q.page } },
      quoteBody(q.text),
      el("button", { type: "button", class: "quote-open", title: `Open ${q.file} at page ${q.page}, the passage highlighted`,
        onclick: () => open(q) },
      el("span", { class: "quote-file" }, q.file), ", ", el("span", { class: "quote-page" }, `p. ${q.page}`))));
  }
  return el("section", { class: `quotes${lead ? " lead" : ""}`, "aria-label": "From your documents" },
    el("div", { class: "quotes-head" }, "From your documents"),
    lead && why ? el("p", { class: "quotes-why" }, why) : null,
    list);
}
