// The banner above the chat: one message (what is missing, what failed) and at most
// one button to fix it; when there is none, the library's summary when files failed
// ("9,812 indexed, 140 queued, 48 failed: See why"). Text only, through ./dom.js.
import { el, clear } from "./dom.js";

const $ = (id) => document.getElementById(id);

let message = null; // { text, action } shown, or null
let summary = null; // the library's summary line, shown when there is no message

function show() {
  const b = clear($("banner"));
  const m = message || summary;
  b.hidden = !m;
  b.classList.toggle("summary", !message && !!summary);
  if (!m) return;
  b.append(document.createTextNode(m.text));
  if (m.action) b.append(el("button", { type: "button", onclick: m.action.run }, m.action.label));
}

/** Show `text` (hide the banner when empty), with `action` ({ label, run }) as a button. */
export function banner(text, action) {
  message = text ? { text, action } : null;
  show();
}

/** The library's summary, shown while no other message is (empty: none). */
export function summaryBanner(text, action) {
  summary = text ? { text, action } : null;
  show();
}
