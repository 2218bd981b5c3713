// Asking: the composer sends a question and the answer streams into a new message
// (its events: sources, citations, quotes, steps, prompts, tokens, support, done);
// Stop and Esc cancel it; Ask again asks the last question again beside its answers;
// an edited question is asked anew, replacing it and all after it.
import { transport } from "./transport.js";
import { el } from "./dom.js";
import { closeViewer, isOpen as viewerOpen } from "./viewer.js";
import { scopeRequest } from "./scope.js";
import { showCall } from "./synthesis.js";
import { state } from "./state.js";
import { banner } from "./banner.js";
import { userMessage, assistantMessage, setAnswerId, scrollToEnd, questionOf } from "./messages.js";
import { showScope, setSearchedFor, renderAnswer, showSupport, showQuotes, flush, stepView } from "./answer.js";
import { statsLine } from "./stats.js";
import { showSources } from "./sources.js";
import { showRoute, showReading } from "./route.js";
import { loadConversations, syncIds } from "./conversations.js";

const $ = (id) => document.getElementById(id);

/** Wire the composer, the Stop button and Esc. */
export function initAsking() {
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
}

function setRunning(r) {
  state.running = r;
  $("send").hidden = !!r;
  $("stop").hidden = !r;
  $("messages").setAttribute("aria-busy", r ? "true" : "false");
}

/** Ask `question`; `regenerate` (the question's message id) asks the last question
 *  again beside its answers, `replaceFrom` replaces that question and what follows. */
async function ask(question, { regenerate, replaceFrom, route } = {}) {
  if (state.running || !question.trim()) return;
  banner("");
  const mode = $("mode").value;
  const qNode = regenerate ? null : userMessage(question);
  const view = assistantMessage(mode);
  view.query = question;
  let answer = "";
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
      case "queries":
        view.queries = ev.queries;
        if (view.searchedFor) setSearchedFor(view, view.searchedFor, ev.queries);
        break;
      case "route": showRoute(view, ev.route); break;
      case "reading": showReading(view, ev); break;
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
    route: route || "auto",
  };
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
    if (view.route) showRoute(view, view.route);
    syncIds();
    view.root.addEventListener("click", (e) => { if (!e.target.closest("button.cite")) showSources(view); });
    setRunning(null);
    loadConversations();
  }
}

function stop() {
  if (state.running) state.running.cancel();
}

/** Ask the last question again, in the toolbar's mode, beside its answers (`route`:
 *  whole documents or search, from the answer's toggle). */
export function askAgain(view, route) {
  const q = questionOf(view.root);
  if (!q || state.running) return;
  if (q.nextElementSibling !== $("messages").lastElementChild) {
    banner("Only the last question can be asked again: edit an earlier one to ask it anew.");
    return;
  }
  state.group = q.nextElementSibling;
  ask(q.querySelector(".body").textContent, { regenerate: Number(q.dataset.messageId), route });
}

/** Edit a question in place; saving asks it anew, replacing it and all after it. */
export function editQuestion(m) {
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
