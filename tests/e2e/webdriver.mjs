// One Quire window driven through tauri-driver and WebKitWebDriver: start the driver
// on its own ports with the app's environment, open a session on the app, and the
// calls every window test makes. tauri.test.mjs and tests/package/ use it.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export const driverBin = process.env.TAURI_DRIVER || join(process.env.HOME, ".cargo/bin/tauri-driver");

/** Start tauri-driver on `port` (its WebKitWebDriver on `port + 1`), with `env` and
 *  `cwd` for the app, and open a session on `app`. `logLines` caps the driver's log (a
 *  driver in trouble can repeat one line forever); `scriptTimeout` is WebDriver's
 *  script timeout (scripts that index or re-embed take as long as the work). */
export async function openWindow({ app, port, env = process.env, cwd, logLines = 1000, scriptTimeout = 1_800_000 }) {
  const base = `http://127.0.0.1:${port}`;
  // In a process group of its own, with WebKitWebDriver and the app it starts: closing
  // ends them all (killing the driver alone can leave the app running, holding the
  // driver's stderr open, and this test process would never exit).
  const driver = spawn(driverBin, ["--port", String(port), "--native-port", String(port + 1)],
    { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const stop = () => {
    try { process.kill(-driver.pid, "SIGTERM"); } catch { driver.kill(); }
    driver.stdout.destroy();
    driver.stderr.destroy();
  };
  let lines = 0;
  for (const stream of [driver.stdout, driver.stderr]) {
    stream.setEncoding("utf8");
    stream.on("data", (chunk) => {
      for (const line of chunk.split("\n").filter(Boolean)) {
        if (++lines <= logLines) process.stderr.write(`tauri-driver: ${line}\n`);
        else if (lines === logLines + 1) process.stderr.write("tauri-driver: (more lines left out)\n");
      }
    });
  }
  let exited = null;
  driver.on("exit", (code) => { exited = code; });

  async function wd(method, path, body) {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const j = await r.json();
    if (!r.ok || (j.value && j.value.error)) throw new Error(`${method} ${path}: ${JSON.stringify(j.value)}`);
    return j.value;
  }

  for (let i = 0; ; i++) {
    try { await fetch(`${base}/status`, { signal: AbortSignal.timeout(2000) }); break; } catch (e) {
      if (exited !== null) { stop(); throw new Error(`tauri-driver exited (${exited})`); }
      if (i > 200) { stop(); throw new Error(`tauri-driver did not start: ${e}`); }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let session;
  try {
    session = (await wd("POST", "/session", {
      capabilities: { alwaysMatch: { "tauri:options": { application: app }, browserName: "wry" } },
    })).sessionId;
    await wd("POST", `/session/${session}/timeouts`, { script: scriptTimeout });
  } catch (e) {
    stop();
    throw e;
  }

  const exec = (script, args = []) => wd("POST", `/session/${session}/execute/sync`, { script, args });
  const execAsync = (script, args = []) => wd("POST", `/session/${session}/execute/async`, { script, args });
  /** Poll the window's state; bounded by a number of tries, not a timer assertion. A
   *  script that meets a page being unloaded (a reload under way) is tried again. */
  async function waitFor(script, args, what, tries = 1200) {
    let last = "";
    for (let i = 0; i < tries; i++) {
      try {
        const v = await exec(script, args);
        if (v) return v;
      } catch (e) {
        if (!/unload|no such frame/i.test(String(e.message))) throw e;
        last = ` (last: ${e.message})`;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`gave up waiting for ${what}${last}`);
  }
  /** Reload the page and wait until the new one has loaded (a script run right after
   *  `location.reload()` may still see the old page, or meet it unloading). */
  async function reload() {
    await exec("window.__quireOldPage = true; setTimeout(() => location.reload(), 0);");
    await waitFor("return !window.__quireOldPage && document.readyState === 'complete'", [], "the reloaded page");
  }
  /** Run a channel command in the window and return every event it sent. Tauri delivers
   *  a channel's events apart from the command's reply, so the reply can come first: this
   *  waits as well for the channel's end mark (sent when the command drops the channel),
   *  after which Tauri runs the channel's cleanup. */
  const invokeStreamed = (cmd, args) => execAsync(`
    const done = arguments[arguments.length - 1];
    const seen = [];
    const ch = new window.__TAURI__.core.Channel();
    ch.onmessage = (e) => seen.push(e);
    const cleanup = ch.cleanupCallback.bind(ch);
    const drained = new Promise((resolve) => { ch.cleanupCallback = () => { cleanup(); resolve(); }; });
    window.__TAURI__.core.invoke(arguments[0], { ...arguments[1], channel: ch })
      .then(() => drained).then(() => done(seen), (e) => done([{ type: "error", message: String(e) }]));
  `, [cmd, args]);
  async function screenshot(path) {
    const png = await wd("GET", `/session/${session}/screenshot`);
    writeFileSync(path, Buffer.from(png, "base64"));
  }
  async function close() {
    await wd("DELETE", `/session/${session}`).catch(() => {});
    stop();
  }
  return { base, session, wd, exec, execAsync, invokeStreamed, waitFor, reload, screenshot, close };
}
