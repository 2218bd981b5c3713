// What the browser suites share: where things are, `quire serve` on a temporary data
// directory (loopback, a free port), Debian's Chromium through playwright-core, and
// the UI steps every suite takes (upload a PDF, ask and wait for the answer).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const shared = process.env.QUIRE_SHARED || resolve(repo, "../shared");
export const bin = process.env.QUIRE_BIN || join(repo, "target/debug/quire");

/** A corpus question by id, from ../shared/corpus/questions.jsonl. */
export function corpusQuestion(id) {
  const line = readFileSync(join(shared, "corpus/questions.jsonl"), "utf8").split("\n").find((l) => l.includes(`"${id}"`));
  return JSON.parse(line);
}

// QUIRE_E2E_STORE=postgres: every server keeps its index in PostgreSQL (with pgvector),
// started once for the suite by tests/e2e/postgres.mjs, one database per data
// directory (a server restarted on the same directory finds its index again).
let postgres = null;
const databases = new Map();
async function storeFor(dataDir) {
  if (process.env.QUIRE_E2E_STORE !== "postgres") return [];
  if (!postgres) {
    const { startPostgres } = await import("./postgres.mjs");
    postgres = await startPostgres();
    process.on("exit", () => postgres.stopNow());
  }
  if (!databases.has(dataDir)) {
    databases.set(dataDir, await postgres.freshDatabase(`e2e_${databases.size + 1}`));
  }
  return ["--store", databases.get(dataDir)];
}

/** Start `quire serve` on `dataDir` (`opts`: another binary, working directory or
 *  environment); resolves to { url, proc } once it listens. */
export async function startServer(dataDir, opts = {}) {
  const store = await storeFor(dataDir);
  return new Promise((ok, fail) => {
    const proc = spawn(opts.bin || bin, ["serve", "--port", "0", "--data-dir", dataDir, ...store], {
      cwd: opts.cwd || repo,
      env: { ...process.env, ...(opts.env || {}) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/serving on (http:\/\/\S+)/);
      if (m) ok({ url: m[1], proc });
    });
    proc.on("exit", (code) => fail(new Error(`quire serve exited with ${code}: ${out}`)));
  });
}

/** Headless Chromium, nothing of its own on the network. */
export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** Upload `path` through the file input; wait until the document list names it. */
export async function upload(page, path, name, timeout = 600_000) {
  await page.setInputFiles("#file-input", path);
  await page.waitForSelector(`#documents li:has-text("${name}")`, { timeout });
}

/** Ask `text` in `mode` in the conversation shown; the finished answer's locator. */
export async function askIn(page, mode, text, timeout = 600_000) {
  await page.selectOption("#mode", mode);
  const before = await page.locator(".msg.assistant").count();
  await page.fill("#question", text);
  await page.press("#question", "Enter");
  await page.waitForFunction((n) => {
    const msgs = document.querySelectorAll(".msg.assistant");
    return msgs.length > n && !msgs[msgs.length - 1].classList.contains("streaming");
  }, before, { timeout });
  return page.locator(".msg.assistant").last();
}
