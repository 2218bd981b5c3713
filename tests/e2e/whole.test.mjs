// Whole-document questions in a real browser (Debian's Chromium) over `quire serve`
// with the smallest real model (SmolLM2): the answer's decision line ("Read all 4
// pages of wasysym.pdf"), its Whole / Search toggle asking again the other way, and a
// long document's pages read, stopped by Stop. Screenshots in both
// themes go to artifacts/e2e/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo, shared, startServer, launchBrowser, upload, askIn } from "./harness.mjs";

const shots = join(repo, "artifacts/e2e");
let server, url, browser, page, dataDir;
const pageErrors = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-whole-"));
  writeFileSync(join(dataDir, "settings.json"), JSON.stringify({
    model: join(repo, "models/SmolLM2-135M-Instruct.Q4_1.gguf"),
    max_tokens: 24,
  }));
  ({ url, proc: server } = await startServer(dataDir));
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  await page.goto(url);
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function shoot(name) {
  for (const t of ["light", "dark"]) {
    await page.evaluate((t) => { document.documentElement.dataset.theme = t; }, t);
    await page.screenshot({ path: join(shots, `${name}-${t}.png`) });
  }
  await page.evaluate(() => { document.documentElement.dataset.theme = "light"; });
}

test("index two corpus PDFs", async () => {
  await upload(page, join(shared, "corpus/pdfs/wasysym.pdf"), "wasysym");
  await upload(page, join(shared, "corpus/pdfs/txfontsdoc.pdf"), "txfontsdoc");
});

test("a summary question reads the whole document, says so, and the toggle searches instead", async () => {
  const msg = await askIn(page, "compact", "Summarize the wasysym documentation.");
  assert.match(await msg.locator(".route .route-label").textContent(), /^Read all 4 pages of wasysym\.pdf/);
  assert.match(await msg.locator(".route .route-why").textContent(), /summarize/);
  const whole = msg.locator(".route-toggle button", { hasText: "Whole" });
  const search = msg.locator(".route-toggle button", { hasText: "Search" });
  assert.equal(await whole.getAttribute("aria-pressed"), "true");
  assert.equal(await search.getAttribute("aria-pressed"), "false");
  assert.ok((await msg.locator(".body").textContent()).trim().length > 0, "no answer");
  await shoot("whole-route");

  // The toggle asks the question again from the top passages, beside the answer.
  const before = await page.locator(".msg.assistant").count();
  await search.click();
  await page.waitForFunction((n) => {
    const msgs = document.querySelectorAll(".msg.assistant");
    return msgs.length > n && !msgs[msgs.length - 1].classList.contains("streaming");
  }, before, { timeout: 600_000 });
  const again = page.locator(".msg.assistant").last();
  assert.match(await again.locator(".route .route-label").textContent(), /^Searched: top \d+ passages/);
  assert.match(await again.locator(".route .route-why").textContent(), /your choice/);
  assert.equal(await again.locator(".route-toggle button", { hasText: "Search" }).getAttribute("aria-pressed"), "true");
  await shoot("whole-route-search");
});

test("a long document shows the pages read, and Stop stops it", async () => {
  await page.click("#new-chat");
  await page.selectOption("#mode", "compact");
  await page.fill("#question", "Summarize txfontsdoc.pdf chapter by chapter.");
  await page.press("#question", "Enter");
  const msg = page.locator(".msg.assistant").last();
  await msg.locator(".route .route-label", { hasText: "Read all 32 pages of txfontsdoc.pdf" }).waitFor({ timeout: 600_000 });
  // The pages read so far (the time left comes once a part is read: tests/it/whole.rs).
  await page.waitForFunction(() => {
    const p = [...document.querySelectorAll(".msg.assistant")].pop()?.querySelector(".route-progress");
    return p && !p.hidden && /\d+ of 32 pages read/.test(p.textContent);
  }, null, { timeout: 600_000 });
  assert.ok(await msg.locator(".route-progress progress").isVisible());
  await shoot("whole-route-reading");
  await page.click("#stop");
  await page.waitForFunction(() => {
    const m = [...document.querySelectorAll(".msg.assistant")].pop();
    return m && !m.classList.contains("streaming");
  }, null, { timeout: 120_000 });
  assert.equal(await msg.locator(".stats").textContent(), "Stopped.");
  assert.deepEqual(pageErrors, []);
});
