// Keyboard shortcuts, and the dialog that lists them (`?`, Ctrl+/ or the toolbar's ?
// button). The table below is both what the dialog shows and what the handler runs;
// rows without `run` are handled where they belong (the composer, the viewer, asking.js's
// Esc) and are listed here so that every working shortcut is in one place.
import { el, clear } from "./dom.js";

const $ = (id) => document.getElementById(id);
const mac = /Mac|iPhone|iPad/i.test(navigator.userAgentData?.platform || navigator.platform || "");
const MOD = mac ? "⌘" : "Ctrl";
/** The platform's command modifier (⌘ on a Mac, Ctrl elsewhere), without Alt. */
const mod = (e) => (mac ? e.metaKey : e.ctrlKey) && !e.altKey;
/** No modifier but Shift (which `?` needs on most layouts). */
const plain = (e) => !e.ctrlKey && !e.metaKey && !e.altKey;

// Single-character shortcuts can be switched off in the dialog (WCAG 2.1.4): speech
// input, or a stray key, should not fire them.
const SINGLE = "quire-single-key-shortcuts";
const singleKeysOn = () => localStorage.getItem(SINGLE) !== "off";

/** Whether a key typed at `t` types text there. */
function typing(t) {
  if (!(t instanceof Element)) return false;
  if (t.isContentEditable || t.matches("textarea, select")) return true;
  return t.matches("input") && !/^(checkbox|radio|button|submit|reset|range|color|file|image)$/i.test(t.type);
}

/** Click toolbar button `id` if it can be used now. */
function press(id) {
  const b = $(id);
  if (b && !b.hidden && !b.disabled) b.click();
}

function focusQuestion() {
  const q = $("question");
  q.focus();
  q.setSelectionRange(q.value.length, q.value.length);
}

const SHORTCUTS = [
  ["Anywhere", [
    { keys: [["?"], [MOD, "/"]], what: "Show these keyboard shortcuts",
      when: (e) => (e.key === "?" && plain(e) && e.single) || (e.key === "/" && mod(e) && !e.shiftKey), run: () => openShortcuts() },
    { keys: [["/"]], what: "Go to the question box", when: (e) => e.key === "/" && plain(e) && e.single, run: focusQuestion },
    { keys: [[MOD, "Shift", "O"]], what: "New conversation", when: (e) => mod(e) && e.shiftKey && e.key.toLowerCase() === "o", run: () => press("new-chat") },
    { keys: [[MOD, ","]], what: "Open the settings", when: (e) => mod(e) && !e.shiftKey && e.key === ",", run: () => press("settings-btn") },
    { keys: [[MOD, "Shift", "L"]], what: "Switch between the light and the dark theme", when: (e) => mod(e) && e.shiftKey && e.key.toLowerCase() === "l", run: () => press("theme-btn") },
    { keys: [["Tab"], ["Shift", "Tab"]], what: "Go to the next / previous control" },
    { keys: [["Esc"]], what: "Stop the answer being written; or close the document viewer, or a dialog" },
  ]],
  ["Question box", [
    { keys: [["Enter"]], what: "Send the question" },
    { keys: [["Shift", "Enter"]], what: "New line" },
  ]],
  ["Editing a question", [
    { keys: [["Enter"]], what: "Ask the edited question" },
    { keys: [["Esc"]], what: "Cancel the edit" },
  ]],
  ["Document viewer", [
    { keys: [["Page Down"], ["→"]], what: "Next page (focus in the viewer, not in a field)" },
    { keys: [["Page Up"], ["←"]], what: "Previous page" },
    { keys: [["Enter"], ["Shift", "Enter"]], what: "In Find: next / previous match" },
    { keys: [["Esc"]], what: "Close the viewer" },
  ]],
];

/** One way to press a shortcut: <kbd>Ctrl</kbd>+<kbd>/</kbd>. */
function combo(keys) {
  const out = [];
  keys.forEach((k, i) => { if (i) out.push("+"); out.push(el("kbd", {}, k)); });
  return out;
}

function fillDialog() {
  const list = clear($("shortcuts-list"));
  for (const [group, rows] of SHORTCUTS) {
    list.append(el("table", { class: "keys-table" },
      el("caption", {}, group),
      el("tbody", {}, rows.map((r) => el("tr", {},
        el("th", { scope: "row" }, r.keys.flatMap((k, i) => [i ? el("span", { class: "or" }, " or ") : null, ...combo(k)])),
        el("td", {}, r.what))))));
  }
}

let returnTo = null;
/** Open the shortcuts dialog; closing it puts the focus back where it was. */
export function openShortcuts() {
  const d = $("shortcuts");
  if (d.open) return;
  returnTo = document.activeElement;
  d.showModal();
}

function init() {
  const d = $("shortcuts");
  fillDialog();
  const single = $("single-keys");
  single.checked = singleKeysOn();
  single.addEventListener("change", () => localStorage.setItem(SINGLE, single.checked ? "on" : "off"));
  $("shortcuts-btn").addEventListener("click", openShortcuts);
  // The close event comes a task after the dialog closed: a key pressed in between (Esc
  // then `/` at once) may already have moved the focus, and it is not taken back.
  d.addEventListener("close", () => {
    const t = returnTo;
    returnTo = null;
    const now = document.activeElement;
    const moved = now && now !== document.body && !d.contains(now);
    if (!moved && t && t.isConnected && t !== document.body) t.focus();
  });
  // Esc here closes this dialog only: it must not also stop an answer (asking.js's Esc).
  d.addEventListener("keydown", (e) => { if (e.key === "Escape") e.stopPropagation(); });

  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.isComposing || document.querySelector("dialog[open]")) return;
    const ev = { key: e.key, ctrlKey: e.ctrlKey, metaKey: e.metaKey, altKey: e.altKey, shiftKey: e.shiftKey,
      single: singleKeysOn() && !typing(e.target) };
    for (const [, rows] of SHORTCUTS) {
      const r = rows.find((x) => x.run && x.when(ev));
      if (r) {
        e.preventDefault();
        r.run();
        return;
      }
    }
  });
}

init();
