// The operator's dashboard: one GET /v1/dashboard a second with the owner token, drawn with DOM
// calls only (every value is text, never markup: task ids, goals and results are the agents').
// The token lives in this closure and nowhere else: not in the URL, not in any storage.
"use strict";

(() => {
  const POLL_MS = 1000;
  const MAX_BACKOFF_MS = 5000;
  const KEPT_EVENTS = 40;
  const FOUND_PAGE = 50; // tasks a search shows at a time
  const SEARCH_FIELDS = ["id_prefix", "status", "tenant"]; // the Task API's listing filters
  const SEARCH_ERRORS = {
    TASK_ID_PREFIX_INVALID: "a task id starts with a letter or digit, then letters, digits, '.', '_', ':' or '-' (180 at most)",
    TASK_TENANT_INVALID: "a tenant is a name: a letter or digit, then letters, digits, '.', '_', ':' or '-' (128 at most)",
    TASK_STATUS_INVALID: "not a status",
    LIMIT_INVALID: "not a page of the listing",
  };
  const LABEL_ROW = 17; // px from one row of timeline labels to the next (a 12 px label is ~15 tall)
  const MERGE_PX = 12; // marks nearer than this (a mark's width) share one label
  const STATUSES = ["QUEUED", "CLAIMED", "VERIFYING", "SUCCEEDED", "FAILED", "CANCELLED"];
  const REASONS = {
    capability_missing: "lacks a required capability",
    adapter_not_allowed: "adapter not allowed",
    scope: "does not serve the tenant",
    offline: "offline",
    stopped: "stopped (said so when it shut down)",
    worker_quarantined: "worker quarantined",
    task_quarantined: "task quarantined on this worker",
    circuit_open: "circuit open",
    no_free_slot: "no free slot",
    task_not_queued: "task is not queued",
    envelope_unresolved: "its envelope does not resolve now",
  };
  const EVENT_KINDS = [
    ["TASK_CREATED", "created"],
    ["TASK_CLAIMED", "claim"],
    ["TASK_RESULT_SUBMITTED", "result"],
    ["TASK_VERIFIED", "verification"],
    ["TASK_REQUEUED", "requeue"],
    ["TASK_EXECUTION_REBIND", "rebind"],
    ["TASK_RELEASED", "release"],
    ["TASK_LEASE_EXPIRED", "release"],
    ["TASK_CANCELLED", "cancel"],
    ["BRIDGE_", "bridge"],
  ];

  let token = null;
  let timer = null;
  let failures = 0;
  let generation = 0; // a sign-out or a new view makes answers to older requests moot
  let cursor = null;
  let events = [];
  let task = null; // {id, after, events, heartbeats}
  let missing = null; // a task id the scheduler does not know, shown so until the operator navigates
  let skew = 0; // server clock minus this one, in ms

  const $ = (id) => document.getElementById(id);

  // An element with attributes (class, href, data-*, aria-*, ...) and children (text or nodes).
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "text") node.textContent = String(value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    for (const child of children.flat(Infinity)) {
      if (child !== undefined && child !== null) node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function badge(status) {
    return h("span", { class: `badge s-${String(status).toLowerCase()}` }, String(status));
  }

  // Stored times have microseconds; Date takes milliseconds.
  function parseTime(text) {
    if (!text) return NaN;
    return Date.parse(String(text).replace(/(\.\d{3})\d+/, "$1"));
  }

  function clock(text) {
    const t = parseTime(text);
    if (Number.isNaN(t)) return "";
    return new Date(t).toISOString().slice(11, 19);
  }

  function ago(text) {
    const t = parseTime(text);
    if (Number.isNaN(t)) return "never";
    const seconds = Math.max(0, Math.round((Date.now() + skew - t) / 1000));
    if (seconds < 60) return `${seconds} s ago`;
    if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
    return `${Math.floor(seconds / 3600)} h ago`;
  }

  // How wide a timeline label is drawn, in px, with 3 px of room on either side.
  let measurer = null;
  function labelWidth(text) {
    if (!measurer) {
      measurer = document.createElement("canvas").getContext("2d");
      measurer.font = `12px ${getComputedStyle(document.body).fontFamily}`;
    }
    return Math.ceil(measurer.measureText(text).width) + 6;
  }

  function taskLink(id) {
    return h("a", { href: `#/task/${encodeURIComponent(id)}`, "data-focus": `task:${id}` }, id);
  }

  function table(caption, headings, rows, empty) {
    if (!rows.length) return h("p", { class: "empty" }, empty);
    return h(
      "table",
      {},
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, headings.map((text) => h("th", { scope: "col" }, text)))),
      h("tbody", {}, rows),
    );
  }

  // Redraws keep the keyboard where it was: the focused element is found again by its key.
  function redraw(container, ...children) {
    const focused = document.activeElement;
    const key = focused && container.contains(focused) ? focused.getAttribute("data-focus") : null;
    container.replaceChildren(...children.flat(Infinity));
    if (key) {
      const again = [...container.querySelectorAll("[data-focus]")].find(
        (node) => node.getAttribute("data-focus") === key,
      );
      if (again) again.focus();
    }
  }

  function setConnection(text, state) {
    const line = $("connection");
    line.textContent = text;
    line.className = `connection ${state}`;
  }

  // --- the overview

  function drawTiles(counts) {
    const tiles = STATUSES.map((status) =>
      h(
        "li",
        { class: `tile s-${status.toLowerCase()}`, "data-status": status },
        h("span", { class: "count" }, String(counts[status] || 0)),
        h("span", { class: "label" }, status),
      ),
    );
    redraw($("status-tiles"), tiles);
  }

  // A line chart of one or more series over the history's slots (the last ten minutes).
  function chart(title, unit, series, slots, slotSeconds, now) {
    const width = 320;
    const height = 90;
    const count = 60;
    const last = now - (now % slotSeconds);
    const first = last - (count - 1) * slotSeconds;
    const bySlot = new Map(slots.map((slot) => [slot.at, slot]));
    const values = series.map((s) => {
      const points = [];
      for (let i = 0; i < count; i += 1) points.push(s.value(bySlot.get(first + i * slotSeconds)));
      return points;
    });
    const max = Math.max(1e-9, ...values.flat());
    const x = (i) => (i / (count - 1)) * (width - 4) + 2;
    const y = (v) => height - 4 - (v / max) * (height - 14);
    const lines = values.map((points, index) =>
      svg("polyline", {
        class: `line ${series[index].className}`,
        points: points.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
      }),
    );
    const latest = series.map((s, index) => `${s.label}: ${format(values[index][count - 1])} ${unit}`);
    const totals = series.map((s, index) => s.total(values[index]));
    const figure = h(
      "figure",
      { class: "chart" },
      h("figcaption", {}, h("strong", {}, title)),
      svg(
        "svg",
        {
          viewBox: `0 0 ${width} ${height}`,
          preserveAspectRatio: "none",
          role: "img",
          "aria-label": `${title}. Now ${latest.join(", ")}`,
        },
        svg("line", { class: "axis", x1: 0, y1: height - 4, x2: width, y2: height - 4 }),
        lines,
      ),
      h(
        "p",
        { class: "legend" },
        series.map((s, index) =>
          h("span", { class: `key ${s.className}` }, `${s.label} now ${format(values[index][count - 1])} ${unit}`),
        ),
      ),
      h("p", { class: "note" }, `Ten minutes: ${totals.join(", ")}`),
    );
    return figure;
  }

  function format(value) {
    if (!Number.isFinite(value)) return "0";
    if (value >= 100) return String(Math.round(value));
    return String(Math.round(value * 10) / 10);
  }

  function drawCharts(metrics, now) {
    const slotSeconds = metrics.slot_seconds || 10;
    const perMinute = 60 / slotSeconds;
    const sum = (label) => (points) => `${label} ${format(points.reduce((a, b) => a + b, 0) / perMinute)}`;
    const mean = (points) => {
      const busy = points.filter((v) => v > 0);
      return `mean ${format(busy.length ? busy.reduce((a, b) => a + b, 0) / busy.length : 0)} ms`;
    };
    const history = metrics.history || [];
    const throughput = chart(
      "Throughput",
      "/min",
      [
        { label: "claims", className: "claims", value: (s) => (s ? s.claims * perMinute : 0), total: sum("claims") },
        { label: "results", className: "results", value: (s) => (s ? s.results * perMinute : 0), total: sum("results") },
      ],
      history,
      slotSeconds,
      now,
    );
    const latency = chart(
      "Task API latency (mean, requests answered at once)",
      "ms",
      [
        {
          label: "latency",
          className: "latency",
          value: (s) => (s && s.requests ? (s.latency_seconds_sum / s.requests) * 1000 : 0),
          total: mean,
        },
      ],
      history,
      slotSeconds,
      now,
    );
    const requests = chart(
      "Task API requests",
      "/s",
      [
        {
          label: "requests",
          className: "requests",
          value: (s) => (s ? s.requests / slotSeconds : 0),
          total: (points) => `${format(points.reduce((a, b) => a + b, 0) * slotSeconds)} requests`,
        },
      ],
      history,
      slotSeconds,
      now,
    );
    redraw($("charts"), throughput, latency, requests);
  }

  function drawQueue(queue) {
    const rows = queue.map((row) =>
      h(
        "tr",
        {},
        h("td", {}, badge(row.status)),
        h("td", { class: "wrap" }, row.tenant || "(none)"),
        h("td", { class: "wrap" }, row.scope_key),
        h("td", { class: "num" }, String(row.priority)),
        h("td", { class: "num" }, String(row.count)),
      ),
    );
    redraw(
      $("queue"),
      table("Live tasks", ["Status", "Tenant", "Scope", "Priority", "Tasks"], rows, "No live tasks: the queue is empty."),
    );
  }

  function workerState(worker) {
    const states = [];
    if (worker.quarantined) states.push(h("span", { class: "badge s-quarantined" }, "QUARANTINED"));
    const state = worker.stopped ? "stopped" : worker.online ? "online" : "offline";
    states.push(h("span", { class: `badge ${worker.online ? "s-online" : "s-offline"}` }, state));
    return states;
  }

  function drawWorkers(fleet) {
    const rows = (fleet.workers || []).map((worker) =>
      h(
        "tr",
        { "data-worker": worker.worker_id, class: worker.quarantined ? "quarantined" : null },
        h("th", { scope: "row", class: "wrap" }, worker.worker_id),
        h("td", { class: "state" }, workerState(worker)),
        h("td", { class: "num" }, `${worker.used_slots} / ${worker.max_slots}`),
        h("td", {}, h("span", { class: `badge c-${String(worker.circuit_state).toLowerCase()}` }, worker.circuit_state)),
        h("td", { class: "wrap" }, worker.agent_id),
        h("td", { class: "wrap" }, worker.failure_domain || "(none)"),
        h("td", { title: worker.last_seen_at }, ago(worker.last_seen_at)),
      ),
    );
    redraw(
      $("workers"),
      table(
        "Registered workers",
        ["Worker", "State", "Slots in use", "Circuit", "Agent", "Failure domain", "Last seen"],
        rows,
        "No worker has registered yet.",
      ),
    );
  }

  // Rows of tasks as the dashboard's newest ones come (tenant, action and adapter flattened).
  function taskTable(caption, tasks, empty) {
    const rows = tasks.map((row) =>
      h(
        "tr",
        { "data-task": row.task_id },
        h("th", { scope: "row", class: "wrap" }, taskLink(row.task_id)),
        h("td", { class: "status" }, badge(row.status)),
        h("td", { class: "wrap" }, row.tenant || "(none)"),
        h("td", { class: "num" }, String(row.priority)),
        h("td", { class: "num" }, `${row.attempt} / ${row.max_attempts}`),
        h("td", { class: "wrap" }, `${row.action} / ${row.adapter}`),
        h("td", { class: "wrap" }, row.claimed_by || ""),
        h("td", { title: row.updated_at }, ago(row.updated_at)),
      ),
    );
    return table(caption, ["Task", "Status", "Tenant", "Priority", "Attempt", "Action / adapter", "Claimed by", "Updated"], rows, empty);
  }

  function drawRecent(recent) {
    $("recent-title").textContent = "Newest tasks";
    $("search-error").textContent = "";
    redraw($("recent"), taskTable("Newest tasks", recent, "No task yet: create one with POST /v1/tasks or aiosctl task create."));
  }

  // A search's answer: a page of GET /v1/tasks (queue order), or the code it was refused with.
  function drawFound(filter, found) {
    $("recent-title").textContent = "Tasks found";
    const asked = [
      filter.id_prefix ? `id starting "${filter.id_prefix}"` : null,
      filter.status ? `status ${filter.status}` : null,
      filter.tenant ? `tenant ${filter.tenant}` : null,
    ].filter(Boolean);
    const what = asked.length ? asked.join(", ") : "any task";
    if (found.error) {
      $("search-error").textContent = `The scheduler refused this search (${found.status} ${found.error}: ${SEARCH_ERRORS[found.error] || "see docs/errors.md"}).`;
      redraw($("recent"), h("p", { class: "empty" }, "No tasks shown: correct the search above, or clear it."));
      return;
    }
    $("search-error").textContent = "";
    const tasks = (found.tasks || []).map((view) => {
      const execution = (view.metadata && view.metadata.execution) || {};
      return { ...view, tenant: view.tenant_id, action: execution.action || "", adapter: execution.adapter || "" };
    });
    const full = tasks.length === FOUND_PAGE;
    const next = new URLSearchParams(searchQuery(filter));
    next.set("after", String(found.next_after));
    redraw(
      $("recent"),
      h(
        "p",
        { class: "note found" },
        `${tasks.length}${full ? "+" : ""} task${tasks.length === 1 ? "" : "s"} with ${what}, in queue order${filter.after ? ` after position ${filter.after}` : ""}. `,
        full ? h("a", { href: `#/tasks?${next}`, "data-focus": "next-page" }, "Next page") : null,
      ),
      taskTable("Tasks found", tasks, `No task with ${what}.`),
    );
  }

  function drawEvents() {
    const rows = [...events].reverse().map((event) =>
      h(
        "tr",
        {},
        h("td", { title: event.created_at }, clock(event.created_at)),
        h("td", {}, h("span", { class: `kind k-${kindOf(event)}` }, event.event_type)),
        h("td", { class: "wrap" }, taskLink(event.task_id)),
        h("td", { class: "wrap" }, event.agent_id || ""),
      ),
    );
    redraw($("events"), table("Latest events", ["Time (UTC)", "Event", "Task", "By"], rows, "No events yet."));
  }

  // --- a task's page

  // An event's kind, which colours it; a verification by its decision (FAIL is no success).
  function kindOf(event) {
    const type = String(event.event_type);
    if (type === "TASK_VERIFIED") {
      const decision = (event.payload || {}).decision;
      if (decision === "FAIL") return "failed";
      if (decision === "NEEDS_REWORK") return "rework";
    }
    const found = EVENT_KINDS.find(([prefix]) => type.startsWith(prefix));
    return found ? found[1] : "other";
  }

  function fact(term, ...value) {
    return [h("dt", {}, term), h("dd", {}, value)];
  }

  function drawTaskFacts(view, heartbeats) {
    $("task-title").replaceChildren("Task ", h("code", {}, view.task_id), " ", badge(view.status));
    const execution = (view.metadata && view.metadata.execution) || {};
    redraw(
      $("task-facts"),
      fact("Goal", view.goal || ""),
      fact("Status", badge(view.status)),
      fact("Attempt", `${view.attempt} of ${view.max_attempts}`),
      fact("Revision", String(view.revision)),
      fact("Action / adapter", `${execution.action || ""} / ${execution.adapter || ""}`),
      fact("Tenant / scope", `${view.tenant_id || "(none)"} / ${view.scope_type || ""}`),
      fact("Priority", String(view.priority)),
      fact("Claimed by", view.claimed_by || "(nobody)"),
      fact("Lease ends", view.lease_expires_at ? `${clock(view.lease_expires_at)} UTC` : "(no lease)"),
      fact("Heartbeats", String(heartbeats)),
      fact("Envelope digest", h("code", { class: "digest" }, view.execution_digest || "")),
      fact("Created", `${view.created_at || ""}`),
      fact("Updated", `${view.updated_at || ""} (${ago(view.updated_at)})`),
    );
  }

  function describe(event) {
    const p = event.payload || {};
    const parts = [];
    for (const key of ["worker_id", "attempt", "decision", "status", "classification", "reason", "error", "commit_oid"]) {
      if (p[key] !== undefined && p[key] !== null && p[key] !== "") parts.push(`${key.replace("_", " ")} ${p[key]}`);
    }
    if (p.model_usage && typeof p.model_usage === "object") {
      parts.push(`model calls ${p.model_usage.requests}, used ${p.model_usage.total}`);
    }
    return parts.join(", ");
  }

  // The timeline's labels: events nearer than a mark's width share one ("claim, bridge \u00d72"),
  // and each label takes the first row, alternately above and below the axis, where it clears the
  // label before it, so no two ever overlap however close their events are.
  function layoutLabels(points, width) {
    const groups = [];
    for (const point of points) {
      const last = groups[groups.length - 1];
      if (last && point.x - last.to < MERGE_PX) {
        last.to = point.x;
        last.kinds.push(point.kind);
      } else {
        groups.push({ from: point.x, to: point.x, kinds: [point.kind] });
      }
    }
    const rights = []; // each row's right edge so far
    for (const group of groups) {
      const counts = new Map();
      for (const kind of group.kinds) counts.set(kind, (counts.get(kind) || 0) + 1);
      group.text = [...counts].map(([kind, n]) => (n > 1 ? `${kind} \u00d7${n}` : kind)).join(", ");
      group.width = labelWidth(group.text);
      group.left = Math.max(0, Math.min(width - group.width, (group.from + group.to - group.width) / 2));
      let row = rights.findIndex((right) => right <= group.left);
      if (row < 0) row = rights.push(0) - 1;
      rights[row] = group.left + group.width;
      group.row = row;
    }
    return { groups, rows: rights.length };
  }

  function drawTimeline(view, taskEvents, heartbeats) {
    // Drawn at the panel's own width, so a label is as wide as measured.
    const width = Math.max(200, Math.floor($("timeline").clientWidth) || 1000);
    const start = parseTime(view.created_at);
    const live = !["SUCCEEDED", "FAILED", "CANCELLED"].includes(view.status);
    const ends = [Date.now() + skew, parseTime(view.updated_at), ...taskEvents.map((e) => parseTime(e.created_at))];
    const end = live ? Math.max(...ends.filter(Number.isFinite)) : Math.max(start + 1, ...ends.slice(1).filter(Number.isFinite));
    const span = Math.max(1, end - start);
    const x = (t) => 10 + ((t - start) / span) * (width - 20);
    const points = taskEvents.map((event) => ({ x: x(parseTime(event.created_at)), kind: kindOf(event) }));
    const labels = layoutLabels(points, width);
    const axis = 8 + LABEL_ROW * Math.max(1, Math.ceil(labels.rows / 2));
    const height = axis + 14 + LABEL_ROW * Math.floor(labels.rows / 2);
    const marks = [svg("line", { class: "axis", x1: 10, y1: axis, x2: width - 10, y2: axis })];
    if (view.status === "CLAIMED" && view.lease_expires_at) {
      const claimed = [...taskEvents].reverse().find((e) => e.event_type === "TASK_CLAIMED");
      if (claimed) {
        const from = x(parseTime(claimed.created_at));
        marks.push(
          svg("rect", { class: "lease", x: from.toFixed(1), y: axis - 7, width: Math.max(2, x(Date.now() + skew) - from).toFixed(1), height: 14 }),
        );
      }
    }
    points.forEach(({ x: at, kind }, index) => {
      const event = taskEvents[index];
      marks.push(svg("circle", { class: `mark k-${kind}`, cx: at.toFixed(1), cy: axis, r: 6 }, svg("title", {}, `${event.event_type} ${event.created_at}`)));
    });
    for (const group of labels.groups) {
      const level = Math.floor(group.row / 2);
      const y = group.row % 2 ? axis + 21 + level * LABEL_ROW : axis - 12 - level * LABEL_ROW;
      marks.push(
        svg(
          "text",
          { class: "mark-label", x: (group.left + group.width / 2).toFixed(1), y, "text-anchor": "middle", "data-events": group.kinds.length },
          group.text,
        ),
      );
    }
    const figure = svg(
      "svg",
      { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `Timeline of ${taskEvents.length} events from ${clock(view.created_at)} UTC` },
      marks,
    );
    const items = taskEvents.map((event) =>
      h(
        "li",
        { class: `k-${kindOf(event)}`, "data-event": event.event_type },
        h("time", { datetime: event.created_at }, `${clock(event.created_at)} UTC`),
        " ",
        h("span", { class: `kind k-${kindOf(event)}` }, event.event_type),
        event.agent_id ? ` by ${event.agent_id}` : "",
        describe(event) ? h("span", { class: "detail" }, ` (${describe(event)})`) : "",
      ),
    );
    const beats =
      heartbeats > 0
        ? h(
            "p",
            { class: "note" },
            `${heartbeats} heartbeat${heartbeats === 1 ? "" : "s"} renewed the lease (a heartbeat leaves no event` +
              `${view.status === "CLAIMED" ? "; the shaded band is the lease it keeps alive" : ""}).`,
          )
        : h("p", { class: "note" }, live ? "No heartbeat yet." : "No heartbeat.");
    redraw($("timeline"), figure, beats, h("ol", { class: "timeline" }, items));
  }

  function drawResult(view) {
    const result = view.result;
    const parts = [];
    if (result && typeof result === "object") {
      const facts = [];
      for (const key of ["status", "classification", "commit_oid", "output_sha256", "exit_code", "error", "summary"]) {
        if (result[key] !== undefined && result[key] !== null) facts.push(fact(key.replace("_", " "), typeof result[key] === "object" ? JSON.stringify(result[key]) : String(result[key])));
      }
      const usage = result.model_usage;
      if (usage && typeof usage === "object") {
        facts.push(fact("model calls", `${usage.requests} requests, ${usage.total} used (${usage.input} in, ${usage.output} out), ${usage.refused} refused, ${usage.unmetered} unmetered`));
      }
      const output = typeof result.output_text === "string" && result.output_text ? result.output_text : result.output_json;
      if (output !== undefined && output !== null) {
        const text = typeof output === "string" ? output : JSON.stringify(output);
        facts.push(fact("output", text.length > 300 ? `${text.slice(0, 300)}...` : text));
      }
      parts.push(h("dl", { class: "facts" }, facts));
      parts.push(h("details", {}, h("summary", {}, "The whole result (JSON)"), h("pre", {}, JSON.stringify(result, null, 2))));
    } else {
      parts.push(h("p", { class: "empty" }, "No result yet."));
    }
    const verification = view.verification;
    if (verification && typeof verification === "object") {
      parts.push(
        h("h3", {}, "Verification"),
        h("dl", { class: "facts" }, fact("decision", String(verification.decision || "")), fact("reason", String(verification.reason || ""))),
      );
    }
    redraw($("result"), parts);
  }

  function drawEligibility(answer) {
    // The code a claim-next passes the task over with (TASK_ENVELOPE_DRIFT, ...).
    const unresolved = answer.envelope && !answer.envelope.resolves ? ` (${answer.envelope.code})` : "";
    // Each reason in words, with what the worker lacks by name where the answer names it.
    const why = (worker) => {
      const named = {
        capability_missing: worker.missing_capabilities ? `: ${worker.missing_capabilities.join(", ")}` : "",
        adapter_not_allowed: worker.adapter ? `: ${worker.adapter}` : "",
        envelope_unresolved: unresolved,
      };
      return worker.reasons.map((r) => (REASONS[r] || r) + (named[r] || "")).join("; ");
    };
    const rows = (answer.workers || []).map((worker) =>
      h(
        "tr",
        { "data-worker": worker.worker_id },
        h("th", { scope: "row", class: "wrap" }, worker.worker_id),
        h("td", {}, h("span", { class: `badge ${worker.eligible ? "s-online" : "s-offline"}` }, worker.eligible ? "yes" : "no")),
        h("td", { class: "prose" }, worker.reasons.length ? why(worker) : "could claim it now"),
        h("td", { class: "wrap" }, worker.failure_domain || "(none)"),
        h("td", { class: "prose" }, worker.retry_deferred ? "yes: failed in this domain" : "no"),
      ),
    );
    redraw(
      $("eligibility"),
      table("Eligibility of each worker", ["Worker", "Eligible", "Why not", "Failure domain", "Retry deferred"], rows, "No worker is registered: nobody can take it."),
    );
  }

  // --- the poll

  // The view the address names: {task} (#/task/ID), {search} (#/tasks?id_prefix=&status=&tenant=
  // &after=, the Task API's listing filters) or {} (the overview).
  function route() {
    const match = /^#\/task\/(.+)$/.exec(location.hash);
    if (match) {
      // A hand-typed hash with a stray "%" must not stop the poll: it names no task as it stands.
      try {
        return { task: decodeURIComponent(match[1]) };
      } catch {
        return { task: match[1] };
      }
    }
    const search = /^#\/tasks\?(.*)$/.exec(location.hash);
    if (!search) return {};
    const given = new URLSearchParams(search[1]);
    const filter = {};
    for (const name of [...SEARCH_FIELDS, "after"]) {
      if (given.get(name)) filter[name] = given.get(name);
    }
    return { search: filter };
  }

  function searchQuery(filter) {
    const query = new URLSearchParams();
    for (const name of [...SEARCH_FIELDS, "after"]) {
      if (filter[name]) query.set(name, filter[name]);
    }
    return query;
  }

  // The form shows the search the address names (empty on the overview).
  function fillSearch() {
    const filter = route().search || {};
    $("search-prefix").value = filter.id_prefix || "";
    $("search-status").value = filter.status || "";
    $("search-tenant").value = filter.tenant || "";
  }

  // The task page of an id the scheduler answered 404 for: said so, not swapped for the overview.
  function drawMissing(id) {
    show("task");
    $("task-title").textContent = `No task ${id}`;
    for (const part of ["task-facts", "timeline", "result", "eligibility"]) $(part).replaceChildren();
    $("task-facts").append(h("p", { class: "missing", text: `The scheduler knows no task ${id} (404 TASK_NOT_FOUND): check the id, or go back to the overview.` }));
    document.title = `No task ${id} - AIOS fleet`;
  }

  function show(view) {
    $("login").hidden = view !== "login";
    $("overview").hidden = view !== "overview";
    $("task").hidden = view !== "task";
    $("sign-out").hidden = view === "login";
  }

  function signOut(message) {
    token = null;
    generation += 1;
    clearTimeout(timer);
    cursor = null;
    events = [];
    task = null;
    show("login");
    setConnection("Signed out", "out");
    $("login-error").textContent = message || "";
    $("token").value = "";
    $("token").focus();
  }

  function schedule(delay) {
    clearTimeout(timer);
    timer = setTimeout(poll, delay);
  }

  // A GET of the Task API on the page's own origin with the token: {status, ok, body}.
  async function get(path) {
    const answer = await fetch(`/v1/${path}`, {
      headers: { Authorization: `Bearer ${token}` },
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    return { status: answer.status, ok: answer.ok, body: await answer.json() };
  }

  async function poll() {
    if (!token) return;
    const mine = generation;
    const wanted = route();
    const asked = wanted.task === undefined || wanted.task === missing ? null : wanted.task;
    if (!task || task.id !== asked) task = asked ? { id: asked, after: 0, events: [], heartbeats: 0 } : null;
    const query = new URLSearchParams({ recent: "30" });
    if (cursor !== null) query.set("after", String(cursor));
    if (task) {
      query.set("task", task.id);
      query.set("task_after", String(task.after));
    }
    let status;
    let body;
    let found = null;
    try {
      ({ status, body } = await get(`dashboard?${query}`));
      if (wanted.search && status === 200) {
        const search = searchQuery(wanted.search);
        search.set("limit", String(FOUND_PAGE));
        const listing = await get(`tasks?${search}`);
        found = listing.ok ? listing.body : { status: listing.status, error: listing.body.error || "UNKNOWN" };
      }
    } catch (error) {
      if (mine !== generation) return;
      failures += 1;
      setConnection(`Cannot reach the scheduler; retrying (${failures})`, "lost");
      schedule(Math.min(MAX_BACKOFF_MS, POLL_MS * 2 ** Math.min(failures, 3)));
      return;
    }
    if (mine !== generation) return;
    // 401: not the owner's token; 403: not the owner (an agent's token) or the owner's token off
    // loopback on a scheduler that refuses that (OWNER_NOT_LOOPBACK).
    if (status === 401 || status === 403) {
      signOut(`The scheduler refused this token (${status} ${body.error || "UNAUTHORIZED"}).`);
      return;
    }
    if (status !== 200) {
      if (task && body.error === "TASK_NOT_FOUND") {
        missing = task.id;
        task = null;
        drawMissing(missing);
        schedule(POLL_MS);
        return;
      }
      failures += 1;
      setConnection(`The scheduler answered ${status} ${body.error || ""}; retrying`, "lost");
      schedule(Math.min(MAX_BACKOFF_MS, POLL_MS * 2 ** Math.min(failures, 3)));
      return;
    }
    failures = 0;
    draw(body, wanted.search, found);
    schedule(POLL_MS);
  }

  function draw(body, search, found) {
    skew = parseTime(body.now) - Date.now() || 0;
    cursor = body.next_after;
    events = events.concat(body.events || []).slice(-KEPT_EVENTS);
    $("service").textContent = `${body.service} ${body.version} on ${body.backend}${body.leader ? ", leading" : ", standby replica"}`;
    setConnection(`Live: updated ${clock(body.now)} UTC`, "live");
    if (missing !== null && route().task === missing) {
      drawMissing(missing);
      return;
    }
    if (body.task && task) {
      task.events = task.events.concat(body.task.events || []);
      task.after = body.task.next_after;
      task.heartbeats = body.task.heartbeats;
      show("task");
      drawTaskFacts(body.task.view, task.heartbeats);
      drawTimeline(body.task.view, task.events, task.heartbeats);
      drawResult(body.task.view);
      drawEligibility(body.task.eligibility);
      document.title = `${body.task.view.task_id} ${body.task.view.status} - AIOS fleet`;
      return;
    }
    show("overview");
    document.title = "AIOS fleet";
    drawTiles(body.tasks || {});
    drawCharts(body.metrics || {}, Math.floor(parseTime(body.now) / 1000));
    drawQueue(body.queue || []);
    drawWorkers(body.fleet || {});
    if (search && found) drawFound(search, found);
    else drawRecent(body.recent || []);
    drawEvents();
  }

  function start() {
    $("login-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const typed = $("token").value.trim();
      if (!typed) {
        $("login-error").textContent = "Paste the owner token first.";
        return;
      }
      token = typed;
      $("token").value = "";
      $("login-error").textContent = "";
      generation += 1;
      setConnection("Connecting...", "connecting");
      schedule(0);
    });
    $("sign-out").addEventListener("click", () => signOut("Signed out: the token is forgotten."));
    $("search").addEventListener("submit", (event) => {
      event.preventDefault();
      const query = searchQuery({
        id_prefix: $("search-prefix").value.trim(),
        status: $("search-status").value,
        tenant: $("search-tenant").value.trim(),
      });
      location.hash = String(query) ? `#/tasks?${query}` : "#/";
    });
    $("search-clear").addEventListener("click", () => {
      location.hash = "#/";
    });
    window.addEventListener("hashchange", () => {
      fillSearch();
      missing = null;
      if (!token) return;
      generation += 1;
      $("main").focus();
      schedule(0);
    });
    fillSearch();
    show("login");
    $("token").focus();
  }

  start();
})();
