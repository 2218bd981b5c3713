// Collections of documents, and the composer's scope picker: a question searches all
// documents, one collection, or documents chosen here. The collections list lives in
// the sidebar; one dialog names a collection and picks its documents, or picks the
// documents of a one-off scope; its documents are a virtual list (./vlist.js) with a
// search box, read a page at a time, the checked ones kept apart from the rows drawn.
// Names and file names are shown as text only.
import { transport } from "./transport.js";
import { el, clear } from "./dom.js";
import { state as shared } from "./state.js";
import { virtualList } from "./vlist.js";

const $ = (id) => document.getElementById(id);
const KEY = "quire-scope";
const DOCS_KEY = "quire-scope-docs";
const state = { collections: [], indexed: 0, chosen: savedChoice(), onError: () => {} };
const ROW = 28;

function savedChoice() {
  try { return (JSON.parse(localStorage.getItem(DOCS_KEY)) || []).map(Number).filter(Number.isFinite); } catch (_) { return []; }
}

/** What the next question searches, as the engine's `scope` field. */
export function scopeRequest() {
  const v = $("scope").value;
  if (v.startsWith("c:")) return { kind: "collection", id: Number(v.slice(2)) };
  if (v === "docs") return { kind: "documents", ids: state.chosen };
  return { kind: "all" };
}

/** Wire the picker and the sidebar; `onError(message)` shows a refusal. */
export function initScope({ onError }) {
  state.onError = onError;
  $("scope").addEventListener("change", () => {
    if ($("scope").value === "docs" && !state.chosen.length) chooseDocuments();
    else remember();
    showSummary();
  });
  $("scope-choose").addEventListener("click", chooseDocuments);
  $("new-collection").addEventListener("click", () => editCollection(null));
  $("collection-form").addEventListener("submit", (e) => e.preventDefault());
}

/** The library changed (indexed, removed): refresh the lists that name its documents. */
export async function setDocuments(summary) {
  state.indexed = summary?.indexed || 0;
  await loadCollections();
}

async function loadCollections() {
  try {
    state.collections = await transport.collections();
  } catch (e) {
    state.onError(`Could not list collections: ${e.message}`);
    return;
  }
  const ul = clear($("collections"));
  for (const c of state.collections) {
    const n = c.documents.length;
    ul.append(el("li", { dataset: { collectionId: c.id } },
      el("button", { type: "button", class: "name", title: `Ask only the documents of “${c.name}”`, onclick: () => pick(`c:${c.id}`) }, c.name),
      el("span", { class: "meta" }, `${n} doc${n === 1 ? "" : "s"}`),
      el("button", { type: "button", class: "act", title: `Rename “${c.name}” or choose its documents`, "aria-label": `Edit collection ${c.name}`, onclick: () => editCollection(c) }, "Edit"),
      el("button", { type: "button", title: "Delete the collection (its documents stay indexed)", "aria-label": `Delete collection ${c.name}`, onclick: () => removeCollection(c) }, "×")));
  }
  if (!state.collections.length) ul.append(el("li", { class: "meta" }, "Group documents to ask only them."));
  fillPicker();
}

/** The picker's options, keeping the choice (or the saved one) where it still exists. */
function fillPicker() {
  const sel = $("scope");
  const keep = sel.value || localStorage.getItem(KEY) || "all";
  clear(sel).append(el("option", { value: "all" }, "All documents"));
  if (state.collections.length) {
    sel.append(el("optgroup", { label: "Collections" },
      state.collections.map((c) => el("option", { value: `c:${c.id}` }, c.name))));
  }
  sel.append(el("option", { value: "docs" }, "Chosen documents…"));
  sel.value = [...sel.options].some((o) => o.value === keep) && (keep !== "docs" || state.chosen.length) ? keep : "all";
  showSummary();
}

function pick(value) {
  $("scope").value = value;
  remember();
  showSummary();
  $("question").focus();
}

function remember() {
  localStorage.setItem(KEY, $("scope").value);
  localStorage.setItem(DOCS_KEY, JSON.stringify(state.chosen));
}

/** What the picker's choice covers, beside it. */
function showSummary() {
  const v = $("scope").value;
  const out = $("scope-summary");
  $("scope-choose").hidden = v !== "docs";
  $("composer").classList.toggle("scoped", v !== "all");
  if (v === "docs") {
    out.textContent = names(state.chosen, "none chosen");
  } else if (v.startsWith("c:")) {
    const c = state.collections.find((x) => `c:${x.id}` === v);
    out.textContent = names(c?.documents || [], "no documents yet");
  } else {
    out.textContent = `${state.indexed.toLocaleString("en-US")} document${state.indexed === 1 ? "" : "s"}`;
  }
}

/** The names of documents `ids` when all were listed so far (a few), else how many. */
function names(ids, none) {
  if (!ids.length) return none;
  const known = ids.map((id) => shared.names.get(id));
  if (ids.length <= 5 && known.every(Boolean)) return known.join(", ");
  return `${ids.length} document${ids.length === 1 ? "" : "s"}`;
}

/** The documents checked in the dialog, and its virtual list (made once). */
let picked = new Set();
let picker = null;
function documentPicker() {
  if (picker) return picker;
  const search = $("collection-search");
  const err = $("collection-error");
  picker = virtualList({
    scroller: $("collection-scroll"),
    list: $("collection-docs"),
    rowHeight: ROW,
    fetchPage: (offset, limit) => transport.library({ search: search.value.trim(), filter: "done", sort: "name", offset, limit })
      .then((p) => { for (const d of p.items) shared.names.set(d.id, d.file_name); return p; }),
    renderRow: (d) => el("li", {}, el("label", { class: "check" },
      el("input", { type: "checkbox", value: d.id, checked: picked.has(d.id), onchange: (e) => { if (e.target.checked) picked.add(d.id); else picked.delete(d.id); } }),
      ` ${d.title || d.file_name}`, el("span", { class: "meta" }, ` ${d.file_name}`))),
    empty: () => el("li", { class: "meta" }, search.value.trim() ? "Nothing matches." : "No indexed documents yet: add PDFs first."),
    onError: (e) => { err.textContent = e.message; err.hidden = false; },
  });
  search.addEventListener("input", () => picker.reset());
  return picker;
}

/** The dialog: a name (for a collection) and the documents, checked. Resolves with
 *  { name, ids } or null when cancelled. */
function docDialog({ title, name, ids, withName, onSave }) {
  const dlg = $("collection-dialog");
  $("collection-title").textContent = title;
  const nameField = $("collection-name");
  const err = $("collection-error");
  nameField.value = name || "";
  $("collection-name-row").hidden = !withName;
  picked = new Set(ids);
  $("collection-search").value = "";
  const list = $("collection-docs");
  const picker = documentPicker();
  err.hidden = true;
  const save = $("collection-save");
  const cancel = $("collection-cancel");
  const done = () => {
    save.onclick = null;
    cancel.onclick = null;
    dlg.close();
  };
  save.onclick = async () => {
    try {
      await onSave({ name: nameField.value, ids: [...picked] });
      done();
    } catch (e) {
      err.textContent = e.message;
      err.hidden = false;
    }
  };
  cancel.onclick = () => done();
  dlg.showModal();
  picker.reset().then(() => { if (!withName) (list.querySelector("input") || $("collection-search")).focus(); });
  if (withName) nameField.focus();
}

function chooseDocuments() {
  docDialog({
    title: "Ask only these documents",
    ids: state.chosen,
    withName: false,
    onSave: async ({ ids }) => {
      if (!ids.length) throw new Error("Choose at least one document (or pick “All documents”).");
      state.chosen = ids;
      pick("docs");
    },
  });
  // Cancelling with nothing chosen leaves the picker on what it was before.
  $("collection-dialog").addEventListener("close", () => {
    if ($("scope").value === "docs" && !state.chosen.length) pick("all");
  }, { once: true });
}

function editCollection(c) {
  docDialog({
    title: c ? `Collection “${c.name}”` : "New collection",
    name: c ? c.name : "",
    ids: c ? c.documents : [],
    withName: true,
    onSave: async ({ name, ids }) => {
      const saved = c
        ? await transport.updateCollection(c.id, { name, documents: ids })
        : await transport.createCollection(name, ids);
      await loadCollections();
      if (!c) pick(`c:${saved.id}`);
    },
  });
}

async function removeCollection(c) {
  if (!confirm(`Delete the collection “${c.name}”? Its documents stay indexed.`)) return;
  try { await transport.removeCollection(c.id); } catch (e) { state.onError(e.message); }
  if ($("scope").value === `c:${c.id}`) pick("all");
  await loadCollections();
}
