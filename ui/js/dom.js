// DOM helpers that never interpret text as HTML: document text and model output are
// untrusted, so everything goes through textContent / text nodes.

/** Create an element: el("div", { class: "x", onclick: fn }, "text", child, ...). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

const STOPWORDS = new Set(("the and for are but not you your with what which who whom whose when where why how " +
  "does did doing done this that these those there their they them then than from into onto " +
  "have has had was were will would should could can may might must shall about over under " +
  "use used using want need some any all each other own its it's our out off very just also " +
  "being been only same such both more most").split(" "));

/** Words worth highlighting from a query (≥ 3 letters and not a stopword, or any CJK run). */
export function queryTerms(query) {
  const terms = new Set();
  for (const m of query.toLowerCase().matchAll(/[\p{L}\p{N}_\\]+/gu)) {
    const w = m[0];
    if (/\p{Script=Han}/u.test(w)) {
      for (let i = 0; i + 1 < w.length; i++) terms.add(w.slice(i, i + 2));
    } else if (w.length >= 3 && !STOPWORDS.has(w)) terms.add(w);
  }
  return [...terms];
}

/** A fragment of `text` with the query's terms wrapped in <mark>, built as nodes. */
export function highlighted(text, terms) {
  const frag = document.createDocumentFragment();
  if (!terms.length) {
    frag.append(document.createTextNode(text));
    return frag;
  }
  // A word term matches at the start of a word only ("and" is not marked in "command").
  const esc = terms.map((t) => {
    const e = t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return /\p{Script=Han}/u.test(t) ? e : `(?<![\\p{L}\\p{N}_])${e}`;
  });
  const re = new RegExp(`(${esc.join("|")})`, "giu");
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) frag.append(document.createTextNode(text.slice(last, m.index)));
    const mark = document.createElement("mark");
    mark.textContent = m[0];
    frag.append(mark);
    last = m.index + m[0].length;
  }
  if (last < text.length) frag.append(document.createTextNode(text.slice(last)));
  return frag;
}

/** An answer's text cut at its citation markers: strings, and `{ n }` for each `[n]`
 *  whose n is in `known` (other bracketed numbers stay text). Pure: the caller turns
 *  the parts into nodes; re-cutting the whole text as it streams means a marker split
 *  across tokens becomes one citation once it is whole. */
export function citationParts(text, known) {
  const parts = [];
  let last = 0;
  for (const m of text.matchAll(/\[(\d{1,3})\]/g)) {
    const n = Number(m[1]);
    if (!known.has(n)) continue;
    if (m.index > last) parts.push(text.slice(last, m.index));
    parts.push({ n });
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

/** The language tag for text with Chinese characters (and no Japanese kana), so that
 *  the browser picks Chinese glyph forms for it; undefined otherwise. */
export function langOf(text) {
  if (!/\p{Script=Han}/u.test(text)) return undefined;
  return /[\p{Script=Hiragana}\p{Script=Katakana}]/u.test(text) ? "ja" : "zh-Hans";
}

/** A table's cells (`{ caption, header, rows }`, as locate.js's `tableCells` reads a
 *  table chunk) as a table under its caption, `terms` marked (text only: the cells
 *  come from the document). */
export function tableView({ caption, header, rows }, terms = []) {
  return el("table", { class: "md-table" },
    caption ? el("caption", {}, highlighted(caption, terms)) : null,
    el("thead", {}, el("tr", {}, header.map((c) => el("th", {}, highlighted(c, terms))))),
    el("tbody", {}, rows.map((r) => el("tr", {}, header.map((_, i) => el("td", {}, highlighted(r[i] || "", terms)))))));
}
