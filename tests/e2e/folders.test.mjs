// Watched folders in a real browser (Debian's Chromium) over `quire serve` with the
// real default models: "Add folder" takes a path (the server is local), the folder's
// PDFs are indexed in the background and listed, a folder whose root disappears is
// marked missing with its documents kept (unavailable) and comes back, and Stop
// watching takes its documents out. Screenshots in both themes go to artifacts/e2e/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo, startServer, launchBrowser } from "./harness.mjs";
import { makePdf } from "./make-pdf.mjs";

const shots = join(repo, "artifacts/e2e");

let server, url, browser, page, dataDir, library;
const pageErrors = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "quire-folders-"));
  library = join(mkdtempSync(join(tmpdir(), "quire-folders-lib-")), "Library");
  mkdirSync(join(library, "sub"), { recursive: true });
  makePdf(join(library, "tides.pdf"), [["The tides follow the moon.", "Spring tides are the highest."]]);
  makePdf(join(library, "sub", "reefs.PDF"), [["Coral reefs grow slowly in warm water."]]);
  ({ url, proc: server } = await startServer(dataDir));
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("dialog", (d) => d.accept());
  await page.goto(url);
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  if (library) rmSync(join(library, ".."), { recursive: true, force: true });
});

async function theme(t) {
  await page.evaluate((t) => { document.documentElement.dataset.theme = t; }, t);
}

test("Add folder indexes the folder's PDFs and lists the folder", async () => {
  await page.click("#add-folder");
  await page.fill(".folder-form input[aria-label='Folder to watch']", library);
  await page.fill(".folder-form input[aria-label='Collection for the folder\\'s documents']", "Sea");
  await page.click(".folder-form button[type=submit]");
  await page.waitForSelector('#folders li.folder:has-text("Library")');
  await page.waitForSelector('#documents li:has-text("tides")', { timeout: 600_000 });
  await page.waitForSelector('#documents li:has-text("reefs")', { timeout: 600_000 });
  await page.waitForSelector('#folders li.folder:has-text("2 docs")', { timeout: 60_000 });
  for (const t of ["light", "dark"]) {
    await theme(t);
    await page.locator("#sidebar").screenshot({ path: join(shots, `folders-${t}.png`) });
  }
  await theme("light");
});

test("a bad path is refused with its reason", async () => {
  await page.click("#add-folder");
  await page.fill(".folder-form input[aria-label='Folder to watch']", join(library, "nope"));
  await page.click(".folder-form button[type=submit]");
  await page.waitForFunction(() => /nope/.test(document.body.textContent));
  await page.click(".folder-form button[type=button]");
});

test("a missing folder keeps its documents, unavailable, until it returns", async () => {
  const away = join(library, "..", "Unmounted");
  renameSync(library, away);
  await page.click('#folders li.folder button[aria-label^="Rescan"]');
  await page.waitForSelector("#folders li.folder.missing", { timeout: 60_000 });
  await page.waitForSelector("#documents li.unavailable", { timeout: 60_000 });
  assert.equal(await page.locator("#documents li.unavailable").count(), 2);
  for (const t of ["light", "dark"]) {
    await theme(t);
    await page.locator("#sidebar").screenshot({ path: join(shots, `folders-missing-${t}.png`) });
  }
  await theme("light");
  renameSync(away, library);
  await page.click('#folders li.folder button[aria-label^="Rescan"]');
  await page.waitForSelector("#folders li.folder:not(.missing)", { timeout: 60_000 });
  await page.waitForFunction(() => !document.querySelector("#documents li.unavailable"), null, { timeout: 60_000 });
});

test("Stop watching takes the folder's documents out", async () => {
  await page.click('#folders li.folder button[aria-label^="Stop watching"]');
  await page.waitForFunction(() => !document.querySelector("#folders li.folder"), null, { timeout: 60_000 });
  await page.waitForFunction(() => !/tides/.test(document.querySelector("#documents").textContent), null, { timeout: 60_000 });
  assert.deepEqual(pageErrors, []);
});
