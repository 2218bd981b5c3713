// The Settings dialog: the models (what each is, and whether choosing another
// embedding model means re-embedding), the device, retrieval and generation settings,
// a model server, the store, templates and custom modes; saved to the engine. And the
// toolbar's conversation switches (chat mode, citations, rerank), saved as settings.
import { transport } from "./transport.js";
import { el, clear } from "./dom.js";
import { setModes, fillTemplates, readTemplates, fillCustomModes, readCustomModes } from "./synthesis.js";
import { state } from "./state.js";
import { banner } from "./banner.js";
import { reembed, indexNeedsReembed, modelName } from "./status.js";
import { autoLabel, showModelTimes } from "./model-times.js";

const $ = (id) => document.getElementById(id);
const form = $("settings-form");

/** Wire the dialog's buttons and fields, and the toolbar's switches. */
export function initSettings() {
  $("settings-btn").addEventListener("click", openSettings);
  form.elements.model.addEventListener("change", showModelInfo);
  form.elements.llm_server.addEventListener("input", showModelInfo);
  form.elements.embedder.addEventListener("change", showEmbedderInfo);
  $("settings-save").addEventListener("click", saveSettings);
  for (const id of ["chat-mode", "cite", "rerank"]) $(id).addEventListener("change", saveChatSwitches);
}

/** Open the dialog on the engine's settings as they are now. */
async function openSettings() {
  try { state.settings = await transport.settings(); } catch (e) { banner(e.message); return; }
  const s = state.settings;
  const modelSel = clear(form.elements.model);
  modelSel.append(el("option", { value: "auto", disabled: !s.auto_model && s.model !== "auto" }, autoLabel(s)));
  for (const m of s.models || []) {
    modelSel.append(el("option", { value: m.name, disabled: !!m.error && m.name !== modelName(s.model) },
      m.error ? `${m.name} (unusable)` : `${m.name} · ${m.architecture} · ${mb(m.bytes)} · ${m.speed}`));
  }
  const draftSel = clear(form.elements.draft);
  draftSel.append(
    el("option", { value: "auto" }, "auto: prompt lookup, then a smaller installed model of the same vocabulary, if any"),
    el("option", { value: "off" }, "off"),
    el("option", { value: "lookup" }, "prompt lookup (no draft model)"));
  for (const m of s.models || []) {
    if (!m.error) draftSel.append(el("option", { value: m.name }, `drafted by ${m.name}`));
  }
  const draft = modelName(s.draft || "auto");
  if (![...draftSel.options].some((o) => o.value === draft)) draftSel.append(el("option", { value: draft }, draft));
  draftSel.value = draft;
  const embSel = clear(form.elements.embedder);
  for (const m of s.embedders || []) {
    embSel.append(el("option", { value: m.name, disabled: !!m.error && m.name !== modelName(s.embedder) },
      m.error ? `${m.name} (unusable)` : `${m.name} · ${m.dims} dims · ${(m.languages || []).join(", ") || "languages not declared"}`));
  }
  form.elements.embedder.value = modelName(s.embedder);
  showDevice(s);
  fillTemplates($("templates-box"), s);
  fillCustomModes($("custom-modes-box"), s);
  for (const k of ["top_k", "temperature", "repeat_penalty", "max_tokens", "context_window", "fusion", "follow_up_search", "num_queries",
    "rerank_candidates", "rerank_batch_size", "citation_chunk_size"]) {
    if (form.elements[k]) form.elements[k].value = s[k] ?? "";
  }
  form.elements.not_found_threshold.value = s.not_found_threshold ?? "";
  form.elements.model.value = s.model === "auto" ? "auto" : modelName(s.model);
  showModelTimes($("model-times"), s);
  showModelInfo();
  showEmbedderInfo();
  form.elements.structured_answer_filtering.checked = !!s.structured_answer_filtering;
  for (const k of ["llm_server", "llm_server_model", "llm_server_key", "llm_server_tokenizer"]) form.elements[k].value = s[k] ?? "";
  form.elements.llm_server_context.value = s.llm_server_context ?? 0;
  form.elements.llm_server_chat.checked = s.llm_server_chat ?? true;
  $("server-section").open = !!(s.llm_server || "").trim();
  form.elements.store.value = s.store ?? "";
  $("store-section").open = !!(s.store || "").trim();
  $("store-info").textContent = s.store_in_use ? `In use now: ${s.store_in_use}` : "";
  showModelInfo();
  form.elements.template_vars.value = Object.entries(s.template_vars || {}).map(([k, v]) => `${k}=${v}`).join("\n");
  $("settings-error").hidden = true;
  $("settings").showModal();
}

/** Save the dialog's settings; a new embedding model re-embeds the index. */
async function saveSettings(e) {
  e.preventDefault();
  const f = form.elements;
  const vars = {};
  for (const line of f.template_vars.value.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) vars[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  const next = {
    ...state.settings,
    model: f.model.value,
    embedder: f.embedder.value,
    device: f.device.value,
    top_k: Number(f.top_k.value),
    temperature: Number(f.temperature.value),
    repeat_penalty: Number(f.repeat_penalty.value),
    max_tokens: Number(f.max_tokens.value),
    context_window: Number(f.context_window.value) || 0,
    draft: f.draft.value,
    fusion: f.fusion.value,
    follow_up_search: f.follow_up_search.value,
    num_queries: Number(f.num_queries.value),
    rerank_candidates: Number(f.rerank_candidates.value),
    rerank_batch_size: Number(f.rerank_batch_size.value),
    citation_chunk_size: Number(f.citation_chunk_size.value),
    structured_answer_filtering: f.structured_answer_filtering.checked,
    llm_server: f.llm_server.value.trim(),
    llm_server_model: f.llm_server_model.value.trim(),
    llm_server_key: f.llm_server_key.value === "" ? null : f.llm_server_key.value,
    llm_server_context: Number(f.llm_server_context.value) || 0,
    llm_server_tokenizer: f.llm_server_tokenizer.value.trim() === "" ? null : f.llm_server_tokenizer.value.trim(),
    llm_server_chat: f.llm_server_chat.checked,
    store: f.store.value.trim(),
    ...readTemplates(form, state.settings),
    custom_modes: readCustomModes($("custom-modes-box")),
    template_vars: vars,
    not_found_threshold: f.not_found_threshold.value.trim() === "" ? null : Number(f.not_found_threshold.value),
  };
  for (const k of VIEW_ONLY) delete next[k];
  try {
    state.settings = await transport.saveSettings(next);
    setModes(state.settings.modes, state.settings.mode);
    $("settings").close();
    if (indexNeedsReembed(state.settings)) reembed();
  } catch (err) {
    $("settings-error").textContent = err.message;
    $("settings-error").hidden = false;
  }
}

/** What the settings view carries beside the settings: not saved back. */
const VIEW_ONLY = ["models", "embedders", "index_embedders", "modes", "default_templates", "store_in_use",
  "model_times", "auto_model", "calibration"];
const mb = (bytes) => `${Math.round(bytes / 1e6)} MB`;
/** What the chosen LLM is: architecture, size, context, and which code runs it. */
function showModelInfo() {
  const auto = form.elements.model.value === "auto";
  const s = state.settings || {};
  const name = auto ? s.auto_model?.name : form.elements.model.value;
  const m = (s.models || []).find((x) => x.name === name);
  const info = $("model-info");
  if (auto && !form.elements.llm_server.value.trim()) {
    info.classList.toggle("warn", !s.auto_model);
    info.textContent = s.auto_model
      ? `Now ${s.auto_model.name}. ${s.auto_model.why.charAt(0).toUpperCase()}${s.auto_model.why.slice(1)}. It follows the machine (CPU, threads) and the installed models.`
      : "No installed model can be used.";
    return;
  }
  info.classList.toggle("warn", !!m && (!!m.error || m.speed !== "fast" || !m.chat_template));
  if (!m) { info.textContent = ""; return; }
  if (m.error) { info.textContent = `Unusable: ${m.error}`; return; }
  if (form.elements.llm_server.value.trim()) {
    info.textContent = `Not used while a model server answers (${form.elements.llm_server.value.trim()}).`;
    return;
  }
  const parts = [
    m.title || m.architecture,
    `${m.architecture} architecture`,
    m.size_label ? `${m.size_label} parameters` : m.parameters ? `${(m.parameters / 1e9).toFixed(2)}B parameters` : null,
    m.quantization,
    mb(m.bytes),
    m.context ? `${m.context.toLocaleString("en")}-token context` : null,
    m.speed === "fast" ? "fast: Quire's own kernels" : `${m.speed}: candle's generic code`,
    m.chat_template ? null : "base model (no chat template): follows instructions poorly",
  ];
  info.textContent = parts.filter(Boolean).join(" · ");
}
/** What the chosen embedding model is, and whether choosing it means re-embedding. */
function showEmbedderInfo() {
  const s = state.settings || {};
  const name = form.elements.embedder.value;
  const m = (s.embedders || []).find((x) => x.name === name);
  const info = $("embedder-info");
  if (!m) { info.textContent = ""; return; }
  if (m.error) { info.textContent = `Unusable: ${m.error}`; info.classList.add("warn"); return; }
  const other = (s.index_embedders || []).filter((x) => x.name !== name);
  const chunks = other.reduce((n, x) => n + x.chunks, 0);
  const parts = [
    `${m.dims} dimensions`, `${m.layers} layers`, `${m.pooling} pooling`, mb(m.bytes),
    m.languages?.length ? `languages: ${m.languages.join(", ")}` : "languages not declared",
  ];
  let text = parts.join(" · ");
  if (chunks) text += ` — saving re-embeds the ${chunks} indexed chunks (made by ${other.map((x) => x.name).join(", ")}), with progress under Documents.`;
  info.textContent = text;
  info.classList.toggle("warn", chunks > 0);
}
/** The device select (a `cuda:N` setting gets its own option) and where the models run now. */
async function showDevice(s) {
  const sel = form.elements.device;
  const want = s.device || "auto";
  if (![...sel.options].some((o) => o.value === want)) sel.append(el("option", { value: want }, want));
  sel.value = want;
  try {
    const st = await transport.status();
    $("device-info").textContent = st.device ? `Running on ${st.device}.` : "";
  } catch { $("device-info").textContent = ""; }
}

/** The toolbar's conversation switches show the settings, and save to them. */
export function showChatSwitches() {
  const s = state.settings || {};
  if (s.chat_mode) $("chat-mode").value = s.chat_mode;
  $("cite").checked = !!s.cite_sources;
  $("rerank").checked = !!s.rerank;
}
async function saveChatSwitches() {
  if (!state.settings) return;
  const next = { ...state.settings, chat_mode: $("chat-mode").value, cite_sources: $("cite").checked, rerank: $("rerank").checked };
  for (const k of VIEW_ONLY) delete next[k];
  try { state.settings = await transport.saveSettings(next); } catch (e) { banner(e.message); }
}
