// End-to-end test of the real desktop app: tauri-driver + WebKitWebDriver drive the
// Quire window (run under Xvfb by `make test`). It indexes a corpus PDF through the
// `index_paths` command that a drop uses, asks in compact and tree_summarize modes,
// checks that tokens stream and the sources panel shows the right file and page, and
// opens the PDF viewer at a source (and a hostile PDF that must run nothing), and
// saves screenshots of the window to artifacts/tauri/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { makeHostilePdf, makePdf } from "./make-pdf.mjs";
import { glyphCheck } from "./glyphs.mjs";
import { openWindow } from "./webdriver.mjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const shared = process.env.QUIRE_SHARED || resolve(repo, "../shared");
const app = process.env.QUIRE_DESKTOP_BIN || join(repo, "target/debug/quire-desktop");
const cli = join(dirname(app), "quire");
const shots = join(repo, "artifacts/tauri");
const question = JSON.parse(readFileSync(join(shared, "corpus/questions.jsonl"), "utf8").split("\n").find((l) => l.includes('"A23"')));
const PORT = 4444;

let win, session, base, dataDir;
// The window's calls (./webdriver.mjs), once it is open.
const wd = (...a) => win.wd(...a);
const exec = (...a) => win.exec(...a);
const execAsync = (...a) => win.execAsync(...a);
const waitFor = (...a) => win.waitFor(...a);

/** A channel command's every event, its end mark included (./webdriver.mjs). */
const invokeStreamed = (...a) => win.invokeStreamed(...a);

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-tauri-"));
  // QUIRE_E2E_MODEL=<gguf name> runs the suite with another LLM (as browser.test.mjs).
  if (process.env.QUIRE_E2E_MODEL) {
    writeFileSync(join(dataDir, "settings.json"), JSON.stringify({ model: process.env.QUIRE_E2E_MODEL }));
  }
  win = await openWindow({ app, port: PORT, cwd: repo, env: { ...process.env, QUIRE_DATA_DIR: dataDir } });
  ({ session, base } = win);
  await waitFor("return !!window.__TAURI__ && document.readyState === 'complete' && !!document.querySelector('#mode option')", [], "the window");
});

after(async () => {
  await win?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

test("index a corpus PDF through the drop command path", async () => {
  const pdf = join(shared, "corpus/pdfs", question.file);
  const events = await invokeStreamed("index_paths", { paths: [pdf] });
  assert.ok(events.some((e) => e.type === "file_done"), JSON.stringify(events.slice(-3)));
  // the UI's document list (refreshed on focus of the list) shows it
  await win.reload();
  await waitFor("return [...document.querySelectorAll('#documents li')].some(li => li.textContent.includes(arguments[0]))",
    [question.file.replace(/\.pdf$/, "")], "the document in the list");
});

test("what `quire index` adds from another process, and removes, shows in the open window without a reload", async () => {
  const pdf = join(dataDir, "..", `zebra-notes-${process.pid}.pdf`);
  makePdf(pdf, [["Zebras have black and white stripes that confuse biting flies."]]);
  const listed = "[...document.querySelectorAll('#documents li')].some(li => li.textContent.includes('zebra-notes'))";
  try {
    execFileSync(cli, ["index", "--data-dir", dataDir, pdf], { stdio: ["ignore", "ignore", "inherit"] });
    // The window polls the library's counts (and the store's change mark) every 2 s.
    await waitFor(`return document.getElementById('doc-summary').textContent.startsWith('2 indexed') && ${listed}`,
      [], "the other process's document in the list");
    const png = await wd("GET", `/session/${session}/screenshot`);
    writeFileSync(join(shots, "window-other-process.png"), Buffer.from(png, "base64"));
    execFileSync(cli, ["docs", "rm", "--data-dir", dataDir, pdf], { stdio: ["ignore", "ignore", "inherit"] });
    await waitFor(`return document.getElementById('doc-summary').textContent.startsWith('1 indexed') && !(${listed})`,
      [], "the document gone from the list");
  } finally {
    rmSync(pdf, { force: true });
  }
});

for (const mode of ["compact", "tree_summarize"]) {
  test(`ask in ${mode}: tokens stream and the sources show the right page`, async () => {
    await exec(`
      window.__streamed = 0;
      new MutationObserver(() => {
        const live = document.querySelector(".msg.assistant.streaming .body");
        if (live && live.textContent.length > 0) window.__streamed++;
      }).observe(document, { subtree: true, childList: true, characterData: true });
      document.getElementById("new-chat").click();
      const sel = document.getElementById("mode");
      sel.value = arguments[0];
      sel.dispatchEvent(new Event("change"));
      document.getElementById("question").value = arguments[1];
      document.getElementById("composer").requestSubmit();
    `, [mode, question.question]);
    await waitFor("const m = [...document.querySelectorAll('.msg.assistant')].pop(); return m && !m.classList.contains('streaming')", [], "the answer");
    const r = await exec(`
      const m = [...document.querySelectorAll('.msg.assistant')].pop();
      return { body: m.querySelector('.body').textContent, errors: m.querySelectorAll('.error').length,
               streamed: window.__streamed,
               sources: [...document.querySelectorAll('#sources li.source')].map(li => li.dataset.file + ' ' + li.dataset.pages) };
    `);
    assert.equal(r.errors, 0, r.body);
    assert.ok(r.body.trim().length > 0);
    assert.ok(r.streamed > 1, "tokens did not stream");
    assert.ok(r.sources.some((w) => w.includes(question.file) && new RegExp(`\\b${question.pages[0]}\\b`).test(w)), r.sources.join("; "));
    const png = await wd("GET", `/session/${session}/screenshot`);
    writeFileSync(join(shots, `window-${mode}.png`), Buffer.from(png, "base64"));
  });
}

test("a follow-up in the window searches the previous question with it, uncondensed, and says what it searched for", async () => {
  await exec(`
    document.getElementById("question").value = arguments[0];
    document.getElementById("composer").requestSubmit();
  `, ["And what does it do to the integral signs?"]);
  await waitFor("const m = [...document.querySelectorAll('.msg.assistant')].pop(); return m && !m.classList.contains('streaming') && document.querySelectorAll('.msg.assistant').length >= 2", [], "the follow-up's answer");
  const r = await exec(`
    const m = [...document.querySelectorAll('.msg.assistant')].pop();
    return { errors: m.querySelectorAll('.error').length, body: m.querySelector('.body').textContent,
             searched: m.querySelector('.searched').hidden ? null : m.querySelector('.searched').textContent,
             labels: [...m.querySelectorAll('.steps .step .label')].map(l => l.textContent),
             prompt: m.querySelector('.steps .step pre.prompt').textContent,
             panel: document.querySelector('#queries .searched')?.textContent };
  `);
  assert.equal(r.errors, 0, r.body);
  assert.ok(r.searched && r.searched.startsWith("Searched for: "), JSON.stringify(r));
  // The default follow-up search: the previous question and the follow-up as typed,
  // no condensing step; the answer's prompt still holds the conversation.
  assert.ok(!r.labels.includes("condense the question"), r.labels.join("; "));
  assert.match(r.searched, /I need some wasysym symbols[\s\S]*And what does it do to the integral signs\?/);
  assert.match(r.prompt, /I need some wasysym symbols/);
  assert.equal(r.panel, r.searched);
  const png = await wd("GET", `/session/${session}/screenshot`);
  writeFileSync(join(shots, "window-follow-up.png"), Buffer.from(png, "base64"));
});

/** Ask in no_text mode (retrieval only) in a new conversation; wait for the sources. */
async function retrieve(text) {
  await exec(`
    document.getElementById("new-chat").click();
    const sel = document.getElementById("mode");
    sel.value = "no_text";
    sel.dispatchEvent(new Event("change"));
    document.getElementById("question").value = arguments[0];
    document.getElementById("composer").requestSubmit();
  `, [text]);
  await waitFor("const m = [...document.querySelectorAll('.msg.assistant')].pop(); return m && !m.classList.contains('streaming') && document.querySelectorAll('#sources li.source').length > 0", [], "the sources");
}

const viewerState = () => exec(`
  return { page: document.getElementById("viewer-page").value, error: document.querySelector("#viewer .viewer-error")?.textContent || null,
           hl: [...document.querySelectorAll("#viewer .textLayer .hl")].map((s) => s.textContent).join(""),
           text: document.querySelector("#viewer .textLayer")?.textContent || "", status: document.getElementById("viewer-status").textContent,
           href: location.href, pwned: window.__pwned === undefined ? "unset" : String(window.__pwned) };
`);

test("in the window, source 1 opens the viewer at its page with the passage highlighted", async () => {
  await retrieve(question.question);
  const pages = await exec("const li = document.querySelector('#sources li.source'); li.querySelector('.src-open').click(); return li.dataset.pages;");
  await waitFor("return !!document.querySelector('#viewer .pdf-page[data-rendered]') || !!document.querySelector('#viewer .viewer-error')", [], "the viewer's page");
  const v = await viewerState();
  assert.equal(v.error, null);
  // "p. 2", or "pp. 1–2" for a chunk over a page break: both pages are shown.
  const [from, to = from] = pages.match(/\d+/g).map(Number);
  assert.equal(Number(v.page), from);
  assert.deepEqual(await exec("return [...document.querySelectorAll('#viewer .pdf-page[data-rendered]')].map((p) => Number(p.dataset.page))"),
    Array.from({ length: to - from + 1 }, (_, i) => from + i));
  assert.ok(from <= question.pages[0] && question.pages[0] <= to, `source 1 (${pages}) should hold page ${question.pages[0]}`);
  for (const term of question.must_contain) assert.ok(v.hl.includes(term), `"${term}" not highlighted: ${v.hl.slice(0, 200)} (${v.status})`);
  const png = await wd("GET", `/session/${session}/screenshot`);
  writeFileSync(join(shots, "window-viewer.png"), Buffer.from(png, "base64"));
});

test("in the window, a hostile PDF opens, shows its text and runs nothing", async () => {
  const hostile = join(dataDir, "hostile-window.pdf");
  makeHostilePdf(hostile);
  const start = await exec("return location.href");
  const done = await invokeStreamed("index_paths", { paths: [hostile] });
  assert.ok(done.some((e) => e.type === "file_done"), JSON.stringify(done.slice(-3)));
  await retrieve("Where does the marmoset lantern glow?");
  await exec("[...document.querySelectorAll('#sources li.source')].find((li) => li.dataset.file === 'hostile-window.pdf').querySelector('.src-open').click()");
  await waitFor("const p = document.querySelector('#viewer .pdf-page[data-rendered]'); return (p && p.textContent.includes('marmoset')) || !!document.querySelector('#viewer .viewer-error')", [], "the hostile page");
  // Click each line (the links' areas).
  await exec("for (const s of document.querySelectorAll('#viewer .textLayer > span')) s.click();");
  const v = await viewerState();
  assert.equal(v.error, null);
  assert.match(v.text, /marmoset lantern glows/);
  assert.match(v.hl, /marmoset lantern glows/);
  assert.equal(v.pwned, "unset");
  assert.equal(v.href, start);
  assert.equal(await exec("return document.querySelectorAll('#viewer a, #viewer iframe, #viewer object, #viewer embed, #viewer script').length"), 0);
  // No dialog is open: the driver has no alert to read.
  const alert = await fetch(`${base}/session/${session}/alert/text`).then((r) => r.json());
  assert.ok(alert.value && alert.value.error, `an alert is open: ${JSON.stringify(alert)}`);
  const png = await wd("GET", `/session/${session}/screenshot`);
  writeFileSync(join(shots, "window-viewer-hostile.png"), Buffer.from(png, "base64"));
  await exec("document.getElementById('viewer-close').click()");
});

/** A PDF whose page tree is nested `depth` deep above its one page (lopdf issues #82,
 *  #532: the kind that overflows an extractor's stack). */
function deepTreePdf(path, depth) {
  const objs = ["<< /Type /Catalog /Pages 2 0 R >>"];
  for (let k = 2; k <= depth + 1; k++) objs.push(`<< /Type /Pages /Kids [${k + 1} 0 R] /Count 1 >>`);
  const page = depth + 2;
  objs.push(`<< /Type /Page /Parent ${page - 1} 0 R /MediaBox [0 0 612 792] /Contents ${page + 1} 0 R /Resources << /Font << /F1 ${page + 2} 0 R >> >> >>`);
  const stream = "BT /F1 12 Tf 72 720 Td (The quokka sleeps at the bottom of a deep tree) Tj ET";
  objs.push(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`);
  objs.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
  let out = "%PDF-1.5\n";
  const offsets = [];
  objs.forEach((b, i) => { offsets.push(out.length); out += `${i + 1} 0 obj\n${b}\nendobj\n`; });
  const xref = out.length;
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  writeFileSync(path, out, "latin1");
}

test("in the window, a hostile PDF dropped with two good ones fails alone and the window keeps answering", async () => {
  const dir = join(dataDir, "drop-batch");
  mkdirSync(dir, { recursive: true });
  const files = [join(dir, "glaciers.pdf"), join(dir, "deep-tree.pdf"), join(dir, "tides.pdf")];
  makePdf(files[0], [["Glaciers carve valleys in the mountains over thousands of years."]]);
  deepTreePdf(files[1], 100000);
  makePdf(files[2], [["Tides rise and fall twice a day because of the moon."]]);
  const seen = await invokeStreamed("index_paths", { paths: files });
  const outcome = (name) => seen.filter((e) => (e.type === "file_done" || e.type === "file_failed") && e.path.endsWith(name));
  for (const name of ["glaciers.pdf", "tides.pdf"]) {
    assert.deepEqual(outcome(name).map((e) => e.type), ["file_done"], JSON.stringify(seen.slice(-6)));
  }
  // The hostile one is accounted for once (failed with a reason, or read), and the
  // batch finished.
  assert.equal(outcome("deep-tree.pdf").length, 1, JSON.stringify(seen.slice(-6)));
  assert.ok(seen.some((e) => e.type === "finished"), JSON.stringify(seen.slice(-3)));
  // The window keeps answering: its commands, and a question over the good files.
  const q = await execAsync("const done = arguments[arguments.length - 1]; window.__TAURI__.core.invoke('queue').then(done, (e) => done({ error: String(e) }));");
  assert.equal(q.pending, 0, JSON.stringify(q));
  await retrieve("Why do tides rise and fall?");
  assert.ok(await exec("return [...document.querySelectorAll('#sources li.source')].some((li) => li.dataset.file === 'tides.pdf')"));
});

test("in the window, an answer is asked again beside itself, rendered as Markdown, and deleted", async () => {
  await retrieve(question.question);
  await exec(`
    const sel = document.getElementById("mode");
    sel.value = "no_text";
    const last = [...document.querySelectorAll("#messages .msg.assistant")].pop();
    last.querySelector("button.act.again").click();
  `);
  await waitFor("const g = [...document.querySelectorAll('#messages .answers')].pop(); return g.querySelectorAll('.msg.assistant').length === 2 && !g.querySelector('.msg.streaming')", [], "the second answer");
  // Markdown from the renderer the window loaded: a table, as elements.
  const md = await execAsync(`
    const done = arguments[arguments.length - 1];
    import("./js/markdown.js").then(({ renderMarkdown }) => {
      const box = document.createElement("div");
      box.append(renderMarkdown("| a | b |\\n|---|---|\\n| 1 | <img src=x onerror=alert(1)> |"));
      done({ cells: box.querySelectorAll("td").length, imgs: box.querySelectorAll("img").length, text: box.textContent });
    }, (e) => done({ error: String(e) }));
  `);
  assert.deepEqual(md, { cells: 2, imgs: 0, text: "ab1<img src=x onerror=alert(1)>" });
  const ids = await exec("return [...document.querySelectorAll('#messages .msg')].map((m) => m.dataset.messageId || null)");
  assert.equal(ids.length, 3);
  assert.ok(ids.every(Boolean), JSON.stringify(ids));
  await exec(`
    window.confirm = () => true;
    [...document.querySelectorAll("#messages .msg.assistant")].pop().querySelector("button.act:last-child").click();
  `);
  await waitFor("return document.querySelectorAll('#messages .msg.assistant').length === 1 && document.querySelectorAll('#messages .msg').length === 2", [], "the deleted answer gone");
  const png = await wd("GET", `/session/${session}/screenshot`);
  writeFileSync(join(shots, "window-actions.png"), Buffer.from(png, "base64"));
});

test("in the window, a collection scopes a question, and an off-topic question is answered 'not found'", async () => {
  const made = await execAsync(`
    const done = arguments[arguments.length - 1];
    const invoke = window.__TAURI__.core.invoke;
    (async () => {
      const docs = (await invoke("library", { query: { search: arguments[0], filter: "done" } })).items;
      const wasy = docs.find((d) => d.file_name === arguments[0]);
      return invoke("create_collection", { name: "Symbols", documents: [wasy.id] });
    })().then(done, (e) => done({ error: String(e) }));
  `, [question.file]);
  assert.ok(!made.error, made.error);
  await win.reload();
  await waitFor("return [...document.querySelectorAll('#scope option')].some((o) => o.value === arguments[0])", [`c:${made.id}`], "the collection in the picker");
  await exec("const s = document.getElementById('scope'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));", [`c:${made.id}`]);
  // The hostile PDF answers this best; scoped to the collection, only wasysym is searched.
  await retrieve("Where does the marmoset lantern glow?");
  const r = await exec(`
    const m = [...document.querySelectorAll('.msg.assistant')].pop();
    return { chip: m.querySelector('.scope-chip').textContent,
             files: [...document.querySelectorAll('#sources li.source')].map((li) => li.dataset.file) };
  `);
  assert.equal(r.chip, 'Collection "Symbols"');
  assert.deepEqual([...new Set(r.files)], [question.file]);
  let png = await wd("GET", `/session/${session}/screenshot`);
  writeFileSync(join(shots, "window-scope.png"), Buffer.from(png, "base64"));

  await exec(`
    const s = document.getElementById('scope'); s.value = 'all'; s.dispatchEvent(new Event('change'));
    document.getElementById("new-chat").click();
    const sel = document.getElementById("mode");
    sel.value = "compact";
    sel.dispatchEvent(new Event("change"));
    document.getElementById("question").value = arguments[0];
    document.getElementById("composer").requestSubmit();
  `, ["What is a good recipe for banana bread with walnuts?"]);
  await waitFor("const m = [...document.querySelectorAll('.msg.assistant')].pop(); return m && !m.classList.contains('streaming')", [], "the answer");
  const nf = await exec(`
    const m = [...document.querySelectorAll('.msg.assistant')].pop();
    return { notFound: m.classList.contains('not-found'), body: m.querySelector('.body').textContent, stats: m.querySelector('.stats').textContent,
             decision: document.querySelector('#queries .relevance.not-covered')?.textContent || null,
             sources: document.querySelectorAll('#sources li.source').length };
  `);
  assert.ok(nf.notFound, JSON.stringify(nf));
  assert.match(nf.body, /don't seem to cover/);
  assert.match(nf.stats, /0 LLM calls/);
  assert.match(nf.decision || "", /below the threshold/);
  assert.ok(nf.sources > 0);
  png = await wd("GET", `/session/${session}/screenshot`);
  writeFileSync(join(shots, "window-not-found.png"), Buffer.from(png, "base64"));
});

test("in the window, a Chinese question streams whole characters and reads as Chinese, in both themes", async () => {
  const zh = JSON.parse(readFileSync(join(shared, "corpus/questions.jsonl"), "utf8").split("\n").find((l) => l.includes('"A03"')));
  const indexed = await invokeStreamed("index_paths", { paths: [join(shared, "corpus/pdfs", zh.file)] });
  assert.ok(indexed.some((e) => e.type === "file_done"), JSON.stringify(indexed.slice(-3)));
  // Over the Tauri channel, as the UI receives them: no token carries a cut character.
  const askEvents = await invokeStreamed("ask", { request: { question: zh.question, mode: "compact", overrides: {} } });
  const failed = askEvents.find((e) => e.type === "error");
  assert.ok(!failed, failed?.message);
  const r = {
    tokens: askEvents.filter((e) => e.type === "token" && e.final).map((e) => e.text),
    answer: askEvents.find((e) => e.type === "done")?.answer,
  };
  assert.ok(r.tokens.length > 1, "tokens did not stream");
  assert.ok(r.tokens.every((t) => !t.includes("\uFFFD")), JSON.stringify(r.tokens));
  assert.equal(r.tokens.join("").trim(), r.answer.trim());
  assert.ok((r.answer.match(/\p{Script=Han}/gu) || []).length >= 4, `not in Chinese: ${r.answer}`);
  // On screen: the conversation that ask made, its question and answer in real glyphs.
  // The new page's list is the first to hold the conversation the ask made.
  await win.reload();
  await waitFor("return [...document.querySelectorAll('#conversations li .name')].some((n) => /\\p{Script=Han}/u.test(n.textContent)) && document.querySelector('#mode option')", [], "the Chinese conversation in the list");
  await exec("[...document.querySelectorAll('#conversations li .name')].find((n) => /\\p{Script=Han}/u.test(n.textContent)).click()");
  await waitFor("return !!document.querySelector('.msg.assistant .body p')", [], "the Chinese answer");
  for (const sel of ["#conversations li .name[lang]", ".msg.user .body", ".msg.assistant .body"]) {
    const g = await exec(`return (${glyphCheck.toString()})(arguments[0])`, [sel]);
    assert.ok(g.ok, `${sel}: ${JSON.stringify(g)}`);
  }
  let png = await wd("GET", `/session/${session}/screenshot`);
  writeFileSync(join(shots, "window-chinese-light.png"), Buffer.from(png, "base64"));
  await exec("document.documentElement.dataset.theme = 'dark'");
  png = await wd("GET", `/session/${session}/screenshot`);
  writeFileSync(join(shots, "window-chinese-dark.png"), Buffer.from(png, "base64"));
  await exec("document.documentElement.dataset.theme = 'light'");
});

test("settings list the models, and the reembed command re-embeds with progress", async () => {
  const view = await execAsync(`
    const done = arguments[arguments.length - 1];
    window.__TAURI__.core.invoke("settings").then(done, (e) => done({ error: String(e) }));
  `);
  assert.ok(!view.error, view.error);
  const qwen = view.models.find((m) => m.name === "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
  assert.equal(qwen?.architecture, "qwen2");
  assert.equal(qwen?.speed, "fast");
  assert.ok(view.embedders.some((m) => m.name === "m3e-small" && m.dims === 512), JSON.stringify(view.embedders));
  const saved = await execAsync(`
    const done = arguments[arguments.length - 1];
    const invoke = window.__TAURI__.core.invoke;
    (async () => {
      const s = await invoke("settings");
      for (const k of ["models", "embedders", "index_embedders"]) delete s[k];
      await invoke("save_settings", { settings: { ...s, embedder: "m3e-small" } });
      return {};
    })().then(done, (e) => done({ error: String(e) }));
  `);
  assert.ok(!saved.error, saved.error);
  const events = await invokeStreamed("reembed", {});
  const progress = events.filter((e) => e.type === "reembedded");
  assert.ok(progress.length >= 2, JSON.stringify(events.slice(-3)));
  const last = progress[progress.length - 1];
  assert.equal(last.done, last.total);
  assert.ok(last.total > 0);
  const after = await execAsync(`
    const done = arguments[arguments.length - 1];
    window.__TAURI__.core.invoke("settings").then(done, (e) => done({ error: String(e) }));
  `);
  assert.deepEqual(after.index_embedders.map((m) => m.name), ["m3e-small"]);
});

test("the window's first run without model files says what is missing and how to get it", async () => {
  // A second window of the app, on its own driver and ports, whose model search path
  // holds only an empty folder (QUIRE_MODELS_PATH replaces it).
  const home = mkdtempSync(join(tmpdir(), "quire-tauri-first-"));
  const second = await openWindow({
    app, port: PORT + 20, cwd: home,
    env: { ...process.env, QUIRE_DATA_DIR: join(home, "data"), QUIRE_MODELS_PATH: join(home, "none") },
  });
  try {
    const card = await second.waitFor("const c = document.querySelector('.first-run'); return c ? c.innerText : null;", [], "the first-run card", 400);
    assert.match(card, /needs its models first/);
    assert.match(card, /all-MiniLM-L6-v2/);
    assert.match(card, /models\/fetch\.sh/);
    assert.ok(card.includes(join(home, "none")), card);
    // The first window's conversation (remembered by the shared web view) is forgotten
    // quietly; the banner points at the card.
    const banner = await second.exec("return document.getElementById('banner').textContent");
    assert.doesNotMatch(banner, /Could not open/);
    assert.match(banner, /model file is missing/);
    await second.screenshot(join(shots, "window-first-run.png"));
  } finally {
    await second.close();
    rmSync(home, { recursive: true, force: true });
  }
});
