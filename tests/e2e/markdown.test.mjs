// Answers as Markdown, in a real browser (Debian's Chromium via playwright-core): the
// UI's renderer (ui/js/markdown.js) loaded from `quire serve`, fed Markdown with
// tables, code and lists, and hostile payloads (javascript: links, off-site images,
// raw HTML) that must show as text and run or load nothing. Screenshots go to
// artifacts/e2e/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo, startServer, launchBrowser } from "./harness.mjs";

const shots = join(repo, "artifacts/e2e");
let server, url, origin, browser, page, dataDir;
const problems = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-md-"));
  ({ url, proc: server } = await startServer(dataDir));
  origin = new URL(url).origin;
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.on("pageerror", (e) => problems.push(`page error: ${e}`));
  page.on("dialog", (d) => { problems.push(`dialog: ${d.message()}`); d.dismiss(); });
  page.on("request", (r) => { if (!r.url().startsWith(origin)) problems.push(`request off origin: ${r.url()}`); });
  page.on("framenavigated", (f) => { if (f === page.mainFrame() && !f.url().startsWith(origin)) problems.push(`navigated to ${f.url()}`); });
  await page.goto(url);
  await page.waitForSelector("#mode option", { state: "attached" });
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Render `src` as an answer in the page's message list; what it became. */
function render(src) {
  return page.evaluate(async (src) => {
    const { renderMarkdown } = await import("/js/markdown.js");
    // A message of its own, over the page: the app's own rendering (which clears the
    // message list as it starts) never touches it.
    document.getElementById("md-test")?.remove();
    const msg = document.createElement("div");
    msg.id = "md-test";
    msg.className = "msg assistant";
    Object.assign(msg.style, { position: "fixed", top: "0", left: "0", width: "640px", zIndex: "1000", padding: "12px", background: "var(--bg)" });
    const body = document.createElement("div");
    body.className = "body";
    msg.append(body);
    document.body.append(msg);
    body.append(renderMarkdown(src));
    const tags = [...body.querySelectorAll("*")].map((n) => n.tagName.toLowerCase());
    const attrs = [...body.querySelectorAll("*")].flatMap((n) => [...n.attributes].map((a) => a.name));
    return { tags, attrs, text: body.textContent, html: body.innerHTML };
  }, src);
}

const ANSWER = `## Options of wasysym

The package takes these options:

| option | effect | since |
| :--- | :---: | ---: |
| \`nointegrals\` | no integral signs | 2.0 |
| \`integrals\` | all integral signs | 1.0 |

1. Load it with **nointegrals**:
2. then *use* the ~~old~~ symbols.
   - nested item

\`\`\`latex
\\usepackage[nointegrals]{wasysym}
\`\`\`

> quoted from the manual`;

test("an answer's Markdown becomes headings, a table, lists and code with a copy button", async () => {
  const r = await render(ANSWER);
  for (const t of ["h4", "table", "thead", "tbody", "th", "td", "ol", "ul", "li", "strong", "em", "s", "code", "pre", "blockquote", "button"]) {
    assert.ok(r.tags.includes(t), `no <${t}> in ${r.tags.join(",")}`);
  }
  assert.ok(r.text.includes("\\usepackage[nointegrals]{wasysym}"));
  // Alignment is a class, never a style attribute.
  assert.ok(!r.attrs.includes("style"), r.attrs.join(","));
  assert.match(r.html, /<th class="align-center">effect<\/th>/);
  // The copy button copies the code.
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  const copy = page.locator("#md-test .md-code button.copy").last();
  await copy.click();
  // The button says how it went once the clipboard's write has resolved.
  await page.waitForFunction(() => [...document.querySelectorAll("#md-test .md-code button.copy")].pop().textContent !== "Copy");
  assert.equal(await copy.innerText(), "Copied");
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "\\usepackage[nointegrals]{wasysym}");
  await page.locator("#md-test").screenshot({ path: join(shots, "14-markdown-answer.png") });
  await page.evaluate(() => { document.documentElement.dataset.theme = "dark"; });
  await page.locator("#md-test").screenshot({ path: join(shots, "14-markdown-answer-dark.png") });
  await page.evaluate(() => { document.documentElement.dataset.theme = "light"; });
  assert.deepEqual(problems, []);
});

test("hostile Markdown shows as text and runs or loads nothing", async () => {
  const hostile = [
    "[click me](javascript:window.__pwned=1;alert(1))",
    "<a href=\"javascript:alert(2)\">raw link</a>",
    "![tracker](http://evil.example/pixel.png)",
    "<img src=x onerror=\"window.__pwned=3;alert(3)\">",
    "<script>window.__pwned=4;alert(4)</script>",
    "<iframe src=\"http://evil.example/frame\"></iframe>",
    "<style>body{display:none}</style>",
    "<javascript:alert(5)> and <http://evil.example/autolink>",
    "[ref link][r]\n\n[r]: javascript:alert(6)",
    "<svg onload=alert(7)>",
    "&lt;b&gt;entity&lt;/b&gt; and <b onclick=alert(8)>bold</b>",
  ].join("\n\n");
  const r = await render(hostile);
  for (const bad of ["a", "img", "script", "iframe", "style", "svg", "object", "embed", "b", "form", "input"]) {
    assert.ok(!r.tags.includes(bad), `<${bad}> was created: ${r.html.slice(0, 400)}`);
  }
  assert.ok(!r.attrs.some((a) => a.startsWith("on") || a === "href" || a === "src" || a === "style"), r.attrs.join(","));
  // Raw HTML is visible as the text it is.
  assert.ok(r.text.includes("<img src=x onerror="), r.text);
  assert.ok(r.text.includes("<script>window.__pwned=4;alert(4)</script>"), r.text);
  // A javascript: link is not even a link (the parser refuses the address): its text
  // shows as written. Other links show their words, the address only on hover, and
  // clicking them goes nowhere.
  assert.ok(r.text.includes("[click me](javascript:window.__pwned=1;alert(1))"), r.text);
  const links = page.locator("#md-test .md-link");
  const titles = await links.evaluateAll((ls) => ls.map((l) => l.title));
  assert.ok(titles.length > 0 && titles.every((t) => !/^\s*javascript:/i.test(t)), titles.join(" | "));
  for (let i = 0; i < titles.length; i++) await links.nth(i).click();
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).display), "block");
  assert.deepEqual(problems, []);
  await page.locator("#md-test").screenshot({ path: join(shots, "15-markdown-hostile.png") });
});

test("while an answer streams, finished blocks stay put and a citation in code stays text", async () => {
  const same = await page.evaluate(async (src) => {
    const { renderMarkdown, morph } = await import("/js/markdown.js");
    const box = document.createElement("div");
    document.body.append(box);
    let first = null;
    let kept = 0;
    let steps = 0;
    for (let i = 1; i <= src.length; i += 7) {
      morph(box, renderMarkdown(src.slice(0, i)));
      const p = box.firstChild;
      if (first && p === first) kept++;
      if (p && p.tagName === "P" && p.textContent === "First paragraph, finished." && !first) first = p;
      steps++;
    }
    morph(box, renderMarkdown(src));
    return { kept, steps, same: box.firstChild === first, blocks: box.children.length };
  }, "First paragraph, finished.\n\nSecond one grows token by token, with a list after it:\n\n- one\n- two\n- three\n");
  assert.ok(same.same, JSON.stringify(same));
  assert.ok(same.kept > 5, JSON.stringify(same));
  assert.equal(same.blocks, 3);
  const cites = await page.evaluate(async () => {
    const { renderMarkdown } = await import("/js/markdown.js");
    const box = document.createElement("div");
    const hook = (s) => {
      const f = document.createDocumentFragment();
      for (const part of s.split(/(\[1\])/)) {
        if (part === "[1]") { const b = document.createElement("button"); b.textContent = part; f.append(b); } else f.append(part);
      }
      return f;
    };
    box.append(renderMarkdown("Cited [1] here, not `in code [1]`, and **bold [1]**.", hook));
    return { buttons: box.querySelectorAll("button").length, code: box.querySelector("code").textContent };
  });
  assert.deepEqual(cites, { buttons: 2, code: "in code [1]" });
});

test("an answer copies as plain text without the Markdown marks", async () => {
  const text = await page.evaluate(async (src) => {
    const { plainText } = await import("/js/markdown.js");
    return plainText(src);
  }, "## Title\n\nSome **bold** and `code`.\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |\n");
  assert.equal(text, "Title\nSome bold and code.\n• a\n• b\nx\ty\n1\t2");
});
