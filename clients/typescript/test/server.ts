/** A live `rota server` for the tests: SQLite in a temp directory, development mode
 * (for /dev/token), the client test handlers, on a free port. */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, openSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO = resolve(import.meta.dirname, "../../../..");

export interface LiveServer {
  url: string;
  token: string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))));
    });
  });
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startServer(): Promise<LiveServer> {
  const home = mkdtempSync(join(tmpdir(), "rota-ts-"));
  const port = await freePort();
  const python = process.env["ROTA_PYTHON"] ?? join(REPO, ".venv", "bin", "python");
  const log = openSync(join(home, "server.log"), "a");
  const proc: ChildProcess = spawn(
    python,
    ["-m", "rota", "server", "--port", String(port), "--app", "tests.apps.client_app:app"],
    {
      cwd: REPO,
      env: { ...process.env, ROTA_DATABASE_URL: `sqlite:///${join(home, "rota.db")}`, ROTA_ENV: "development" },
      stdio: ["ignore", log, log],
    },
  );
  const exited = new Promise<void>((done) => proc.once("exit", () => done()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (proc.exitCode !== null) return;
    proc.kill("SIGTERM");
    const killed = setTimeout(() => proc.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(killed);
  };
  try {
    await until("the server to answer", 30_000, async () => {
      if (proc.exitCode !== null) throw new Error(`server exited (log: ${home}/server.log)`);
      return (await fetch(`${url}/health/live`)).ok ? true : undefined;
    });
    const answer = await fetch(`${url}/dev/token`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ role: "admin" }),
    });
    const { access_token: token } = (await answer.json()) as { access_token: string };
    return { url, token, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
