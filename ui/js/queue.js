// The indexing queue: every file a batch will index, kept by the engine across
// restarts. Shown above the documents while files wait or run: a head with how many,
// the time left and Cancel all, over a virtual list (./vlist.js) of the waiting and
// running files, a page at a time, each with its progress, its time left and a Cancel
// button. It polls the engine while anything is pending (a batch the engine resumed at
// start included) and says when the queue empties, so the documents list can be
// reloaded.
import { transport } from "./transport.js";
import { el, clear } from "./dom.js";
import { virtualList } from "./vlist.js";

const ROW = 30;
let box = null;
let head = null;
let list = null;
let timer = null;
let onEmpty = () => {};
let lastPending = 0;

function fileName(p) {
  return String(p).split(/[\\/]/).pop() || p;
}

function secs(s) {
  if (s == null || !isFinite(s)) return "";
  s = Math.max(0, Math.round(s));
  return s >= 60 ? `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s` : `${s} s`;
}

async function cancel(id) {
  try {
    await transport.cancelQueued(id);
  } catch (_) { /* the next poll shows what happened */ }
  refresh();
}

function renderRow(r) {
  const bar = el("progress", { max: 1 });
  bar.value = r.state === "running" ? r.progress : 0;
  const what = r.state === "running"
    ? `${Math.round(r.progress * 100)}%${r.eta_secs != null ? `, ${secs(r.eta_secs)} left` : ""}`
    : "waiting";
  return el("li", { class: "queue-item", "data-state": r.state, title: r.path },
    el("span", { class: "name" }, fileName(r.path)),
    bar,
    el("span", { class: "meta" }, what),
    el("button", { class: "queue-cancel", title: `Cancel ${fileName(r.path)}`, onclick: () => cancel(r.id) }, "Cancel"));
}

/** The head: how many files, the time left, Cancel all. */
function showHead(q) {
  box.hidden = q.total === 0;
  const eta = (q.eta_secs != null ? `, about ${secs(q.eta_secs)} left` : "")
    + (q.paused_for_question ? " (paused: answering your question first)" : "");
  clear(head).append(
    el("span", { class: "meta" }, `Indexing queue: ${q.total.toLocaleString("en-US")} file${q.total === 1 ? "" : "s"}${eta}`),
    el("button", { class: "queue-cancel-all", title: "Cancel every queued file", onclick: () => cancel(null) }, "Cancel all"));
}

/** Read the queue now, and again in a second while anything is pending. */
export async function refresh() {
  if (!box || !transport.queuePage) return;
  clearTimeout(timer);
  await list.reset();
  const pending = list.total();
  if (pending > 0) timer = setTimeout(refresh, 1000);
  else if (lastPending > 0) onEmpty();
  lastPending = pending;
}

/** Show the queue above `anchor` (an element of the documents section); `empty` is
 *  called when a pending queue empties. */
export function initQueue(anchor, { empty } = {}) {
  if (!anchor) return;
  onEmpty = empty || onEmpty;
  head = el("div", { class: "section-head queue-head" });
  const ul = el("ul", { class: "list progress", "aria-label": "Indexing queue" });
  const scroller = el("div", { class: "vscroll queue-scroll" }, ul);
  box = el("div", { id: "queue", class: "queue", hidden: true }, head, scroller);
  anchor.before(box);
  list = virtualList({
    scroller,
    list: ul,
    rowHeight: ROW,
    fetchPage: (offset, limit) => transport.queuePage(offset, limit).then((q) => { showHead(q); return q; }),
    renderRow,
    empty: () => null,
  });
  refresh();
}
