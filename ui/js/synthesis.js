// The synthesizer's knobs in the UI: the mode dropdown filled from the engine's list
// (LlamaIndex's built-in modes, Quire's own, registered and custom modes), the
// Settings dialog's templates (each shown with its default, with a reset) and its
// custom-mode editor (a mode composed from the built-in modes' building blocks), and a
// step's extra views in the inspector (what the model read after its chat template,
// token counts, the filter's verdict).
// Renders text only through ./dom.js.
import { el, clear } from "./dom.js";

const $ = (id) => document.getElementById(id);

/** The built-in modes, until the engine's list arrives (same names and words). */
let modes = [
  { name: "compact", description: "Packs as many chunks as fit into each call, then refines: fewer LLM calls (default).", kind: "builtin" },
  { name: "refine", description: "Answers from the first chunk, then refines the answer with each next chunk, one call each.", kind: "builtin" },
  { name: "tree_summarize", description: "Summarizes chunks in groups, then summarizes the summaries until one answer is left.", kind: "builtin" },
  { name: "simple_summarize", description: "Truncates all chunks to fit one prompt and answers in a single call.", kind: "builtin" },
  { name: "no_text", description: "Retrieves the sources only; no LLM call.", kind: "builtin" },
  { name: "accumulate", description: "Answers separately from each chunk and lists every answer.", kind: "builtin" },
  { name: "compact_accumulate", description: "Like accumulate, but packs chunks together first.", kind: "builtin" },
];

export function modeList() { return modes; }

/** Fill the mode dropdown from the engine's list, keeping the choice when it still exists. */
export function setModes(list, preferred) {
  if (Array.isArray(list) && list.length) modes = list;
  const sel = $("mode");
  const keep = sel.value || preferred;
  clear(sel);
  const groups = [["builtin", "LlamaIndex modes"], ["quire", "Quire's own"], ["library", "Registered"], ["custom", "Your modes"]];
  for (const [kind, label] of groups) {
    const of = modes.filter((m) => m.kind === kind);
    if (!of.length) continue;
    const parent = kind === "builtin" && groups.every(([k]) => k === "builtin" || !modes.some((m) => m.kind === k))
      ? sel : sel.appendChild(el("optgroup", { label }));
    for (const m of of) parent.append(el("option", { value: m.name, title: m.description }, m.name));
  }
  sel.value = modes.some((m) => m.name === keep) ? keep : (modes.some((m) => m.name === preferred) ? preferred : modes[0].name);
  showModeHelp();
}

export function showModeHelp() {
  const m = modes.find((x) => x.name === $("mode").value);
  $("mode-help").textContent = m ? m.description : "";
}

// ---------- templates ----------
export const TEMPLATES = [
  ["text_qa_template", "QA template", "{context_str} and {query_str}: the first call over a context (refine, compact, accumulate)."],
  ["refine_template", "Refine template", "{query_str}, {existing_answer} and {context_msg}: each later call of refine and compact."],
  ["summary_template", "Summary template", "{context_str} and {query_str}: every call of tree_summarize."],
  ["simple_template", "Simple template", "{context_str} and {query_str}: simple_summarize's one call (default: the QA template)."],
  ["query_gen_template", "Query-generation prompt", "{query} and {num_queries}: writes the query variants when Queries is above 1."],
];

/** The Templates section of the Settings dialog: each template shows its text, the
 *  default when none is set, with a reset. */
export function fillTemplates(box, settings) {
  clear(box);
  const defaults = settings.default_templates || {};
  box.append(el("p", { class: "field-info" }, "Each template may also use your own {variables} (given below). The text shown is LlamaIndex's default until you change it."));
  for (const [key, label, help] of TEMPLATES) {
    const value = settings[key] ?? (key === "simple_template" ? settings.text_qa_template : null) ?? defaults[key] ?? "";
    const area = el("textarea", { name: key, rows: 4, spellcheck: "false", "aria-describedby": `${key}-help` });
    area.value = value;
    const state = el("span", { class: "template-state" });
    const sync = () => {
      const custom = area.value.trim() !== (defaults[key] || "").trim();
      state.textContent = custom ? "custom" : "default";
      state.classList.toggle("custom", custom);
      reset.disabled = !custom;
    };
    const reset = el("button", { type: "button", class: "act", title: `Put LlamaIndex's default ${label.toLowerCase()} back`, onclick: () => { area.value = defaults[key] || ""; sync(); } }, "Reset");
    area.addEventListener("input", sync);
    box.append(el("div", { class: "template-field" },
      el("label", { for: `tpl-${key}` }, label, " ", state, reset),
      el("p", { id: `${key}-help`, class: "field-info" }, help)));
    area.id = `tpl-${key}`;
    box.lastChild.append(area);
    sync();
  }
}

/** The templates as settings: null where the text is the default. */
export function readTemplates(form, settings) {
  const defaults = settings.default_templates || {};
  const out = {};
  for (const [key] of TEMPLATES) {
    const v = form.elements[key]?.value ?? "";
    out[key] = !v.trim() || v.trim() === (defaults[key] || "").trim() ? null : v;
  }
  // simple_summarize uses the QA template unless it has one of its own.
  if (out.simple_template !== null && out.simple_template === (out.text_qa_template ?? null)) out.simple_template = null;
  return out;
}

// ---------- custom modes ----------
const PACK = [["separate", "each chunk on its own"], ["compact", "packed to fill the window"]];
const COMBINE = [["refine", "refine the answer chunk by chunk"], ["accumulate", "one answer per chunk, listed"],
  ["tree", "summarize answers until one is left"], ["single", "one call over everything, truncated"], ["none", "no call: sources only"]];
const TEMPLATE_KEYS = [["qa", "QA"], ["summary", "summary"], ["simple", "simple"], ["refine", "refine"]];

function select(name, options, value, label) {
  const s = el("select", { name, "aria-label": label });
  for (const [v, text] of options) s.append(el("option", { value: v }, text));
  s.value = value;
  return s;
}

/** One custom mode's row in the editor. */
function modeRow(m) {
  const next = select("next", TEMPLATE_KEYS, m.next || "refine", "Template of the later calls");
  const combine = select("combine", COMBINE, m.combine || "refine", "How the calls make one answer");
  const row = el("fieldset", { class: "custom-mode" },
    el("legend", {}, "Custom mode"),
    el("label", {}, "Name ", el("input", { name: "name", value: m.name || "", maxlength: 40, pattern: "[A-Za-z0-9_-]+", required: true, placeholder: "e.g. best_of_each" })),
    el("label", {}, "Description ", el("input", { name: "description", value: m.description || "", placeholder: "one line for the Mode menu (optional)" })),
    el("div", { class: "blocks" },
      el("label", {}, "Chunks ", select("pack", PACK, m.pack || "compact", "How the chunks are laid out")),
      el("label", {}, "Combine ", combine),
      el("label", {}, "First call ", select("first", TEMPLATE_KEYS.filter(([k]) => k !== "refine"), m.first || "qa", "Template of the first call")),
      el("label", { class: "next" }, "Later calls ", next)),
    el("button", { type: "button", class: "act remove", onclick: () => row.remove() }, "Remove this mode"));
  const syncNext = () => {
    const c = combine.value;
    row.querySelector(".next").hidden = !(c === "refine" || c === "tree");
    if (c === "refine") next.value = "refine";
    else if (c === "tree" && next.value === "refine") next.value = "summary";
  };
  combine.addEventListener("change", syncNext);
  syncNext();
  return row;
}

export function fillCustomModes(box, settings) {
  clear(box);
  const list = el("div", { class: "custom-modes" });
  for (const m of settings.custom_modes || []) list.append(modeRow(m));
  box.append(
    el("p", { class: "field-info" }, "A mode of your own, from the blocks the built-in ones are made of (compact is: chunks packed, combine by refining, QA first, refine later). It appears in the Mode menu."),
    list,
    el("button", { type: "button", id: "add-custom-mode", onclick: () => { const r = modeRow({}); list.append(r); r.querySelector("input").focus(); } }, "+ Add a mode"));
}

export function readCustomModes(box) {
  return [...box.querySelectorAll(".custom-mode")].map((row) => {
    const v = (n) => row.querySelector(`[name="${n}"]`).value;
    const combine = v("combine");
    const first = v("first");
    const next = combine === "refine" ? "refine" : combine === "tree" ? v("next") : first;
    return { name: v("name").trim(), description: v("description").trim(), pack: v("pack"), combine, first, next };
  });
}

// ---------- the inspector ----------
/** A finished step's extra views: its verdict, what the model read, token counts. */
export function showCall(sv, call) {
  if (!call) return;
  sv.label.querySelector(".verdict")?.remove();
  if (typeof call.query_satisfied === "boolean") {
    sv.label.append(el("span", { class: `verdict ${call.query_satisfied ? "yes" : "no"}`, title: "Structured answer filtering: whether this step's context answered the question" },
      call.query_satisfied ? "query satisfied" : "query not satisfied"));
  }
  const summary = sv.prompt.querySelector("summary");
  const ownTokens = call.text_tokens ?? call.prompt_tokens;
  summary.textContent = `prompt (LlamaIndex's, ${ownTokens} tokens)`;
  sv.prompt.parentElement.querySelector(":scope > details.rendered")?.remove();
  if (call.rendered) {
    sv.prompt.after(el("details", { class: "rendered" },
      el("summary", {}, `what the model read, after its chat template (${call.prompt_tokens} tokens)`),
      el("pre", { class: "prompt" }, call.rendered)));
  }
}
