// One Node client for every system bench/peers/run.py measures: the same producers, the same
// number of concurrent workers and the same no-op job, through each system's own client library.
//
//   node client.mjs '<options as JSON>'
//
// Options: system (ours | graphile | pgboss | bullmq, and the batched modes ours-batch |
// graphile-batch), jobs, workers, latency_jobs, latency_gap_ms, batch (jobs per enqueue call and
// per claim in the batched modes),
// server_pid (the process whose CPU is the server's, or a list of them; for PostgreSQL the
// postmaster: its children and the ones it reaped count too), and per system: port/control for ours, pg for the two
// PostgreSQL queues, redis_port for BullMQ. Prints one JSON object:
//   enqueue_seconds      `jobs` jobs added by `workers` concurrent producers (the batched modes:
//                        `batch` jobs per call)
//   lifecycle_seconds    those jobs taken and completed by `workers` concurrent workers
//   server_cpu_seconds   the server's CPU time over the lifecycle phase
//   server_cpu_seconds_each  the same, one figure per process of server_pid
//   latency_ms           per job of a paced run with idle workers: enqueue call to handler start
import fs from "node:fs";
import http from "node:http";

const options = JSON.parse(process.argv[2]);
const { system, jobs, workers } = options;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => Number(process.hrtime.bigint()) / 1e6;  // ms

// CPU seconds of `root` and every live child of it, plus what it reaped (cutime, cstime).
function serverCpu(root) {
  const ticks = 100;  // USER_HZ on Linux
  const fields = (pid) => {
    try {
      const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      return text.slice(text.lastIndexOf(")") + 2).split(" ");
    } catch {
      return null;
    }
  };
  let total = 0;
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const f = fields(name);
    if (!f) continue;
    const pid = Number(name);
    const ppid = Number(f[1]);
    if (pid !== root && ppid !== root) continue;
    total += Number(f[11]) + Number(f[12]);  // utime, stime
    if (pid === root) total += Number(f[13]) + Number(f[14]);  // cutime, cstime
  }
  return total / ticks;
}

// `count` calls of `one(i)` spread over `lanes` concurrent loops.
async function lanes(count, lanesCount, one) {
  let next = 0;
  await Promise.all(Array.from({ length: lanesCount }, async () => {
    for (let i = next++; i < count; i = next++) await one(i);
  }));
}

// --- ours: the Task API over keep-alive HTTP ------------------------------------------------

// `batched`: POST /v1/tasks/batch to enqueue; each worker has `slots` slots and takes its jobs
// with claim-next max_tasks, submits them in one POST /v1/tasks/results (which claims the next
// ones) and the owner verifies them in one POST /v1/tasks/verifications.
// 503 answers ours gave (STORE_BUSY and the like): each is retried after a pause, as a client
// that must not lose its answer does, and counted; the goal is none.
let busyAnswers = 0;
const kBusyRetries = 50;

function oursSystem(batched) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(64, 2 * workers) });
  const call = async (token, method, path, body) => {
    for (let retry = 0; ; ++retry) {
      try {
        return await callOnce(token, method, path, body);
      } catch (error) {
        if (error.status !== 503 || retry >= kBusyRetries) throw error;
        ++busyAnswers;
        await sleep(10);
      }
    }
  };
  const callOnce = (token, method, path, body) => new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const request = http.request({
      host: "127.0.0.1", port: options.port, method, path, agent,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json",
        ...(data ? { "Content-Length": Buffer.byteLength(data) } : {}) },
    }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        if (response.statusCode >= 300) {
          const error = new Error(`${method} ${path}: ${response.statusCode} ${text.slice(0, 300)}`);
          error.status = response.statusCode;
          reject(error);
        } else {
          resolve(JSON.parse(text));
        }
      });
    });
    request.on("error", reject);
    if (data) request.write(data);
    request.end();
  });
  const control = options.control;
  const oid = "a".repeat(40);
  const prefix = options.prefix;
  const slots = batched ? options.slots : 1;
  let agentToken = "";
  let stopping = false;
  const taskBody = (id) => {
    const task = `${prefix}-${id}`;
    return {
      task_id: task, goal: "No-op benchmark job.", required_capabilities: ["agent.runtime.hermes"],
      max_attempts: 3,
      binding: { task_id: task, job_id: `job-${task}`, repository: "aios/bench", base_oid: oid,
        expected_branch_oid: oid, target_branch: `agent/${task}`, branch_mode: "CREATE_NEW",
        generation: 1, idempotency_key: `${task}-binding` },
      execution: { action: "agent_runtime", adapter: "hermes" } };
  };
  const idOf = (claim) => claim.task_id.slice(prefix.length + 1);
  const resultOf = (claim) => ({
    lease_token: claim.lease_token, attempt: claim.attempt,
    execution_digest: claim.execution_digest,
    idempotency_key: `result-${claim.task_id}-${claim.attempt}`, result: { status: "SUCCEEDED" } });
  // claim-next (a long poll), then the result, which claims the next job too, and the
  // owner's verification PASS: as aios-online-agent-worker takes its jobs.
  const singleLoop = async (worker_id, handle) => {
    let next = null;
    while (!stopping) {
      const claim = next ?? (await call(agentToken, "POST", "/v1/tasks/claim-next",
        { worker_id, wait_ms: 200 })).claim;
      next = null;
      if (!claim) continue;
      handle(idOf(claim), "start");
      const submitted = await call(agentToken, "POST", `/v1/tasks/${claim.task_id}/result`, {
        ...resultOf(claim), ...(stopping ? {} : { claim_next: { worker_id } }) });
      next = submitted.claim ?? null;
      await call(control, "POST", `/v1/tasks/${claim.task_id}/verification`, {
        expected_revision: submitted.revision, decision: "PASS", reason: "" });
      handle(idOf(claim), "done");
    }
  };
  const batchLoop = async (worker_id, handle) => {
    let claims = [];
    while (!stopping) {
      if (claims.length === 0) {
        claims = (await call(agentToken, "POST", "/v1/tasks/claim-next",
          { worker_id, wait_ms: 200, max_tasks: slots })).claims;
      }
      if (claims.length === 0) continue;
      for (const claim of claims) handle(idOf(claim), "start");
      const submitted = await call(agentToken, "POST", "/v1/tasks/results", {
        results: claims.map((claim) => ({ task_id: claim.task_id, ...resultOf(claim) })),
        ...(stopping ? {} : { claim_next: { worker_id, max_tasks: slots } }) });
      await call(control, "POST", "/v1/tasks/verifications", {
        verifications: submitted.results.map((result) => ({
          task_id: result.task_id, expected_revision: result.revision, decision: "PASS" })) });
      for (const claim of claims) handle(idOf(claim), "done");
      claims = submitted.claims;
    }
  };
  return {
    async setup() {
      const created = await call(control, "POST", "/v1/agents", {
        agent_id: `${prefix}-agent`, granted_capabilities: ["agent.runtime.hermes"] });
      agentToken = created.token;
      for (let w = 0; w < workers; ++w) {
        await call(agentToken, "POST", "/v1/workers/register", {
          worker_id: `${prefix}-w${w}`, capabilities: ["agent.runtime.hermes"],
          allowed_adapters: ["hermes"], max_concurrency: slots });
      }
    },
    async add(id) {
      await call(control, "POST", "/v1/tasks", taskBody(id));
    },
    ...(batched ? {
      async addBatch(ids) {
        await call(control, "POST", "/v1/tasks/batch", { tasks: ids.map(taskBody) });
      },
    } : {}),
    start(handle) {
      const loop = batched ? batchLoop : singleLoop;
      return Array.from({ length: workers }, (_, w) => loop(`${prefix}-w${w}`, handle));
    },
    async stop(loops) {
      stopping = true;
      await Promise.all(loops);
      agent.destroy();
    },
  };
}

// --- graphile-worker: addJob; the runner's get_job + complete ------------------------------

// `batched`: addJobs to enqueue, and the runner's local queue (`localQueue` 500) with completions
// batched at once (`completeJobBatchDelay` 0), graphile-worker's own high-throughput settings.
async function graphileSystem(batched) {
  const { run, makeWorkerUtils, Logger } = await import("graphile-worker");
  const logger = new Logger(() => () => {});  // its info lines would go to our stdout
  const utils = await makeWorkerUtils({ connectionString: options.pg, logger });
  await utils.migrate();
  let runner;
  return {
    async setup() {},
    async add(id) {
      await utils.addJob("noop", { id }, { maxAttempts: 1 });
    },
    ...(batched ? {
      async addBatch(ids) {
        await utils.addJobs(ids.map((id) => ({ identifier: "noop", payload: { id },
          maxAttempts: 1 })));
      },
    } : {}),
    start(handle) {
      return [run({
        connectionString: options.pg, concurrency: workers, noHandleSignals: true,
        pollInterval: 1000, logger,
        ...(batched ? { preset: { worker: { localQueue: { size: options.batch },
          completeJobBatchDelay: 0 } } } : {}),
        taskList: { noop: async (payload) => { handle(payload.id, "start"); handle(payload.id, "done"); } },
      }).then((started) => { runner = started; })];
    },
    async stop(loops) {
      await Promise.all(loops);
      await runner.stop();
      await utils.release();
    },
  };
}

// --- pg-boss: send; fetch + complete in `workers` loops ------------------------------------

async function pgbossSystem() {
  const module = await import("pg-boss");
  const PgBoss = module.PgBoss ?? module.default;
  const boss = new PgBoss({ connectionString: options.pg, max: workers + 2 });
  boss.on("error", (error) => console.error(error));
  await boss.start();
  const queue = `bench-${options.prefix}`;
  await boss.createQueue(queue);
  let stopping = false;
  return {
    async setup() {},
    async add(id) {
      await boss.send(queue, { id });
    },
    // pg-boss has no push: an empty fetch waits 10 ms before the next one.
    start(handle) {
      return Array.from({ length: workers }, async () => {
        while (!stopping) {
          const [job] = await boss.fetch(queue);
          if (!job) {
            await sleep(10);
            continue;
          }
          handle(job.data.id, "start");
          await boss.complete(queue, job.id);
          handle(job.data.id, "done");
        }
      });
    },
    async stop(loops) {
      stopping = true;
      await Promise.all(loops);
      await boss.stop({ graceful: false, wait: true });
    },
  };
}

// --- BullMQ: add; the Worker's take + complete ---------------------------------------------

async function bullmqSystem() {
  const { Queue, Worker } = await import("bullmq");
  const connection = { host: "127.0.0.1", port: options.redis_port };
  const name = `bench-${options.prefix}`;
  const queue = new Queue(name, { connection });
  let worker;
  return {
    async setup() {},
    async add(id) {
      await queue.add("noop", { id }, { removeOnComplete: true, removeOnFail: true });
    },
    start(handle) {
      worker = new Worker(name, async (job) => { handle(job.data.id, "start"); handle(job.data.id, "done"); },
        { connection, concurrency: workers });
      return [];
    },
    async stop() {
      await worker.close();
      await queue.close();
    },
  };
}

const systems = {
  ours: () => oursSystem(false), "ours-batch": () => oursSystem(true),
  graphile: () => graphileSystem(false), "graphile-batch": () => graphileSystem(true),
  pgboss: pgbossSystem, bullmq: bullmqSystem };

async function main() {
  const queue = await systems[system]();
  await queue.setup();

  const enqueueStart = now();
  if (queue.addBatch) {
    const batches = Math.ceil(jobs / options.batch);
    await lanes(batches, workers, (b) => queue.addBatch(Array.from(
      { length: Math.min(options.batch, jobs - b * options.batch) },
      (_, i) => String(b * options.batch + i))));
  } else {
    await lanes(jobs, workers, (i) => queue.add(String(i)));
  }
  const enqueueSeconds = (now() - enqueueStart) / 1000;

  // Lifecycle: the queue holds `jobs`; the workers take and complete them all.
  let done = 0;
  let finished;
  const allDone = new Promise((resolve) => { finished = resolve; });
  const added = new Map();
  const latencies = [];
  let pacing = false;
  // "start": the handler has the job (its latency, in the paced run); "done": the job is
  // completed as far as the worker sees (after the completion call where the library lets the
  // loop make it; ours after the result and the owner's PASS).
  const handle = (id, phase) => {
    if (pacing) {
      const at = added.get(id);
      if (phase === "start" && at !== undefined) latencies.push(now() - at);
    } else if (phase === "done" && ++done === jobs) {
      finished();
    }
  };
  const servers = [].concat(options.server_pid);
  const cpuStart = servers.map(serverCpu);
  const lifecycleStart = now();
  const loops = queue.start(handle);
  await allDone;
  const lifecycleSeconds = (now() - lifecycleStart) / 1000;
  // graphile-worker and BullMQ complete a job after its handler returns.
  await sleep(50);
  const cpuSecondsEach = servers.map((pid, at) => serverCpu(pid) - cpuStart[at]);
  const cpuSeconds = cpuSecondsEach.reduce((sum, seconds) => sum + seconds, 0);

  // Latency: idle workers, one job at a time, `latency_gap_ms` apart.
  pacing = true;
  await sleep(300);
  for (let i = 0; i < options.latency_jobs; ++i) {
    const id = `lat-${i}`;
    added.set(id, now());
    await queue.add(id);
    await sleep(options.latency_gap_ms);
  }
  await sleep(300);
  await queue.stop(loops);

  process.stdout.write(JSON.stringify({
    system, jobs, workers, enqueue_seconds: enqueueSeconds, lifecycle_seconds: lifecycleSeconds,
    server_cpu_seconds: cpuSeconds, server_cpu_seconds_each: cpuSecondsEach, latency_ms: latencies,
    busy_answers: busyAnswers }) + "\n");
  process.exit(0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
