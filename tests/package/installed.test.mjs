// The installed desktop app, end to end: tauri-driver + WebKitWebDriver start the
// .deb's /usr/bin/quire-desktop (run under Xvfb by tests/package/run.sh, which
// installs the package first), from a folder with no models/ and without
// QUIRE_MODELS_DIR or QUIRE_MODELS_PATH: the packaged models must be found in
// /usr/share/quire/models. It indexes one small PDF through the command a drop uses,
// asks one question in the window, checks that the answer streamed with the PDF as
// its source, and saves a screenshot to artifacts/package/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { makePdf } from "../e2e/make-pdf.mjs";
import { openWindow } from "../e2e/webdriver.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const app = process.env.QUIRE_INSTALLED_APP || "/usr/bin/quire-desktop";
const modelsDir = process.env.QUIRE_INSTALLED_MODELS || "/usr/share/quire/models";
const llm = process.env.QUIRE_PACKAGE_LLM;
const embedder = process.env.QUIRE_PACKAGE_EMBEDDER;
const shots = join(repo, "artifacts/package");
// Not tauri.test.mjs's ports (4444/4445, 4464/4465): the two never share a driver.
const PORT = 4454;

let win, session, work;
const wd = (...a) => win.wd(...a);
const exec = (...a) => win.exec(...a);
const execAsync = (...a) => win.execAsync(...a);
const waitFor = (...a) => win.waitFor(...a);

before(async () => {
  assert.ok(llm && embedder, "QUIRE_PACKAGE_LLM and QUIRE_PACKAGE_EMBEDDER name the packaged models (tests/package/run.sh sets them)");
  mkdirSync(shots, { recursive: true });
  // The app's data directory and working folder: empty, no models/ in it.
  work = mkdtempSync(join(tmpdir(), "quire-package-"));
  const data = join(work, "data");
  mkdirSync(data);
  writeFileSync(join(data, "settings.json"), JSON.stringify({ model: llm, embedder }));
  const env = { ...process.env, QUIRE_DATA_DIR: data };
  delete env.QUIRE_MODELS_DIR;
  delete env.QUIRE_MODELS_PATH;
  win = await openWindow({ app, port: PORT, env, cwd: work, logLines: 200, scriptTimeout: 600_000 });
  session = win.session;
  await waitFor("return !!window.__TAURI__ && document.readyState === 'complete' && !!document.querySelector('#mode option')", [], "the window");
});

after(async () => {
  await win?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

test("the installed app uses the installed models", async () => {
  const view = await execAsync(`
    const done = arguments[arguments.length - 1];
    window.__TAURI__.core.invoke("settings").then(done, (e) => done({ error: String(e) }));
  `);
  assert.ok(!view.error, view.error);
  assert.equal(view.models.find((m) => m.name === llm)?.path, join(modelsDir, llm), JSON.stringify(view.models.map((m) => m.path)));
  assert.equal(view.embedders.find((m) => m.name === embedder)?.path, join(modelsDir, embedder), JSON.stringify(view.embedders.map((m) => m.path)));
});

test("index a PDF and ask one question: the answer streams, with the PDF as its source", async () => {
  const pdf = join(work, "heron-notes.pdf");
  makePdf(pdf, [
    ["Field notes on the grey heron.",
      "The grey heron of the Orrin estuary nests in the tall alder trees on Kestrel Island.",
      "Each spring the colony returns in early March and lays three to five pale blue eggs."],
    ["Feeding.", "Herons hunt fish and frogs in the shallow water at dawn and at dusk."],
  ]);
  const events = await win.invokeStreamed("index_paths", { paths: [pdf] });
  assert.ok(events.some((e) => e.type === "file_done"), JSON.stringify(events.slice(-3)));
  await win.reload();
  await waitFor("return !!window.__TAURI__ && [...document.querySelectorAll('#documents li')].some(li => li.textContent.includes('heron-notes')) && !!document.querySelector('#mode option')",
    [], "the document in the list");
  await exec(`
    window.__streamed = 0;
    new MutationObserver(() => {
      const live = document.querySelector(".msg.assistant.streaming .body");
      if (live && live.textContent.length > 0) window.__streamed++;
    }).observe(document, { subtree: true, childList: true, characterData: true });
    const sel = document.getElementById("mode");
    sel.value = "compact";
    sel.dispatchEvent(new Event("change"));
    document.getElementById("question").value = arguments[0];
    document.getElementById("composer").requestSubmit();
  `, ["Where does the grey heron nest?"]);
  await waitFor("const m = [...document.querySelectorAll('.msg.assistant')].pop(); return m && !m.classList.contains('streaming')", [], "the answer");
  const r = await exec(`
    const m = [...document.querySelectorAll('.msg.assistant')].pop();
    return { body: m.querySelector('.body').textContent, errors: m.querySelectorAll('.error').length,
             streamed: window.__streamed,
             sources: [...document.querySelectorAll('#sources li.source')].map(li => li.dataset.file + ' ' + li.dataset.pages) };
  `);
  const png = await wd("GET", `/session/${session}/screenshot`);
  writeFileSync(join(shots, "installed-window-answer.png"), Buffer.from(png, "base64"));
  assert.equal(r.errors, 0, r.body);
  assert.ok(r.body.trim().length > 0, "empty answer");
  assert.ok(r.streamed > 1, "tokens did not stream");
  assert.ok(r.sources.some((s) => s.startsWith("heron-notes.pdf ")), r.sources.join("; "));
});
