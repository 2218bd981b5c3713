// Accessibility of Quire's web UI in a real browser (Debian's Chromium via
// playwright-core): axe-core (from npm, injected before the page's own scripts, so the
// page's strict CSP stays on) checks the first screen, an answer with its sources, the
// PDF viewer, the settings and the shortcuts dialogs, each in the light and the dark
// theme; any violation of impact "serious" or "critical" fails. A keyboard-only run
// asks a question and uses the shortcuts dialog with nothing but keys. Screenshots go
// to artifacts/a11y/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makePdf } from "./make-pdf.mjs";
import { repo, startServer, launchBrowser, upload, askIn } from "./harness.mjs";

const shots = join(repo, "artifacts/a11y");
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const THEMES = ["light", "dark"];
const QUESTION = "Where does the quokkaberry grow?";

let server, url, browser, page, dataDir;
const pageErrors = [];
/** Every violation seen, for the summary at the end: "state/theme rule (impact)". */
const seen = [];

async function newPage() {
  const p = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  p.on("pageerror", (e) => pageErrors.push(String(e)));
  p.on("dialog", (d) => { pageErrors.push(`dialog: ${d.message()}`); d.dismiss(); });
  await p.addInitScript({ content: axeSource });
  return p;
}

/** Load the app and wait until it has drawn its first screen. */
async function load(p) {
  await p.goto(url);
  await p.waitForSelector("#mode option", { state: "attached" });
  await p.waitForFunction(() => document.querySelector("#messages .welcome, #messages .msg"));
}

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-a11y-"));
  ({ url, proc: server } = await startServer(dataDir));
  browser = await launchBrowser();
  page = await newPage();
  await load(page);
});

after(async () => {
  if (seen.length) console.log(`axe violations seen (all impacts):\n  ${seen.join("\n  ")}`);
  await browser?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function setTheme(p, theme) {
  await p.evaluate((t) => { document.documentElement.dataset.theme = t; }, theme);
  // Let a frame pass so that the styles are those of the theme.
  await p.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
}

/** Run axe on the page as it is; the violations, each with its nodes. */
function axe(p) {
  return p.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map((n) => `${n.target.join(" ")}: ${(n.failureSummary || "").replace(/\s+/g, " ")}`),
    }));
  });
}

/** Check the page in both themes; fail on serious or critical violations. */
async function check(state, p = page) {
  const theme = await p.evaluate(() => document.documentElement.dataset.theme);
  const bad = [];
  for (const t of THEMES) {
    await setTheme(p, t);
    for (const v of await axe(p)) {
      seen.push(`${state}/${t} ${v.id} (${v.impact}, ${v.nodes.length} node${v.nodes.length === 1 ? "" : "s"})`);
      if (v.impact === "serious" || v.impact === "critical") {
        bad.push(`[${t}] ${v.id} (${v.impact}): ${v.help}\n    ${v.nodes.slice(0, 8).join("\n    ")}`);
      }
    }
  }
  await setTheme(p, theme);
  assert.deepEqual(bad, [], `${state}: serious or critical accessibility violations:\n${bad.join("\n")}`);
}

test("the first screen", async () => {
  await check("first-screen");
});

test("an answer with its sources, and the PDF viewer", async () => {
  const pdf = join(dataDir, "quokka.pdf");
  makePdf(pdf, [[
    "Quokkaberry notes: the quokkaberry grows on islands off the western coast.",
    "It ripens in late summer and is eaten by quokkas and by gulls.",
  ], ["A second page, about something else: tide tables and harbour lights."]]);
  await upload(page, pdf, "quokka", 300_000);
  await page.click("#new-chat");
  const msg = await askIn(page, "no_text", QUESTION, 300_000);
  assert.equal(await msg.locator(".error").count(), 0, await msg.innerText());
  assert.ok(await page.locator("#sources li.source").count() > 0, "no sources shown");
  await check("answer");
  await page.locator("#sources .src-open").first().click();
  await page.waitForSelector("#viewer .pdf-page[data-rendered]", { timeout: 60_000 });
  await check("viewer");
  await page.keyboard.press("Escape");
  assert.ok(await page.locator("#viewer").isHidden());
});

test("the collection dialog, and a 'not found' answer", async () => {
  await page.click("#new-collection");
  await page.waitForSelector("#collection-dialog[open]");
  await check("collection-dialog");
  await page.keyboard.press("Escape");
  await page.waitForSelector("#collection-dialog:not([open])", { state: "attached" });
  await page.click("#new-chat");
  const msg = await askIn(page, "no_text", "What is a good recipe for banana bread with walnuts?", 300_000);
  assert.ok(await msg.evaluate((m) => m.classList.contains("not-found")), await msg.innerText());
  await check("not-found");
});

test("the settings dialog", async () => {
  await page.click("#settings-btn");
  await page.waitForSelector("#settings[open]");
  await check("settings");
  // Its templates and a custom mode being composed.
  await page.click("#templates-section > summary");
  await page.click("#custom-modes-section > summary");
  await page.click("#add-custom-mode");
  await check("settings, templates and a custom mode");
  await page.keyboard.press("Escape");
  await page.waitForSelector("#settings:not([open])", { state: "attached" });
});

test("the shortcuts dialog", async () => {
  await page.click("#shortcuts-btn");
  await page.waitForSelector("#shortcuts[open]");
  const listed = await page.locator("#shortcuts-list tr").count();
  assert.ok(listed >= 10, `only ${listed} shortcuts listed`);
  await check("shortcuts");
  for (const t of THEMES) {
    await setTheme(page, t);
    await page.screenshot({ path: join(shots, `shortcuts-${t}.png`) });
  }
  await page.keyboard.press("Escape");
  await page.waitForSelector("#shortcuts:not([open])", { state: "attached" });
  assert.deepEqual(pageErrors, []);
});

/** Where the focus is: the element's id, or its tag and text. */
const focused = (p) => p.evaluate(() => {
  const a = document.activeElement;
  return a ? a.id || `${a.tagName.toLowerCase()}:${(a.textContent || "").trim().slice(0, 30)}` : "";
});

test("keyboard only: tab to the question, ask, open and close the shortcuts, focus is always visible", async () => {
  const p = await newPage();
  try {
    await load(p);
    // No control is taken out of the document's order by a positive tabindex.
    assert.deepEqual(await p.evaluate(() => [...document.querySelectorAll("[tabindex]")].filter((n) => n.tabIndex > 0).map((n) => n.id)), []);
    // Tab from the page's start: every stop shows where the focus is, and the question
    // box is reached.
    const stops = [];
    for (let i = 0; i < 60 && (await focused(p)) !== "question"; i++) {
      await p.keyboard.press("Tab");
      const f = await focused(p);
      stops.push(f);
      // On the way, the Mode menu: typing its first letter picks no_text (a quick answer).
      if (f === "mode") await p.keyboard.press("n");
      const ring = await p.evaluate(() => {
        const a = document.activeElement;
        if (!a || a === document.body) return "none";
        const s = getComputedStyle(a);
        const outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0;
        return outline || s.boxShadow !== "none" ? "ok" : `${s.outlineStyle} ${s.outlineWidth} / ${s.boxShadow}`;
      });
      assert.equal(ring, "ok", `no visible focus on ${f}`);
    }
    assert.equal(await focused(p), "question", `Tab never reached the question box: ${stops.join(" → ")}`);
    assert.equal(stops[0], "new-chat", `the first Tab stop: ${stops.join(" → ")}`);
    assert.equal(await p.inputValue("#mode"), "no_text");
    // Ask with the keyboard: typed, sent with Enter, answered.
    await p.keyboard.type("Which islands does the quokkaberry grow on?");
    const before = await p.locator(".msg.assistant").count();
    await p.keyboard.press("Enter");
    await p.waitForFunction((n) => {
      const msgs = document.querySelectorAll(".msg.assistant");
      return msgs.length > n && !msgs[msgs.length - 1].classList.contains("streaming");
    }, before, { timeout: 300_000 });
    assert.match(await p.locator(".msg.user").last().innerText(), /Which islands/);
    assert.ok(await p.locator("#sources li.source").count() > 0);
    // Out of the text field (Tab to Send), `?` opens the shortcuts; Esc closes them and
    // the focus is back on Send.
    await p.keyboard.press("Tab");
    assert.equal(await focused(p), "send");
    for (const t of THEMES) {
      await setTheme(p, t);
      await p.screenshot({ path: join(shots, `focused-send-${t}.png`) });
    }
    const ring = await p.evaluate(() => {
      const s = getComputedStyle(document.getElementById("send"));
      return { style: s.outlineStyle, width: s.outlineWidth, shadow: s.boxShadow };
    });
    assert.ok((ring.style !== "none" && parseFloat(ring.width) >= 2) || ring.shadow !== "none", JSON.stringify(ring));
    await p.keyboard.press("?");
    await p.waitForSelector("#shortcuts[open]");
    assert.equal(await focused(p), "shortcuts-close");
    await p.keyboard.press("Escape");
    await p.waitForSelector("#shortcuts:not([open])", { state: "attached" });
    assert.equal(await focused(p), "send", "the focus did not come back to where it was");
    // `/` goes to the question box; typing there types, `?` included.
    await p.keyboard.press("/");
    // Twice (session 58; CI, 2026-12-07) the focus was read still on Send after the key:
    // the dialog's late close event had taken it back (fixed in keys.js, checked below).
    await p.waitForFunction(() => document.activeElement?.id === "question", null, { timeout: 5_000 })
      .catch(() => {});
    assert.equal(await focused(p), "question");
    await p.keyboard.type("why?");
    assert.equal(await p.inputValue("#question"), "why?");
    assert.ok(await p.locator("#shortcuts").evaluate((d) => !d.open));
    // Esc then `/` at once (CI, 2026-12-07): the dialog's close event comes a task after
    // it closed, and must not take the focus back from where the key had put it. Here the
    // dialog is closed and the question box focused in one step, then the event is let in.
    await p.focus("#send");
    await p.keyboard.press("?");
    await p.waitForSelector("#shortcuts[open]");
    assert.equal(await p.evaluate(async () => {
      document.getElementById("shortcuts").close();
      document.getElementById("question").focus();
      await new Promise((r) => setTimeout(r, 100));
      return document.activeElement?.id;
    }), "question", "the shortcuts dialog's close took the focus back from the question box");
    // From the question box: Ctrl+/ lists the shortcuts, Ctrl+, opens the settings,
    // Ctrl+Shift+L switches the theme, Ctrl+Shift+O starts a new conversation.
    await p.keyboard.press("Control+/");
    await p.waitForSelector("#shortcuts[open]");
    await p.keyboard.press("Escape");
    assert.equal(await focused(p), "question");
    await p.keyboard.press("Control+,");
    await p.waitForSelector("#settings[open]");
    await p.keyboard.press("Escape");
    await p.waitForSelector("#settings:not([open])", { state: "attached" });
    const theme = await p.evaluate(() => document.documentElement.dataset.theme);
    await p.keyboard.press("Control+Shift+L");
    assert.notEqual(await p.evaluate(() => document.documentElement.dataset.theme), theme);
    await p.keyboard.press("Control+Shift+L");
    assert.equal(await p.evaluate(() => document.documentElement.dataset.theme), theme);
    await p.keyboard.press("Control+Shift+O");
    await p.waitForSelector("#messages .welcome");
    assert.equal(await p.locator("#messages .msg").count(), 0);
    // A conversation in the list opens with the keyboard.
    await p.locator("#conversations li .name").first().focus();
    await p.keyboard.press("Enter");
    await p.waitForSelector("#messages .msg.user");
    assert.deepEqual(pageErrors, []);
  } finally {
    await p.close();
  }
});
