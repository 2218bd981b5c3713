// A model server instead of the local model, in a real browser (Debian's Chromium) over
// `quire serve`: the settings dialog refuses an address where nothing answers, saying
// so; with a real llama.cpp server (llama-cpp-python's, from .venv-llama, started here
// on loopback and stopped after) the answer streams from it, and the status says which
// server answers. Screenshots in both themes go to artifacts/e2e/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo, shared, corpusQuestion, startServer, launchBrowser, upload, askIn } from "./harness.mjs";

const shots = join(repo, "artifacts/e2e");
const question = corpusQuestion("A23");

let server, url, browser, page, dataDir, llama, llamaUrl;
const pageErrors = [];

/** A free loopback port. */
function freePort() {
  return new Promise((ok) => {
    const s = createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); });
  });
}

/** llama-cpp-python's server with SmolLM2 as "smollm2"; resolves once it listens. */
async function startLlama() {
  const python = process.env.QUIRE_LLAMA_SERVER_PYTHON || join(repo, ".venv-llama/bin/python");
  assert.ok(existsSync(python), `${python} missing: scripts/setup.sh --test builds llama-cpp-python[server] there`);
  const port = await freePort();
  const proc = spawn(python, ["-m", "llama_cpp.server", "--host", "127.0.0.1", "--port", String(port),
    "--model", join(repo, "models/SmolLM2-135M-Instruct.Q4_1.gguf"), "--model_alias", "smollm2",
    "--n_ctx", "2048", "--n_threads", "2", "--verbose", "false"], { stdio: ["ignore", "ignore", "pipe"] });
  await new Promise((ok, fail) => {
    let err = "";
    proc.stderr.on("data", (d) => { err += d; if (/Uvicorn running on/.test(err)) ok(); });
    proc.on("exit", (code) => fail(new Error(`the llama.cpp server exited with ${code}: ${err}`)));
  });
  return { proc, url: `http://127.0.0.1:${port}` };
}

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-llm-server-"));
  ({ proc: llama, url: llamaUrl } = await startLlama());
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
  llama?.kill("SIGKILL");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function openServerSettings() {
  await page.click("#settings-btn");
  await page.waitForSelector("#settings[open]");
  // The section opens by itself when a server is set; else open it as a person would.
  if (!(await page.locator("#server-section").evaluate((d) => d.open))) await page.locator("#server-section summary").click();
}

test("an address where nothing answers is refused in the settings, saying so", async () => {
  await upload(page, join(shared, "corpus/pdfs/wasysym.pdf"), "wasysym");
  await openServerSettings();
  const nobody = `http://127.0.0.1:${await freePort()}`;
  await page.fill("#settings input[name=llm_server]", nobody);
  // The local model's line says it is not used while a server answers.
  assert.match(await page.locator("#model-info").innerText(), /Not used while a model server answers/);
  await page.click("#settings-save");
  const err = page.locator("#settings-error");
  await err.waitFor({ state: "visible" });
  assert.match(await err.innerText(), /cannot reach it/);
  assert.ok(await page.locator("#settings[open]").count() === 1, "the dialog stays open");
  // A model the server does not serve: the message lists the ones it does.
  await page.fill("#settings input[name=llm_server]", llamaUrl);
  await page.fill("#settings input[name=llm_server_model]", "gpt-9");
  await page.click("#settings-save");
  await page.waitForFunction(() => /smollm2/.test(document.querySelector("#settings-error").textContent));
  await page.screenshot({ path: join(shots, "14-server-settings-error-light.png") });
});

test("with a real llama.cpp server, the answer streams from it", async () => {
  await page.fill("#settings input[name=llm_server_model]", "");
  await page.fill("#settings input[name=llm_server_context]", "2048");
  await page.evaluate(() => { document.documentElement.dataset.theme = "dark"; });
  await page.screenshot({ path: join(shots, "14-server-settings-dark.png") });
  await page.evaluate(() => { document.documentElement.dataset.theme = "light"; });
  await page.click("#settings-save");
  await page.waitForSelector("#settings:not([open])", { state: "attached" });
  const saved = await page.evaluate(async () => (await fetch("/api/settings")).json());
  assert.equal(saved.llm_server, llamaUrl);
  assert.equal(saved.llm_server_context, 2048);
  const status = await page.evaluate(async () => (await fetch("/api/status")).json());
  assert.match(status.llm, /OpenAI-compatible model server/);
  const msg = await askIn(page, "compact", question.question, 300_000);
  assert.equal(await msg.locator(".error").count(), 0, await msg.innerText());
  assert.ok((await msg.locator(".body").innerText()).trim().length > 0);
  // Signed with the server's model.
  assert.match(await msg.innerText(), /smollm2 on 127\.0\.0\.1:\d+/);
  assert.ok(await page.locator("#sources li").count() > 0);
  await page.screenshot({ path: join(shots, "15-server-answer-light.png") });
  // Back to the local model: the address emptied.
  await openServerSettings();
  await page.fill("#settings input[name=llm_server]", "");
  await page.click("#settings-save");
  await page.waitForSelector("#settings:not([open])", { state: "attached" });
  const back = await page.evaluate(async () => (await fetch("/api/status")).json());
  assert.doesNotMatch(back.llm, /model server/);
  assert.deepEqual(pageErrors, []);
});
