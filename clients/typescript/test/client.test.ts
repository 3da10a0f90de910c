import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import {
  ApiError,
  RotaClient,
  RunNotFinished,
  ServerUnreachable,
  WorkflowRunNotFinished,
} from "../src/index.js";
import { startServer, type LiveServer } from "./server.js";

const T = { timeout: 60_000 };
let server: LiveServer;
let rota: RotaClient;

before(async () => {
  server = await startServer();
  rota = new RotaClient({ baseUrl: server.url, token: server.token });
}, { timeout: 60_000 });

after(async () => {
  await server?.stop();
}, { timeout: 60_000 });

describe("runs", () => {
  it("enqueues, waits for and reads back a run", T, async () => {
    const runId = await rota.enqueue({ handler: "echo", payload: { n: 1 }, priority: 3 });
    const run = await rota.waitFor(runId, { timeoutMs: 30_000 });
    assert.equal(run.state, "succeeded");
    assert.deepEqual(run.result, { n: 1 });
    assert.equal(run.priority, 3);
    const detail = await rota.getRun(runId);
    assert.deepEqual(detail.attempts.map((a) => a.outcome), ["succeeded"]);
    assert.deepEqual((await rota.runLogs(runId)).map((l) => l.message), ["echoing"]);
  });

  it("returns the same run for a repeated idempotency key", T, async () => {
    const first = await rota.enqueue({ handler: "echo", payload: 1 }, { idempotencyKey: "ts-once" });
    const again = await rota.enqueue({ handler: "echo", payload: 2 }, { idempotencyKey: "ts-once" });
    assert.equal(again, first);
  });

  it("pages through every run once", T, async () => {
    const made = new Set<number>();
    for (let i = 0; i < 7; i++) made.add(await rota.enqueue({ handler: "echo", payload: i, queue: "ts-paged" }));
    const walked: number[] = [];
    for await (const run of rota.runs({ queue: "ts-paged", limit: 3 })) walked.push(run.id);
    assert.deepEqual([...walked].sort(), [...made].sort());
    const page = await rota.listRuns({ queue: "ts-paged", limit: 3 });
    assert.equal(page.items.length, 3);
    assert.ok(page.next_cursor);
  });

  it("cancels a long run and times out waiting for it", T, async () => {
    const runId = await rota.enqueue({ handler: "sleepy" });
    await assert.rejects(rota.waitFor(runId, { timeoutMs: 300, pollMs: 100 }), (error) => {
      assert.ok(error instanceof RunNotFinished);
      assert.equal(error.runId, runId);
      return true;
    });
    await rota.cancelRun(runId);
    const run = await rota.waitFor(runId, { timeoutMs: 30_000 });
    assert.ok(["cancelled", "succeeded"].includes(run.state));
  });

  it("dead-letters, lists and replays", T, async () => {
    const dead = await rota.enqueue({ handler: "doomed" });
    assert.equal((await rota.waitFor(dead, { timeoutMs: 30_000 })).state, "dead_lettered");
    const seen: number[] = [];
    for await (const run of rota.deadRuns({ handler: "doomed" })) seen.push(run.id);
    assert.ok(seen.includes(dead));
    const [result] = await rota.replayDead([dead]);
    assert.ok(result?.new_run_id && result.new_run_id > dead);
    assert.equal(await rota.requeueRun(dead), result.new_run_id);
  });
});

describe("jobs", () => {
  it("creates, triggers, pauses, resumes, updates and deletes", T, async () => {
    const job = await rota.createJob({ name: "ts-nightly", handler: "echo", cron: "0 2 * * *" });
    assert.equal(job.name, "ts-nightly");
    assert.ok((await rota.listJobs()).some((j) => j.name === "ts-nightly"));
    await rota.createJob({ name: "ts-owned", handler: "echo", owner: "ts-team", labels: { env: "ts" } });
    const owned = await rota.listJobs(undefined, { owner: "ts-team", label: ["env=ts"] });
    assert.deepEqual(owned.map((j) => j.name), ["ts-owned"]);
    assert.deepEqual(await rota.listJobs("default", { label: ["env=none"] }), []);
    await rota.deleteJob("ts-owned");
    assert.equal((await rota.pauseJob("ts-nightly")).paused, true);
    assert.equal((await rota.resumeJob("ts-nightly")).paused, false);
    assert.deepEqual((await rota.updateJob("ts-nightly", { payload: { x: 1 } })).payload, { x: 1 });
    const runId = await rota.trigger("ts-nightly", { payload: { x: 2 } });
    assert.deepEqual((await rota.waitFor(runId, { timeoutMs: 30_000 })).result, { x: 2 });
    await rota.deleteJob("ts-nightly");
    await assert.rejects(rota.getJob("ts-nightly"), (error) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 404);
      assert.equal(error.type, "urn:rota:problem:not-found");
      assert.match(error.detail, /ts-nightly/);
      return true;
    });
  });
});

describe("workflow runs", () => {
  it("lists none and answers 404 for an unknown run", T, async () => {
    assert.deepEqual(await rota.listWorkflowRuns({ limit: 5 }), []);
    for (const call of [() => rota.getWorkflowRun(999), () => rota.workflowRunGraph(999)]) {
      await assert.rejects(call(), (error) => error instanceof ApiError && error.status === 404);
    }
  });
});

describe("workflows, events, backfill and breakers", () => {
  it("saves a definition, starts it once per key and waits for it", T, async () => {
    const steps = [
      { name: "first", handler: "echo" },
      { name: "second", handler: "echo", after: ["first"] },
    ];
    const saved = await rota.saveWorkflow({ name: "ts-flow", steps });
    assert.equal(saved.name, "ts-flow");
    assert.ok((await rota.listWorkflows()).some((w) => w.name === "ts-flow"));
    assert.equal((await rota.getWorkflow("ts-flow")).version, saved.version);
    const id = await rota.startWorkflow("ts-flow", { payload: { day: 1 }, idempotencyKey: "ts-flow-once" });
    assert.equal(await rota.startWorkflow("ts-flow", { idempotencyKey: "ts-flow-once" }), id);
    const run = await rota.waitForWorkflow(id, { timeoutMs: 30_000 });
    assert.equal(run.state, "succeeded");
    assert.deepEqual(run.steps.map((step) => step.name).sort(), ["first", "second"]);
    await assert.rejects(rota.saveWorkflow({ name: "ts-loop", steps: [{ name: "a", after: ["a"] }] }), (error) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 422);
      return true;
    });
  });

  it("gives up waiting for a workflow run that has not finished", T, async () => {
    await rota.saveWorkflow({ name: "ts-slow", steps: [{ name: "nap", handler: "sleepy" }] });
    const id = await rota.startWorkflow("ts-slow");
    await assert.rejects(rota.waitForWorkflow(id, { timeoutMs: 300, pollMs: 100 }), (error) => {
      assert.ok(error instanceof WorkflowRunNotFinished);
      assert.equal(error.workflowRunId, id);
      return true;
    });
    await rota.cancelWorkflowRun(id);
  });

  it("publishes an event once per id to its subscribers", T, async () => {
    await rota.createJob({ name: "ts-on-order", handler: "echo" }); // no trigger: manual
    const subscription = await rota.subscribe({ event: "ts.order", job: "ts-on-order" });
    assert.equal(subscription.job, "ts-on-order");
    const first = await rota.publishEvent({ name: "ts.order", id: "order-1", payload: { n: 7 } });
    assert.equal(first.created, true);
    assert.equal(first.run_ids.length, 1);
    const again = await rota.publishEvent({ name: "ts.order", id: "order-1", payload: { n: 7 } });
    assert.equal(again.created, false);
    const [runId] = first.run_ids;
    assert.deepEqual((await rota.waitFor(runId!, { timeoutMs: 30_000 })).result, { n: 7 });
    const seen: string[] = [];
    for await (const event of rota.events({ name: "ts.order", limit: 1 })) seen.push(event.event_id);
    assert.deepEqual(seen, ["order-1"]);
  });

  it("backfills a schedule's slots once", T, async () => {
    await rota.createJob({ name: "ts-hourly", handler: "echo", cron: "0 * * * *" });
    const window = { from: "2026-01-01T00:00:00Z", to: "2026-01-01T04:59:00Z" };
    assert.equal((await rota.backfill("ts-hourly", { ...window, dry_run: true })).slots, 5);
    assert.equal((await rota.backfill("ts-hourly", window)).created, 5);
    const twice = await rota.backfill("ts-hourly", window);
    assert.deepEqual([twice.created, twice.existing], [0, 5]);
  });

  it("lists breakers", T, async () => {
    const breakers = await rota.listBreakers();
    assert.ok(Array.isArray(breakers.items));
    assert.ok(Array.isArray(breakers.transitions));
  });
});

describe("cluster", () => {
  it("drains and resumes the worker; names the leader", T, async () => {
    const [worker] = await rota.listWorkers();
    assert.ok(worker);
    assert.equal((await rota.drainWorker(worker.node_id)).state, "draining");
    assert.equal((await rota.resumeWorker(worker.node_id)).state, "active");
    assert.equal((await rota.leader())?.holder, worker.node_id);
  });
});

describe("errors", () => {
  it("throws typed problems for refused input and bad credentials", T, async () => {
    await assert.rejects(rota.enqueue({ handler: "nope" }), (error) => {
      assert.ok(error instanceof ApiError);
      assert.equal(error.status, 422);
      assert.match(error.detail, /handler/);
      return true;
    });
    const stranger = new RotaClient({ baseUrl: server.url, token: "not-a-token" });
    await assert.rejects(stranger.listJobs(), (error) => error instanceof ApiError && error.status === 401);
  });

  it("refuses bad input before sending anything", T, async () => {
    let sent = 0;
    const counting: typeof fetch = async () => {
      sent += 1;
      return new Response("{}", { status: 500 });
    };
    assert.throws(() => new RotaClient({ baseUrl: "" }), /baseUrl is missing/);
    assert.throws(() => new RotaClient({ baseUrl: "ftp://x" }), /baseUrl=.* is not allowed/);
    assert.throws(() => new RotaClient({ baseUrl: server.url, timeoutMs: -1 }), /timeoutMs=-1/);
    const client = new RotaClient({ baseUrl: server.url, fetch: counting });
    await assert.rejects(client.enqueue({ handler: "echo", payload: { n: Number.NaN } }), /payload.n is not JSON/);
    await assert.rejects(
      client.enqueue({ handler: "echo", payload: { big: 1n } as never }),
      /payload.big is not JSON: it holds a bigint/,
    );
    await assert.rejects(client.waitFor(1, { timeoutMs: -5 }), /timeoutMs=-5/);
    assert.equal(sent, 0);
  });

  it("retries a keyed enqueue after a bad gateway with the same key", T, async () => {
    const keys: string[] = [];
    const answers = [new Response("", { status: 503 }), Response.json({ run_id: 9 }, { status: 201 })];
    const flaky: typeof fetch = async (_url, init) => {
      keys.push(new Headers(init?.headers).get("Idempotency-Key") ?? "");
      return answers.shift() ?? new Response("", { status: 500 });
    };
    const client = new RotaClient({ baseUrl: server.url, fetch: flaky });
    assert.equal(await client.enqueue({ handler: "echo" }), 9);
    assert.equal(keys.length, 2);
    assert.equal(keys[0], keys[1]);
  });

  it("names an unreachable server", T, async () => {
    const nowhere = new RotaClient({ baseUrl: "http://127.0.0.1:1", retries: 0 });
    await assert.rejects(nowhere.listJobs(), ServerUnreachable);
  });
});
