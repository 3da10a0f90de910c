/** The README's TypeScript example ("From other services") runs as printed. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, it } from "node:test";
import { promisify } from "node:util";

import { REPO, startServer, type LiveServer } from "./server.js";

const PACKAGE = resolve(import.meta.dirname, "../..");
let server: LiveServer;

before(async () => {
  server = await startServer();
}, { timeout: 60_000 });

after(async () => {
  await server?.stop();
}, { timeout: 60_000 });

it("runs the README's example against a live server", { timeout: 60_000 }, async () => {
  const readme = readFileSync(join(REPO, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## From other services"));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, "README.md has a ```ts block under 'From other services'");
  // Written inside the package, so `import ... from "@rota/client"` resolves to this
  // package by its own name, as it does for a user who installed it.
  const script = join(PACKAGE, "dist", "readme-example.mjs");
  writeFileSync(script, block);
  const { stdout } = await promisify(execFile)(process.execPath, [script], {
    env: { ...process.env, ROTA_URL: server.url, ROTA_TOKEN: server.token },
    timeout: 45_000,
  });
  assert.match(stdout, /^succeeded \{"rows":500\}$/m);
});
