// End-to-end test of the PDF viewer in a real browser (Debian's Chromium via
// playwright-core), over `quire serve` on a temporary data directory. It needs only
// the embedding model: questions are asked in no_text mode (retrieval, no LLM).
// Screenshots go to artifacts/e2e/, the 1,000-page timing to
// artifacts/e2e/viewer-timing.json.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makePdf, makeHostilePdf } from "./make-pdf.mjs";
import { repo, shared, corpusQuestion, startServer, launchBrowser, upload as uploadFile, askIn } from "./harness.mjs";

const shots = join(repo, "artifacts/e2e");
const question = corpusQuestion("A23");
let server, url, origin, browser, page, dataDir;
const problems = []; // dialogs, page errors, requests off our origin, navigations

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-viewer-"));
  ({ url, proc: server } = await startServer(dataDir));
  origin = new URL(url).origin;
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("pageerror", (e) => problems.push(`page error: ${e}`));
  page.on("dialog", (d) => { problems.push(`dialog: ${d.message()}`); d.dismiss(); });
  page.on("request", (r) => { if (!r.url().startsWith(origin) && !r.url().startsWith("blob:") && !r.url().startsWith("data:")) problems.push(`request off origin: ${r.url()}`); });
  page.on("popup", (p) => problems.push(`popup: ${p.url()}`));
  page.on("framenavigated", (f) => { if (f === page.mainFrame() && !f.url().startsWith(origin)) problems.push(`navigated to ${f.url()}`); });
  page.on("console", (m) => { if (/Content.Security.Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`); });
  await page.goto(url);
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const upload = (path, name) => uploadFile(page, path, name);

/** Ask in no_text mode in a new conversation; wait for the sources. */
async function retrieve(text) {
  await page.click("#new-chat");
  const msg = await askIn(page, "no_text", text, 120_000);
  assert.equal(await msg.locator(".error").count(), 0);
}

/** Wait until the viewer shows a rendered page (page `n` if given); its number. */
async function shown(n) {
  await page.waitForSelector(`#viewer .pdf-page${n ? `[data-page="${n}"]` : ""}[data-rendered]`, { timeout: 120_000 });
  return Number(await page.inputValue("#viewer-page"));
}

const highlightedText = () => page.locator("#viewer .textLayer .hl").allTextContents().then((t) => t.join(""));

test("a first start says what to do and what the modes do", async () => {
  const welcome = page.locator("#messages .welcome");
  await welcome.waitFor();
  assert.match(await welcome.locator("h2").innerText(), /Start by adding your PDFs/);
  // The modes are listed once the engine has said which it offers.
  await page.waitForFunction(() => document.querySelectorAll("#messages .welcome dt").length === 8, null, { timeout: 10_000 })
    .catch(() => {});
  assert.equal(await welcome.locator("dt").count(), 8, "LlamaIndex's seven modes and extractive");
  assert.ok(await welcome.locator("button", { hasText: "Add PDFs" }).isVisible());
  await page.screenshot({ path: join(shots, "09-first-run.png") });
  await page.click("#theme-btn");
  await page.screenshot({ path: join(shots, "09-first-run-dark.png") });
  await page.click("#theme-btn");
});

test("a source opens the viewer at its page with the passage highlighted", async () => {
  await upload(join(shared, "corpus/pdfs", question.file), question.file.replace(/\.pdf$/, ""));
  await page.waitForFunction(() => /Ask about your 1 document/.test(document.querySelector("#messages .welcome h2")?.textContent || ""));
  await retrieve(question.question);
  assert.equal(await page.locator("#messages .welcome").count(), 0, "the welcome goes once a question is asked");
  const first = page.locator("#sources li.source").first();
  // "p. 2", or "pp. 1–2" for a chunk that runs over a page break: then both pages are
  // shown, one under the other, each with its part of the passage highlighted.
  const [from, to = from] = (await first.getAttribute("data-pages")).match(/\d+/g).map(Number);
  await first.locator(".src-open").click();
  assert.equal(await shown(), from);
  const rendered = await page.locator("#viewer .pdf-page[data-rendered]").evaluateAll((els) => els.map((e) => Number(e.dataset.page)));
  assert.deepEqual(rendered, Array.from({ length: to - from + 1 }, (_, i) => from + i));
  assert.ok(from <= question.pages[0] && question.pages[0] <= to, `source 1 (pp. ${from}-${to}) should hold the answering page ${question.pages[0]}`);
  assert.match(await page.locator("#viewer-count").innerText(), /of \d+/);
  const text = await highlightedText();
  for (const term of question.must_contain) assert.ok(text.includes(term), `"${term}" not in the highlight: ${text.slice(0, 300)}`);
  assert.match(await page.locator("#viewer-status").innerText(), /Passage highlighted/);
  // The highlight is scrolled into view.
  const box = await page.locator("#viewer-scroll").boundingBox();
  const hl = await page.locator("#viewer .textLayer .hl").first().boundingBox();
  assert.ok(hl.y >= box.y && hl.y + hl.height <= box.y + box.height, JSON.stringify({ box, hl }));
  await page.screenshot({ path: join(shots, "10-viewer.png") });
  const theme = await page.evaluate(() => document.documentElement.dataset.theme);
  await page.click("#theme-btn");
  await page.screenshot({ path: join(shots, "10-viewer-dark.png") });
  if (theme !== (await page.evaluate(() => document.documentElement.dataset.theme))) await page.click("#theme-btn");
});

test("the viewer pages, zooms, finds, resizes and closes with Esc", async () => {
  const start = Number(await page.inputValue("#viewer-page"));
  await page.click("#viewer-next");
  assert.equal(await shown(start + 1), start + 1);
  await page.click("#viewer-prev");
  await page.fill("#viewer-page", "1");
  await page.press("#viewer-page", "Enter");
  await page.waitForSelector('#viewer .pdf-page[data-page="1"][data-rendered]');
  const before = await page.locator("#viewer .pdf-page").first().boundingBox();
  await page.click("#viewer-zoom-in");
  await page.waitForSelector('#viewer .pdf-page[data-page="1"][data-rendered]');
  const after = await page.locator("#viewer .pdf-page").first().boundingBox();
  assert.ok(after.width > before.width, `${before.width} -> ${after.width}`);
  await page.click("#viewer-fit");
  // Find: the next page with the term, the term marked there.
  await page.fill("#viewer-search", "nointegrals");
  await page.press("#viewer-search", "Enter");
  await page.waitForFunction(() => document.querySelector("#viewer .textLayer .found"));
  const found = await page.locator("#viewer .textLayer .found").allTextContents();
  assert.ok(found.length > 0 && found.every((t) => t.toLowerCase() === "nointegrals"), found.join("|"));
  assert.match(await page.locator("#viewer-status").innerText(), /match/);
  await page.fill("#viewer-search", "xylophonequartz");
  await page.press("#viewer-search", "Enter");
  await page.waitForFunction(() => /not in this document/.test(document.querySelector("#viewer-status").textContent));
  // Resize by dragging the left edge.
  const w0 = (await page.locator("#viewer").boundingBox()).width;
  const edge = await page.locator("#viewer-resize").boundingBox();
  await page.mouse.move(edge.x + 4, edge.y + 200);
  await page.mouse.down();
  await page.mouse.move(edge.x - 116, edge.y + 200, { steps: 5 });
  await page.mouse.up();
  const w1 = (await page.locator("#viewer").boundingBox()).width;
  assert.ok(w1 > w0 + 80, `${w0} -> ${w1}`);
  await page.click("#viewer-scroll");
  await page.keyboard.press("Escape");
  assert.ok(await page.locator("#viewer").isHidden());
  assert.deepEqual(problems, []);
});

test("a document in the list opens at its first page", async () => {
  await page.locator("#documents li .name.openable").first().click();
  assert.equal(await shown(), 1);
  await page.click("#viewer-close");
  assert.ok(await page.locator("#viewer").isHidden());
});

test("a table source shows as a table and the viewer marks its row", async () => {
  const dir = mkdtempSync(join(tmpdir(), "quire-table-"));
  const pdf = join(dir, "tables.pdf");
  const rows = [["quillwidth", "length", "The width of the quill margin"], ["inkcolor", "name", "The colour of the ink pot"],
    ["blotter", "boolean", "Whether a blotter dries each page"], ["nibstyle", "choice", "The nib: broad, fine or italic"]];
  makePdf(pdf, [["2.3 Package options", "The scriptorium package takes these options, each described below.", "Table 1: Options of the scriptorium package.", "",
    [[72, "Option"], [200, "Type"], [300, "Meaning"]], ...rows.map((r) => [[72, r[0]], [200, r[1]], [300, r[2]]]),
    "", "Load it with the usual command; the options go between brackets."]]);
  await upload(pdf, "tables");
  await retrieve("Which scriptorium option sets the colour of the ink pot?");
  const src = page.locator("#sources li.source", { has: page.locator('.src-kind[data-kind="table"]') }).first();
  await src.waitFor();
  // Drawn as a table under its caption, named with the numbered section it sits in:
  // the header, then the rows, cells as text.
  assert.equal(await src.locator("table.md-table caption").textContent(),
    "2.3 Package options — Table 1: Options of the scriptorium package.");
  assert.deepEqual(await src.locator("table.md-table th").allTextContents(), ["Option", "Type", "Meaning"]);
  const cells = await src.locator("table.md-table td").allTextContents();
  assert.ok(cells.includes("inkcolor") && cells.includes("The colour of the ink pot"), cells.join("|"));
  assert.equal(await src.locator(".src-kind").textContent(), "table");
  // "From your documents" quotes the answering row, under its table's caption and
  // header, as a table: no Markdown shown, and no other row.
  const quoted = page.locator(".quote blockquote.quote-table table.md-table").first();
  await quoted.waitFor();
  assert.deepEqual(await quoted.locator("th").allTextContents(), ["Option", "Type", "Meaning"]);
  assert.deepEqual(await quoted.locator("td").allTextContents(), ["inkcolor", "name", "The colour of the ink pot"]);
  assert.equal(await quoted.locator("caption").textContent(), "2.3 Package options — Table 1: Options of the scriptorium package.");
  assert.ok(!(await page.locator(".quote-list").textContent()).includes("| --- |"));
  await page.screenshot({ path: join(shots, "14-table-source.png") });
  await page.click("#theme-btn");
  await page.screenshot({ path: join(shots, "14-table-source-dark.png") });
  await page.click("#theme-btn");
  // The viewer marks the rows, not the header above them.
  await src.locator(".src-open").click();
  assert.equal(await shown(), 1);
  await page.waitForFunction(() => document.querySelectorAll("#viewer .textLayer .hl").length > 0, null, { timeout: 60_000 });
  const marked = await highlightedText();
  assert.ok(marked.includes("inkcolor") && marked.includes("colour of the ink pot"), marked);
  assert.ok(!marked.includes("Meaning"), marked);
  await page.screenshot({ path: join(shots, "14-table-viewer.png") });
  rmSync(dir, { recursive: true, force: true });
});

test("a hostile PDF opens, shows its text, and runs nothing", async () => {
  const hostile = join(dataDir, "hostile-viewer.pdf");
  makeHostilePdf(hostile);
  await upload(hostile, "hostile-viewer");
  await retrieve("Where does the marmoset lantern glow?");
  const src = page.locator('#sources li.source[data-file="hostile-viewer.pdf"]').first();
  await src.locator(".src-open").click();
  assert.equal(await shown(), 1);
  assert.match(await highlightedText(), /marmoset lantern glows/);
  // Click every link's area: nothing opens, navigates or runs.
  for (const y of [0, 1, 2, 3]) {
    const span = page.locator("#viewer .textLayer > span").nth(y);
    if (await span.count()) await span.click({ force: true });
  }
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator("#viewer a, #viewer iframe, #viewer object, #viewer embed, #viewer script").count(), 0);
  assert.equal(page.url().startsWith(origin), true);
  assert.deepEqual(problems, []);
  await page.screenshot({ path: join(shots, "11-viewer-hostile.png") });
});

test("a file gone from disk says so and opens nothing else", async () => {
  // Browser uploads are kept in the data directory: remove the kept copy.
  const uploads = join(dataDir, "uploads");
  const kept = readdirSync(uploads).find((f) => f.startsWith("hostile-viewer"));
  unlinkSync(join(uploads, kept));
  await page.click("#viewer-close");
  await page.locator('#documents li:has-text("hostile-viewer") .name').click();
  await page.waitForSelector("#viewer .viewer-error");
  assert.match(await page.locator("#viewer .viewer-error").innerText(), /no longer at|moved or deleted/);
  assert.equal(await page.locator("#viewer .pdf-page").count(), 0);
  await page.screenshot({ path: join(shots, "12-viewer-gone.png") });
  await page.click("#viewer-close");
});

test("a 1,000-page PDF opens at its last page with the passage highlighted (timed)", async () => {
  const long = join(dataDir, "long-1000.pdf");
  const pages = [];
  for (let i = 1; i < 1000; i++) pages.push([`Page ${i} of the long register.`]);
  // The last page: a paragraph long enough that the chunk with its end starts there.
  const last = [];
  for (let i = 0; i < 14; i++) last.push(`Entry ${i}: the harbour master records the weather, the ships and the cargo.`);
  last.push("The zephyrine lighthouse keeper logs the tide at dusk.");
  pages.push(last);
  makePdf(long, pages);
  const t0 = Date.now();
  await upload(long, "long-1000");
  const indexSecs = (Date.now() - t0) / 1000;
  await retrieve("Who logs the tide at the zephyrine lighthouse?");
  const src = page.locator('#sources li.source[data-file="long-1000.pdf"][data-pages="p. 1000"]').first();
  assert.equal(await src.count(), 1, await page.locator("#sources").innerText());
  const clicked = await page.evaluate(() => performance.now());
  await src.locator(".src-open").click();
  await page.waitForSelector('#viewer .pdf-page[data-page="1000"][data-rendered] .hl', { timeout: 120_000 });
  const ms = (await page.evaluate(() => performance.now())) - clicked;
  assert.match(await highlightedText(), /zephyrine lighthouse keeper logs the tide/);
  const timing = { pages: 1000, bytes: statSync(long).size, click_to_highlight_ms: Math.round(ms),
    viewer_reported_ms: Number(await page.locator("#viewer").getAttribute("data-shown-ms")), index_secs: indexSecs };
  writeFileSync(join(shots, "viewer-timing.json"), `${JSON.stringify(timing, null, 2)}\n`);
  console.log(`1,000-page PDF, last page: ${JSON.stringify(timing)}`);
  await page.screenshot({ path: join(shots, "13-viewer-1000.png") });
  assert.deepEqual(problems, []);
});
