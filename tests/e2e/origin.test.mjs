// The local server answers only its own page, in a real browser (Debian's Chromium via
// playwright-core): `quire serve` with the token it makes at start; the browser first
// opens the printed address (so it holds the cookie, the worst case), then a page
// served from a second loopback origin (another port) tries a form upload, a `fetch`
// upload and a `fetch` of /api/conversations. Each is refused by the server itself
// (403, seen on the wire) and the library stays empty; the page's own UI still works.
// Screenshots in artifacts/e2e/ (origin-refused.png: the refusal page).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo, shared, startServer, launchBrowser } from "./harness.mjs";

const shots = join(repo, "artifacts/e2e");
let server, url, origin, browser, context, dataDir, evil, evilOrigin;

/** The hostile page: what any web site the person visits could serve. */
function evilPage(target) {
  return `<!doctype html><html><head><title>Another site</title></head><body>
<h1>Another site</h1>
<form id="f" method="post" enctype="multipart/form-data" action="${target}/api/upload">
  <input type="file" name="file" id="file"><button>send</button>
</form>
<script>
window.tryFetches = async () => {
  const out = {};
  const form = new FormData();
  form.append("file", new Blob(["%PDF-1.4 not really"], { type: "application/pdf" }), "planted.pdf");
  try {
    const r = await fetch("${target}/api/upload", { method: "POST", body: form, mode: "no-cors", credentials: "include" });
    out.upload = r.type;
  } catch (e) { out.upload = "error: " + e; }
  try {
    const r = await fetch("${target}/api/conversations", { credentials: "include" });
    out.read = await r.text();
  } catch (e) { out.read = "error: " + e; }
  return out;
};
</script></body></html>`;
}

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-origin-"));
  ({ url, proc: server } = await startServer(dataDir));
  origin = new URL(url).origin;
  // The second loopback origin: another port on the same address.
  evil = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(evilPage(origin));
  });
  await new Promise((ok) => evil.listen(0, "127.0.0.1", ok));
  evilOrigin = `http://127.0.0.1:${evil.address().port}`;
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1000, height: 700 } });
});

after(async () => {
  await browser?.close();
  evil?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** The documents the server holds, asked from its own page. */
async function documents(page) {
  return page.evaluate(() => fetch("/api/documents").then((r) => r.json()).then((p) => p.items));
}

test("the printed address opens the UI and leaves the address bar without the token", async () => {
  assert.match(url, /\/\?token=[0-9a-f]{32,}$/, "quire serve printed no token in its address");
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector("#mode option", { state: "attached" });
  assert.equal(page.url(), `${origin}/`, "the token stayed in the address bar");
  assert.deepEqual(await documents(page), []);
  await page.screenshot({ path: join(shots, "origin-own-page.png") });
  await page.close();
});

test("a page on another loopback origin can neither upload nor read", async () => {
  const page = await context.newPage();
  const statuses = [];
  page.on("response", (r) => { if (r.url().startsWith(origin)) statuses.push([r.request().method(), new URL(r.url()).pathname, r.status()]); });
  await page.goto(evilOrigin);
  const out = await page.evaluate(() => window.tryFetches());
  // The read is blocked (the server refuses it; CORS would hide it anyway).
  assert.ok(!out.read.includes("\"id\""), `the other site read the conversations: ${out.read}`);
  // The form post: a navigation, answered with the refusal page.
  await page.setInputFiles("#file", join(shared, "corpus/pdfs/wasysym.pdf"));
  await Promise.all([page.waitForNavigation(), page.click("button")]);
  const text = await page.textContent("body");
  assert.match(text, /refused a request from another web site/);
  await page.screenshot({ path: join(shots, "origin-refused.png") });
  // Every request that reached the server was refused there.
  const reached = statuses.filter(([, path]) => path.startsWith("/api/"));
  assert.ok(reached.some(([m, p]) => m === "POST" && p === "/api/upload"), JSON.stringify(statuses));
  for (const [m, p, s] of reached) assert.equal(s, 403, `${m} ${p} answered ${s}`);
  await page.close();
  // Nothing was indexed.
  const own = await context.newPage();
  await own.goto(`${origin}/`);
  assert.deepEqual(await documents(own), [], "a cross-site upload was indexed");
  await own.close();
});

test("a page with another Host (DNS rebinding) gets the refusal page", async () => {
  // Chromium resolves *.localhost to loopback: a name that is not the server's own,
  // as a rebound domain would be.
  const page = await context.newPage();
  const port = new URL(origin).port;
  const resp = await page.goto(`http://rebound.localhost:${port}/api/conversations`);
  assert.equal(resp.status(), 403);
  assert.match(await page.textContent("body"), /answers only to its own address/);
  await page.screenshot({ path: join(shots, "origin-rebound.png") });
  await page.close();
});
