// The documents list in the sidebar, a page at a time: a virtual list (./vlist.js)
// searched by name and filtered by status on the engine's side, each indexed document
// opening in the viewer, failed ones with their reason and Retry / Ignore, queued ones
// waiting; a summary line ("9,812 indexed, 140 queued, 48 failed: see why"); and a
// poll of the engine's counts every 2 s while the window is visible, so what another
// process indexed (the CLI, a second window, `quire serve`) shows without a reload.
// What follows a change of the library (the welcome, the scope picker) is given by the
// entry through initDocuments.
import { transport } from "./transport.js";
import { el } from "./dom.js";
import { openDocument, closeViewer, shownDocument } from "./viewer.js";
import { state } from "./state.js";
import { banner, summaryBanner } from "./banner.js";
import { virtualList } from "./vlist.js";
import { refresh as refreshQueue } from "./queue.js";

const $ = (id) => document.getElementById(id);
const ROW = 30;
const POLL_MS = 2000;

let changed = () => {};
let list = null;
let lastSummary = "";

const query = () => ({ search: $("doc-search").value.trim(), filter: $("doc-filter").value, sort: $("doc-sort").value });

const count = (n) => Number(n).toLocaleString("en-US");

/** `onChange(summary)` runs each time the library is read again. */
export function initDocuments({ onChange }) {
  changed = onChange;
  list = virtualList({
    scroller: $("documents-scroll"),
    list: $("documents"),
    rowHeight: ROW,
    fetchPage: (offset, limit) => transport.library({ ...query(), offset, limit }).then((p) => { remember(p.items); return p; }),
    renderRow,
    empty: () => el("li", { class: "meta" }, query().search || query().filter !== "all"
      ? "Nothing matches." : "No documents yet: drop PDFs above."),
    onError: (e) => banner(`Could not list documents: ${e.message}`),
  });
  let typing = 0;
  $("doc-search").addEventListener("input", () => {
    clearTimeout(typing);
    $("documents").setAttribute("aria-busy", "true");
    typing = setTimeout(showList, 60);
  });
  $("doc-filter").addEventListener("change", showList);
  $("doc-sort").addEventListener("change", showList);
  setInterval(poll, POLL_MS);
  document.addEventListener("visibilitychange", poll);
}

/** File names of the documents seen, for the scope picker's summary. */
function remember(items) {
  for (const d of items) if (d.status === "done") state.names.set(d.id, d.file_name);
}

function renderRow(d) {
  const name = d.title || d.file_name || d.path;
  if (d.status === "queued" || d.status === "running") {
    return el("li", { class: "queued", title: d.path, dataset: { docId: "" } },
      el("span", { class: "name" }, name),
      el("span", { class: "meta" }, d.status === "running" ? "indexing" : "queued"));
  }
  if (d.status === "failed") {
    return el("li", { class: "failed", title: `${d.path}: ${d.error || "failed"}`, dataset: { docId: d.id } },
      el("span", { class: "name" }, name),
      el("span", { class: "meta why" }, d.error || "failed"),
      el("button", { type: "button", class: "act", title: "Index this file again", "aria-label": `Retry ${name}`, onclick: () => act(() => transport.retryFailed(d.id)) }, "Retry"),
      el("button", { type: "button", class: "act", title: "Hide it from the failed files until it changes", "aria-label": `Ignore ${name}`, onclick: () => act(() => transport.ignoreFailed(d.id)) }, "Ignore"));
  }
  return el("li", { class: d.unavailable ? "unavailable" : "", title: d.unavailable ? `${d.path} — its folder is missing (still searched)` : `${d.path} — click to open`, dataset: { docId: d.id } },
    el("button", { type: "button", class: "name openable", onclick: () => openDocument({ docId: d.id, name: d.file_name || name, page: 1 }) }, name),
    el("span", { class: "meta" }, `${d.pages} p.`),
    el("button", { type: "button", title: "Remove from the index", "aria-label": `Remove ${name} from the index`, onclick: () => removeDocument(d) }, "×"));
}

async function act(run) {
  try { await run(); } catch (e) { banner(e.message); }
  loadDocuments();
  refreshQueue();
}

/** Draw the list again from the engine (search, filter and sort as chosen), timed
 *  as `documents-render` in the page's performance entries. */
async function showList() {
  const start = performance.now();
  await list.reset();
  performance.measure("documents-render", { start, end: performance.now() });
}

/** Read the summary and the list again and show them. */
export async function loadDocuments() {
  let s;
  try {
    s = await transport.librarySummary();
  } catch (e) {
    banner(`Could not list documents: ${e.message}`);
    return;
  }
  lastSummary = JSON.stringify(s);
  state.summary = s;
  showSummary(s);
  await showList();
  changed(s);
}

function showSummary(s) {
  const parts = [`${count(s.indexed)} indexed`];
  if (s.queued) parts.push(`${count(s.queued)} queued`);
  if (s.failed) parts.push(`${count(s.failed)} failed`);
  $("doc-summary").textContent = parts.join(", ");
  summaryBanner(s.failed ? `${parts.join(", ")}: ` : "", s.failed ? { label: "See why", run: showFailed } : null);
}

/** The failed files, each with its error, Retry and Ignore. */
export function showFailed() {
  $("doc-filter").value = "failed";
  $("doc-search").value = "";
  showList().then(() => { if (list.total()) list.focusRow(0); else $("doc-filter").focus(); });
}

/** While the window is visible: read the counts, and the list when they moved (the
 *  store's generation included, so any change by any process shows). */
async function poll() {
  if (document.visibilityState !== "visible" || !list) return;
  let s;
  try { s = await transport.librarySummary(); } catch (_) { return; }
  if (JSON.stringify(s) !== lastSummary) loadDocuments();
}

async function removeDocument(d) {
  if (!confirm(`Remove “${d.title || d.path}” from the index?`)) return;
  try { await transport.removeDocument(d.id); } catch (e) { banner(e.message); }
  if (shownDocument() === d.id) closeViewer();
  state.names.delete(d.id);
  loadDocuments();
}
