// A real PostgreSQL server with pgvector for the end-to-end tests: the pgserver wheel's
// binaries (`scripts/setup.sh --test` installs them into .venv-pg), started by
// scripts/pg-test-server.sh on a free loopback port with its cluster in a temporary
// directory; stop() stops it and removes the directory.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { repo } from "./harness.mjs";

const script = join(repo, "scripts/pg-test-server.sh");

/** `scripts/pg-test-server.sh ...args`; its one line of output (a URL). */
async function run(...args) {
  try {
    const { stdout } = await promisify(execFile)(script, args, { cwd: repo });
    return stdout.trim();
  } catch (e) {
    throw new Error(`scripts/pg-test-server.sh ${args.join(" ")} failed (${e.code}):\n${e.stderr || e.message}`);
  }
}

/** Start a server with a database `quire` that has the `vector` extension; resolves,
 *  once it accepts connections, to { url, dir, freshDatabase(name), stop() }:
 *  freshDatabase creates another database (with vector) and resolves to its URL. */
export async function startPostgres() {
  const venv = join(repo, ".venv-pg");
  if (!existsSync(venv)) {
    throw new Error(`${venv} missing: run \`scripts/setup.sh --test\`, which installs PostgreSQL and pgvector (the pgserver wheel) there`);
  }
  const dir = await mkdtemp(join(tmpdir(), "quire-pg-"));
  let url;
  try {
    url = await run("start", dir);
  } catch (e) {
    await run("stop", dir).catch(() => {});
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  let stopped = false;
  return {
    /** Stop at once, synchronously (for a process's "exit" handler). */
    stopNow() {
      if (stopped) return;
      stopped = true;
      try {
        execFileSync(script, ["stop", dir], { cwd: repo, stdio: "ignore" });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    url,
    dir,
    freshDatabase: (name) => run("createdb", dir, name),
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        await run("stop", dir);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
