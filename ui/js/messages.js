// The chat's messages: a question, then the group of its answers (asked again, maybe in
// another mode, the answers stand side by side); an answer's header with its actions;
// and an answer reopened from a kept conversation as it was shown. What the Edit,
// Delete and Ask again buttons do is given by the entry (./app.js) through
// initMessages, since asking and the kept conversation build on these messages.
import { el, langOf } from "./dom.js";
import { plainText, copyText } from "./markdown.js";
import { showCall } from "./synthesis.js";
import { state } from "./state.js";
import { showSources } from "./sources.js";
import { showRoute } from "./route.js";
import { showScope, setSearchedFor, renderAnswer, showSupport, stepView } from "./answer.js";
import { statsLine } from "./stats.js";

const $ = (id) => document.getElementById(id);

let handlers = { edit: () => {}, remove: () => {}, again: () => {} };

/** What a message's buttons do: `edit(questionNode)`, `remove(messageNode)`,
 *  `again(answerView)`. */
export function initMessages({ edit, remove, again }) {
  handlers = { edit, remove, again };
}

/** A question on screen, followed by the group its answers go in. */
export function userMessage(text, id) {
  $("messages").querySelector(".welcome")?.remove();
  const body = el("div", { class: "body", lang: langOf(text) }, text);
  const m = el("div", { class: "msg user", dataset: id ? { messageId: id } : {} },
    el("div", { class: "who" }, "You", el("span", { class: "actions" },
      el("button", { type: "button", class: "act", title: "Edit the question and ask it again", onclick: () => handlers.edit(m) }, "Edit"),
      el("button", { type: "button", class: "act", title: "Delete the question and its answers", onclick: () => handlers.remove(m) }, "Delete"))),
    body);
  const group = el("div", { class: "answers" });
  $("messages").append(m, group);
  state.group = group;
  scrollToEnd();
  return m;
}

/** Keep the newest text in view; only the message list scrolls, never the window. */
export function scrollToEnd() {
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
}

/** A new answer's message, in the last question's group: the `view` that ./answer.js
 *  draws the answer into. */
export function assistantMessage(mode) {
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
    el("button", { type: "button", class: "act again", title: "Ask the question again, in the mode chosen in the toolbar; the answers stand side by side", onclick: () => handlers.again(view) }, "Ask again"),
    el("button", { type: "button", class: "act", title: "Delete this answer", onclick: () => handlers.remove(root) }, "Delete"));
  return view;
}

export function setAnswerId(view, id) {
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
export function questionOf(root) {
  const group = root.closest(".answers");
  const q = group?.previousElementSibling;
  return q && q.classList.contains("user") ? q : null;
}

/** An answer as it was shown: its steps and prompts, what was searched for, its
 *  citations and sources. */
export function reopenedAnswer(m) {
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
  if (m.searched_for) setSearchedFor(view, m.searched_for, m.queries);
  if (m.route) showRoute(view, m.route);
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
