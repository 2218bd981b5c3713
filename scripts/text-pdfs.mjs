// Text PDFs for indexing benchmarks (`quire bench answer --while-indexing DIR`,
// `quire bench ingest DIR`): N files of PAGES pages of 40 lines each, cut from the
// license texts every Debian machine has (/usr/share/common-licenses).
//
//     node scripts/text-pdfs.mjs DIR N PAGES
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { makePdf } from "../tests/e2e/make-pdf.mjs";

const [dir, n = "20", pages = "50"] = process.argv.slice(2);
if (!dir) throw new Error("usage: node scripts/text-pdfs.mjs DIR N PAGES");
const src = "/usr/share/common-licenses";
const lines = readdirSync(src)
  .flatMap((f) => { try { return readFileSync(join(src, f), "latin1").split("\n"); } catch { return []; } })
  .map((l) => l.trim().slice(0, 90))
  .filter((l) => l.length > 20);
mkdirSync(dir, { recursive: true });
let at = 0;
for (let i = 0; i < Number(n); i++) {
  const doc = [];
  for (let p = 0; p < Number(pages); p++) {
    const page = [`Document ${i + 1}, page ${p + 1}.`];
    for (let k = 0; k < 40; k++) page.push(lines[at++ % lines.length]);
    doc.push(page);
  }
  makePdf(join(dir, `text-${String(i + 1).padStart(3, "0")}.pdf`), doc);
}
console.log(`${n} PDFs of ${pages} pages in ${dir}`);
