// The indexing queue: every file a batch will index, kept by the engine across
// restarts. Shown above the documents while files wait or run, each with its
// progress, its time left and a Cancel button, and a Cancel all for the batch. It
// polls the engine while anything is pending (a batch the engine resumed at start
// included) and says when the queue empties, so the documents list can be reloaded.
import { transport } from "./transport.js";
import { el, clear } from "./dom.js";

let box = null;
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

function render(q) {
  clear(box);
  const live = q.items.filter((r) => r.state === "queued" || r.state === "running");
  box.hidden = live.length === 0;
  if (!live.length) return;
  const eta = (q.eta_secs != null ? `, about ${secs(q.eta_secs)} left` : "")
    + (q.paused_for_question ? " (paused: answering your question first)" : "");
  box.append(el("div", { class: "section-head queue-head" },
    el("span", { class: "meta" }, `Indexing queue: ${live.length} file${live.length === 1 ? "" : "s"}${eta}`),
    el("button", { class: "queue-cancel-all", title: "Cancel every queued file", onclick: () => cancel(null) }, "Cancel all")));
  const ul = el("ul", { class: "list progress" });
  for (const r of live) {
    const bar = el("progress", { max: 1 });
    bar.value = r.state === "running" ? r.progress : 0;
    const what = r.state === "running"
      ? `${Math.round(r.progress * 100)}%${r.eta_secs != null ? `, ${secs(r.eta_secs)} left` : ""}`
      : "waiting";
    ul.append(el("li", { class: "queue-item", "data-state": r.state, title: r.path },
      el("span", { class: "name" }, fileName(r.path)),
      bar,
      el("span", { class: "meta" }, what),
      el("button", { class: "queue-cancel", title: `Cancel ${fileName(r.path)}`, onclick: () => cancel(r.id) }, "Cancel")));
  }
  box.append(ul);
}

/** Read the queue now, and again in a second while anything is pending. */
export async function refresh() {
  if (!box || !transport.queue) return;
  clearTimeout(timer);
  let q;
  try {
    q = await transport.queue();
  } catch (_) {
    return;
  }
  render(q);
  if (q.pending > 0) timer = setTimeout(refresh, 1000);
  else if (lastPending > 0) onEmpty();
  lastPending = q.pending;
}

/** Show the queue above `anchor` (an element of the documents section); `empty` is
 *  called when a pending queue empties. */
export function initQueue(anchor, { empty } = {}) {
  if (!anchor) return;
  onEmpty = empty || onEmpty;
  box = el("div", { id: "queue", class: "queue", hidden: true });
  anchor.before(box);
  refresh();
}
