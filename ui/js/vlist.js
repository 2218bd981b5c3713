// A virtual list: only the rows in view (and a few around them) are in the page, at a
// fixed row height, inside a list as tall as all the rows; the rows come a page at a
// time from `fetchPage(offset, limit)` ({ total, items }) as the list scrolls, so ten
// thousand documents cost what thirty do. Up/Down, Home/End, PageUp/PageDown move the
// focus from row to row (drawing and scrolling as needed), and each row says where it
// is (aria-setsize, aria-posinset) so a screen reader reads "3 of 9,812".
import { el, clear } from "./dom.js";

const OVERSCAN = 6;

/** A list in `scroller` (an element that scrolls, with a fixed or maximum height),
 *  drawn in `list` (a <ul>). `renderRow(item, index)` makes a row's <li>; `empty()`
 *  what shows when nothing matches. Returns { reset, refresh, total, focusRow }. */
export function virtualList({ scroller, list, rowHeight, pageSize = 100, fetchPage, renderRow, empty, onError }) {
  let total = 0;
  let pages = new Map(); // page number → items, or a promise while it loads
  let token = 0; // bumped by reset: pages fetched before it are dropped
  const rows = new Map(); // index → <li> drawn
  let frame = 0;
  // The row the last move asked for, until it has the focus: a reset that lands
  // meanwhile (a filter, another process's change) focuses it, not the row the move
  // is leaving.
  let wanted;
  list.classList.add("vlist");
  list.setAttribute("role", "list");

  /** Where the list starts in the scroller's content. */
  const listTop = () => (list.offsetParent === scroller ? list.offsetTop : list.offsetTop - scroller.offsetTop);

  function item(i) {
    const p = pages.get(Math.floor(i / pageSize));
    return Array.isArray(p) ? p[i % pageSize] : undefined;
  }

  function load(n) {
    if (pages.has(n)) return pages.get(n);
    const mine = token;
    const pending = fetchPage(n * pageSize, pageSize).then((page) => {
      if (mine !== token) return;
      pages.set(n, page.items);
      if (page.total !== total) { total = page.total; sized(); }
      draw();
    }, (e) => {
      if (mine !== token) return;
      pages.delete(n);
      onError?.(e);
    });
    pages.set(n, pending);
    return pending;
  }

  function sized() {
    // Nothing listed: the list's own height, so that its message does not overflow.
    list.style.height = total ? `${total * rowHeight}px` : "";
  }

  /** Draw the rows in view; load the pages they need. */
  function draw() {
    const top = scroller.scrollTop - listTop();
    const height = scroller.clientHeight || rowHeight * 20;
    const first = Math.max(0, Math.floor(top / rowHeight) - OVERSCAN);
    const last = Math.min(total, Math.ceil((top + height) / rowHeight) + OVERSCAN);
    for (const [i, li] of rows) {
      const outside = i < first || i >= last;
      const stale = li.dataset.placeholder && item(i) !== undefined;
      // The focused row stays while scrolled away, so the focus is not lost.
      if ((outside && !li.contains(document.activeElement)) || stale) { li.remove(); rows.delete(i); }
    }
    for (let i = first; i < last; i++) {
      if (rows.has(i)) continue;
      const it = item(i);
      if (it === undefined) load(Math.floor(i / pageSize));
      const li = it === undefined
        ? el("li", { class: "meta", dataset: { placeholder: "1" }, "aria-busy": "true" }, "…")
        : renderRow(it, i);
      li.classList.add("vrow");
      li.style.top = `${i * rowHeight}px`;
      li.style.height = `${rowHeight}px`;
      li.dataset.index = String(i);
      li.setAttribute("aria-setsize", String(total));
      li.setAttribute("aria-posinset", String(i + 1));
      rows.set(i, li);
      list.append(li);
    }
    list.querySelector(":scope > .vempty")?.remove();
    if (!total && pages.size && [...pages.values()].every(Array.isArray)) {
      const e = empty?.();
      if (e) { e.classList.add("vempty"); list.append(e); }
    }
  }

  scroller.addEventListener("scroll", () => {
    if (frame) return;
    frame = requestAnimationFrame(() => { frame = 0; draw(); });
  }, { passive: true });

  list.addEventListener("keydown", (e) => {
    const li = e.target.closest?.("li.vrow");
    if (!li || e.target.matches("input[type=text], input[type=search]")) return;
    const i = Number(li.dataset.index);
    const per = Math.max(1, Math.floor(scroller.clientHeight / rowHeight) - 1);
    const to = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: total - 1, PageDown: i + per, PageUp: i - per }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    focusRow(Math.max(0, Math.min(total - 1, to)));
  });

  /** Scroll row `i` into view and focus its first control (or the row). */
  async function focusRow(i) {
    wanted = i;
    const top = i * rowHeight + listTop();
    if (top < scroller.scrollTop) scroller.scrollTop = top;
    else if (top + rowHeight > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = top + rowHeight - scroller.clientHeight;
    draw();
    // A reset meanwhile (the 2 s poll, a filter) drops the page being read: read it again.
    for (let tries = 0; !item(i) && tries < 3; tries++) await load(Math.floor(i / pageSize));
    // A later move (or a reset's) took over while this one read its page.
    if (wanted !== i) return;
    draw();
    const li = rows.get(i);
    if (!li) return;
    wanted = undefined;
    const target = li.querySelector("button, input, a[href]") || li;
    if (target === li) li.tabIndex = -1;
    target.focus({ preventScroll: true });
  }

  /** Read everything again from the page the view is on; resolves once the rows in
   *  view are drawn. The rows shown stay (and keep the focus) until the new ones come;
   *  the scroll position is kept, and the focused row's place. */
  async function reset() {
    const mine = ++token;
    list.setAttribute("aria-busy", "true");
    const top = Math.max(0, scroller.scrollTop - listTop());
    const n = Math.floor(Math.floor(top / rowHeight) / pageSize);
    let page;
    try {
      page = await fetchPage(n * pageSize, pageSize);
    } catch (e) {
      if (mine === token) { list.removeAttribute("aria-busy"); onError?.(e); }
      return;
    }
    if (mine !== token) return;
    pages = new Map([[n, page.items]]);
    total = page.total;
    sized();
    const focused = wanted ?? document.activeElement?.closest?.("li.vrow")?.dataset.index;
    clear(list);
    rows.clear();
    // A list that shrank: back to its top.
    if (top > total * rowHeight) scroller.scrollTop = 0;
    draw();
    await Promise.all([...pages.values()].filter((p) => !Array.isArray(p)));
    if (mine !== token) return;
    list.removeAttribute("aria-busy");
    if (focused !== undefined && total) await focusRow(Math.min(Number(focused), total - 1));
  }

  return { reset, focusRow, total: () => total, redraw: draw };
}
