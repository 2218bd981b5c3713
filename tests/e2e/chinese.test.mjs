// Chinese end to end in a real browser (Debian's Chromium via playwright-core): a
// Chinese corpus PDF indexed, a Chinese question asked, and the Chinese text on screen
// (the conversation's title, the question, the sources, the viewer) drawn with real
// glyphs, not boxes; the question's page opened with the passage highlighted; the
// FAQ's table of contents, among the sources, ranked below the answer and labelled.
// Screenshots in both themes go to artifacts/e2e/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo, shared, corpusQuestion, startServer, launchBrowser, askIn } from "./harness.mjs";
import { glyphCheck } from "./glyphs.mjs";
import { makePdf } from "./make-pdf.mjs";

const shots = join(repo, "artifacts/e2e");
const question = corpusQuestion("A03");
let server, url, browser, page, dataDir;
const problems = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-zh-"));
  ({ url, proc: server } = await startServer(dataDir));
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 }, locale: "zh-CN" });
  page.on("pageerror", (e) => problems.push(`page error: ${e}`));
  page.on("dialog", (d) => { problems.push(`dialog: ${d.message()}`); d.dismiss(); });
  await page.goto(url);
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** The platform fonts Chromium drew `selector`'s text with (DevTools protocol). */
async function platformFonts(selector) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("DOM.enable");
  await cdp.send("CSS.enable");
  const { root } = await cdp.send("DOM.getDocument", { depth: -1 });
  const { nodeId } = await cdp.send("DOM.querySelector", { nodeId: root.nodeId, selector });
  const { fonts } = await cdp.send("CSS.getPlatformFontsForNode", { nodeId });
  await cdp.detach();
  return fonts;
}

test("a Chinese question over a Chinese PDF reads as Chinese on screen, in both themes", async () => {
  await page.setInputFiles("#file-input", join(shared, "corpus/pdfs", question.file));
  // Listed by its title (Chinese here); its path names the file.
  await page.waitForSelector('#documents li[title*="ctex-faq"]', { timeout: 600_000 });
  await askIn(page, "no_text", question.question, 120_000);
  await page.waitForSelector("#conversations li .name");
  // Each piece of Chinese text on screen is drawn with real glyphs.
  for (const sel of ["#conversations li .name", ".msg.user .body", "#sources li.source .src-text"]) {
    const r = await page.evaluate(glyphCheck, sel);
    assert.ok(r.ok, `${sel}: ${JSON.stringify(r)}`);
  }
  assert.equal(await page.getAttribute(".msg.user .body", "lang"), "zh-Hans");
  const fonts = await platformFonts("#sources li.source .src-text");
  assert.ok(fonts.some((f) => /CJK|Han|Hei|PingFang|YaHei|WenQuanYi/i.test(f.familyName) && f.glyphCount > 0), JSON.stringify(fonts));
  // The answering page among the sources, opened with the passage highlighted.
  const where = await page.locator("#sources li.source").evaluateAll((lis) => lis.map((li) => li.dataset.pages));
  const i = where.findIndex((w) => w.match(/\d+/g).map(Number).includes(question.pages[0]));
  assert.ok(i >= 0, `page ${question.pages[0]} not among ${where.join("; ")}`);
  await page.locator("#sources li.source").nth(i).locator(".src-open").click();
  await page.waitForSelector(`#viewer .pdf-page[data-page="${question.pages[0]}"][data-rendered]`, { timeout: 120_000 });
  const hl = (await page.locator("#viewer .textLayer .hl").allTextContents()).join("");
  assert.ok(/\p{Script=Han}/u.test(hl), `no Chinese highlighted: ${hl.slice(0, 200)}`);
  assert.ok(hl.includes("iffalse"), hl.slice(0, 300));
  await page.screenshot({ path: join(shots, "20-chinese-light.png") });
  await page.evaluate(() => { document.documentElement.dataset.theme = "dark"; });
  await page.screenshot({ path: join(shots, "20-chinese-dark.png") });
  await page.evaluate(() => { document.documentElement.dataset.theme = "light"; });
  assert.deepEqual(problems, []);
});

test("a table of contents among the sources is ranked below the answer and labelled, in both themes", async () => {
  // ctex-faq.pdf (indexed above) lists this question on its contents page, "38
  // 如何注释掉一大段内容，不做编译？ ........ 15": demoted, not dropped, it comes after the
  // answer on pages 14-15 when enough sources are kept to show it.
  await saveSettings({ top_k: 10 });
  await page.click("#new-chat");
  await askIn(page, "no_text", "如何注释掉一大段内容，不做编译？", 120_000);
  const sources = page.locator("#sources li.source");
  const rows = await sources.evaluateAll((lis) => lis.map((li) => ({
    pages: li.dataset.pages, kind: li.querySelector(".src-kind")?.textContent || null })));
  const toc = rows.findIndex((r) => r.kind === "table of contents");
  const answer = rows.findIndex((r) => !r.kind && r.pages.match(/\d+/g).map(Number).includes(15));
  assert.ok(toc >= 0, `no contents page among ${JSON.stringify(rows)}`);
  assert.ok(answer >= 0 && answer < toc, JSON.stringify(rows));
  assert.equal(rows[0].kind, null, JSON.stringify(rows));
  // The label is readable in both themes: its text darker (or lighter) than its ground.
  const label = sources.nth(toc).locator(".src-kind");
  for (const theme of ["light", "dark"]) {
    await page.evaluate((t) => { document.documentElement.dataset.theme = t; }, theme);
    const { color, background } = await label.evaluate((n) => ({ color: getComputedStyle(n).color, background: getComputedStyle(n).backgroundColor }));
    assert.notEqual(color, background, theme);
    assert.ok(await label.isVisible(), theme);
    await label.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(shots, `21-contents-source-${theme}.png`) });
  }
  await page.evaluate(() => { document.documentElement.dataset.theme = "light"; });
  await saveSettings({ top_k: 4 });
  assert.deepEqual(problems, []);
});

/** Change the settings as the Settings dialog saves them. */
async function saveSettings(patch) {
  const saved = await page.evaluate(async (patch) => {
    const s = await (await fetch("/api/settings")).json();
    for (const k of ["models", "embedders", "index_embedders", "modes", "default_templates"]) delete s[k];
    const r = await fetch("/api/settings", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...s, ...patch }) });
    return { ok: r.ok, body: await r.text() };
  }, patch);
  assert.ok(saved.ok, saved.body);
}

test("a file with a Chinese name uploads, lists under its name and opens", async () => {
  const path = join(dataDir, "plain.pdf");
  makePdf(path, [["The quetzal feather ledger lists every feather by colour."]]);
  const name = "羽毛账本 说明.pdf";
  await page.setInputFiles("#file-input", { name, mimeType: "application/pdf", buffer: readFileSync(path) });
  const item = page.locator("#documents li .name", { hasText: name });
  await item.waitFor({ timeout: 300_000 });
  const r = await page.evaluate(glyphCheck, `#documents li[data-doc-id="${await item.evaluate((n) => n.closest("li").dataset.docId)}"] .name`);
  assert.ok(r.ok, JSON.stringify(r));
  await item.click();
  await page.waitForSelector('#viewer .pdf-page[data-page="1"][data-rendered]');
  assert.equal(await page.locator("#viewer-title").innerText(), name);
  assert.match(await page.locator("#viewer .textLayer").first().innerText(), /quetzal feather ledger/);
  assert.deepEqual(problems, []);
});
