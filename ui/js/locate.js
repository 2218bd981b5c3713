// Finding a chunk's text on a PDF page as PDF.js lays it out. Quire's extractor and
// PDF.js read the same page differently: spaces and line breaks fall elsewhere, a word
// hyphenated at a line end is whole in one and cut in the other, ligatures are one
// character or two, and a few glyphs differ. So both texts are compared in a normal
// form that keeps only letters and digits (NFKC, lower case), and the chunk is located
// by the page positions its pieces are found at: the densest run of pieces that keep
// their order wins. Pure functions, no DOM: unit tested in tests/e2e/ui-unit.test.mjs.

const KEEP = /[\p{L}\p{N}]/u;

/** A table chunk's cells — `{ caption, header, rows }`, each row a list of cell texts
 *  (`\\|` unescaped), the caption its line of text or "" — when `text` is a Markdown
 *  table as splitting makes them (a caption line and an empty line when it has one, a
 *  header row, its `| --- |` line, rows); else null. */
export function tableCells(text) {
  let lines = String(text || "").split("\n");
  const row = (l) => l.startsWith("| ") && l.endsWith(" |");
  let caption = "";
  if (lines.length > 2 && !row(lines[0]) && lines[1].trim() === "") {
    caption = lines[0].trim();
    lines = lines.slice(2);
  }
  if (lines.length < 2 || !row(lines[0]) || !/^\|( --- \|)+$/.test(lines[1])) return null;
  const cells = (l) => l.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim().replaceAll("\\|", "|"));
  return { caption, header: cells(lines[0]), rows: lines.slice(2).filter(row).map(cells) };
}

/** A quote's table — `{ caption, header, rows }` as [`tableCells`] gives them — when the
 *  quote is a table chunk's rows, read on into the next chunk of the same table or not
 *  (whose caption, header and `| --- |` line are left out); null for any other quote,
 *  and for one that reads on into prose (shown as it is then). */
export function quoteTable(text) {
  const t = tableCells(text);
  if (!t) return null;
  const lines = String(text).split("\n");
  const isRow = (l) => l.startsWith("| ") && l.endsWith(" |");
  const body = lines.slice(lines.findIndex(isRow));
  if (body.some((l) => l.trim() && !isRow(l) && l.trim() !== t.caption)) return null;
  const same = (r) => r.length === t.header.length && r.every((c, i) => c === t.header[i]);
  const rule = (r) => r.every((c) => /^-+$/.test(c));
  return { ...t, rows: t.rows.filter((r) => !same(r) && !rule(r)) };
}

/** The text of a passage as the page shows it: a table chunk becomes its rows alone,
 *  cells apart by spaces, so that the rows, not the header above them, are marked;
 *  other text is kept. */
export function passageText(text) {
  const t = tableCells(text);
  return t ? t.rows.map((r) => r.join(" ")).join("\n") : text;
}

/** `text` in the normal form, with `at[i]` = the index in `text` of normal char `i`. */
export function normalize(text) {
  let out = "";
  const at = [];
  let i = 0;
  for (const ch of text) {
    const n = ch.normalize("NFKC").toLowerCase();
    for (const c of n) {
      if (KEEP.test(c)) {
        out += c;
        at.push(i);
      }
    }
    i += ch.length;
  }
  return { text: out, at };
}

/** A page's text items (PDF.js's `str`s, in order) as one normal string, with the item
 *  and the offset in it of every normal character. */
export function pageText(items) {
  let text = "";
  const item = [];
  const offset = [];
  items.forEach((s, k) => {
    const n = normalize(s);
    text += n.text;
    for (const o of n.at) {
      item.push(k);
      offset.push(o);
    }
  });
  return { text, item, offset };
}

const GRAM = 10;

/** Where the normal-form `needle` lies in the normal-form `hay`: `{ start, end, found }`
 *  (indices in `hay`, `found` = the share of the needle's pieces found in order), or
 *  null. Exact when the needle is there whole; otherwise the needle is cut into pieces
 *  of GRAM characters, each piece's places in `hay` are found, and the longest chain of
 *  places that keeps the pieces' order with small gaps is the passage. A chunk that
 *  runs onto the next page matches in part on each. */
export function locate(needle, hay, minShare = 0.25) {
  if (!needle || !hay) return null;
  const exact = hay.indexOf(needle);
  if (exact >= 0) return { start: exact, end: exact + needle.length, found: 1 };
  if (needle.length < GRAM) return null;
  const starts = [];
  for (let i = 0; i + GRAM <= needle.length; i += GRAM) starts.push(i);
  if (starts[starts.length - 1] + GRAM < needle.length) starts.push(needle.length - GRAM);
  // Every place of every piece, as (piece index, needle offset, hay offset).
  const hits = [];
  starts.forEach((i, p) => {
    const g = needle.slice(i, i + GRAM);
    let from = 0;
    for (let n = 0; n < 64; n++) {
      const at = hay.indexOf(g, from);
      if (at < 0) break;
      hits.push({ p, i, at });
      from = at + 1;
    }
  });
  if (!hits.length) return null;
  hits.sort((a, b) => a.at - b.at || a.p - b.p);
  // Longest chain: pieces in increasing order at increasing places, where the step in
  // the page is close to the step in the needle (text may be missing or extra).
  const best = new Array(hits.length).fill(1);
  const prev = new Array(hits.length).fill(-1);
  let top = 0;
  for (let b = 0; b < hits.length; b++) {
    for (let a = b - 1; a >= 0 && hits[b].at - hits[a].at <= 4 * needle.length + 200; a--) {
      const dn = hits[b].i - hits[a].i;
      const dh = hits[b].at - hits[a].at;
      if (hits[a].p >= hits[b].p || dh <= 0) continue;
      if (Math.abs(dh - dn) > dn * 0.5 + 40) continue;
      if (best[a] + 1 > best[b]) { best[b] = best[a] + 1; prev[b] = a; }
    }
    if (best[b] > best[top]) top = b;
  }
  const found = best[top] / starts.length;
  if (found < minShare && best[top] < 3) return null;
  let first = top;
  while (prev[first] >= 0) first = prev[first];
  // Extend both ends while the needle and the page agree, past small differences (a
  // piece cut by the page's edge, or by a changed character, still has its agreeing
  // part).
  const end = extend(needle, hay, hits[top].i + GRAM, hits[top].at + GRAM, 1);
  const start = extend(needle, hay, hits[first].i - 1, hits[first].at - 1, -1) + 1;
  return { start, end, found };
}

/** From needle index `ni` and page index `hi`, step in direction `dir` while the
 *  characters agree, resynchronising past up to 3 differing characters on either side
 *  when the next 4 agree again. Returns the page index where the agreement stops. */
function extend(needle, hay, ni, hi, dir) {
  const inN = (i) => i >= 0 && i < needle.length;
  const inH = (i) => i >= 0 && i < hay.length;
  for (;;) {
    while (inN(ni) && inH(hi) && needle[ni] === hay[hi]) { ni += dir; hi += dir; }
    if (!inN(ni) || !inH(hi)) return hi;
    let moved = false;
    for (let a = 0; a <= 3 && !moved; a++) {
      for (let b = 0; b <= 3 && !moved; b++) {
        if (a === 0 && b === 0) continue;
        let k = 0;
        while (k < 4 && inN(ni + dir * (a + k)) && inH(hi + dir * (b + k)) && needle[ni + dir * (a + k)] === hay[hi + dir * (b + k)]) k++;
        const left = dir > 0 ? needle.length - ni - a : ni - a + 1;
        if (k === 4 || (k >= 2 && k === left)) { ni += dir * a; hi += dir * b; moved = true; }
      }
    }
    if (!moved) return hi;
  }
}

/** Every place of the normal-form `needle` in `hay`, as `[start, end)` pairs. */
export function findAll(needle, hay) {
  const out = [];
  if (!needle) return out;
  for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + needle.length)) {
    out.push([at, at + needle.length]);
  }
  return out;
}

/** A range `[start, end)` of a page's normal text as pieces of its items:
 *  `[{ item, from, to }]`, offsets in the item's own string. */
export function itemRanges(page, start, end, items) {
  const out = [];
  for (let n = start; n < end; n++) {
    const k = page.item[n];
    const o = page.offset[n];
    const len = charLength(items[k], o);
    const last = out[out.length - 1];
    if (last && last.item === k) last.to = o + len;
    else out.push({ item: k, from: o, to: o + len });
  }
  return out;
}

/** The length in UTF-16 units of the character of `s` at `i`. */
function charLength(s, i) {
  const c = s.codePointAt(i);
  return c !== undefined && c > 0xffff ? 2 : 1;
}
