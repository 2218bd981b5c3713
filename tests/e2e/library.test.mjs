// The documents list at scale, in a real browser (Debian's Chromium via
// playwright-core) over `quire serve`: a library of 2,000 synthetic documents
// (`quire bench fill-rows`, rows written straight into the SQLite index, no PDF read)
// is listed a page at a time (only the rows in view are in the page), scrolls (later
// rows appear, earlier ones leave), filters (a search narrows to the matching rows; the
// status filter and the banner's "See why" show the failed files, with their error,
// Retry and Ignore), moves by keyboard, passes axe, and shows a PDF that `quire index`
// adds from another process without a reload. The times to render and to filter the
// list are printed (not asserted) at 2,000 and at 10,000 documents. Screenshots of the
// list in both themes go to artifacts/library/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makePdf } from "./make-pdf.mjs";
import { repo, bin, startServer, launchBrowser } from "./harness.mjs";

const shots = join(repo, "artifacts/library");
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const servers = [];
const dirs = [];
let browser;
const pageErrors = [];

/** A data directory with `n` synthetic documents (every 50th failed). */
function library(n) {
  const dir = mkdtempSync(join(tmpdir(), `quire-library-${n}-`));
  dirs.push(dir);
  const t = Date.now();
  execFileSync(bin, ["bench", "fill-rows", String(n), dir], { stdio: ["ignore", "ignore", "inherit"] });
  console.log(`# filled ${n} rows in ${Date.now() - t} ms`);
  return dir;
}

async function serve(dir) {
  const s = await startServer(dir);
  servers.push(s.proc);
  return s.url;
}

async function open(url) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("dialog", (d) => d.accept());
  await page.addInitScript({ content: axeSource });
  await page.goto(url);
  await page.waitForSelector("#documents li.vrow[data-doc-id]");
  return page;
}

/** The names of the rows drawn, top to bottom. */
const names = (page) => page.$$eval("#documents li.vrow", (lis) => lis
  .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
  .map((li) => li.querySelector(".name")?.textContent || ""));

/** The last `documents-render` measure the page took (ms). */
const lastRender = (page) => page.evaluate(() => performance.getEntriesByName("documents-render").at(-1)?.duration);

/** Type `text` in the search box; resolves to the wall time (ms) until the rows drawn
 *  all match it, and the page's own measure of the list's reset. */
async function filter(page, text, check) {
  const t = Date.now();
  await page.fill("#doc-search", text);
  await page.waitForFunction(check, text);
  await page.waitForSelector("#documents:not([aria-busy])", { state: "attached" });
  return { wall: Date.now() - t, render: await lastRender(page) };
}

before(async () => {
  mkdirSync(shots, { recursive: true });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  for (const p of servers) p.kill("SIGTERM");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const allMatch = (text) => {
  if (document.querySelector("#documents[aria-busy]")) return false;
  const rows = [...document.querySelectorAll("#documents li.vrow")];
  return rows.length > 0 && rows.every((li) => (li.querySelector(".name")?.textContent || "").includes(text));
};

test("2,000 documents: listed a page at a time, scrolled, searched, filtered, by keyboard", async () => {
  const dir = library(2000);
  const url = await serve(dir);
  const page = await open(url);
  console.log(`# 2,000 documents: first render ${(await lastRender(page)).toFixed(1)} ms`);
  await page.waitForFunction(() => document.getElementById("doc-summary").textContent === "1,960 indexed, 40 failed");
  // Only the rows in view (and a few around them) are in the page.
  const drawn = await page.locator("#documents li.vrow").count();
  assert.ok(drawn > 5 && drawn < 80, `${drawn} rows drawn for 2,000 documents`);
  const first = await names(page);
  assert.equal(first[0], "bridges-00008.pdf");
  // The banner summarizes rather than lists.
  assert.match(await page.textContent("#banner"), /1,960 indexed, 40 failed/);

  for (const theme of ["light", "dark"]) {
    await page.evaluate((t) => { document.documentElement.dataset.theme = t; }, theme);
    await page.locator("#sidebar").screenshot({ path: join(shots, `list-${theme}.png`) });
  }

  // Scrolled to the end: the last rows appear, the first ones leave.
  await page.$eval("#documents-scroll", (s) => { s.scrollTop = s.scrollHeight; });
  await page.waitForSelector('#documents li.vrow:has-text("volcanoes-01991.pdf")');
  assert.ok(!(await names(page)).includes("bridges-00008.pdf"), "the first row is still drawn at the end");
  assert.ok((await page.locator("#documents li.vrow").count()) < 80);

  // A search narrows to the matching rows: comets-00106 … comets-00196.
  const f = await filter(page, "comets-001", allMatch);
  const found = await names(page);
  assert.equal(found.length, 10, found.join(", "));
  console.log(`# 2,000 documents: filter ${f.render.toFixed(1)} ms in the page, ${f.wall} ms typed-to-drawn`);
  await filter(page, "no such document", () => document.querySelector("#documents .vempty"));
  assert.match(await page.textContent("#documents"), /Nothing matches/);

  // By keyboard: Down moves row to row, End to the last one (scrolling as needed).
  await page.fill("#doc-search", "");
  await page.selectOption("#doc-filter", "done");
  await page.waitForFunction(() => !document.querySelector("#documents[aria-busy]")
    && document.querySelector('#documents li.vrow[aria-posinset="1"] .name')?.textContent === "bridges-00008.pdf");
  await page.focus('#documents li.vrow[aria-posinset="1"] button.name');
  for (let i = 0; i < 40; i++) await page.keyboard.press("ArrowDown");
  assert.equal(await page.evaluate(() => document.activeElement.closest("li").getAttribute("aria-posinset")), "41");
  await page.keyboard.press("End");
  await page.waitForFunction(() => document.activeElement?.closest?.("li")?.getAttribute("aria-posinset") === "1960");
  assert.equal(await page.evaluate(() => document.activeElement.closest("li").getAttribute("aria-setsize")), "1960");

  // axe on the sidebar with the list scrolled: no serious or critical violation.
  const bad = await page.evaluate(async () => (await window.axe.run("#sidebar", { resultTypes: ["violations"] })).violations
    .filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.help}`));
  assert.deepEqual(bad, []);

  // "See why" shows the failed files, each with its error, Retry and Ignore.
  await page.click('#banner button:has-text("See why")');
  await page.waitForFunction(() => document.getElementById("doc-filter").value === "failed"
    && [...document.querySelectorAll("#documents li.vrow")].every((li) => li.classList.contains("failed")));
  const failedRow = page.locator("#documents li.vrow.failed").first();
  assert.match(await failedRow.textContent(), /not a PDF/);
  const ignored = await failedRow.locator(".name").textContent();
  await failedRow.locator('button:has-text("Ignore")').click();
  await page.waitForFunction(() => document.getElementById("doc-summary").textContent === "1,960 indexed, 39 failed");
  // The counts are drawn first, then the list read again: wait for the row to go.
  await page.waitForFunction((name) => !document.querySelector("#documents[aria-busy]")
    && ![...document.querySelectorAll("#documents li.vrow .name")].some((n) => n.textContent === name), ignored)
    .catch(() => {});
  assert.ok(!(await names(page)).includes(ignored), `${ignored} still listed after Ignore`);

  // Another process indexes a PDF: the list and the counts follow without a reload.
  await page.selectOption("#doc-filter", "all");
  const pdf = join(dir, "zebra-notes.pdf");
  makePdf(pdf, [["Zebras have black and white stripes that confuse biting flies."]]);
  execFileSync(bin, ["index", "--data-dir", dir, pdf], { stdio: ["ignore", "ignore", "inherit"] });
  await page.waitForFunction(() => document.getElementById("doc-summary").textContent === "1,961 indexed, 39 failed", null, { timeout: 30_000 });
  await filter(page, "zebra", allMatch);
  assert.deepEqual(await names(page), ["zebra-notes.pdf"]);
  assert.deepEqual(pageErrors, []);
});

test("10,000 documents: the times to render and to filter the list (printed)", async () => {
  const url = await serve(library(10_000));
  const page = await open(url);
  const render = await lastRender(page);
  await page.waitForFunction(() => document.getElementById("doc-summary").textContent === "9,800 indexed, 200 failed");
  const drawn = await page.locator("#documents li.vrow").count();
  assert.ok(drawn < 80, `${drawn} rows drawn for 10,000 documents`);
  // The first paint of the list after a reload, timed by playwright around it.
  const t = Date.now();
  await page.reload();
  await page.waitForSelector("#documents li.vrow[data-doc-id]");
  const reload = Date.now() - t;
  const f = await filter(page, "orchids-09", allMatch);
  assert.equal(await page.evaluate(() => document.querySelector('#documents li.vrow')?.getAttribute("aria-setsize")), "100");
  const g = await filter(page, "tides", allMatch);
  console.log(`# 10,000 documents: render ${render.toFixed(1)} ms in the page (reload to rows drawn ${reload} ms); `
    + `filter ${f.render.toFixed(1)} ms in the page (${f.wall} ms typed-to-drawn), a broad one ${g.render.toFixed(1)} ms (${g.wall} ms)`);
  assert.deepEqual(pageErrors, []);
});
