// The in-app PDF viewer: a pane beside the chat that opens a document at a page, with
// the cited passage highlighted on the page's text layer, page navigation, zoom and
// search. PDF.js renders it, shipped with the UI (ui/vendor/pdfjs/), loaded on first
// use, never from the network. Nothing in a PDF runs: no scripting (Quire never loads
// PDF.js's sandbox), no annotation layer (links and actions are not clickable), no XFA
// forms, and the page's text is put in spans as text by PDF.js's TextLayer.
import { el, clear } from "./dom.js";
import { normalize, pageText, locate, findAll, itemRanges, passageText } from "./locate.js";
import { transport } from "./transport.js";

const $ = (id) => document.getElementById(id);
const PDFJS = new URL("../vendor/pdfjs/", import.meta.url).href;
const ZOOMS = [0.5, 0.67, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3];

let lib = null;
/** PDF.js, imported the first time a document is opened. */
async function pdfjs() {
  if (!lib) {
    lib = await import(`${PDFJS}pdf.min.mjs`);
    lib.GlobalWorkerOptions.workerSrc = `${PDFJS}pdf.worker.min.mjs`;
  }
  return lib;
}

const V = {
  docId: null, doc: null, loading: null, name: "",
  page: 1, zoom: null, // null: fit the pane's width
  target: null, // { text, pageStart, pageEnd }: the passage to highlight
  search: null, // { needle }: the search term in normal form
  texts: new Map(), // page number -> { items, page }
  seq: 0, tasks: [], // PDF.js render tasks and text layers in flight (to cancel)
  opened: 0, // performance.now() when the last open began (for timing)
};

/** The id of the document shown, if any. */
export function shownDocument() {
  return isOpen() ? V.docId : null;
}

export function isOpen() {
  return !$("viewer").hidden;
}

/** Open document `docId` (named `name`) at `page`; `passage` (text, the pages it runs
 *  over) is highlighted where it is found. */
export async function openDocument({ docId, name, page = 1, pageEnd, passage }) {
  V.opened = performance.now();
  const pane = $("viewer");
  pane.hidden = false;
  $("app").classList.add("viewing");
  $("viewer-title").textContent = name || "";
  $("viewer-title").title = name || "";
  V.target = passage ? { text: passageText(passage), pageStart: page, pageEnd: pageEnd || page } : null;
  V.page = page;
  const seq = ++V.seq;
  if (V.docId !== docId || !V.doc) {
    clear($("viewer-pages"));
    await closeDoc();
    V.docId = docId;
    V.name = name || "";
    status("Opening…");
    try {
      V.loading = load(docId);
      V.doc = await V.loading;
    } catch (e) {
      if (seq === V.seq) showError(e);
      V.docId = null;
      return;
    } finally {
      V.loading = null;
    }
    if (seq !== V.seq) return;
  }
  await render(page);
}

async function load(docId) {
  const pdf = await pdfjs();
  const source = await transport.documentSource(docId);
  const task = pdf.getDocument({
    ...source,
    cMapUrl: `${PDFJS}cmaps/`,
    cMapPacked: true,
    standardFontDataUrl: `${PDFJS}standard_fonts/`,
    wasmUrl: `${PDFJS}wasm/`,
    // No WebAssembly (its JavaScript decoders are shipped instead), no eval (PDF.js 6
    // has none; kept false for older builds), no XFA forms, no fonts from the system
    // that a PDF names (rendering stays the same on every machine).
    useWasm: false,
    isEvalSupported: false,
    enableXfa: false,
    useSystemFonts: false,
    // Fetch only the ranges the pages shown need (a 1,000-page file opens at its end).
    disableAutoFetch: true,
  });
  V.task = task;
  return task.promise;
}

async function closeDoc() {
  for (const t of V.tasks) t.cancel();
  V.tasks = [];
  const doc = V.doc;
  const task = V.task;
  V.doc = null;
  V.task = null;
  V.texts.clear();
  V.search = null;
  $("viewer-search").value = "";
  if (task) await task.destroy().catch(() => {});
  else if (doc) await doc.destroy().catch(() => {});
}

/** Close the pane. */
export async function closeViewer() {
  $("viewer").hidden = true;
  $("app").classList.remove("viewing");
  V.seq++;
  await closeDoc();
  V.docId = null;
  clear($("viewer-pages"));
}

function status(text) {
  $("viewer-status").textContent = text || "";
}

function showError(e) {
  const box = clear($("viewer-pages"));
  box.append(el("div", { class: "viewer-error", role: "alert" }, `Cannot show this document: ${e.message || e}`));
  status("");
  $("viewer-page").value = "";
  $("viewer-count").textContent = "";
}

/** The text items of page `n`, and their normal form. */
async function textOf(n) {
  let t = V.texts.get(n);
  if (!t) {
    const page = await V.doc.getPage(n);
    const content = await page.getTextContent();
    const items = content.items.filter((i) => i.str !== undefined).map((i) => i.str);
    t = { content, items, page: pageText(items) };
    V.texts.set(n, t);
  }
  return t;
}

/** Render page `n` into the pane (with the pages after it that the passage runs
 *  onto, when it starts on `n`): the canvas, the text layer over it, the passage and
 *  the search term marked, the first mark scrolled into view. */
async function render(n) {
  const doc = V.doc;
  if (!doc) return;
  n = Math.min(Math.max(1, n | 0), doc.numPages);
  V.page = n;
  const seq = ++V.seq;
  $("viewer-page").value = String(n);
  $("viewer-count").textContent = `of ${doc.numPages}`;
  $("viewer-prev").disabled = n <= 1;
  $("viewer-next").disabled = n >= doc.numPages;
  for (const t of V.tasks) t.cancel();
  V.tasks = [];
  // What is on screen is stale until this render is done.
  for (const old of $("viewer-pages").querySelectorAll("[data-rendered]")) delete old.dataset.rendered;
  const tg = V.target;
  const last = tg && n === tg.pageStart ? Math.min(tg.pageEnd, n + 2, doc.numPages) : n;
  try {
    const pdf = await pdfjs();
    const box = $("viewer-scroll");
    const drawn = [];
    for (let p = n; p <= last; p++) {
      const page = await doc.getPage(p);
      const t = await textOf(p);
      if (seq !== V.seq) return;
      drawn.push(draw(pdf, page, t, box));
    }
    clear($("viewer-pages")).append(...drawn.map((d) => d.sheet));
    await Promise.all(drawn.map((d) => d.done));
    if (seq !== V.seq) return;
    const notes = drawn.map((d, i) => mark(d.textLayer, d.t, n + i)).filter(Boolean);
    for (const d of drawn) d.sheet.dataset.rendered = "1";
    const first = $("viewer-pages").querySelector(".hl") || $("viewer-pages").querySelector(".found");
    if (first) first.scrollIntoView({ block: "center", inline: "nearest" });
    else box.scrollTop = 0;
    $("viewer").dataset.shownMs = String(Math.round(performance.now() - V.opened));
    status([...new Set(notes)].join(" · "));
  } catch (e) {
    if (e?.name === "RenderingCancelledException" || seq !== V.seq) return;
    showError(e);
  }
}

/** One page's sheet: a canvas drawn at the pane's zoom (sharp on high-density
 *  screens) and PDF.js's text layer over it; `done` settles when both are drawn. */
function draw(pdf, page, t, box) {
  const base = page.getViewport({ scale: 1 });
  const fit = Math.max(0.25, (box.clientWidth - 28) / base.width);
  const scale = V.zoom ?? fit;
  $("viewer-zoom").textContent = `${Math.round(scale * 100)}%`;
  const viewport = page.getViewport({ scale });
  const dpr = window.devicePixelRatio || 1;
  const canvas = el("canvas", { "aria-hidden": "true" });
  canvas.width = Math.floor(viewport.width * dpr);
  canvas.height = Math.floor(viewport.height * dpr);
  canvas.style.width = `${Math.floor(viewport.width)}px`;
  canvas.style.height = `${Math.floor(viewport.height)}px`;
  const layer = el("div", { class: "textLayer" });
  const sheet = el("div", { class: "pdf-page", dataset: { page: page.pageNumber } }, canvas, layer);
  sheet.style.setProperty("--scale-factor", String(scale));
  sheet.style.width = `${Math.floor(viewport.width)}px`;
  sheet.style.height = `${Math.floor(viewport.height)}px`;
  const task = page.render({
    canvas,
    viewport,
    transform: dpr !== 1 ? [dpr, 0, 0, dpr, 0, 0] : undefined,
    annotationMode: pdf.AnnotationMode.ENABLE,
  });
  const textLayer = new pdf.TextLayer({ textContentSource: t.content, container: layer, viewport });
  V.tasks.push(task, textLayer);
  return { sheet, textLayer, t, done: Promise.all([task.promise, textLayer.render()]) };
}

/** Mark the passage and the search term on the rendered text layer; what was marked,
 *  as the status line says it. */
function mark(textLayer, t, n) {
  const ranges = [];
  let note = "";
  const tg = V.target;
  if (tg && n >= tg.pageStart && n <= tg.pageEnd) {
    const needle = normalize(tg.text).text;
    const hit = locate(needle, t.page.text);
    if (hit) {
      ranges.push(...itemRanges(t.page, hit.start, hit.end, t.items).map((r) => ({ ...r, cls: "hl" })));
      note = "Passage highlighted";
    } else {
      note = "The passage's text was not found on this page's text layer";
    }
  }
  if (V.search) {
    const hits = findAll(V.search.needle, t.page.text);
    for (const [s, e] of hits) ranges.push(...itemRanges(t.page, s, e, t.items).map((r) => ({ ...r, cls: "found" })));
    const found = `${hits.length} match${hits.length === 1 ? "" : "es"} on this page`;
    note = note ? `${note} · ${found}` : found;
  }
  paint(textLayer.textDivs, textLayer.textContentItemsStr, ranges);
  return note;
}

/** Wrap the marked parts of each text span in <span class=…>, as text nodes. */
function paint(divs, strs, ranges) {
  const byItem = new Map();
  for (const r of ranges) {
    if (!byItem.has(r.item)) byItem.set(r.item, []);
    byItem.get(r.item).push(r);
  }
  for (const [k, rs] of byItem) {
    const div = divs[k];
    const s = strs[k];
    if (!div || s === undefined) continue;
    const cls = new Array(s.length).fill("");
    for (const r of rs) {
      for (let i = r.from; i < r.to && i < s.length; i++) {
        if (!cls[i].split(" ").includes(r.cls)) cls[i] = cls[i] ? `${cls[i]} ${r.cls}` : r.cls;
      }
    }
    clear(div);
    let i = 0;
    while (i < s.length) {
      let j = i + 1;
      while (j < s.length && cls[j] === cls[i]) j++;
      const part = s.slice(i, j);
      div.append(cls[i] ? el("span", { class: cls[i] }, part) : document.createTextNode(part));
      i = j;
    }
  }
}

/** Find the search term on the next page that has it, from the page shown
 *  (`from`: the first page to look at), wrapping at the end. */
async function find(dir = 1) {
  const q = $("viewer-search").value;
  const needle = normalize(q).text;
  if (!V.doc || !needle) { V.search = null; render(V.page); return; }
  const same = V.search?.needle === needle;
  V.search = { needle };
  const n = V.doc.numPages;
  const seq = V.seq;
  const first = same ? V.page + dir : V.page;
  for (let k = 0; k < n; k++) {
    const p = ((((first - 1 + dir * k) % n) + n) % n) + 1;
    if (k % 25 === 24) status(`Searching… page ${p} of ${n}`);
    const t = await textOf(p);
    if (seq !== V.seq) return;
    if (findAll(needle, t.page.text).length) {
      await render(p);
      return;
    }
  }
  status(`“${q}” is not in this document`);
}

// ---------- the pane's controls ----------
$("viewer-close").addEventListener("click", closeViewer);
$("viewer-prev").addEventListener("click", () => render(V.page - 1));
$("viewer-next").addEventListener("click", () => render(V.page + 1));
$("viewer-page").addEventListener("change", (e) => render(Number(e.target.value) || 1));
$("viewer-zoom-in").addEventListener("click", () => zoomBy(1));
$("viewer-zoom-out").addEventListener("click", () => zoomBy(-1));
$("viewer-fit").addEventListener("click", () => { V.zoom = null; render(V.page); });
$("viewer-search").addEventListener("keydown", (e) => {
  if (e.key === "Enter") { e.preventDefault(); find(e.shiftKey ? -1 : 1); }
});
$("viewer").addEventListener("keydown", (e) => {
  if (e.target.matches("input")) return;
  if (e.key === "PageDown" || e.key === "ArrowRight") { e.preventDefault(); render(V.page + 1); }
  if (e.key === "PageUp" || e.key === "ArrowLeft") { e.preventDefault(); render(V.page - 1); }
});

function zoomBy(step) {
  const now = V.zoom ?? Number.parseInt($("viewer-zoom").textContent, 10) / 100;
  const i = step > 0 ? ZOOMS.findIndex((z) => z > now + 0.01) : ZOOMS.findLastIndex((z) => z < now - 0.01);
  if (i < 0) return;
  V.zoom = ZOOMS[i];
  render(V.page);
}

// Resizing: drag the pane's left edge; the width is kept for the next session.
const app = $("app");
const savedWidth = Number(localStorage.getItem("quire-viewer-width"));
if (savedWidth) app.style.setProperty("--viewer-w", `${savedWidth}px`);
$("viewer-resize").addEventListener("pointerdown", (e) => {
  e.preventDefault();
  const handle = e.currentTarget;
  handle.setPointerCapture(e.pointerId);
  const right = $("viewer").getBoundingClientRect().right;
  let width = 0;
  const move = (ev) => {
    width = Math.round(Math.min(Math.max(right - ev.clientX, 320), window.innerWidth * 0.7));
    app.style.setProperty("--viewer-w", `${width}px`);
  };
  const up = () => {
    handle.removeEventListener("pointermove", move);
    handle.removeEventListener("pointerup", up);
    if (width) {
      localStorage.setItem("quire-viewer-width", String(width));
      if (V.zoom === null) render(V.page);
    }
  };
  handle.addEventListener("pointermove", move);
  handle.addEventListener("pointerup", up);
});
