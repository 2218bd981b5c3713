// Answers you can check, in the real desktop window (tauri-driver + WebKitWebDriver,
// under Xvfb as `make test` runs it): the window's settings name a scripted model
// server (./scripted-llm.mjs) and cite sources; a small PDF is indexed through the
// drop command's path; the scripted answer (./support-fixture.mjs) shows its marks —
// the supported sentence a link, the invented one tagged "not in your documents", the
// wrong citation's note — the summary in the header and "From your documents"; the
// supported sentence opens the viewer at page 2 with its span highlighted; a reload
// keeps the marks. Screenshots in both themes go to artifacts/tauri/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { makePdf } from "./make-pdf.mjs";
import { openWindow } from "./webdriver.mjs";
import { startScriptedLlm } from "./scripted-llm.mjs";
import { PAGES, SUPPORTED, QUESTION, scriptedAnswer } from "./support-fixture.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const app = process.env.QUIRE_DESKTOP_BIN || join(repo, "target/debug/quire-desktop");
const shots = join(repo, "artifacts/tauri");
const PORT = 4484;

let win, dataDir, llm;

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-tauri-support-"));
  llm = await startScriptedLlm(scriptedAnswer);
  writeFileSync(join(dataDir, "settings.json"), JSON.stringify({ llm_server: llm.url, cite_sources: true, citation_chunk_size: 32, not_found_threshold: 0 }));
  win = await openWindow({ app, port: PORT, cwd: repo, env: { ...process.env, QUIRE_DATA_DIR: dataDir } });
  await win.waitFor("return !!window.__TAURI__ && document.readyState === 'complete' && !!document.querySelector('#mode option')", [], "the window");
});

after(async () => {
  await win?.close();
  await llm?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** What the last answer shows of its support. */
const marks = () => win.exec(`
  const m = [...document.querySelectorAll('.msg.assistant')].pop();
  if (!m) return null;
  return {
    errors: [...m.querySelectorAll('.error')].map((e) => e.textContent),
    summary: m.querySelector('.who .support-summary')?.textContent || null,
    links: [...m.querySelectorAll('.body .sent.supported.linked[role=link]')].map((s) => s.textContent),
    notFound: [...m.querySelectorAll('.body .sent.not-found')].map((s) => s.textContent),
    tags: [...m.querySelectorAll('.body .support-tag')].map((s) => s.textContent),
    notes: [...m.querySelectorAll('.body .support-note.wrong-cite')].map((s) => s.textContent),
    quotes: [...m.querySelectorAll('.quotes .quote')].map((q) => ({ text: q.querySelector('blockquote').textContent, where: q.querySelector('.quote-open').textContent })),
  };
`);

function checkMarks(r) {
  assert.deepEqual(r.errors, []);
  assert.match(r.summary || "", /^\d+ of 3 sentences found in your documents$/, JSON.stringify(r));
  assert.ok(r.links.some((t) => t.includes("Fog signals sound")), JSON.stringify(r));
  assert.ok(r.notFound.some((t) => t.includes("painted bright purple")), JSON.stringify(r));
  assert.ok(r.tags.includes("not in your documents"), JSON.stringify(r));
  assert.equal(r.notes.length, 1, JSON.stringify(r));
  assert.match(r.notes[0], /^cited \[\d+\], but \[\d+\] does not say this/);
  assert.ok(r.quotes.length >= 1 && r.quotes.length <= 3, JSON.stringify(r));
  for (const q of r.quotes) assert.match(q.where, /^lighthouse\.pdf, p\. [12]$/);
}

test("in the window, the scripted answer shows its marks and quotes, and the supported sentence opens its span", async () => {
  const pdf = join(dataDir, "lighthouse.pdf");
  makePdf(pdf, PAGES);
  const events = await win.invokeStreamed("index_paths", { paths: [pdf] });
  assert.ok(events.some((e) => e.type === "file_done"), JSON.stringify(events.slice(-3)));
  await win.reload();
  await win.waitFor("return !!document.querySelector('#mode option') && document.getElementById('cite').checked", [], "the settings in the toolbar");
  await win.exec(`
    document.getElementById("new-chat").click();
    const sel = document.getElementById("mode");
    sel.value = "compact";
    sel.dispatchEvent(new Event("change"));
    document.getElementById("question").value = arguments[0];
    document.getElementById("composer").requestSubmit();
  `, [QUESTION]);
  await win.waitFor("const m = [...document.querySelectorAll('.msg.assistant')].pop(); return m && !m.classList.contains('streaming')", [], "the answer");
  checkMarks(await marks());
  await win.screenshot(join(shots, "window-support-light.png"));
  await win.exec("document.documentElement.dataset.theme = 'dark'");
  await win.screenshot(join(shots, "window-support-dark.png"));
  await win.exec("document.documentElement.dataset.theme = 'light'");
  // The supported sentence opens the viewer at page 2, its span highlighted.
  await win.exec("[...document.querySelectorAll('.msg.assistant')].pop().querySelector('.body .sent.supported.linked[role=link]').click()");
  await win.waitFor("return !!document.querySelector('#viewer .pdf-page[data-page=\"2\"][data-rendered] .hl')", [], "the highlighted span on page 2");
  const hl = await win.exec("return [...document.querySelectorAll('#viewer .textLayer .hl')].map((s) => s.textContent).join('')");
  const norm = (s) => s.toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
  assert.ok(norm(hl).includes(norm(SUPPORTED)), hl);
  await win.screenshot(join(shots, "window-support-viewer.png"));
});

test("in the window, a reload keeps the marks and the quotes", async () => {
  await win.reload();
  await win.waitFor("return !!document.querySelector('.msg.assistant .support-summary')", [], "the reopened answer's summary");
  checkMarks(await marks());
  assert.ok(llm.requests.some((r) => /completions/.test(r.path)), "the scripted server was asked");
});
