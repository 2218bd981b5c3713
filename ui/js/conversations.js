// The kept conversations: the sidebar's list, opening one (its questions and answers
// as they were shown), deleting one or one of its messages, the ids of the messages on
// screen, and the export as Markdown.
import { transport } from "./transport.js";
import { el, clear, langOf } from "./dom.js";
import { state } from "./state.js";
import { banner } from "./banner.js";
import { userMessage, reopenedAnswer } from "./messages.js";
import { showSources } from "./sources.js";
import { showWelcome } from "./welcome.js";

const $ = (id) => document.getElementById(id);

/** Wire the sidebar's + New and the toolbar's export button. */
export function initConversations() {
  $("new-chat").addEventListener("click", () => openConversation(null));
  $("export-btn").addEventListener("click", exportConversation);
}

export async function loadConversations() {
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

export async function openConversation(id) {
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

async function removeConversation(id) {
  try { await transport.removeConversation(id); } catch (e) { banner(e.message); }
  if (id === state.conversationId) openConversation(null);
  else loadConversations();
}

export async function deleteMessage(node) {
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
export async function syncIds() {
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
