// The empty conversation's welcome: what to do first (add PDFs, or ask about them) and
// what the response modes do; or, while a model file is missing, the first-run card
// (./firstrun.js) in its place.
import { el } from "./dom.js";
import { modelsCard } from "./firstrun.js";
import { modeList } from "./synthesis.js";
import { state } from "./state.js";
import { checkStatus } from "./status.js";

const $ = (id) => document.getElementById(id);

/** An empty conversation's welcome: what to do first, and what the modes do. */
export function showWelcome() {
  const box = $("messages");
  box.querySelector(".welcome")?.remove();
  if (box.querySelector(".msg")) return;
  const first = modelsCard(state.status, async () => { await checkStatus(); showWelcome(); });
  if (first) { box.append(first); return; }
  const n = state.summary?.indexed || 0;
  box.append(el("section", { class: "welcome", "aria-label": "Getting started" },
    el("h2", {}, n ? `Ask about your ${n} document${n === 1 ? "" : "s"}` : "Start by adding your PDFs"),
    n
      ? el("p", {}, "Type a question below. Each answer lists its sources; click one to see the passage on its page.")
      : el("p", {}, "Drop PDFs anywhere on this window, or ",
        el("button", { type: "button", class: "primary", onclick: () => $("add-files").click() }, "Add PDFs"),
        ". They are read, split and indexed on this computer; nothing leaves it."),
    el("h3", {}, "Response modes (the Mode menu above)"),
    el("dl", {}, modeList().flatMap((m) => [el("dt", {}, m.name), el("dd", {}, m.description)]))));
}
