// Quire's UI: chat, response modes, sources, documents, settings. Talks to the engine
// only through ./transport.js; renders untrusted text only through ./dom.js.
import { transport } from "./transport.js";
import { el, clear, highlighted, queryTerms, citationParts, langOf } from "./dom.js";
import { openDocument, closeViewer, isOpen as viewerOpen, shownDocument } from "./viewer.js";
import { renderMarkdown, morph, plainText, copyText } from "./markdown.js";
import "./keys.js";
import { initScope, setDocuments, scopeRequest } from "./scope.js";
import { modelsCard } from "./firstrun.js";
import { initQueue, refresh as refreshQueue } from "./queue.js";
import { setModes, modeList, showModeHelp, fillTemplates, readTemplates, fillCustomModes, readCustomModes, showCall } from "./synthesis.js";
import { markSentences, summaryChip, quotesView, quotesLead } from "./support.js";


const $ = (id) => document.getElementById(id);
const state = { conversationId: null, running: null, settings: null, docs: [] };

// ---------- theme ----------
function applyTheme(t) {
  document.documentElement.dataset.theme = t;
  localStorage.setItem("quire-theme", t);
}
applyTheme(localStorage.getItem("quire-theme") || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
$("theme-btn").addEventListener("click", () => applyTheme(document.documentElement.dataset.theme === "dark" ? "light" : "dark"));

// ---------- banner ----------
function banner(text, action) {
  const b = clear($("banner"));
  b.hidden = !text;
  if (!text) return;
  b.append(document.createTextNode(text));
  if (action) b.append(el("button", { onclick: action.run }, action.label));
}

// ---------- modes ----------
setModes(null, "compact");
$("mode").addEventListener("change", showModeHelp);

// ---------- documents ----------
async function loadDocuments() {
  try {
    state.docs = await transport.documents();
  } catch (e) {
    banner(`Could not list documents: ${e.message}`);
    return;
  }
  // Rebuilt under a keyboard user: the focus stays on the same row (or goes to Add PDFs).
  const focusedDoc = document.activeElement?.closest?.("#documents li")?.dataset.docId;
  const ul = clear($("documents"));
  for (const d of state.docs) {
    const failed = d.status === "failed";
    const name = d.title || d.file_name || d.path;
    ul.append(el("li", { class: failed ? "failed" : "", title: failed ? d.error : `${d.path} — click to open`, dataset: { docId: d.id } },
      el(failed ? "span" : "button", {
        type: failed ? undefined : "button",
        class: failed ? "name" : "name openable",
        onclick: failed ? undefined : () => openDocument({ docId: d.id, name: d.file_name || name, page: 1 }),
      }, name),
      el("span", { class: "meta" }, failed ? "failed" : `${d.pages} p.`),
      el("button", { type: "button", title: "Remove from the index", "aria-label": `Remove ${name} from the index`, onclick: () => removeDocument(d) }, "×")));
  }
  if (!state.docs.length) ul.append(el("li", { class: "meta" }, "No documents yet: drop PDFs above."));
  if (focusedDoc) (ul.querySelector(`li[data-doc-id="${CSS.escape(focusedDoc)}"] button`) || $("add-files")).focus();
  showWelcome();
  setDocuments(state.docs);
}

/** An empty conversation's welcome: what to do first, and what the modes do. */
function showWelcome() {
  const box = $("messages");
  box.querySelector(".welcome")?.remove();
  if (box.querySelector(".msg")) return;
  const first = modelsCard(state.status, async () => { await checkStatus(); showWelcome(); });
  if (first) { box.append(first); return; }
  const n = state.docs.filter((d) => d.status === "done").length;
  box.append(el("section", { class: "welcome", "aria-label": "Getting started" },
    el("h2", {}, n ? `Ask about your ${n} document${n === 1 ? "" : "s"}` : "Start by adding your PDFs"),
    n
      ? el("p", {}, "Type a question below. Each answer lists its sources; click one to see the passage on its page.")
      : el("p", {}, "Drop PDFs anywhere on this window, or ",
        el("button", { type: "button", class: "primary", onclick: () => $("add-files").click() }, "Add PDFs"),
        ". They are read, split and indexed on this computer; nothing leaves it."),
    el("h3", {}, "Response modes (the Mode menu above)"),
    el("dl", {}, modeList().flatMap((m) => [el("dt", {}, m.name), el("dd", {}, m.description)]))));
}

async function removeDocument(d) {
  if (!confirm(`Remove “${d.title || d.path}” from the index?`)) return;
  try { await transport.removeDocument(d.id); } catch (e) { banner(e.message); }
  if (shownDocument() === d.id) closeViewer();
  loadDocuments();
}

// ---------- indexing ----------
const progressRows = new Map();
function progressRow(name, label) {
  let row = progressRows.get(name);
  if (!row) {
    const bar = el("progress", { max: 1, value: 0 });
    const meta = el("span", { class: "meta" }, "queued");
    const li = el("li", {}, el("span", { class: "name", title: label || name }, label || name.split(/[\\/]/).pop()), bar, meta);
    $("progress").append(li);
    row = { li, bar, meta };
    progressRows.set(name, row);
  }
  return row;
}

function onIndexEvent(ev) {
  switch (ev.type) {
    case "file": progressRow(ev.path).meta.textContent = `file ${ev.index} of ${ev.total}`; break;
    case "page": {
      const r = progressRow(ev.path);
      r.bar.max = ev.pages; r.bar.value = ev.page;
      r.meta.textContent = `page ${ev.page}/${ev.pages}`;
      break;
    }
    case "embedded": progressRow(ev.path).meta.textContent = `${ev.chunks} chunks embedded`; break;
    case "paused": progressRow(ev.path).meta.textContent = "paused: answering your question first"; break;
    case "file_done": {
      const r = progressRow(ev.path);
      r.bar.value = r.bar.max; r.meta.textContent = ev.skipped ? "already indexed" : `done, ${ev.chunks} chunk${ev.chunks === 1 ? "" : "s"}`;
      break;
    }
    case "file_failed": {
      const r = progressRow(ev.path);
      r.li.classList.add("failed"); r.meta.textContent = ev.reason; r.li.title = ev.reason;
      break;
    }
    case "reembedded": {
      const r = progressRow(`re-embed:${ev.model}`, `Re-embedding with ${ev.model}`);
      r.bar.max = Math.max(ev.total, 1); r.bar.value = ev.done;
      const eta = ev.eta_secs ? `, ~${Math.ceil(ev.eta_secs)} s left` : "";
      r.meta.textContent = ev.done >= ev.total ? `re-embedded ${ev.total} chunks` : `re-embedding ${ev.done}/${ev.total}${eta}`;
      break;
    }
    case "finished": loadDocuments(); break;
    default: break;
  }
}

/** Re-embed the index with the embedding model the settings choose. */
async function reembed() {
  banner("");
  try {
    await transport.reembed(onIndexEvent);
  } catch (e) {
    banner(`Re-embedding failed: ${e.message}`);
  }
  await checkStatus();
  loadDocuments();
}

/** Whether the index holds vectors another embedding model made than the chosen one. */
function indexNeedsReembed(s) {
  return (s.index_embedders || []).some((m) => m.name !== modelName(s.embedder) && m.chunks > 0);
}
const modelName = (setting) => String(setting || "").split(/[\\/]/).pop();

async function indexItems(items) {
  if (!items.length) return;
  try {
    await transport.index(items, (ev) => { if (ev.type === "file") refreshQueue(); onIndexEvent(ev); });
  } catch (e) {
    banner(`Indexing failed: ${e.message}`);
  }
  refreshQueue();
  loadDocuments();
}
initQueue($("progress"), { empty: () => loadDocuments() });

$("file-input").addEventListener("change", (e) => {
  const files = [...e.target.files];
  e.target.value = "";
  indexItems(files);
});
$("add-files").addEventListener("click", async () => {
  if (transport.pickFiles) indexItems((await transport.pickFiles()) || []);
  else $("file-input").click();
});

// Drag and drop: native paths in the desktop window, File objects in a browser.
const overlay = $("drop-overlay");
if (transport.onFileDrop) {
  transport.onFileDrop(({ kind, paths }) => {
    overlay.hidden = kind !== "enter";
    if (kind === "drop") indexItems(paths);
  });
} else {
  let depth = 0;
  window.addEventListener("dragenter", (e) => { e.preventDefault(); depth++; overlay.hidden = false; });
  window.addEventListener("dragleave", () => { if (--depth <= 0) { depth = 0; overlay.hidden = true; } });
  window.addEventListener("dragover", (e) => e.preventDefault());
  window.addEventListener("drop", (e) => {
    e.preventDefault(); depth = 0; overlay.hidden = true;
    const files = [...(e.dataTransfer?.files || [])];
    const pdfs = files.filter((f) => /\.pdf$/i.test(f.name));
    for (const f of files) if (!pdfs.includes(f)) onIndexEvent({ type: "file_failed", path: f.name, reason: "not a PDF: skipped" });
    indexItems(pdfs);
  });
}

// ---------- conversations ----------
async function loadConversations() {
  let list = [];
  try { list = await transport.conversations(); } catch (e) { banner(e.message); }
  const focusedConv = document.activeElement?.closest?.("#conversations li")?.dataset.convId;
  const ul = clear($("conversations"));
  for (const c of list) {
    ul.append(el("li", { class: c.id === state.conversationId ? "active" : "", dataset: { convId: c.id } },
      el("button", { type: "button", class: "name", title: c.title, lang: langOf(c.title || ""), "aria-current": c.id === state.conversationId ? "true" : undefined, onclick: () => openConversation(c.id) }, c.title || "Untitled"),
      el("button", { type: "button", title: "Delete conversation", "aria-label": `Delete conversation ${c.title || "Untitled"}`, onclick: () => removeConversation(c.id) }, "×")));
  }
  if (focusedConv) (ul.querySelector(`li[data-conv-id="${CSS.escape(focusedConv)}"] .name`) || $("new-chat")).focus();
}

async function openConversation(id) {
  if (state.running) return;
  state.conversationId = id;
  state.group = null;
  $("export-btn").disabled = !id;
  localStorage.setItem("quire-conversation", id || "");
  clear($("messages"));
  clear($("sources"));
  clear($("queries"));
  if (id) {
    try {
      const conv = await transport.conversation(id);
      let last = null;
      for (const m of conv.messages) {
        if (m.role === "user") userMessage(m.content, m.id);
        else last = reopenedAnswer(m);
      }
      if (last) showSources(last);
    } catch (e) {
      banner(`Could not open the conversation: ${e.message}`);
      state.conversationId = null;
    }
  }
  showWelcome();
  loadConversations();
}

/** An answer as it was shown: its steps and prompts, what was searched for, its
 *  citations and sources. */
function reopenedAnswer(m) {
  const view = assistantMessage(m.mode);
  view.root.classList.remove("streaming");
  setAnswerId(view, m.id);
  view.query = m.query || "";
  view.queries = m.queries;
  view.notes = m.notes || [];
  view.sources = m.sources || [];
  view.citations = m.citations || [];
  view.quotes = m.quotes || [];
  view.support = m.support || null;
  view.failed = !!m.status && m.status !== "stopped";
  showScope(view, m.scope, m.relevance);
  if (m.searched_for) setSearchedFor(view, m.searched_for);
  for (const c of m.calls || []) {
    const sv = stepView(view, { step: c.step, label: c.label });
    sv.prompt.querySelector("pre").textContent = c.prompt;
    sv.out.textContent = c.output;
    showCall(sv, c);
  }
  renderAnswer(view, m.content, { now: true });
  showSupport(view);
  if (m.status) view.stats.textContent = m.status === "stopped" ? "Stopped." : m.status;
  else if (m.stats) view.stats.textContent = statsLine(m.stats);
  view.root.addEventListener("click", (e) => { if (!e.target.closest("button.cite")) showSources(view); });
  return view;
}

async function removeConversation(id) {
  try { await transport.removeConversation(id); } catch (e) { banner(e.message); }
  if (id === state.conversationId) openConversation(null);
  else loadConversations();
}

$("new-chat").addEventListener("click", () => openConversation(null));

// ---------- messages ----------
// Each question is followed by a group of its answers: asked again (maybe in another
// mode), the answers stand side by side.
function userMessage(text, id) {
  $("messages").querySelector(".welcome")?.remove();
  const body = el("div", { class: "body", lang: langOf(text) }, text);
  const m = el("div", { class: "msg user", dataset: id ? { messageId: id } : {} },
    el("div", { class: "who" }, "You", el("span", { class: "actions" },
      el("button", { type: "button", class: "act", title: "Edit the question and ask it again", onclick: () => editQuestion(m) }, "Edit"),
      el("button", { type: "button", class: "act", title: "Delete the question and its answers", onclick: () => deleteMessage(m) }, "Delete"))),
    body);
  const group = el("div", { class: "answers" });
  $("messages").append(m, group);
  state.group = group;
  scrollToEnd();
  return m;
}

/** Keep the newest text in view; only the message list scrolls, never the window. */
function scrollToEnd() {
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
}

function assistantMessage(mode) {
  const body = el("div", { class: "body" });
  const searched = el("div", { class: "searched", hidden: true });
  const steps = el("details", { class: "steps", hidden: true }, el("summary", {}, "Steps and prompts"));
  const stats = el("div", { class: "stats" });
  const actions = el("span", { class: "actions" });
  const scope = el("span", { class: "scope-chip", hidden: true });
  const support = el("span", { class: "support-slot" });
  const root = el("div", { class: "msg assistant streaming" }, el("div", { class: "who" }, `Quire · ${mode}`, scope, support, actions), searched, steps, body, stats);
  (state.group || $("messages")).append(root);
  const view = { root, body, searched, steps, stats, scope, supportSlot: support, mode, stepViews: new Map(), citations: [], quotes: [], support: null, text: "" };
  actions.append(
    el("button", { type: "button", class: "act", title: "Copy the answer as Markdown", onclick: (e) => copied(e, view.text) }, "Copy"),
    el("button", { type: "button", class: "act", title: "Copy the answer as plain text", onclick: (e) => copied(e, plainText(view.text)) }, "Copy text"),
    el("button", { type: "button", class: "act again", title: "Ask the question again, in the mode chosen in the toolbar; the answers stand side by side", onclick: () => askAgain(view) }, "Ask again"),
    el("button", { type: "button", class: "act", title: "Delete this answer", onclick: () => deleteMessage(root) }, "Delete"));
  return view;
}

function setAnswerId(view, id) {
  if (id) view.root.dataset.messageId = id;
}

async function copied(e, text) {
  e.stopPropagation();
  const b = e.currentTarget;
  const label = b.textContent;
  b.textContent = (await copyText(text)) ? "Copied" : "Copy failed";
  setTimeout(() => { b.textContent = label; }, 1500);
}

/** The question message an answer's group follows. */
function questionOf(root) {
  const group = root.closest(".answers");
  const q = group?.previousElementSibling;
  return q && q.classList.contains("user") ? q : null;
}

/** Ask the last question again, in the toolbar's mode, beside its answers. */
function askAgain(view) {
  const q = questionOf(view.root);
  if (!q || state.running) return;
  if (q.nextElementSibling !== $("messages").lastElementChild) {
    banner("Only the last question can be asked again: edit an earlier one to ask it anew.");
    return;
  }
  state.group = q.nextElementSibling;
  ask(q.querySelector(".body").textContent, { regenerate: Number(q.dataset.messageId) });
}

/** Edit a question in place; saving asks it anew, replacing it and all after it. */
function editQuestion(m) {
  if (state.running || m.querySelector("textarea")) return;
  const body = m.querySelector(".body");
  const area = el("textarea", { class: "edit", rows: 3, "aria-label": "Edit the question" });
  area.value = body.textContent;
  const later = m.nextElementSibling?.nextElementSibling;
  const save = el("button", { type: "button", class: "primary" }, "Ask");
  const cancel = el("button", { type: "button" }, "Cancel");
  const box = el("div", { class: "edit-box" }, area,
    el("div", { class: "edit-bar" }, later ? el("span", { class: "muted" }, "Asking replaces this question, its answers and everything after it.") : null, cancel, save));
  body.hidden = true;
  body.after(box);
  area.focus();
  const close = () => { box.remove(); body.hidden = false; };
  cancel.addEventListener("click", close);
  area.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.stopPropagation(); close(); }
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); save.click(); }
  });
  save.addEventListener("click", () => {
    const text = area.value.trim();
    if (!text) return;
    const id = Number(m.dataset.messageId);
    // Everything from this question on goes; the edited one takes its place.
    while (m.nextSibling) m.nextSibling.remove();
    m.remove();
    ask(text, id ? { replaceFrom: id } : {});
  });
}

async function deleteMessage(node) {
  const id = Number(node.dataset.messageId);
  if (state.running || !id || !state.conversationId) return;
  const what = node.classList.contains("user") ? "this question and its answers" : "this answer";
  if (!confirm(`Delete ${what}?`)) return;
  try {
    await transport.deleteMessage(state.conversationId, id);
  } catch (e) {
    banner(e.message);
  }
  openConversation(state.conversationId);
}

/** Give every message on screen its id in the conversation (a stopped or failed
 *  answer learns its id only from the kept conversation). */
async function syncIds() {
  if (!state.conversationId) return;
  let conv;
  try { conv = await transport.conversation(state.conversationId); } catch (_) { return; }
  const nodes = [...$("messages").querySelectorAll(".msg")];
  if (nodes.length !== conv.messages.length) return;
  nodes.forEach((n, i) => { n.dataset.messageId = conv.messages[i].id; });
}

/** Save the conversation as Markdown, with its sources and pages. */
async function exportConversation() {
  if (!state.conversationId) return;
  try {
    await transport.exportConversation(state.conversationId);
  } catch (e) {
    banner(`Export failed: ${e.message}`);
  }
}
$("export-btn").addEventListener("click", exportConversation);

/** Which documents an answer searched, on the answer; and, when the documents did not
 *  seem to cover the question, the answer marked as such. */
function showScope(view, scope, relevance) {
  view.relevance = relevance || null;
  if (scope) {
    view.scope.textContent = scope;
    view.scope.title = `Searched: ${scope}`;
    view.scope.hidden = false;
  }
  view.root.classList.toggle("not-found", !!relevance && relevance.covered === false);
}

function setSearchedFor(view, q) {
  view.searchedFor = q;
  clear(view.searched).append("Searched for: ", el("q", {}, q));
  view.searched.hidden = false;
}

/** The answer as Markdown (./markdown.js: elements and text nodes, never HTML), with
 *  each `[N]` that names a numbered source as a link to it. The whole text is parsed
 *  again as it streams (at most once a frame), so a marker or a table split across
 *  tokens becomes whole once it is; only the blocks that changed are replaced. */
function renderAnswer(view, text, { now = false } = {}) {
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
function showSupport(view) {
  clear(view.supportSlot).append(summaryChip(view.support) || "");
  if (view.support && view.text) renderAnswer(view, view.text, { now: true });
  showQuotes(view);
}

function showQuotes(view) {
  view.quotesBox?.remove();
  view.quotesBox = null;
  // An extractive answer is the quotes themselves.
  if (view.mode === "extractive") return;
  const notFound = view.root.classList.contains("not-found");
  const lead = quotesLead({ support: view.support, failed: view.failed, notFound });
  const why = notFound ? "Your documents do not seem to answer this; these are their closest passages."
    : view.failed ? "There is no answer from the model; these passages of your documents answer the question best."
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
function flush(view) {
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

/** Show the answer's sources and select the one `[n]` cites, scrolled into view. */
function showCitation(view, n) {
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
function openSource(s, passage) {
  openDocument({ docId: s.doc_id, name: s.file, page: s.page_start, pageEnd: s.page_end, passage: passage || s.text });
}

function statsLine(s) {
  const parts = [];
  if (s.model) parts.push(s.model.replace(/\.gguf$/i, ""));
  if (s.llm_calls !== undefined) parts.push(`${s.llm_calls} LLM call${s.llm_calls === 1 ? "" : "s"}`);
  if (s.output_tokens !== undefined) parts.push(`${s.output_tokens} tokens`);
  if (s.tokens_per_s) parts.push(`${s.tokens_per_s.toFixed(1)} tokens/s`);
  if (s.secs !== undefined) parts.push(`${s.secs.toFixed(1)} s`);
  return parts.join(" · ");
}

function stepView(view, ev) {
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

// ---------- sources ----------
/** The side panel for one answer: what was searched for, generated queries, notes,
 *  and each source with its retrievers' ranks, its rerank score and its citations. */
function showSources(view) {
  const terms = queryTerms(view.searchedFor || view.query || "");
  const q = clear($("queries"));
  if (view.searchedFor) q.append(el("div", { class: "searched" }, "Searched for: ", el("q", {}, view.searchedFor)));
  if (view.scope && !view.scope.hidden) q.append(el("div", { class: "scope-line" }, "Searched: ", el("strong", {}, view.scope.textContent)));
  if (view.relevance) {
    const r = view.relevance;
    q.append(el("div", { class: `relevance ${r.covered ? "covered" : "not-covered"}`, title: "Whether the documents seem to cover the question (Settings: “Not found” threshold)" },
      r.covered ? "" : el("strong", {}, "Not found in the documents: "), r.covered ? r.reason : r.reason.replace(/^not found: /, ""),
      r.covered ? "" : el("div", {}, "The sources below are the closest passages; no model answered from them.")));
  }
  for (const n of view.notes || []) q.append(el("div", { class: "note" }, n));
  if (view.queries && view.queries.length > 1) {
    q.append(el("div", {}, "Generated queries:"), el("ul", {}, view.queries.map((x) => el("li", {}, x))));
  }
  const ol = clear($("sources"));
  for (const s of view.sources || []) {
    const pages = s.page_start === s.page_end ? `p. ${s.page_start}` : `pp. ${s.page_start}–${s.page_end}`;
    const ranks = (s.evidence || []).map((e) => `${e.retriever} #${e.rank + 1}${e.query_index ? ` (q${e.query_index + 1})` : ""}`).join(", ");
    const cites = (view.citations || []).filter((c) => c.chunk_id === s.chunk_id);
    const text = el("div", { class: "src-text", title: "Click to expand", lang: langOf(s.text || "") }, sourceText(s.text || "", cites, terms));
    text.addEventListener("click", () => text.classList.toggle("open"));
    ol.append(el("li", { class: "source", dataset: { file: s.file, pages, chunkId: s.chunk_id } },
      el("div", { class: "src-head" },
        el("button", { type: "button", class: "src-open", title: `Open ${s.file} at ${pages}, the passage highlighted`, onclick: () => openSource(s) },
          el("span", { class: "src-file" }, s.file), " ",
          el("span", { class: "src-pages" }, pages)),
        el("span", { class: "src-score" }, `score ${Number(s.score).toFixed(4)}`),
        s.ocr ? el("span", { class: "ocr-mark", title: "This passage was read from a scanned page by text recognition" }, "text from OCR") : null,
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

// ---------- asking ----------
function setRunning(r) {
  state.running = r;
  $("send").hidden = !!r;
  $("stop").hidden = !r;
  $("messages").setAttribute("aria-busy", r ? "true" : "false");
}

/** Ask `question`; `regenerate` (the question's message id) asks the last question
 *  again beside its answers, `replaceFrom` replaces that question and what follows. */
async function ask(question, { regenerate, replaceFrom } = {}) {
  if (state.running || !question.trim()) return;
  banner("");
  const mode = $("mode").value;
  const qNode = regenerate ? null : userMessage(question);
  const view = assistantMessage(mode);
  view.query = question;
  let answer = "";
  let finalStep = null;
  const onEvent = (ev) => {
    switch (ev.type) {
      case "started":
        if (qNode && ev.question_id) qNode.dataset.messageId = ev.question_id;
        if (!state.conversationId || state.conversationId !== ev.conversation_id) {
          state.conversationId = ev.conversation_id;
          $("export-btn").disabled = false;
          localStorage.setItem("quire-conversation", ev.conversation_id);
          loadConversations();
        }
        break;
      case "condensed": setSearchedFor(view, ev.question); break;
      case "queries": view.queries = ev.queries; break;
      case "sources":
        view.sources = ev.sources;
        view.notes = ev.notes || [];
        showScope(view, ev.scope, ev.relevance);
        showSources(view);
        break;
      case "citations": view.citations = ev.citations; showSources(view); break;
      case "quotes": view.quotes = ev.quotes || []; showQuotes(view); break;
      case "support": view.support = ev.support || null; showSupport(view); break;
      case "step": {
        const sv = stepView(view, ev);
        if (ev.final) finalStep = ev.step;
        sv.label.textContent = ev.label;
        break;
      }
      case "prompt": stepView(view, ev).prompt.querySelector("pre").textContent = ev.prompt; break;
      case "step_done": showCall(stepView(view, ev.call), ev.call); break;
      case "token": {
        if (ev.final) {
          answer += ev.text;
          renderAnswer(view, answer);
        } else {
          stepView(view, ev).out.append(document.createTextNode(ev.text));
        }
        scrollToEnd();
        break;
      }
      case "done":
        setAnswerId(view, ev.message_id);
        renderAnswer(view, ev.answer, { now: true });
        view.stats.textContent = statsLine(ev.stats || {});
        break;
      case "cancelled":
        view.stats.textContent = "Stopped.";
        break;
      case "error":
        flush(view);
        view.body.append(el("div", { class: "error" }, ev.message));
        view.failed = true;
        showQuotes(view);
        break;
      default: break;
    }
  };
  const request = {
    conversation_id: state.conversationId,
    question,
    mode,
    overrides: {
      chat_mode: $("chat-mode").value,
      cite_sources: $("cite").checked,
      rerank: $("rerank").checked,
    },
    regenerate,
    replace_from: replaceFrom,
    scope: scopeRequest(),
  };
  void finalStep;
  const handle = transport.ask(request, onEvent);
  setRunning(handle);
  try {
    await handle.done;
  } catch (e) {
    flush(view);
    view.body.append(el("div", { class: "error" }, e.message));
    view.failed = true;
    showQuotes(view);
  } finally {
    flush(view);
    view.root.classList.remove("streaming");
    syncIds();
    view.root.addEventListener("click", (e) => { if (!e.target.closest("button.cite")) showSources(view); });
    setRunning(null);
    loadConversations();
  }
}

function stop() {
  if (state.running) state.running.cancel();
}

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const q = $("question").value;
  $("question").value = "";
  ask(q);
});
$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("composer").requestSubmit();
  }
});
// Esc stops a generation; otherwise (or from inside the viewer) it closes the viewer.
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape" || $("settings").open) return;
  if (viewerOpen() && (!state.running || e.target.closest?.("#viewer"))) closeViewer();
  else stop();
});
$("stop").addEventListener("click", stop);

// ---------- settings ----------
const form = $("settings-form");
async function openSettings() {
  try { state.settings = await transport.settings(); } catch (e) { banner(e.message); return; }
  const s = state.settings;
  const modelSel = clear(form.elements.model);
  for (const m of s.models || []) {
    modelSel.append(el("option", { value: m.name, disabled: !!m.error && m.name !== modelName(s.model) },
      m.error ? `${m.name} (unusable)` : `${m.name} · ${m.architecture} · ${mb(m.bytes)} · ${m.speed}`));
  }
  const embSel = clear(form.elements.embedder);
  for (const m of s.embedders || []) {
    embSel.append(el("option", { value: m.name, disabled: !!m.error && m.name !== modelName(s.embedder) },
      m.error ? `${m.name} (unusable)` : `${m.name} · ${m.dims} dims · ${(m.languages || []).join(", ") || "languages not declared"}`));
  }
  form.elements.embedder.value = modelName(s.embedder);
  showDevice(s);
  fillTemplates($("templates-box"), s);
  fillCustomModes($("custom-modes-box"), s);
  for (const k of ["top_k", "temperature", "repeat_penalty", "max_tokens", "fusion", "num_queries",
    "rerank_candidates", "rerank_batch_size", "citation_chunk_size"]) {
    if (form.elements[k]) form.elements[k].value = s[k] ?? "";
  }
  form.elements.not_found_threshold.value = s.not_found_threshold ?? "";
  form.elements.model.value = modelName(s.model);
  showModelInfo();
  showEmbedderInfo();
  form.elements.structured_answer_filtering.checked = !!s.structured_answer_filtering;
  for (const k of ["llm_server", "llm_server_model", "llm_server_key", "llm_server_tokenizer"]) form.elements[k].value = s[k] ?? "";
  form.elements.llm_server_context.value = s.llm_server_context ?? 0;
  form.elements.llm_server_chat.checked = s.llm_server_chat ?? true;
  $("server-section").open = !!(s.llm_server || "").trim();
  form.elements.store.value = s.store ?? "";
  $("store-section").open = !!(s.store || "").trim();
  $("store-info").textContent = s.store_in_use ? `In use now: ${s.store_in_use}` : "";
  showModelInfo();
  form.elements.template_vars.value = Object.entries(s.template_vars || {}).map(([k, v]) => `${k}=${v}`).join("\n");
  $("settings-error").hidden = true;
  $("settings").showModal();
}
$("settings-btn").addEventListener("click", openSettings);

const mb = (bytes) => `${Math.round(bytes / 1e6)} MB`;
/** What the chosen LLM is: architecture, size, context, and which code runs it. */
function showModelInfo() {
  const m = (state.settings?.models || []).find((x) => x.name === form.elements.model.value);
  const info = $("model-info");
  info.classList.toggle("warn", !!m && (!!m.error || m.speed !== "fast" || !m.chat_template));
  if (!m) { info.textContent = ""; return; }
  if (m.error) { info.textContent = `Unusable: ${m.error}`; return; }
  if (form.elements.llm_server.value.trim()) {
    info.textContent = `Not used while a model server answers (${form.elements.llm_server.value.trim()}).`;
    return;
  }
  const parts = [
    m.title || m.architecture,
    `${m.architecture} architecture`,
    m.size_label ? `${m.size_label} parameters` : m.parameters ? `${(m.parameters / 1e9).toFixed(2)}B parameters` : null,
    m.quantization,
    mb(m.bytes),
    m.context ? `${m.context.toLocaleString("en")}-token context` : null,
    m.speed === "fast" ? "fast: Quire's own kernels" : `${m.speed}: candle's generic code`,
    m.chat_template ? null : "base model (no chat template): follows instructions poorly",
  ];
  info.textContent = parts.filter(Boolean).join(" · ");
}
/** What the chosen embedding model is, and whether choosing it means re-embedding. */
function showEmbedderInfo() {
  const s = state.settings || {};
  const name = form.elements.embedder.value;
  const m = (s.embedders || []).find((x) => x.name === name);
  const info = $("embedder-info");
  if (!m) { info.textContent = ""; return; }
  if (m.error) { info.textContent = `Unusable: ${m.error}`; info.classList.add("warn"); return; }
  const other = (s.index_embedders || []).filter((x) => x.name !== name);
  const chunks = other.reduce((n, x) => n + x.chunks, 0);
  const parts = [
    `${m.dims} dimensions`, `${m.layers} layers`, `${m.pooling} pooling`, mb(m.bytes),
    m.languages?.length ? `languages: ${m.languages.join(", ")}` : "languages not declared",
  ];
  let text = parts.join(" · ");
  if (chunks) text += ` — saving re-embeds the ${chunks} indexed chunks (made by ${other.map((x) => x.name).join(", ")}), with progress under Documents.`;
  info.textContent = text;
  info.classList.toggle("warn", chunks > 0);
}
form.elements.model.addEventListener("change", showModelInfo);
form.elements.llm_server.addEventListener("input", showModelInfo);
form.elements.embedder.addEventListener("change", showEmbedderInfo);
/** The device select (a `cuda:N` setting gets its own option) and where the models run now. */
async function showDevice(s) {
  const sel = form.elements.device;
  const want = s.device || "auto";
  if (![...sel.options].some((o) => o.value === want)) sel.append(el("option", { value: want }, want));
  sel.value = want;
  try {
    const st = await transport.status();
    $("device-info").textContent = st.device ? `Running on ${st.device}.` : "";
  } catch { $("device-info").textContent = ""; }
}
$("settings-save").addEventListener("click", async (e) => {
  e.preventDefault();
  const f = form.elements;
  const vars = {};
  for (const line of f.template_vars.value.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) vars[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  const next = {
    ...state.settings,
    model: f.model.value,
    embedder: f.embedder.value,
    device: f.device.value,
    top_k: Number(f.top_k.value),
    temperature: Number(f.temperature.value),
    repeat_penalty: Number(f.repeat_penalty.value),
    max_tokens: Number(f.max_tokens.value),
    fusion: f.fusion.value,
    num_queries: Number(f.num_queries.value),
    rerank_candidates: Number(f.rerank_candidates.value),
    rerank_batch_size: Number(f.rerank_batch_size.value),
    citation_chunk_size: Number(f.citation_chunk_size.value),
    structured_answer_filtering: f.structured_answer_filtering.checked,
    llm_server: f.llm_server.value.trim(),
    llm_server_model: f.llm_server_model.value.trim(),
    llm_server_key: f.llm_server_key.value === "" ? null : f.llm_server_key.value,
    llm_server_context: Number(f.llm_server_context.value) || 0,
    llm_server_tokenizer: f.llm_server_tokenizer.value.trim() === "" ? null : f.llm_server_tokenizer.value.trim(),
    llm_server_chat: f.llm_server_chat.checked,
    store: f.store.value.trim(),
    ...readTemplates(form, state.settings),
    custom_modes: readCustomModes($("custom-modes-box")),
    template_vars: vars,
    not_found_threshold: f.not_found_threshold.value.trim() === "" ? null : Number(f.not_found_threshold.value),
  };
  for (const k of ["models", "embedders", "index_embedders", "modes", "default_templates"]) delete next[k];
  try {
    state.settings = await transport.saveSettings(next);
    setModes(state.settings.modes, state.settings.mode);
    $("settings").close();
    if (indexNeedsReembed(state.settings)) reembed();
  } catch (err) {
    $("settings-error").textContent = err.message;
    $("settings-error").hidden = false;
  }
});

// ---------- start ----------
/** Show what is missing or out of step, with a way to fix a stale index. */
async function checkStatus() {
  try {
    const st = await transport.status();
    state.status = st;
    state.settings = await transport.settings();
    setModes(state.settings.modes, state.settings.mode);
    const fix = indexNeedsReembed(state.settings) ? { label: "Re-embed now", run: reembed } : null;
    // A missing model is explained by the first-run card in the chat, not twice.
    const firstRun = !st.llm || !st.embedder;
    const problems = (st.problems || []).filter((p) => !(firstRun && / model is missing /.test(p)));
    if (firstRun) problems.unshift("A model file is missing: the empty conversation (+ New) says which, and how to get it.");
    banner(problems.join("\n"), fix);
  } catch (e) {
    banner(`Quire's engine is not reachable: ${e.message}`);
  }
}

/** The toolbar's conversation switches show the settings, and save to them. */
function showChatSwitches() {
  const s = state.settings || {};
  if (s.chat_mode) $("chat-mode").value = s.chat_mode;
  $("cite").checked = !!s.cite_sources;
  $("rerank").checked = !!s.rerank;
}
async function saveChatSwitches() {
  if (!state.settings) return;
  const next = { ...state.settings, chat_mode: $("chat-mode").value, cite_sources: $("cite").checked, rerank: $("rerank").checked };
  for (const k of ["models", "embedders", "index_embedders", "modes", "default_templates"]) delete next[k];
  try { state.settings = await transport.saveSettings(next); } catch (e) { banner(e.message); }
}
for (const id of ["chat-mode", "cite", "rerank"]) $(id).addEventListener("change", saveChatSwitches);

initScope({ onError: banner });

async function start() {
  showModeHelp();
  await checkStatus();
  showChatSwitches();
  if (state.settings?.mode) $("mode").value = state.settings.mode;
  showModeHelp();
  await loadDocuments();
  // localStorage keeps strings; the engine wants the numeric id.
  // A remembered conversation that is gone (deleted, or another data directory's) is
  // forgotten quietly.
  let last = Number(localStorage.getItem("quire-conversation")) || null;
  if (last) {
    try {
      if (!(await transport.conversations()).some((c) => c.id === last)) last = null;
    } catch (_) { last = null; }
  }
  await openConversation(last);
}
start();
