// The dashboard walked through in headless Chromium (playwright-core over the system browser),
// against the daemons tests/ui/dashboard_test.py started. Every check throws on failure; the
// exit code is the verdict. Config: the JSON in AIOS_UI_TEST.
"use strict";

const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");

const config = JSON.parse(process.env.AIOS_UI_TEST);
const token = fs.readFileSync(config.tokenFile, "utf8").trim();
const T0 = Date.now();

function say(text) {
  console.log(`${((Date.now() - T0) / 1000).toFixed(1).padStart(6)}s  ${text}`);
}

function check(condition, text) {
  if (!condition) throw new Error(`check failed: ${text}`);
}

async function api(method, route, body) {
  const answer = await fetch(config.base + route, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const value = await answer.json();
  if (answer.status >= 300) throw new Error(`${method} ${route} answered ${answer.status} ${JSON.stringify(value)}`);
  return value;
}

// Waits (up to `seconds`) until `probe` in the page returns true.
async function until(page, text, probe, arg, seconds = 30) {
  try {
    await page.waitForFunction(probe, arg, { timeout: seconds * 1000, polling: 100 });
  } catch (error) {
    await page.screenshot({ path: path.join(config.screenshots, "failure.png"), fullPage: true });
    throw new Error(`timed out waiting for ${text}`);
  }
  say(`seen: ${text}`);
}

const rowStatus = ([id, status]) => {
  const row = document.querySelector(`#recent tr[data-task="${id}"] .status`);
  return row !== null && row.textContent === status && !document.getElementById("overview").hidden;
};

// Every table of the view on screen shows all its columns inside its panel (nothing cut off,
// nothing to scroll sideways), and the page itself is no wider than the window.
async function fitsTheWindow(page, where) {
  const wide = await page.evaluate(() => {
    const regions = [...document.querySelectorAll(".view:not([hidden]) .scroll")].filter((region) => region.querySelector("table"));
    return {
      tables: regions.length,
      cut: regions.filter((region) => region.scrollWidth > region.clientWidth + 1).map((region) => `${region.id} ${region.scrollWidth}>${region.clientWidth}`),
      page: document.documentElement.scrollWidth - window.innerWidth,
    };
  });
  check(wide.tables > 0, `${where}: tables to measure`);
  check(wide.cut.length === 0, `${where}: tables wider than their panel at 1280 px: ${wide.cut.join(", ")}`);
  check(wide.page <= 1, `${where}: the page ${wide.page}px wider than the window`);
}

// The drawn timeline's labels: none overlaps another or leaves the drawing, and together they
// account for every event. Answers how many rows of labels it took.
async function labelsApart(page, where) {
  const seen = await page.evaluate(() => {
    const drawing = document.querySelector("#timeline svg");
    const box = drawing.getBoundingClientRect();
    const labels = [...drawing.querySelectorAll("text.mark-label")].map((label) => {
      const r = label.getBoundingClientRect();
      return { text: label.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom, events: Number(label.getAttribute("data-events")) };
    });
    const overlaps = [];
    labels.forEach((a, i) => {
      for (const b of labels.slice(i + 1)) {
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps.push(`"${a.text}" and "${b.text}"`);
      }
    });
    const outside = labels.filter((l) => l.left < box.left - 0.5 || l.right > box.right + 0.5 || l.top < box.top - 0.5 || l.bottom > box.bottom + 0.5);
    return {
      overlaps,
      outside: outside.map((l) => l.text),
      events: labels.reduce((sum, l) => sum + l.events, 0),
      marks: drawing.querySelectorAll("circle").length,
      rows: new Set(labels.map((l) => Math.round(l.top))).size,
    };
  });
  check(seen.overlaps.length === 0, `${where}: timeline labels overlap: ${seen.overlaps.join("; ")}`);
  check(seen.outside.length === 0, `${where}: timeline labels outside the drawing: ${seen.outside.join("; ")}`);
  check(seen.events === seen.marks, `${where}: labels tell ${seen.events} events of ${seen.marks} marks`);
  return seen.rows;
}

const taskPageStatus = ([id, status]) => {
  const title = document.getElementById("task-title");
  return !document.getElementById("task").hidden && title.textContent.includes(id) && title.textContent.includes(status);
};

async function main() {
  const browser = await chromium.launch({
    executablePath: config.chromium,
    headless: true,
    // Root in a container: no user namespaces for Chromium's own sandbox.
    chromiumSandbox: false,
    args: ["--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const requests = [];
  const problems = [];
  page.on("request", (request) => requests.push({ url: request.url(), at: Date.now() }));
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    // A refused token is a 401 the browser also logs; anything else (a CSP refusal above all)
    // is a defect of the page.
    // So are the 404 of the task id the script makes up and the 400 of its bad search.
    const asked = message.location().url || "";
    const expected =
      /status of 401/.test(message.text()) ||
      (/status of 404/.test(message.text()) && /[?&]task=no-such-task/.test(asked)) ||
      (/status of 400/.test(message.text()) && /\/v1\/tasks\?.*tenant=not/.test(asked));
    if (message.type() === "error" && !expected) problems.push(`console: ${message.text()} (${asked})`);
  });

  const first = await page.goto(`${config.base}/ui/`);
  const headers = first.headers();
  const csp = headers["content-security-policy"] || "";
  check(/default-src 'none'/.test(csp) && /script-src 'self'/.test(csp) && /frame-ancestors 'none'/.test(csp), `a strict CSP header (got "${csp}")`);
  check(!/unsafe-inline|unsafe-eval/.test(csp), "no unsafe-inline or unsafe-eval in the CSP");
  check(headers["x-content-type-options"] === "nosniff", "X-Content-Type-Options: nosniff");
  check(await page.locator("script:not([src])").count() === 0, "no inline script in the page");
  say(`page loaded with CSP: ${csp}`);

  check((await page.textContent("#login")).includes("/etc/aios-gitops/agent-task-control.token"), "the sign-in names the token file the package installs");

  // A wrong token is refused and shows nothing of the fleet.
  await page.fill("#token", "x".repeat(64));
  await page.keyboard.press("Enter");
  await until(page, "the wrong token refused", () => /refused this token \(401/.test(document.getElementById("login-error").textContent));
  check(await page.locator("#overview").isHidden(), "no overview after a wrong token");
  check((await page.inputValue("#token")) === "", "the token field emptied");

  // The owner's token: the overview, the quarantined spare worker marked in words.
  await page.fill("#token", token);
  await page.click("#login-form button[type=submit]");
  await until(page, "the overview", () => !document.getElementById("overview").hidden);
  await until(page, "worker-spare marked QUARANTINED", () => {
    const row = document.querySelector('#workers tr[data-worker="worker-spare"]');
    return row !== null && row.classList.contains("quarantined") && row.textContent.includes("QUARANTINED") && row.textContent.includes("rack-b");
  });
  check(!page.url().includes(token), "the token is not in the URL");

  // A task created now appears queued (its worker is held in quarantine) ...
  await api("POST", "/v1/tasks", config.task);
  const id = config.task.task_id;
  await until(page, `${id} QUEUED in the newest tasks`, rowStatus, [id, "QUEUED"]);
  await until(page, "the live queue counts it", () => /QUEUED/.test(document.getElementById("queue").textContent));

  // ... its page opens from the keyboard, and says why nobody takes it.
  await page.focus(`#recent tr[data-task="${id}"] a`);
  await page.keyboard.press("Enter");
  await until(page, `${id}'s page`, taskPageStatus, [id, "QUEUED"]);
  await until(page, "the eligibility answer: worker-hermes quarantined", () => {
    const row = document.querySelector('#eligibility tr[data-worker="worker-hermes"]');
    return row !== null && row.textContent.includes("worker quarantined") && row.textContent.includes("no");
  });
  const digest = (await api("GET", `/v1/tasks/${id}`)).execution_digest;
  check(typeof digest === "string" && digest.length === 64, `the task has an envelope digest (${digest})`);
  check((await page.textContent("#task-facts")).includes(digest), "the envelope digest on the task's page");
  await page.screenshot({ path: path.join(config.screenshots, "task-queued-1280x800.png"), fullPage: true });

  // Let the worker go: the page follows the task through its claim and result, live.
  await api("PUT", "/v1/fleet/workers/worker-hermes", { quarantined: false });
  await until(page, `${id} CLAIMED, its lease drawn`, taskPageStatus, [id, "CLAIMED"], 60);
  await until(page, "the live lease on the timeline", () => document.querySelector("#timeline svg rect.lease") !== null);
  await until(page, `${id} VERIFYING after the worker's result`, taskPageStatus, [id, "VERIFYING"], 90);
  await until(page, "its heartbeats counted", () => /[1-9]\d* heartbeats? renewed the lease/.test(document.getElementById("timeline").textContent));
  const view = await api("GET", `/v1/tasks/${id}`);
  await api("POST", `/v1/tasks/${id}/verification`, { expected_revision: view.revision, decision: "PASS", reason: "checked by the dashboard test" });
  await until(page, `${id} SUCCEEDED`, taskPageStatus, [id, "SUCCEEDED"]);
  await labelsApart(page, `${id}'s timeline`);
  await fitsTheWindow(page, `${id}'s page`);
  const timeline = await page.$$eval("#timeline li", (items) => items.map((item) => item.getAttribute("data-event")));
  for (const event of ["TASK_CREATED", "TASK_CLAIMED", "TASK_RESULT_SUBMITTED", "TASK_VERIFIED"]) {
    check(timeline.includes(event), `the timeline shows ${event} (it has ${timeline.join(", ")})`);
  }
  check(timeline.indexOf("TASK_CLAIMED") < timeline.indexOf("TASK_VERIFIED"), "the timeline in order");
  check(await page.locator("#timeline svg circle").count() === timeline.length, "a mark on the drawn timeline per event");
  check(/heartbeat/.test(await page.textContent("#timeline")), "the heartbeats told");
  check(/PASS/.test(await page.textContent("#result")), "the verification decision shown");
  await page.screenshot({ path: path.join(config.screenshots, "task-succeeded-1280x800.png"), fullPage: true });

  // A second task the owner fails: its verification drawn as a failure, not a success; then
  // requeued, which the timeline shows.
  const failing = {
    ...config.task,
    task_id: `${id}-fail`,
    binding: { ...config.task.binding, task_id: `${id}-fail`, job_id: `job-${id}-fail`, target_branch: `agent/${id}-fail`, idempotency_key: `${id}-fail-v1` },
  };
  await api("POST", "/v1/tasks", failing);
  await page.evaluate((taskId) => { location.hash = `#/task/${encodeURIComponent(taskId)}`; }, failing.task_id);
  await until(page, `${failing.task_id} VERIFYING`, taskPageStatus, [failing.task_id, "VERIFYING"], 90);
  const returned = await api("GET", `/v1/tasks/${failing.task_id}`);
  await api("POST", `/v1/tasks/${failing.task_id}/verification`, { expected_revision: returned.revision, decision: "FAIL", reason: "wrong answer" });
  await until(page, `${failing.task_id} FAILED`, taskPageStatus, [failing.task_id, "FAILED"]);
  await until(page, "TASK_VERIFIED drawn as a failure", () => {
    const item = document.querySelector('#timeline li[data-event="TASK_VERIFIED"]');
    return item !== null && item.classList.contains("k-failed") && document.querySelector("#timeline svg circle.k-failed") !== null;
  });
  const failed = await api("GET", `/v1/tasks/${failing.task_id}`);
  await api("POST", `/v1/tasks/${failing.task_id}/requeue`, { expected_revision: failed.revision, idempotency_key: `${failing.task_id}-requeue-1`, reason: "try again" });
  await until(page, "TASK_REQUEUED on the timeline", () => document.querySelector('#timeline li[data-event="TASK_REQUEUED"].k-requeue') !== null, undefined, 60);

  // A task nobody can take (no worker runs OpenClaw), with a long id and tenant, cancelled and
  // requeued in quick turns: its events crowd the timeline, whose labels still never overlap,
  // as they move closer together while the live timeline grows.
  const crowdedId = `ui-crowded-${"with-an-id-long-enough-to-wrap-in-any-table-".repeat(3)}end`;
  const tenant = `acme-${"corporation-with-a-long-tenant-name-".repeat(3)}x`;
  const crowded = {
    ...config.task,
    task_id: crowdedId,
    scope_type: "tenant",
    tenant_id: tenant,
    required_capabilities: ["agent.runtime.openclaw"],
    execution: { action: "agent_runtime", adapter: "openclaw" },
    binding: { ...config.task.binding, task_id: crowdedId, job_id: `job-${crowdedId}`, target_branch: `agent/${crowdedId}`, idempotency_key: `${crowdedId}-v1` },
  };
  await api("POST", "/v1/tasks", crowded);
  await page.evaluate((taskId) => { location.hash = `#/task/${encodeURIComponent(taskId)}`; }, crowdedId);
  await until(page, `${crowdedId} QUEUED`, taskPageStatus, [crowdedId, "QUEUED"]);
  for (let turn = 1; turn <= 4; turn += 1) {
    await api("POST", `/v1/tasks/${crowdedId}/cancel`, { reason: `turn ${turn}` });
    const cancelled = await api("GET", `/v1/tasks/${crowdedId}`);
    await api("POST", `/v1/tasks/${crowdedId}/requeue`, { expected_revision: cancelled.revision, idempotency_key: `${crowdedId}-requeue-${turn}`, reason: `turn ${turn}` });
    await page.waitForTimeout(150);
  }
  await until(page, "the crowded timeline drawn", () => document.querySelectorAll('#timeline li[data-event="TASK_REQUEUED"]').length === 4);
  let rows = 0;
  for (let look = 0; look < 16; look += 1) {
    rows = Math.max(rows, await labelsApart(page, `${crowdedId}'s timeline, look ${look}`));
    await page.waitForTimeout(250);
  }
  check(rows >= 3, `the crowded labels took rows above and below the axis (${rows})`);
  await until(page, "who could take it names what worker-hermes lacks", () => {
    const row = document.querySelector('#eligibility tr[data-worker="worker-hermes"]');
    return row !== null && row.textContent.includes("lacks a required capability: agent.runtime.openclaw") && row.textContent.includes("adapter not allowed: openclaw");
  });
  await fitsTheWindow(page, `${crowdedId}'s page`);
  await page.screenshot({ path: path.join(config.screenshots, "task-crowded-1280x800.png"), fullPage: true });

  // A task id the scheduler does not know: said so, and the page stays until the operator moves.
  await page.evaluate(() => { location.hash = "#/task/no-such-task"; });
  await until(page, "no-such-task shown as missing", () => !document.getElementById("task").hidden && document.getElementById("task-title").textContent === "No task no-such-task");
  await page.waitForTimeout(2500);
  check(await page.locator("#overview").isHidden(), "a missing task's page is not replaced by the overview");
  check((await page.textContent("#task-title")) === "No task no-such-task", "the missing task still named");
  await page.evaluate((taskId) => { location.hash = `#/task/${encodeURIComponent(taskId)}`; }, id);
  await until(page, `${id}'s page again`, taskPageStatus, [id, "SUCCEEDED"]);

  // Back to the overview: the task SUCCEEDED there too, and the charts counted its claim.
  await page.click("a.back");
  await until(page, `${id} SUCCEEDED in the newest tasks`, rowStatus, [id, "SUCCEEDED"]);
  await until(page, "the throughput chart counted the claim", () => /claims [1-9]/.test(document.getElementById("charts").textContent));
  check((await page.textContent('#status-tiles [data-status="SUCCEEDED"]')).startsWith("1"), "one SUCCEEDED task in the tiles");
  await until(page, "the long-named worker listed", (name) => document.querySelector(`#workers tr[data-worker="${name}"]`) !== null, config.longWorker);
  await until(page, "the crowded task among the newest", (taskId) => document.querySelector(`#recent tr[data-task="${taskId}"]`) !== null, crowdedId);
  await fitsTheWindow(page, "the overview");
  await page.screenshot({ path: path.join(config.screenshots, "overview-1280x800.png"), fullPage: true });

  // Finding tasks: by the start of the id, by status, by tenant, from the keyboard; the address
  // keeps the search, a bad one is refused in words, and Clear goes back to the newest.
  const foundAre = (wanted) => document.getElementById("recent-title").textContent === "Tasks found" &&
    JSON.stringify([...document.querySelectorAll("#recent tbody tr")].map((row) => row.getAttribute("data-task"))) === JSON.stringify(wanted);
  await page.fill("#search-prefix", `${id}-`);
  await page.press("#search-prefix", "Enter");
  await until(page, `the search for ids starting ${id}- finds ${id}-fail only`, foundAre, [`${id}-fail`]);
  check(/^#\/tasks\?id_prefix=/.test(new URL(page.url()).hash), `the search in the address (${page.url()})`);
  await page.fill("#search-prefix", "ui-");
  await page.selectOption("#search-status", "SUCCEEDED");
  await page.click("#search button[type=submit]");
  await until(page, "the search by prefix and status finds the succeeded task only", foundAre, [id]);
  await page.fill("#search-prefix", "");
  await page.selectOption("#search-status", "");
  await page.fill("#search-tenant", tenant);
  await page.press("#search-tenant", "Enter");
  await until(page, "the search by tenant finds its one task", foundAre, [crowdedId]);
  await fitsTheWindow(page, "the search's answer");
  await page.screenshot({ path: path.join(config.screenshots, "search-1280x800.png"), fullPage: true });
  await page.fill("#search-tenant", "not a tenant");
  await page.press("#search-tenant", "Enter");
  await until(page, "a bad tenant refused in words", () => /refused this search \(400 TASK_TENANT_INVALID/.test(document.getElementById("search-error").textContent));
  check((await page.locator("#recent tbody tr").count()) === 0, "no rows under a refused search");
  check(/Live/.test(await page.textContent("#connection")), "a refused search is no lost connection");
  // A search's address opened afresh (a bookmark): it asks for the token, then shows the search.
  await page.goto(`${config.base}/ui/#/tasks?status=FAILED`);
  await page.reload();
  await page.fill("#token", token);
  await page.press("#token", "Enter");
  await until(page, "a search from the address after signing in", foundAre, []);
  check((await page.inputValue("#search-status")) === "FAILED", "the form shows the address's search");
  check(/No task with status FAILED/.test(await page.textContent("#recent")), "an empty answer said in words");
  await page.click("#search-clear");
  await until(page, "Clear goes back to the newest tasks", () => document.getElementById("recent-title").textContent === "Newest tasks" && document.getElementById("search-prefix").value === "");

  // A narrow window: one column, nothing wider than the window but the scrolling tables.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(1200);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 1, `no sideways scrolling on a narrow window (${overflow}px too wide)`);
  await page.screenshot({ path: path.join(config.screenshots, "overview-390x844.png"), fullPage: true });

  // Signing out forgets the token: the fleet is gone and no storage holds anything.
  await page.click("#sign-out");
  await until(page, "signed out", () => !document.getElementById("login").hidden && document.getElementById("overview").hidden);
  const stored = await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie]);
  check(stored[0] === 0 && stored[1] === 0 && stored[2] === "", `nothing kept in storage (${JSON.stringify(stored)})`);
  const quiet = requests.length;
  await page.waitForTimeout(2500);
  check(requests.length === quiet, "no request after signing out");

  // Every request stayed on loopback and on this origin, never carried the token in its URL,
  // and the page polled at most about once a second.
  for (const request of requests) {
    const url = new URL(request.url);
    check(url.hostname === "127.0.0.1" && url.origin === config.base, `a request to ${request.url}`);
    check(!request.url.includes(token), "a token in a request URL");
  }
  const polls = requests.filter((r) => new URL(r.url).pathname === "/v1/dashboard");
  const seconds = (polls[polls.length - 1].at - polls[0].at) / 1000;
  // Each navigation (sign-in twice, the task's page, the failed task's, the crowded one's, the
  // missing one's, the task's again, back, five searches and a clear) asks at once; otherwise
  // one a second.
  check(polls.length <= seconds + 16, `${polls.length} polls in ${seconds.toFixed(1)} s`);
  check(problems.length === 0, `no page errors or console errors: ${problems.join(" | ")}`);
  say(`${requests.length} requests, all to ${config.base}; ${polls.length} polls in ${seconds.toFixed(1)} s`);
  await browser.close();
}

main().catch((error) => {
  console.error(`dashboard_browser: ${error.stack || error}`);
  process.exit(1);
});
