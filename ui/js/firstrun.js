// The first run without model files: what is missing, where Quire looked, and how to
// get the models (nothing is downloaded at run time, so the person must fetch them
// once). Shown in place of the welcome until both models are there.
import { el } from "./dom.js";

/** The card for `status` (the engine's), or null when both models are found. */
export function modelsCard(status, recheck) {
  if (!status || (status.llm && status.embedder)) return null;
  const missing = [];
  if (!status.embedder) missing.push(["Embedding model", status.embedder_name, "reads your PDFs and finds the passages that answer a question; indexing needs it"]);
  if (!status.llm) missing.push(["Language model", status.llm_name, "writes the answers; without it Quire can still show the passages (the no_text mode)"]);
  return el("section", { class: "welcome first-run", "aria-label": "Models missing" },
    el("h2", {}, "Quire needs its models first"),
    el("p", {}, "Quire reads and answers on this computer, with two model files it never downloads by itself. Missing:"),
    el("ul", { class: "missing-models" }, missing.map(([what, name, why]) =>
      el("li", {}, el("strong", {}, what), " ", el("code", {}, name || "?"), " — ", why))),
    el("h3", {}, "How to get them"),
    el("ol", {},
      el("li", {}, "Installed from the Quire .deb package? It puts them in ", el("code", {}, "/usr/share/quire/models"), ": reinstall it if they are gone."),
      el("li", {}, "From a source checkout, run ", el("code", {}, "models/fetch.sh"), " (", el("code", {}, "make run"), " does it too): it fetches the default models, about 580 MB, once."),
      el("li", {}, "Or put model files you already have (a GGUF language model, a sentence-transformers embedding model folder) in one of the folders below, and choose them in Settings.")),
    el("h3", {}, "Where Quire looks, in order"),
    el("ul", { class: "model-dirs" }, (status.model_dirs || []).map((d) => el("li", {}, el("code", {}, d)))),
    el("p", {}, el("button", { type: "button", class: "primary", onclick: recheck }, "Check again")));
}
