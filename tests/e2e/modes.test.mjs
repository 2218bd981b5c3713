// Every knob of the synthesizer, in a real browser (Debian's Chromium) over
// `quire serve` with the real default models: the templates in Settings show
// LlamaIndex's defaults with a reset, a custom mode is composed from the built-in
// modes' blocks, appears in the Mode menu, and answers with its steps shown (which
// template each read, what the model read after its chat template). Screenshots in
// both themes go to artifacts/e2e/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo, shared, corpusQuestion, startServer, launchBrowser, upload } from "./harness.mjs";

const shots = join(repo, "artifacts/e2e");
const wasyQ = corpusQuestion("A23");

let server, url, browser, page, dataDir;
const pageErrors = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-modes-"));
  ({ url, proc: server } = await startServer(dataDir));
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
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

test("index a corpus PDF", async () => {
  await upload(page, join(shared, "corpus/pdfs/wasysym.pdf"), "wasysym");
});

test("the templates show their defaults, mark a change, and reset", async () => {
  await page.click("#settings-btn");
  await page.waitForSelector("#settings[open]");
  await page.click("#templates-section > summary");
  const refine = page.locator("#tpl-refine_template");
  assert.match(await refine.inputValue(), /\{existing_answer\}/);
  const state = page.locator(".template-field", { has: refine }).locator(".template-state");
  assert.equal(await state.textContent(), "default");
  await refine.fill("{query_str} | {existing_answer} | {context_msg} | terse");
  assert.equal(await state.textContent(), "custom");
  await page.locator(".template-field", { has: refine }).getByRole("button", { name: "Reset" }).click();
  assert.equal(await state.textContent(), "default");
  assert.match(await refine.inputValue(), /We have the opportunity to refine/);
  // simple_summarize's template is the QA template until it has its own.
  assert.equal(await page.inputValue("#tpl-simple_template"), await page.inputValue("#tpl-text_qa_template"));
});

test("a custom mode is composed in Settings and listed in the Mode menu", async () => {
  await page.click("#custom-modes-section > summary");
  await page.click("#add-custom-mode");
  const row = page.locator(".custom-mode").last();
  await row.locator('[name="name"]').fill("qa_tree");
  await row.locator('[name="description"]').fill("Answers each chunk, then summarizes the answers.");
  await row.locator('[name="pack"]').selectOption("separate");
  await row.locator('[name="combine"]').selectOption("tree");
  await row.locator('[name="first"]').selectOption("qa");
  await row.locator('[name="next"]').selectOption("summary");
  // Fewer, shorter calls keep the test quick.
  await page.fill('#settings-form [name="top_k"]', "2");
  await page.fill('#settings-form [name="max_tokens"]', "48");
  for (const t of ["light", "dark"]) {
    await theme(t);
    await row.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(shots, `custom-mode-settings-${t}.png`) });
  }
  await theme("light");
  await page.click("#settings-save");
  await page.waitForSelector("#settings:not([open])", { state: "attached" });
  assert.deepEqual(pageErrors, []);
  const option = page.locator('#mode optgroup[label="Your modes"] option[value="qa_tree"]');
  assert.equal(await option.count(), 1);
  await page.selectOption("#mode", "qa_tree");
  assert.equal(await page.textContent("#mode-help"), "Answers each chunk, then summarizes the answers.");
  // The settings keep it.
  const saved = await page.evaluate(() => fetch("/api/settings").then((r) => r.json()));
  assert.deepEqual(saved.custom_modes, [{ name: "qa_tree", description: "Answers each chunk, then summarizes the answers.",
    pack: "separate", combine: "tree", first: "qa", next: "summary" }]);
});

test("the custom mode answers, streamed, with its steps shown", async () => {
  const before = await page.locator(".msg.assistant").count();
  await page.fill("#question", wasyQ.question);
  await page.press("#question", "Enter");
  // The answer's text appears while the message is still streaming.
  await page.waitForFunction((n) => {
    const m = document.querySelectorAll(".msg.assistant")[n];
    return m && m.classList.contains("streaming") && m.querySelector(".body").textContent.trim().length > 0;
  }, before, { timeout: 600_000 });
  await page.waitForFunction((n) => {
    const m = document.querySelectorAll(".msg.assistant")[n];
    return m && !m.classList.contains("streaming");
  }, before, { timeout: 600_000 });
  const msg = page.locator(".msg.assistant").last();
  assert.match(await msg.locator(".who").textContent(), /qa_tree/);
  assert.ok((await msg.locator(".body").textContent()).trim().length > 0);
  await msg.locator("details.steps > summary").click();
  const labels = await msg.locator(".step .label").allTextContents();
  assert.equal(labels.length, 3, labels.join(" / "));
  assert.match(labels[0], /^summarize level 1, 1 of 2/);
  assert.match(labels[2], /^summarize level 2, final answer/);
  // The leaves read the QA template, the top the summary template; each step also
  // shows what the model read after its chat template.
  const prompts = await msg.locator(".step > details:not(.rendered) pre").allTextContents();
  assert.match(prompts[0], /^Context information is below\./);
  assert.match(prompts[2], /^Context information from multiple sources is below\./);
  const rendered = await msg.locator(".step details.rendered pre").allTextContents();
  assert.equal(rendered.length, 3);
  assert.ok(rendered[0].includes(prompts[0]) && rendered[0].length > prompts[0].length);
  assert.match(await msg.locator(".step details.rendered summary").first().textContent(), /what the model read.*\(\d+ tokens\)/);
  await msg.locator(".step details.rendered").first().evaluate((d) => { d.open = true; });
  for (const t of ["light", "dark"]) {
    await theme(t);
    await page.screenshot({ path: join(shots, `custom-mode-answer-${t}.png`) });
  }
  await theme("light");
  assert.deepEqual(pageErrors, []);
});
