// Indexing: PDFs added with the button or dropped on the window (native paths in the
// desktop window, File objects in a browser) go to the engine, with a progress row per
// file under Documents (pages read, chunks embedded, done or why it failed) and the
// indexing queue (./queue.js) above them.
import { transport } from "./transport.js";
import { el } from "./dom.js";
import { initQueue, refresh as refreshQueue } from "./queue.js";
import { banner } from "./banner.js";
import { loadDocuments } from "./documents.js";

const $ = (id) => document.getElementById(id);

/** A file's progress row under Documents, made the first time it is named. */
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

/** Show an indexing (or re-embedding) event on its file's row. */
export function onIndexEvent(ev) {
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

/** Index files (File objects or native paths), then read the documents list again. */
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

/** Wire the queue, the Add PDFs button, the file input, and dropping files. */
export function initIndexing() {
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
}
