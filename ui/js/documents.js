// The documents list in the sidebar: each indexed document (click to open it in the
// viewer), failed ones with their reason, and removing one from the index. What follows
// a change of the list (the welcome, the scope picker) is given by the entry through
// initDocuments.
import { transport } from "./transport.js";
import { el, clear } from "./dom.js";
import { openDocument, closeViewer, shownDocument } from "./viewer.js";
import { state } from "./state.js";
import { banner } from "./banner.js";

const $ = (id) => document.getElementById(id);

let changed = () => {};

/** `onChange(docs)` runs each time the list is read again. */
export function initDocuments({ onChange }) {
  changed = onChange;
}

/** Read the documents list again and show it. */
export async function loadDocuments() {
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
    ul.append(el("li", { class: failed ? "failed" : d.unavailable ? "unavailable" : "", title: failed ? d.error : d.unavailable ? `${d.path} — its folder is missing (still searched)` : `${d.path} — click to open`, dataset: { docId: d.id } },
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
  changed(state.docs);
}

async function removeDocument(d) {
  if (!confirm(`Remove “${d.title || d.path}” from the index?`)) return;
  try { await transport.removeDocument(d.id); } catch (e) { banner(e.message); }
  if (shownDocument() === d.id) closeViewer();
  loadDocuments();
}
