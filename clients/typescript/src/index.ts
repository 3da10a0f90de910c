/**
 * A typed client for rota's HTTP API. The types come from the committed OpenAPI
 * document (src/schema.ts is generated from docs/openapi.json: `npm run generate`);
 * this file is the small hand-written layer over them. No runtime dependency beyond
 * the platform's `fetch`.
 */
import type { components, operations } from "./schema.js";
import { certificateProblem, fetchTrusting } from "./trust.js";

type Schemas = components["schemas"];
export type Run = Schemas["RunOut"];
export type RunState = Schemas["RunState"];
export type RunDetail = Schemas["RunDetailOut"];
export type RunPage = Schemas["RunPage"];
export type LogLine = Schemas["LogLineOut"];
export type Job = Schemas["JobOut"];
export type JobCreate = Schemas["JobCreate"];
export type JobUpdate = Schemas["JobUpdate"];
export type EnqueueRequest = Schemas["EnqueueRequest"];
export type Worker = Schemas["WorkerOut"];
export type Leader = Schemas["LeaderOut"];
export type ReplayResult = Schemas["ReplayResultOut"];
export type Problem = Schemas["Problem"];
export type WorkflowRun = Schemas["WorkflowRunOut"];
export type WorkflowRunSummary = Schemas["WorkflowRunSummary"];
export type WorkflowGraph = Schemas["WorkflowGraph"];
export type WorkflowDefinition = Schemas["WorkflowOut"];
export type WorkflowCreate = Schemas["WorkflowCreate"];
export type EventPublish = Schemas["EventPublish"];
export type EventPublished = Schemas["EventPublished"];
/** A published event (named so beside the platform's own `Event`). */
export type RotaEvent = Schemas["EventOut"];
export type EventPage = Schemas["EventPage"];
export type EventSubscription = Schemas["EventSubscriptionOut"];
export type EventSubscribe = Schemas["SubscriptionPut"];
export type BackfillRequest = Schemas["BackfillBody"];
export type BackfillResult = Schemas["BackfillOut"];
export type Breakers = Schemas["BreakerList"];
export type Breaker = Schemas["BreakerOut"];
export type RunFilters = NonNullable<operations["list_runs"]["parameters"]["query"]>;
export type JobFilters = NonNullable<operations["list_jobs"]["parameters"]["query"]>;
export type EventFilters = NonNullable<operations["list_events"]["parameters"]["query"]>;
export type DeadFilters = NonNullable<operations["list_dead"]["parameters"]["query"]>;
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** The states a run does not leave. */
export const FINISHED_STATES: ReadonlySet<RunState> = new Set<RunState>([
  "succeeded",
  "failed",
  "timed_out",
  "cancelled",
  "dead_lettered",
]);
const RETRY_STATUSES = new Set([502, 503, 504]);

export class RotaError extends Error {
  override name = "RotaError";
}

/** A problem response (RFC 9457) from the server. */
export class ApiError extends RotaError {
  override name = "ApiError";
  readonly type: string;
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  constructor(readonly problem: Problem) {
    const detail = problem.detail ?? problem.title;
    super(`${detail} (HTTP ${problem.status})`);
    this.type = problem.type;
    this.status = problem.status;
    this.title = problem.title;
    this.detail = detail;
  }
}

/** The server could not be reached (or did not answer within the timeout). */
export class ServerUnreachable extends RotaError {
  override name = "ServerUnreachable";
}

/** The server's TLS certificate does not verify: another CA, expired, another name. */
export class CertificateRefused extends ServerUnreachable {
  override name = "CertificateRefused";
}

/** `waitFor` gave up: the run had not finished within the timeout. */
export class RunNotFinished extends RotaError {
  override name = "RunNotFinished";
  constructor(
    readonly runId: number,
    readonly state: RunState,
    readonly timeoutMs: number,
  ) {
    super(`run ${runId} is still ${state} after ${timeoutMs} ms`);
  }
}

/** `waitForWorkflow` gave up: the workflow run had not finished within the timeout. */
export class WorkflowRunNotFinished extends RotaError {
  override name = "WorkflowRunNotFinished";
  constructor(
    readonly workflowRunId: number,
    readonly state: string,
    readonly timeoutMs: number,
  ) {
    super(`workflow run ${workflowRunId} is still ${state} after ${timeoutMs} ms`);
  }
}

export interface ClientOptions {
  /** The server's base URL, e.g. http://127.0.0.1:5017 */
  baseUrl: string;
  /** A JWT or an API key, sent as `Authorization: Bearer ...`. */
  token?: string | undefined;
  /** Per request; default 10 s. */
  timeoutMs?: number;
  /** Retries of reads and idempotent writes after a dropped connection or a 502/503/504; default 2. */
  retries?: number;
  /** Another fetch (tests, proxies); default the global one. */
  fetch?: typeof fetch;
  /** Node: the CA (PEM) to verify an https:// server against, instead of the system's. */
  ca?: string | Uint8Array;
}

interface Call {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, unknown> | undefined;
  body?: unknown;
  headers?: Record<string, string>;
  /** Safe to send again: reads, and writes that are idempotent or carry a key. */
  retryable?: boolean;
}

export class RotaClient {
  readonly baseUrl: string;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly fetchFn: typeof fetch;
  private readonly ca: boolean;

  constructor(options: ClientOptions) {
    this.baseUrl = checkBaseUrl(options?.baseUrl);
    this.token = options.token;
    this.timeoutMs = checkPositive("timeoutMs", options.timeoutMs ?? 10_000);
    const retries = options.retries ?? 2;
    if (!Number.isInteger(retries) || retries < 0 || retries > 10) {
      throw new RangeError(`retries=${String(retries)} is not allowed: use an integer from 0 to 10`);
    }
    this.retries = retries;
    this.ca = options.ca !== undefined;
    this.fetchFn = options.fetch ?? (options.ca !== undefined ? fetchTrusting(options.ca) : globalThis.fetch);
  }

  // -- jobs -------------------------------------------------------------------------
  /** Every job you can see; `owner` and `label` (`key=value`, every one must match) narrow it. */
  async listJobs(namespace?: string, filters: Omit<JobFilters, "namespace"> = {}): Promise<Job[]> {
    const page = await this.call<Schemas["JobList"]>({
      method: "GET",
      path: "/api/v1/jobs",
      query: { ...filters, namespace },
      retryable: true,
    });
    return page.items;
  }

  getJob(name: string, namespace = "default"): Promise<Job> {
    return this.call({ method: "GET", path: `/api/v1/jobs/${seg(name)}`, query: { namespace }, retryable: true });
  }

  createJob(job: JobCreate): Promise<Job> {
    checkJson("job", job);
    return this.call({ method: "POST", path: "/api/v1/jobs", body: job });
  }

  updateJob(name: string, changes: JobUpdate, namespace = "default"): Promise<Job> {
    checkJson("changes", changes);
    // Applying the same changes twice leaves the same job: safe to retry.
    return this.call({
      method: "PATCH",
      path: `/api/v1/jobs/${seg(name)}`,
      query: { namespace },
      body: changes,
      retryable: true,
    });
  }

  async deleteJob(name: string, namespace = "default"): Promise<void> {
    await this.call({ method: "DELETE", path: `/api/v1/jobs/${seg(name)}`, query: { namespace } });
  }

  pauseJob(name: string, namespace = "default"): Promise<Job> {
    return this.call({ method: "POST", path: `/api/v1/jobs/${seg(name)}/pause`, query: { namespace }, retryable: true });
  }

  resumeJob(name: string, namespace = "default"): Promise<Job> {
    return this.call({ method: "POST", path: `/api/v1/jobs/${seg(name)}/resume`, query: { namespace }, retryable: true });
  }

  /** Run a job now; resolves to the run's id. */
  async trigger(
    name: string,
    options: { payload?: JsonValue; namespace?: string; idempotencyKey?: string } = {},
  ): Promise<number> {
    const body = options.payload === undefined ? undefined : { payload: checkJson("payload", options.payload) };
    const created = await this.call<Schemas["RunCreated"]>({
      method: "POST",
      path: `/api/v1/jobs/${seg(name)}/trigger`,
      query: { namespace: options.namespace ?? "default" },
      body,
      headers: { "Idempotency-Key": options.idempotencyKey ?? newKey() },
      retryable: true,
    });
    return created.run_id;
  }

  // -- runs -------------------------------------------------------------------------
  /** One run of a handler the server knows; resolves to its id (the first run's id
   * again for a repeated idempotency key; one is made up when none is given, so a
   * retried request never starts the work twice). */
  async enqueue(
    request: EnqueueRequest,
    options: { namespace?: string; idempotencyKey?: string } = {},
  ): Promise<number> {
    if (typeof request?.handler !== "string" || request.handler === "") {
      throw new TypeError("enqueue: handler must be a non-empty string");
    }
    checkJson("payload", request.payload ?? null);
    if (request.timeout_seconds != null) checkPositive("timeout_seconds", request.timeout_seconds);
    const created = await this.call<Schemas["RunCreated"]>({
      method: "POST",
      path: "/api/v1/runs",
      query: { namespace: options.namespace ?? "default" },
      body: request,
      headers: { "Idempotency-Key": options.idempotencyKey ?? newKey() },
      retryable: true,
    });
    return created.run_id;
  }

  getRun(runId: number): Promise<RunDetail> {
    return this.call({ method: "GET", path: `/api/v1/runs/${checkId(runId)}`, retryable: true });
  }

  /** One page of runs, newest first; pass `next_cursor` back as `cursor` for the next. */
  listRuns(filters: RunFilters = {}): Promise<RunPage> {
    return this.call({ method: "GET", path: "/api/v1/runs", query: filters, retryable: true });
  }

  /** Every run matching `filters`, fetched page by page as you iterate. */
  runs(filters: RunFilters = {}): AsyncIterableIterator<Run> {
    return this.pages((cursor) => this.listRuns({ ...filters, cursor }));
  }

  async runLogs(runId: number): Promise<LogLine[]> {
    const logs = await this.call<Schemas["RunLogs"]>({
      method: "GET",
      path: `/api/v1/runs/${checkId(runId)}/logs`,
      retryable: true,
    });
    return logs.lines;
  }

  /** A waiting run is cancelled at once; a running one is asked to stop. */
  cancelRun(runId: number): Promise<Run> {
    return this.call({ method: "POST", path: `/api/v1/runs/${checkId(runId)}/cancel`, retryable: true });
  }

  /** Run a finished run again as a fresh run; asking twice gives the same new run. */
  async requeueRun(runId: number): Promise<number> {
    const answer = await this.call<Schemas["Requeued"]>({
      method: "POST",
      path: `/api/v1/runs/${checkId(runId)}/requeue`,
      retryable: true,
    });
    return answer.new_run_id;
  }

  /** Poll until the run has finished; rejects with RunNotFinished after `timeoutMs`. */
  async waitFor(runId: number, options: { timeoutMs?: number; pollMs?: number } = {}): Promise<Run> {
    return poll(
      async () => (await this.getRun(runId)).run,
      (run) => FINISHED_STATES.has(run.state),
      (run, timeoutMs) => new RunNotFinished(runId, run.state, timeoutMs),
      options,
    );
  }

  // -- dead letters -----------------------------------------------------------------
  listDead(filters: DeadFilters = {}): Promise<RunPage> {
    return this.call({ method: "GET", path: "/api/v1/dlq", query: filters, retryable: true });
  }

  deadRuns(filters: DeadFilters = {}): AsyncIterableIterator<Run> {
    return this.pages((cursor) => this.listDead({ ...filters, cursor }));
  }

  /** Replay dead-lettered runs; one result per id (`new_run_id` or `error`). */
  async replayDead(runIds: number[]): Promise<ReplayResult[]> {
    if (!Array.isArray(runIds) || runIds.length === 0) {
      throw new TypeError("replayDead: give at least one run id");
    }
    const answer = await this.call<Schemas["ReplayManyOut"]>({
      method: "POST",
      path: "/api/v1/dlq/replay",
      body: { run_ids: runIds.map(checkId) },
      retryable: true,
    });
    return answer.results;
  }

  // -- workflow runs ----------------------------------------------------------------
  /** The newest workflow runs (optionally of one workflow), newest first. */
  async listWorkflowRuns(options: { name?: string; limit?: number } = {}): Promise<WorkflowRunSummary[]> {
    const list = await this.call<Schemas["WorkflowRunList"]>({
      method: "GET",
      path: "/api/v1/workflow-runs",
      query: options,
      retryable: true,
    });
    return list.items;
  }

  /** Start a run of a saved workflow; resolves to the workflow run's id (the same id
   * again for a repeated idempotency key; one is made up when none is given). */
  async startWorkflow(
    name: string,
    options: { payload?: JsonValue; namespace?: string; idempotencyKey?: string } = {},
  ): Promise<number> {
    const body = options.payload === undefined ? undefined : { payload: checkJson("payload", options.payload) };
    const started = await this.call<Schemas["WorkflowRunStarted"]>({
      method: "POST",
      path: `/api/v1/workflows/${seg(name)}/runs`,
      query: { namespace: options.namespace ?? "default" },
      body,
      headers: { "Idempotency-Key": options.idempotencyKey ?? newKey() },
      retryable: true,
    });
    return started.workflow_run_id;
  }

  /** Poll until the workflow run has finished; rejects with WorkflowRunNotFinished
   * after `timeoutMs`. */
  async waitForWorkflow(
    workflowRunId: number,
    options: { timeoutMs?: number; pollMs?: number } = {},
  ): Promise<WorkflowRun> {
    return poll(
      () => this.getWorkflowRun(workflowRunId),
      (run) => run.finished_at != null,
      (run, timeoutMs) => new WorkflowRunNotFinished(workflowRunId, run.state, timeoutMs),
      options,
    );
  }

  /** A workflow run: its derived state, duration and steps. */
  getWorkflowRun(workflowRunId: number): Promise<WorkflowRun> {
    return this.call({ method: "GET", path: `/api/v1/workflow-runs/${checkId(workflowRunId)}`, retryable: true });
  }

  /** The run's graph: nodes (steps with their states) and edges. */
  workflowRunGraph(workflowRunId: number): Promise<WorkflowGraph> {
    return this.call({ method: "GET", path: `/api/v1/workflow-runs/${checkId(workflowRunId)}/graph`, retryable: true });
  }

  /** Cancel every unfinished step of a workflow run. */
  cancelWorkflowRun(workflowRunId: number): Promise<WorkflowRun> {
    return this.call({ method: "POST", path: `/api/v1/workflow-runs/${checkId(workflowRunId)}/cancel`, retryable: true });
  }

  // -- saved workflow definitions ---------------------------------------------------
  /** Save a definition (a new version when the name exists); the server checks it as
   * the library does (cycles, unknown parents or handlers) and answers 422 otherwise. */
  saveWorkflow(definition: WorkflowCreate): Promise<WorkflowDefinition> {
    checkJson("definition", definition);
    return this.call({ method: "POST", path: "/api/v1/workflows", body: definition });
  }

  async listWorkflows(namespace?: string): Promise<WorkflowDefinition[]> {
    const list = await this.call<Schemas["WorkflowList"]>({
      method: "GET",
      path: "/api/v1/workflows",
      query: { namespace },
      retryable: true,
    });
    return list.items;
  }

  getWorkflow(name: string, namespace = "default"): Promise<WorkflowDefinition> {
    return this.call({ method: "GET", path: `/api/v1/workflows/${seg(name)}`, query: { namespace }, retryable: true });
  }

  // -- events -----------------------------------------------------------------------
  /** Publish an event: every subscribed job and workflow starts once per event id.
   * An id is made up when none is given, so a retried request publishes it once. */
  publishEvent(event: EventPublish, options: { namespace?: string } = {}): Promise<EventPublished> {
    if (typeof event?.name !== "string" || event.name === "") {
      throw new TypeError("publishEvent: name must be a non-empty string");
    }
    checkJson("payload", event.payload ?? null);
    return this.call({
      method: "POST",
      path: "/api/v1/events",
      query: { namespace: options.namespace ?? "default" },
      body: { ...event, id: event.id ?? newKey() },
      retryable: true,
    });
  }

  /** One page of published events, newest first. */
  listEvents(filters: EventFilters = {}): Promise<EventPage> {
    return this.call({ method: "GET", path: "/api/v1/events", query: filters, retryable: true });
  }

  /** Every published event matching `filters`, page by page as you iterate. */
  events(filters: EventFilters = {}): AsyncIterableIterator<RotaEvent> {
    return this.pages((cursor) => this.listEvents({ ...filters, cursor }));
  }

  /** Subscribe a job or a saved workflow to an event (putting it again replaces the filter). */
  subscribe(subscription: EventSubscribe, options: { namespace?: string } = {}): Promise<EventSubscription> {
    checkJson("subscription", subscription);
    return this.call({
      method: "PUT",
      path: "/api/v1/events/subscriptions",
      query: { namespace: options.namespace ?? "default" },
      body: subscription,
      retryable: true,
    });
  }

  // -- backfill and breakers --------------------------------------------------------
  /** Create the runs a job's schedule would have made between `from` and `to` (one per
   * slot, never twice); `dry_run: true` only counts them. */
  backfill(name: string, request: BackfillRequest, namespace = "default"): Promise<BackfillResult> {
    checkJson("request", request);
    return this.call({
      method: "POST",
      path: `/api/v1/jobs/${seg(name)}/backfill`,
      query: { namespace },
      body: request,
      retryable: true,
    });
  }

  /** Every circuit breaker's state, and the newest transitions. */
  listBreakers(): Promise<Breakers> {
    return this.call({ method: "GET", path: "/api/v1/breakers", retryable: true });
  }

  /** Close a breaker by hand (an operator's override; recorded as a transition). */
  resetBreaker(handler: string, key = ""): Promise<Breaker> {
    return this.call({
      method: "POST",
      path: `/api/v1/breakers/${seg(handler)}/reset`,
      query: { key },
      retryable: true,
    });
  }

  // -- cluster ----------------------------------------------------------------------
  async listWorkers(): Promise<Worker[]> {
    const page = await this.call<Schemas["WorkerList"]>({ method: "GET", path: "/api/v1/workers", retryable: true });
    return page.items;
  }

  drainWorker(nodeId: string): Promise<Worker> {
    return this.call({ method: "POST", path: `/api/v1/workers/${seg(nodeId)}/drain`, retryable: true });
  }

  resumeWorker(nodeId: string): Promise<Worker> {
    return this.call({ method: "POST", path: `/api/v1/workers/${seg(nodeId)}/resume`, retryable: true });
  }

  /** The leader's lease, or null when no node holds it. */
  async leader(): Promise<Leader | null> {
    const state = await this.call<Schemas["LeaderState"]>({ method: "GET", path: "/api/v1/leader", retryable: true });
    return state.leader;
  }

  // -- plumbing ---------------------------------------------------------------------
  private async *pages<T>(
    next: (cursor: string | null) => Promise<{ items: T[]; next_cursor?: string | null }>,
  ): AsyncIterableIterator<T> {
    let cursor: string | null = null;
    do {
      const page: { items: T[]; next_cursor?: string | null } = await next(cursor);
      yield* page.items;
      cursor = page.next_cursor ?? null;
    } while (cursor);
  }

  private async call<T>(call: Call): Promise<T> {
    const tries = call.retryable ? 1 + this.retries : 1;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetchFn(this.url(call), {
          method: call.method,
          headers: this.headers(call),
          body: call.body === undefined ? null : JSON.stringify(call.body),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (error) {
        const refused = certificateProblem(error);
        if (refused !== undefined) {
          const trusted = this.ca ? "the given CA does" : "the system's CAs do";
          throw new CertificateRefused(
            `the server at ${this.baseUrl} presented a certificate that ${trusted} not vouch for (${refused}); ` +
              "give the CA that signed it (the ca option)",
          );
        }
        if (attempt + 1 < tries) {
          await sleep(backoffMs(attempt));
          continue;
        }
        throw new ServerUnreachable(`cannot reach the rota server at ${this.baseUrl} (${String(error)})`);
      }
      if (RETRY_STATUSES.has(response.status) && attempt + 1 < tries) {
        await sleep(backoffMs(attempt));
        continue;
      }
      return (await decode(response)) as T;
    }
  }

  private url(call: Call): string {
    const url = new URL(this.baseUrl + call.path);
    for (const [key, value] of Object.entries(call.query ?? {})) {
      if (value === undefined || value === null) continue;
      for (const item of Array.isArray(value) ? value : [value]) url.searchParams.append(key, String(item));
    }
    return url.toString();
  }

  private headers(call: Call): Record<string, string> {
    const headers: Record<string, string> = { Accept: "application/json", ...call.headers };
    if (call.body !== undefined) headers["Content-Type"] = "application/json";
    if (this.token) headers["Authorization"] = `Bearer ${this.token}`;
    return headers;
  }
}

async function decode(response: Response): Promise<unknown> {
  const text = await response.text();
  if (response.status >= 400) {
    let problem: Problem;
    try {
      problem = JSON.parse(text) as Problem;
    } catch {
      problem = { type: "about:blank", title: response.statusText, status: response.status, detail: text.slice(0, 200) };
    }
    throw new ApiError({ ...problem, status: problem.status ?? response.status });
  }
  return text === "" ? undefined : JSON.parse(text);
}

function checkBaseUrl(value: unknown): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new TypeError("baseUrl is missing: give the server's URL, e.g. http://127.0.0.1:5017");
  }
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new TypeError(`baseUrl=${JSON.stringify(value)} is not a URL: use http:// or https://host:port`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`baseUrl=${JSON.stringify(value)} is not allowed: use an http:// or https:// URL`);
  }
  return value.trim().replace(/\/+$/, "");
}

function checkPositive(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name}=${String(value)} is not allowed: use a positive number`);
  }
  return value;
}

function checkId(value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`run id ${String(value)} is not allowed: use a positive integer`);
  }
  return value;
}

/** Refuse what JSON cannot carry (undefined, functions, BigInt, NaN, Infinity, cycles),
 * naming where it is, before anything is sent. The value itself is never echoed. */
function checkJson<T>(name: string, value: T, seen = new Set<object>()): T {
  const fail = (what: string): never => {
    throw new TypeError(`${name} is not JSON: it holds ${what}`);
  };
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : fail(`a non-finite number`);
  if (typeof value !== "object") return fail(`a ${typeof value}`);
  if (seen.has(value)) return fail("a cycle");
  seen.add(value);
  if (Array.isArray(value)) {
    value.forEach((item, index) => checkJson(`${name}[${index}]`, item, seen));
  } else {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) fail(`a ${value.constructor?.name ?? "class"} object`);
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) checkJson(`${name}.${key}`, item, seen);
    }
  }
  seen.delete(value);
  return value;
}

function seg(value: string): string {
  return encodeURIComponent(value);
}

function newKey(): string {
  return `client-${globalThis.crypto.randomUUID()}`;
}

function backoffMs(attempt: number): number {
  // 100 ms, 200 ms, 400 ms ... capped at 2 s, with full jitter.
  return Math.random() * Math.min(2_000, 100 * 2 ** attempt);
}

/** Read until `done`, every `pollMs` (200), for at most `timeoutMs` (60 s); then
 * reject with `gaveUp`'s error for the last reading. */
async function poll<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  gaveUp: (last: T, timeoutMs: number) => Error,
  options: { timeoutMs?: number; pollMs?: number },
): Promise<T> {
  const timeoutMs = checkPositive("timeoutMs", options.timeoutMs ?? 60_000);
  const pollMs = checkPositive("pollMs", options.pollMs ?? 200);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    const left = deadline - Date.now();
    if (left <= 0) throw gaveUp(value, timeoutMs);
    await sleep(Math.min(pollMs, left));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
