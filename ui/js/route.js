// An answer's route, on the answer: the decision line ("Read all 41 pages of
// ctex-faq.pdf", "Searched: top 4 passages"), the pages read so far with the time
// left while a whole document is read, and the toggle that asks the question again
// the other way (whole documents / search). Text only, never HTML.
import { el, clear } from "./dom.js";

let handlers = { again: () => {} };

/** `again(view, route)` asks the answer's question again by `route`. */
export function initRoute(h) {
  handlers = h;
}

const HOW = {
  whole: "in one prompt",
  map_reduce: "part by part, then summarized",
  cached: "from its kept summary",
};

/** The line of `view`, made on first use, under the answer's header. */
function line(view) {
  if (!view.routeLine) {
    view.routeLine = el("div", { class: "route", role: "status" });
    view.searched.before(view.routeLine);
  }
  return view.routeLine;
}

/** The line's words for `route` (an engine RouteView): its label and how the
 * documents were read, that before the back matter passed over, which the label ends
 * with ("Read all 40 pages of a.pdf in one prompt, but the index"). */
export function routeText(route) {
  const whole = route.route === "whole" || route.route === "library";
  const how = whole && HOW[route.how] ? ` ${route.route === "library" ? "" : HOW[route.how]}`.trimEnd() : "";
  const but = route.passed_over ? ` but ${route.passed_over}` : "";
  return but && how && route.label.endsWith(but)
    ? `${route.label.slice(0, -but.length)}${how},${but}`
    : route.label + how;
}

/** Show the decision `route` (an engine RouteView) on `view`. */
export function showRoute(view, route) {
  view.route = route;
  const box = clear(line(view));
  const whole = route.route === "whole" || route.route === "library";
  const text = routeText(route);
  const why = route.forced ? " · your choice" : route.cue ? ` · asked “${route.cue}”` : "";
  box.append(
    el("span", { class: "route-icon", "aria-hidden": "true" }, whole ? "▤" : "⌕"),
    el("span", { class: "route-label" }, text),
    el("span", { class: "muted route-why" }, why),
    el("span", { class: "route-progress", hidden: true }),
  );
  const toggle = el("span", { class: "route-toggle", role: "group", "aria-label": "Answer by" });
  for (const [key, text, title] of [
    ["whole", "Whole", "Ask again reading every page of the documents"],
    ["search", "Search", "Ask again from the top passages"],
  ]) {
    const on = key === "search" ? !whole : whole;
    toggle.append(el("button", {
      type: "button", class: "act", "aria-pressed": on ? "true" : "false", title,
      disabled: on,
      onclick: (e) => { e.stopPropagation(); handlers.again(view, key); },
    }, text));
  }
  box.append(toggle);
}

/** Pages read so far of a whole-document answer, with the time left. */
export function showReading(view, ev) {
  const p = line(view).querySelector(".route-progress");
  if (!p) return;
  const left = ev.secs_left != null && ev.pages_read < ev.pages
    ? ` · about ${ev.secs_left < 90 ? `${Math.max(1, Math.round(ev.secs_left))} s` : `${Math.round(ev.secs_left / 60)} min`} left`
    : "";
  clear(p).append(
    el("progress", { max: String(Math.max(1, ev.pages)), value: String(ev.pages_read) }),
    ` ${ev.pages_read} of ${ev.pages} pages read${left}`,
  );
  p.hidden = ev.pages_read >= ev.pages && !view.root.classList.contains("streaming");
}
