// A finished product, in a real browser (Debian's Chromium) over `quire serve` with the
// real default models: collections and the composer's scope picker (retrieval honours
// the scope and each answer names it), the honest "not found" answer, settings that
// refuse bad values with clear messages, and the first run without model files.
// Screenshots in both themes go to artifacts/e2e/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo, shared, corpusQuestion, startServer, launchBrowser, upload, askIn } from "./harness.mjs";

const shots = join(repo, "artifacts/e2e");
const wasyQ = corpusQuestion("A23");
const OFF_TOPIC = "What is a good recipe for banana bread with walnuts?";

let server, url, browser, page, dataDir;
const pageErrors = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-scope-"));
  ({ url, proc: server } = await startServer(dataDir));
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("dialog", (d) => { pageErrors.push(`dialog: ${d.message()}`); d.dismiss(); });
  await page.goto(url);
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function theme(t) {
  await page.evaluate((t) => { document.documentElement.dataset.theme = t; }, t);
}

/** The files of the sources panel's sources. */
const sourceFiles = () => page.locator("#sources li.source").evaluateAll((lis) => lis.map((li) => li.dataset.file));

test("index two corpus PDFs", async () => {
  await upload(page, join(shared, "corpus/pdfs/wasysym.pdf"), "wasysym");
  await upload(page, join(shared, "corpus/pdfs/txfontsdoc.pdf"), "txfontsdoc");
  assert.match(await page.textContent("#scope-summary"), /2 documents/);
});

test("a collection scopes a question, and the answer names it", async () => {
  // Make the collection in its dialog: a name and one document.
  await page.click("#new-collection");
  await page.waitForSelector("#collection-dialog[open]");
  await page.fill("#collection-name", "Fonts");
  await page.locator("#collection-docs label", { hasText: "txfontsdoc.pdf" }).locator("input").check();
  await page.click("#collection-save");
  await page.waitForSelector("#collection-dialog:not([open])", { state: "attached" });
  await page.waitForSelector('#collections li:has-text("Fonts")');
  // A new collection becomes the scope.
  assert.equal(await page.locator("#scope option:checked").textContent(), "Fonts");
  assert.match(await page.textContent("#scope-summary"), /txfontsdoc\.pdf/);

  await page.click("#new-chat");
  const msg = await askIn(page, "no_text", wasyQ.question);
  assert.equal(await msg.locator(".scope-chip").textContent(), 'Collection "Fonts"');
  const files = await sourceFiles();
  assert.ok(files.length > 0, "no sources");
  assert.deepEqual([...new Set(files)], ["txfontsdoc.pdf"], "a source from outside the collection");
  assert.match(await page.textContent("#queries"), /Searched: Collection "Fonts"/);
  for (const t of ["light", "dark"]) {
    await theme(t);
    await page.screenshot({ path: join(shots, `scope-collection-${t}.png`) });
  }
  await theme("light");
});

test("chosen documents scope a question; all documents again finds the page", async () => {
  await page.selectOption("#scope", "docs");
  await page.waitForSelector("#collection-dialog[open]");
  assert.ok(await page.locator("#collection-name-row").isHidden(), "choosing documents asks for no name");
  await page.locator("#collection-docs label", { hasText: "wasysym.pdf" }).locator("input").check();
  await page.click("#collection-save");
  await page.waitForSelector("#collection-dialog:not([open])", { state: "attached" });
  const msg = await askIn(page, "no_text", wasyQ.question);
  assert.equal(await msg.locator(".scope-chip").textContent(), "wasysym.pdf");
  assert.deepEqual([...new Set(await sourceFiles())], ["wasysym.pdf"]);

  await page.selectOption("#scope", "all");
  const all = await askIn(page, "no_text", wasyQ.question);
  assert.equal(await all.locator(".scope-chip").textContent(), "All documents");
  assert.ok((await sourceFiles()).includes("wasysym.pdf"), "all documents: wasysym's page is found again");
});

test("a question the documents do not cover gets an honest answer and the closest passages", async () => {
  await page.click("#new-chat");
  const msg = await askIn(page, "compact", OFF_TOPIC);
  assert.ok(await msg.evaluate((m) => m.classList.contains("not-found")), "not marked not found");
  assert.match(await msg.locator(".body").innerText(), /don't seem to cover/);
  assert.match(await msg.locator(".stats").innerText(), /0 LLM calls/);
  const decision = page.locator("#queries .relevance.not-covered");
  assert.match(await decision.innerText(), /below the threshold/);
  assert.ok(await page.locator("#sources li.source").count() > 0, "the closest passages are shown");
  // Kept: reopened, the answer is still marked and explained.
  await page.reload();
  await page.waitForSelector(".msg.assistant.not-found");
  await page.click(".msg.assistant.not-found");
  await page.waitForSelector("#queries .relevance.not-covered");
  for (const t of ["light", "dark"]) {
    await theme(t);
    await page.screenshot({ path: join(shots, `not-found-${t}.png`) });
  }
  await theme("light");
});

test("settings refuse bad values with a message naming the field, and keep nothing", async () => {
  await page.click("#settings-btn");
  await page.waitForSelector("#settings[open]");
  await page.click("#templates-section > summary");
  await page.fill('#settings [name="text_qa_template"]', "Answer {query_str} please");
  await page.click("#settings-save");
  await page.waitForSelector("#settings-error:not([hidden])");
  assert.match(await page.textContent("#settings-error"), /\{context_str\}/);
  await page.fill('#settings [name="text_qa_template"]', "");
  await page.fill('#settings [name="not_found_threshold"]', "1.5");
  await page.click("#settings-save");
  await page.waitForFunction(() => /not_found_threshold/.test(document.getElementById("settings-error").textContent));
  await page.screenshot({ path: join(shots, "settings-refused.png") });
  await page.fill('#settings [name="not_found_threshold"]', "");
  await page.click("#settings-save");
  await page.waitForSelector("#settings:not([open])", { state: "attached" });
  const saved = await page.evaluate(() => fetch("/api/settings").then((r) => r.json()));
  assert.equal(saved.text_qa_template, null);
  assert.equal(saved.not_found_threshold, null);
  assert.deepEqual(pageErrors, []);
});

test("the first run without model files says what is missing and how to get it", async () => {
  // Models are looked for only in an empty folder (QUIRE_MODELS_PATH replaces the
  // search path).
  const home = mkdtempSync(join(tmpdir(), "quire-firstrun-"));
  const { url: bare, proc } = await startServer(join(home, "data"), { cwd: home, env: { QUIRE_MODELS_PATH: join(home, "none") } });
  const p = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  try {
    await p.goto(bare);
    const card = p.locator(".first-run");
    await card.waitFor();
    const text = await card.innerText();
    assert.match(text, /needs its models first/);
    assert.match(text, /all-MiniLM-L6-v2/);
    assert.match(text, /qwen2\.5-coder-0\.5b-instruct-q4_k_m\.gguf/);
    assert.match(text, /models\/fetch\.sh/);
    assert.match(text, new RegExp(join(home, "none").replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
    for (const t of ["light", "dark"]) {
      await p.evaluate((t) => { document.documentElement.dataset.theme = t; }, t);
      await p.screenshot({ path: join(shots, `first-run-${t}.png`) });
    }
    // Asking anyway fails with the same guidance, not a crash.
    await p.fill("#question", "What is in my documents?");
    await p.press("#question", "Enter");
    await p.waitForSelector(".msg.assistant .error");
    assert.match(await p.locator(".msg.assistant .error").innerText(), /nothing is indexed yet|models\/fetch\.sh/);
  } finally {
    await p.close();
    proc.kill("SIGTERM");
    rmSync(home, { recursive: true, force: true });
  }
});
