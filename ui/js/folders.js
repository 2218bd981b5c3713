// Watched folders in the sidebar: each folder with its document count (and a mark
// when it is missing, e.g. an unmounted disk), Rescan and Stop watching; "Add folder"
// beside "Add PDFs" (the native folder picker in the window, a path field in the
// browser, since the server runs on this machine). The engine indexes a folder in the
// background and keeps it in step; the queue shows the progress, and the list is read
// again every few seconds so that the watcher's changes show.
import { transport } from "./transport.js";
import { el, clear } from "./dom.js";
import { banner } from "./banner.js";
import { loadDocuments } from "./documents.js";
import { refresh as refreshQueue } from "./queue.js";

const $ = (id) => document.getElementById(id);

/** What the list showed last, to notice a change the watcher made. */
let shown = "";

function render(folders) {
  const ul = clear($("folders"));
  ul.hidden = !folders.length;
  for (const f of folders) {
    const missing = !f.available;
    const where = f.collection_name ? ` — collection “${f.collection_name}”` : "";
    ul.append(el("li", { class: missing ? "folder missing" : "folder", title: `${f.path}${where}${missing ? " — missing: its documents are kept, unavailable" : ""}` },
      el("span", { class: "folder-icon", "aria-hidden": "true" }, "▸"),
      el("span", { class: "name" }, f.path.split(/[\\/]/).filter(Boolean).pop() || f.path),
      el("span", { class: "meta" }, missing ? "missing" : `${f.documents} doc${f.documents === 1 ? "" : "s"}`),
      el("button", { type: "button", title: "Look for changes now", "aria-label": `Rescan ${f.path}`, onclick: () => rescan(f) }, "↻"),
      el("button", { type: "button", title: "Stop watching (its documents leave the index)", "aria-label": `Stop watching ${f.path}`, onclick: () => remove(f) }, "×")));
  }
}

/** Read the folders again; the documents list too when they changed. */
export async function loadFolders() {
  let folders;
  try {
    folders = await transport.folders();
  } catch (e) {
    banner(`Could not list watched folders: ${e.message}`);
    return;
  }
  const now = JSON.stringify(folders.map((f) => [f.id, f.available, f.documents, f.synced_at]));
  const changed = now !== shown;
  shown = now;
  render(folders);
  if (changed) { loadDocuments(); refreshQueue(); }
}

async function add(path, collection) {
  try {
    await transport.addFolder(path, collection || null);
  } catch (e) {
    banner(`Could not watch the folder: ${e.message}`);
    return false;
  }
  await loadFolders();
  setTimeout(refreshQueue, 800);
  return true;
}

async function rescan(f) {
  try { await transport.rescanFolder(f.id); } catch (e) { banner(e.message); }
  setTimeout(loadFolders, 800);
}

async function remove(f) {
  if (!confirm(`Stop watching “${f.path}”? Its ${f.documents} document(s) leave the index.`)) return;
  try { await transport.removeFolder(f.id, false); } catch (e) { banner(e.message); }
  loadFolders();
}

/** The browser's form: a path on the server's machine, and an optional collection. */
function folderForm() {
  const path = el("input", { type: "text", placeholder: "/path/to/a/folder of PDFs", "aria-label": "Folder to watch", required: true });
  const coll = el("input", { type: "text", placeholder: "Collection (optional)", "aria-label": "Collection for the folder's documents" });
  const form = el("form", { class: "folder-form", hidden: true },
    path, coll,
    el("div", { class: "folder-form-buttons" },
      el("button", { type: "submit", class: "primary" }, "Watch"),
      el("button", { type: "button", onclick: () => { form.hidden = true; } }, "Cancel")));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (await add(path.value.trim(), coll.value.trim())) { form.hidden = true; path.value = ""; coll.value = ""; }
  });
  $("folders").before(form);
  return form;
}

/** Wire "Add folder" and start reading the list. */
export function initFolders() {
  const form = transport.pickFolder ? null : folderForm();
  $("add-folder").addEventListener("click", async () => {
    if (transport.pickFolder) {
      const path = await transport.pickFolder();
      if (path) add(path, null);
    } else {
      form.hidden = !form.hidden;
      if (!form.hidden) form.querySelector("input").focus();
    }
  });
  loadFolders();
  setInterval(() => { if (!document.hidden) loadFolders(); }, 4000);
}
