// The banner above the chat: one message (what is missing, what failed) and at most
// one button to fix it. Text only, through ./dom.js.
import { el, clear } from "./dom.js";

const $ = (id) => document.getElementById(id);

/** Show `text` (hide the banner when empty), with `action` ({ label, run }) as a button. */
export function banner(text, action) {
  const b = clear($("banner"));
  b.hidden = !text;
  if (!text) return;
  b.append(document.createTextNode(text));
  if (action) b.append(el("button", { onclick: action.run }, action.label));
}
