// The engine's status: what is missing or out of step (models, an index embedded by
// another model), shown in the banner with a way to fix a stale index, and the
// re-embedding that fixes it.
import { transport } from "./transport.js";
import { setModes } from "./synthesis.js";
import { state } from "./state.js";
import { banner } from "./banner.js";
import { loadDocuments } from "./documents.js";
import { onIndexEvent } from "./indexing.js";

/** Show what is missing or out of step, with a way to fix a stale index. */
export async function checkStatus() {
  try {
    const st = await transport.status();
    state.status = st;
    state.settings = await transport.settings();
    setModes(state.settings.modes, state.settings.mode);
    const fix = indexNeedsReembed(state.settings) ? { label: "Re-embed now", run: reembed } : null;
    // A missing model is explained by the first-run card in the chat, not twice.
    const firstRun = !st.llm || !st.embedder;
    const problems = (st.problems || []).filter((p) => !(firstRun && / model is missing /.test(p)));
    if (firstRun) problems.unshift("A model file is missing: the empty conversation (+ New) says which, and how to get it.");
    banner(problems.join("\n"), fix);
  } catch (e) {
    banner(`Quire's engine is not reachable: ${e.message}`);
  }
}

/** Re-embed the index with the embedding model the settings choose. */
export async function reembed() {
  banner("");
  try {
    await transport.reembed(onIndexEvent);
  } catch (e) {
    banner(`Re-embedding failed: ${e.message}`);
  }
  await checkStatus();
  loadDocuments();
}

/** Whether the index holds vectors another embedding model made than the chosen one. */
export function indexNeedsReembed(s) {
  return (s.index_embedders || []).some((m) => m.name !== modelName(s.embedder) && m.chunks > 0);
}
export const modelName = (setting) => String(setting || "").split(/[\\/]/).pop();
