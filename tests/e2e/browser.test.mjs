// End-to-end test of Quire's web UI in a real browser (Debian's Chromium via
// playwright-core): `quire serve` with the real default models on a temporary data
// directory. Screenshots go to artifacts/e2e/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makePdf } from "./make-pdf.mjs";
import { repo, shared, corpusQuestion, startServer, launchBrowser, upload as uploadFile, askIn as ask } from "./harness.mjs";

const shots = join(repo, "artifacts/e2e");
const MODES = ["compact", "refine", "tree_summarize", "simple_summarize", "no_text", "accumulate", "compact_accumulate"];
// The question about wasysym.pdf's page 2 from the shared corpus.
const question = corpusQuestion("A23");

let server, url, browser, page, dataDir;
let expectConfirm = false;
const pageErrors = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-e2e-"));
  // QUIRE_E2E_MODEL=<gguf name> runs the suite with another LLM (a smaller one on a
  // slow machine); the default is the settings' default model.
  if (process.env.QUIRE_E2E_MODEL) {
    writeFileSync(join(dataDir, "settings.json"), JSON.stringify({ model: process.env.QUIRE_E2E_MODEL }));
  }
  ({ url, proc: server } = await startServer(dataDir));
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  // A dialog is an error, except the confirmation a test expects (deleting).
  page.on("dialog", (d) => {
    if (expectConfirm && d.type() === "confirm") { expectConfirm = false; d.accept(); return; }
    pageErrors.push(`dialog: ${d.message()}`);
    d.dismiss();
  });
  // Record whether answer text grew while the message was still streaming.
  await page.addInitScript(() => {
    window.__streamed = 0;
    new MutationObserver(() => {
      const live = document.querySelector(".msg.assistant.streaming .body");
      if (live && live.textContent.length > 0) window.__streamed++;
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  await page.goto(url);
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function upload(path, name) {
  await uploadFile(page, path, name, 300_000);
}

/** Ask in the page, with the streaming counter reset first. */
async function askIn(mode, text) {
  await page.evaluate(() => { window.__streamed = 0; });
  return ask(page, mode, text);
}

test("upload a corpus PDF and see indexing finish", async () => {
  await upload(join(shared, "corpus/pdfs", question.file), question.file.replace(/\.pdf$/, ""));
  await page.screenshot({ path: join(shots, "01-indexed.png") });
});

for (const mode of MODES) {
  test(`ask in ${mode} mode: tokens stream, sources show the right file and page`, async () => {
    // A new conversation each: the question goes straight through, as typed.
    await page.click("#new-chat");
    const msg = await askIn(mode, question.question);
    const errors = await msg.locator(".error").count();
    assert.equal(errors, 0, await msg.innerText());
    const sources = page.locator("#sources li.source");
    assert.ok(await sources.count() > 0, "no sources shown");
    const where = await sources.evaluateAll((lis) => lis.map((li) => `${li.dataset.file} ${li.dataset.pages}`));
    assert.ok(where.some((w) => w.includes(question.file) && new RegExp(`\\b${question.pages[0]}\\b`).test(w)),
      `expected ${question.file} p. ${question.pages[0]} among ${where.join("; ")}`);
    if (mode !== "no_text") {
      const body = await msg.locator(".body").innerText();
      assert.ok(body.trim().length > 0, "empty answer");
      assert.ok(await page.evaluate(() => window.__streamed) > 1, "answer text did not arrive while streaming");
      assert.match(await msg.locator(".stats").innerText(), /tokens\/s/);
    }
    await page.screenshot({ path: join(shots, `02-${mode}.png`) });
  });
}

test("stop a generation midway", async () => {
  await page.selectOption("#mode", "refine");
  const before = await page.locator(".msg.assistant").count();
  await page.fill("#question", "Write a long essay on every symbol in this document.");
  await page.press("#question", "Enter");
  await page.waitForFunction((n) => {
    const msgs = document.querySelectorAll(".msg.assistant");
    const m = msgs[msgs.length - 1];
    return msgs.length > n && m.classList.contains("streaming") && m.querySelector(".steps .out")?.textContent.length > 0;
  }, before, { timeout: 300_000 });
  await page.click("#stop");
  await page.waitForFunction(() => !document.querySelector(".msg.assistant.streaming"), null, { timeout: 60_000 });
  assert.match(await page.locator(".msg.assistant").last().locator(".stats").innerText(), /Stopped/);
  await page.screenshot({ path: join(shots, "03-stopped.png") });
});

test("reload and find the conversation again", async () => {
  await page.reload();
  await page.waitForSelector("#conversations li");
  const titles = await page.locator("#conversations li .name").allInnerTexts();
  assert.ok(titles.some((t) => question.question.startsWith(t.replace(/…$/, ""))), titles.join("; "));
  await page.waitForSelector(".msg.user");
  assert.ok(await page.locator(".msg.assistant").count() >= 1);
  assert.ok(titles.length >= MODES.length, titles.join("; "));
  await page.screenshot({ path: join(shots, "04-reloaded.png") });
});

test("a follow-up is condensed, cited and reranked, and whole again when reopened", async () => {
  // Condensed: the follow-up search that condenses and fuses (the default searches the
  // thread as typed, without condensing: the window's test).
  await page.click("#settings-btn");
  await page.waitForSelector("#settings[open]");
  assert.equal(await page.inputValue("#settings select[name=follow_up_search]"), "thread_only");
  await page.selectOption("#settings select[name=follow_up_search]", "thread");
  // The select as a person sees it, in both themes.
  await page.locator("#settings select[name=follow_up_search]").scrollIntoViewIfNeeded();
  const theme = await page.evaluate(() => document.documentElement.dataset.theme);
  for (const t of ["light", "dark"]) {
    await page.evaluate((v) => { document.documentElement.dataset.theme = v; }, t);
    await page.locator("#settings").screenshot({ path: join(shots, `05-follow-up-search-${t}.png`) });
  }
  await page.evaluate((t) => { document.documentElement.dataset.theme = t; }, theme);
  await page.click("#settings-save");
  await page.waitForSelector("#settings[open]", { state: "detached" });
  await page.click("#new-chat");
  await page.selectOption("#chat-mode", "condense_plus_context");
  await page.check("#cite");
  await page.check("#rerank");
  await askIn("compact", question.question);
  const follow = "And what does it do to the integral signs?";
  const msg = await askIn("compact", follow);
  assert.equal(await msg.locator(".error").count(), 0, await msg.innerText());
  // What the follow-up was condensed into is shown, above the answer and the sources.
  const searched = (await msg.locator(".searched").innerText()).replace(/^Searched for:\s*/, "");
  assert.ok(searched.trim().length > 0);
  assert.match(await page.locator("#queries .searched").innerText(), /Searched for:/);
  const labels = await msg.locator(".steps .step .label").allTextContents();
  assert.equal(labels[0], "condense the question", labels.join("; "));
  assert.ok(labels[1].startsWith("rerank the sources"), labels.join("; "));
  // Reranked (or the fused order kept, with a note saying so); numbered sources.
  const reranked = await page.locator("#sources .src-rerank").count();
  const note = await page.locator("#queries .note").allInnerTexts();
  assert.ok(reranked > 0 || note.some((n) => n.includes("reranker")), note.join("; "));
  assert.ok(await page.locator("#sources .src-cites").count() > 0, "no source is numbered");
  // Each [N] in the answer is a link that selects the source it names.
  const cites = msg.locator(".body button.cite");
  const n = await cites.count();
  const body = await msg.locator(".body").innerText();
  const markers = [...body.matchAll(/\[(\d+)\]/g)].length;
  assert.equal(n, markers, `every marker a link: ${body}`);
  if (n > 0) {
    await cites.first().click();
    const sel = page.locator("#sources li.source.selected");
    assert.equal(await sel.count(), 1);
    assert.equal(await sel.locator(".cited.current").count(), 1);
    // and opens the viewer at that source's page, the cited piece highlighted.
    await page.waitForSelector("#viewer .pdf-page[data-rendered]", { timeout: 60_000 });
    const pages = await sel.getAttribute("data-pages");
    assert.equal(await page.inputValue("#viewer-page"), pages.match(/\d+/)[0]);
    assert.ok(await page.locator("#viewer .textLayer .hl").count() > 0, await page.locator("#viewer-status").innerText());
    await page.screenshot({ path: join(shots, "06-follow-up-viewer.png") });
    await page.keyboard.press("Escape");
    assert.ok(await page.locator("#viewer").isHidden());
  }
  await page.screenshot({ path: join(shots, "06-follow-up.png") });
  // Reopened: the steps with their prompts, the searched-for line, the sources.
  await page.reload();
  await page.waitForSelector(".msg.assistant .searched:not([hidden])");
  const again = page.locator(".msg.assistant").last();
  assert.equal((await again.locator(".searched").innerText()).replace(/^Searched for:\s*/, ""), searched);
  assert.deepEqual(await again.locator(".steps .step .label").allTextContents(), labels);
  assert.match(await again.locator(".steps .step pre.prompt").first().textContent(), /Follow Up Input: And what does it do/);
  // Selected by its header: a click at its middle may land on a [N] link, which opens the viewer.
  await again.locator(".who").click({ position: { x: 4, y: 4 } });
  assert.match(await page.locator("#queries .searched").innerText(), /Searched for:/);
  assert.ok(await page.locator("#viewer").isHidden(), "selecting an answer opens no viewer");
  assert.ok(await page.locator("#sources .src-cites").count() > 0);
  await page.screenshot({ path: join(shots, "07-follow-up-reopened.png") });
  // Back to plain questions for the tests after this one.
  await page.uncheck("#cite");
  await page.uncheck("#rerank");
});

test("an answer is copied, asked again beside itself, its question edited and deleted, the conversation exported", async () => {
  await page.click("#new-chat");
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(url).origin });
  const first = await askIn("no_text", question.question);
  assert.equal(await first.locator(".error").count(), 0);
  // Asked again in another mode: the second answer stands beside the first.
  await page.selectOption("#mode", "compact");
  await first.hover();
  await first.locator("button.act.again").click();
  await page.waitForFunction(() => {
    const g = [...document.querySelectorAll("#messages .answers")].pop();
    return g.querySelectorAll(".msg.assistant").length === 2 && !g.querySelector(".msg.streaming");
  }, null, { timeout: 600_000 });
  const group = page.locator("#messages .answers").last();
  const [a, b] = [group.locator(".msg.assistant").nth(0), group.locator(".msg.assistant").nth(1)];
  assert.match(await b.locator(".who").innerText(), /compact/);
  const [ba, bb] = [await a.boundingBox(), await b.boundingBox()];
  assert.ok(bb.x > ba.x + ba.width - 1 && Math.abs(bb.y - ba.y) < 2, `not side by side: ${JSON.stringify([ba, bb])}`);
  assert.equal(await page.locator("#messages .msg.user").count(), 1, "asking again adds no question");
  await page.screenshot({ path: join(shots, "08-asked-again.png") });
  // Copied as plain text: what the answer reads as.
  await b.hover();
  await b.locator("button.act", { hasText: "Copy text" }).click();
  const copied = (await page.evaluate(() => navigator.clipboard.readText())).replace(/\s+/g, " ").trim();
  const shown = (await b.locator(".body").innerText()).replace(/\s+/g, " ").trim();
  assert.ok(copied.length > 0 && shown.includes(copied.slice(0, 40)), `${copied.slice(0, 80)} | ${shown.slice(0, 80)}`);
  // Edited: the question and its answers are replaced by the new one's.
  await page.selectOption("#mode", "no_text");
  const user = page.locator("#messages .msg.user").last();
  await user.hover();
  await user.locator("button.act", { hasText: "Edit" }).click();
  await user.locator("textarea.edit").fill("Which wasysym option adds no new integral signs?");
  await user.locator("textarea.edit").press("Enter");
  await page.waitForFunction(() => {
    const users = document.querySelectorAll("#messages .msg.user");
    return users.length === 1 && users[0].textContent.includes("adds no new integral") &&
      document.querySelectorAll("#messages .msg.assistant").length === 1 && !document.querySelector(".msg.streaming");
  }, null, { timeout: 120_000 });
  // Exported as Markdown with the sources and their pages.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export-btn")]);
  const md = readFileSync(await download.path(), "utf8");
  assert.match(md, /## Question\n\nWhich wasysym option adds no new integral signs\?/);
  assert.match(md, /1\. \*\*wasysym\.pdf\*\*, pp?\. \d/);
  assert.ok(!md.includes(question.question), "the replaced question is gone");
  // Deleted after a confirmation, and gone after a reload too.
  const answer = page.locator("#messages .msg.assistant").last();
  await answer.hover();
  expectConfirm = true;
  await answer.locator("button.act", { hasText: "Delete" }).click();
  await page.waitForFunction(() => document.querySelectorAll("#messages .msg.assistant").length === 0);
  await page.reload();
  await page.waitForSelector("#messages .msg.user");
  assert.equal(await page.locator("#messages .msg.assistant").count(), 0);
  assert.deepEqual(pageErrors, []);
});

test("document text is shown as text, never run", async () => {
  const hostile = join(dataDir, "hostile.pdf");
  makePdf(hostile, [[
    "Quokkaberry notes: the quokkaberry grows on islands.",
    "<img src=x onerror=\"window.__pwned=1;alert(1)\">",
    "<script>window.__pwned=2;alert(2)</script>",
    "quokkaberry <b>bold</b> end",
  ]]);
  await upload(hostile, "hostile");
  await page.click("#new-chat");
  const msg = await askIn("no_text", "Where does the quokkaberry grow?");
  assert.equal(await msg.locator(".error").count(), 0, await msg.innerText());
  const text = await page.locator("#sources").innerText();
  assert.ok(text.includes("<img src=x onerror="), `hostile text not shown literally: ${text.slice(0, 300)}`);
  assert.equal(await page.locator("#sources img, #sources script, #sources b").count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(pageErrors, []);
  await page.screenshot({ path: join(shots, "05-hostile.png") });
});

test("settings list the models; a new embedding model re-embeds the index with progress", async () => {
  await page.click("#settings-btn");
  await page.waitForSelector("#settings[open]");
  const options = await page.locator("#settings select[name=model] option").allInnerTexts();
  assert.ok(options.some((o) => o.startsWith("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf · qwen2 · 491 MB · fast")), options.join("; "));
  assert.ok(options.some((o) => o.includes("SmolLM2") && o.includes("llama")), options.join("; "));
  const info = await page.locator("#model-info").innerText();
  assert.match(info, /qwen2 architecture · 0\.5B parameters · .* · 32,768-token context · fast: Quire's own kernels/);
  // The Gemma file is a base model: choosing it says so.
  await page.selectOption("#settings select[name=model]", "gemma-3-270m-q4_k_m.gguf");
  assert.match(await page.locator("#model-info").innerText(), /base model/);
  await page.selectOption("#settings select[name=model]", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
  // Choosing another embedding model says what saving will do.
  await page.selectOption("#settings select[name=embedder]", "m3e-small");
  assert.match(await page.locator("#embedder-info").innerText(), /512 dimensions .* languages: zh — saving re-embeds the \d+ indexed chunks \(made by all-MiniLM-L6-v2\)/);
  await page.screenshot({ path: join(shots, "06-settings-light.png") });
  // The modal dialog covers the theme button: switch the theme underneath it.
  const theme = await page.evaluate(() => document.documentElement.dataset.theme);
  await page.evaluate(() => { document.documentElement.dataset.theme = "dark"; });
  await page.screenshot({ path: join(shots, "06-settings-dark.png") });
  await page.evaluate((t) => { document.documentElement.dataset.theme = t; }, theme);
  await page.click("#settings-save");
  const row = page.locator('#progress li:has(.name[title="Re-embedding with m3e-small"])');
  await row.locator(".meta:has-text('re-embedded')").waitFor({ timeout: 300_000 });
  await page.screenshot({ path: join(shots, "07-reembedded.png") });
  // The index answers again, on the new model's vectors, and nothing is flagged.
  const msg = await askIn("no_text", question.question);
  assert.equal(await msg.locator(".error").count(), 0, await msg.innerText());
  assert.ok(await page.locator("#sources li").count() > 0);
  assert.ok(await page.locator("#banner").isHidden());
  assert.deepEqual(pageErrors, []);
});
