// The Settings dialog's table of the installed models as the setting `auto` sees them:
// each one's predicted answer time on this machine (from its calibration), and
// whether `auto` chooses it or why not. The engine calibrates in the background.
import { el, clear } from "./dom.js";

/** The `auto` option's label: what it stands for now. */
export function autoLabel(s) {
  const now = s.auto_model?.name;
  return now ? `auto: chosen for this machine (now: ${now})` : "auto: chosen for this machine (no usable model)";
}

/** Fill `box` (a table's container) with `s.model_times`. */
export function showModelTimes(box, s) {
  clear(box);
  const rows = s.model_times || [];
  if (!rows.length) return;
  const table = el("table", { class: "model-times" },
    el("caption", {}, "Predicted median answer time on this machine (a compact answer; auto chooses the best-answering model within 6 s)"),
    el("thead", {}, el("tr", {},
      el("th", { scope: "col" }, "Model"),
      el("th", { scope: "col", class: "num" }, "Predicted"),
      el("th", { scope: "col" }, "Auto"))));
  const body = el("tbody");
  for (const m of rows) {
    const time = m.predicted_secs == null ? "—" : `${m.predicted_secs.toFixed(1)} s`;
    body.append(el("tr", { class: m.chosen ? "chosen" : "" },
      el("td", { class: "name" }, m.name),
      el("td", { class: "num" }, m.calibrated ? time : "—"),
      el("td", {}, m.chosen ? `✓ ${m.why}` : m.why)));
  }
  table.append(body);
  box.append(table);
  const pending = rows.some((m) => m.reason === "not_calibrated");
  if (pending && s.model !== "auto") {
    box.append(el("p", { class: "field-info" },
      "Choose auto and save to calibrate them: a short timed run of each model, in the background (a few seconds a model)."));
  } else if (s.calibration?.running) {
    box.append(el("p", { class: "field-info" },
      `Calibrating ${s.calibration.current || "the models"} in the background (a few seconds a model); until then auto answers with ${s.auto_model?.name || "the default model"}.`));
  }
}
