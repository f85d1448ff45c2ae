// Berth's dashboard (docs/dashboard.md). Every refresh draws every view
// from one GET /v1/snapshot: one revision of the control loop's counts, so
// the views agree with each other. The token is asked once and kept in this
// tab's sessionStorage; it travels only in the Authorization header.
"use strict";

const TOKEN_KEY = "berth.token";
const REFRESH_MS = 2000;
const CARD_LIMIT = 200;  // more nodes than this: a table with a filter
const CHIPS_PER_OWNER = 12;
const EVENTS_KEPT = 300;
const ENDED_SHOWN_MS = 60000;  // a task that left its node stays as an "ended" chip this long

const $ = (id) => document.getElementById(id);
let snapshot = null;
let refreshTimer = null;
const classHistory = {};  // class -> [{running, entitlement}], the last 60 refreshes
let eventsFrom = null;    // the next event index to ask for; null: from the snapshot's
let eventsStream = null;  // the AbortController of the open stream, while the tab shows
// Tasks that left their node, as the refreshes saw them go: a node's count
// of a service's or job's tasks fell (a task ended, or was stopped to be
// replaced). node -> owner -> [{count, at}]; and the counts last seen,
// node -> owner -> count.
const ended = new Map();
let lastCounts = new Map();

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "style") e.style.cssText = v;
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) e.append(c instanceof Node ? c : String(c));
  return e;
}

class Refused extends Error {}

async function api(path, init = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) throw new Refused("");
  const answer = await fetch(path, {
    ...init,
    headers: { Authorization: "Bearer " + token },
  });
  if (answer.status === 401 || answer.status === 403) {
    sessionStorage.removeItem(TOKEN_KEY);
    throw new Refused("berthd refused the token");
  }
  return answer;
}

function showLogin(message) {
  $("login").hidden = false;
  document.querySelector("main").hidden = true;
  $("login-error").textContent = message || "";
}

// Parses "<milli>m" (berthd's CPU text).
const milli = (cpu) => parseInt(String(cpu || "0"), 10) || 0;
const gib = (bytes) => bytes ? (bytes / 2 ** 30).toFixed(bytes < 2 ** 30 ? 2 : 1) + " GiB" : "0";
const cores = (m) => (m / 1000).toFixed(m % 1000 ? 2 : 0);

function colorOf(name) {
  let h = 0;
  for (const c of name) h = (h * 31 + c.codePointAt(0)) >>> 0;
  return `hsl(${h % 360} 55% 45%)`;
}

// A resource's use (`warn`: a full one is marked), or a service's progress.
function bar(label, used, total, text, warn = true) {
  const share = total > 0 ? Math.min(1, used / total) : 0;
  return [
    el("div", { class: "label" }, el("span", {}, label), el("span", {}, text)),
    el("div", { class: "bar" + (warn && share >= 1 ? " full" : "") },
       el("div", { style: `width:${(share * 100).toFixed(1)}%` })),
  ];
}

function nodeCard(n) {
  const res = n.resources || { cpu: "0m", memory: 0, generic: {} };
  const cls = ["node", n.state, n.availability].join(" ");
  const card = el("div", { class: cls, "data-node": n.id },
    el("h4", {}, el("span", { class: "node-id" }, n.id),
       el("small", {}, `${n.state}/${n.availability}`)),
    bar("cpu", milli(n.used.cpu), milli(res.cpu),
        `${cores(milli(n.used.cpu))}/${cores(milli(res.cpu))}`),
    bar("memory", n.used.memory, res.memory, `${gib(n.used.memory)}/${gib(res.memory)}`));
  for (const [kind, total] of Object.entries(res.generic || {}))
    card.append(...bar(kind, (n.used.generic || {})[kind] || 0, total,
                       `${(n.used.generic || {})[kind] || 0}/${total}`));
  const chips = el("div", { class: "chips" });
  for (const [owner, count] of ownerCounts(n)) {
    const style = `background:${colorOf(owner)}`;
    if (count > CHIPS_PER_OWNER) {
      chips.append(el("span", { class: "chip", style, title: owner }, `${owner} ×${count}`));
    } else {
      for (let i = 0; i < count; i++)
        chips.append(el("span", { class: "chip", style, title: owner }, owner));
    }
  }
  endedChips(n, chips);
  card.append(chips);
  if (n.error) card.append(el("div", { class: "error" }, n.error));
  return card;
}

function ownerCounts(n) {
  return [...Object.entries(n.services || {}), ...Object.entries(n.jobs || {})];
}

// Compares the new snapshot's counts with the last one's: what fell is
// remembered as ended for ENDED_SHOWN_MS, so a rolling update's old tasks
// do not just vanish between two refreshes.
function noteEnded(snap, now) {
  const counts = new Map();
  for (const n of snap.nodes || []) counts.set(n.id, new Map(ownerCounts(n)));
  for (const [node, owners] of lastCounts) {
    for (const [owner, before] of owners) {
      const fell = before - ((counts.get(node) || new Map()).get(owner) || 0);
      if (fell <= 0) continue;
      if (!ended.has(node)) ended.set(node, new Map());
      const lists = ended.get(node);
      if (!lists.has(owner)) lists.set(owner, []);
      lists.get(owner).push({ count: fell, at: now });
    }
  }
  for (const [node, lists] of ended) {
    for (const [owner, list] of lists) {
      const kept = list.filter((e) => now - e.at < ENDED_SHOWN_MS);
      if (kept.length) lists.set(owner, kept); else lists.delete(owner);
    }
    if (!lists.size) ended.delete(node);
  }
  lastCounts = counts;
}

function endedChips(n, chips) {
  for (const [owner, list] of ended.get(n.id) || []) {
    const count = list.reduce((sum, e) => sum + e.count, 0);
    const title = `${owner}: ${count} ended in the last minute`;
    const style = `border-color:${colorOf(owner)}`;
    chips.append(el("span", { class: "chip ended", style, title },
                    count > 1 ? `${owner} ×${count}` : owner));
  }
}

function nodeMatches(n, filter) {
  if (!filter) return true;
  const text = [n.id, n.state, n.availability,
    ...Object.entries(n.labels || {}).map(([k, v]) => `${k}=${v}`)].join(" ");
  return text.toLowerCase().includes(filter.toLowerCase());
}

// Nested groups by each label key in turn ("az,rack": az, then rack).
function grouped(nodes, keys) {
  if (keys.length === 0) {
    return el("div", { class: "nodes" }, nodes.map(nodeCard));
  }
  const [key, ...rest] = keys;
  const groups = new Map();
  for (const n of nodes) {
    const value = (n.labels || {})[key] ?? "(none)";
    if (!groups.has(value)) groups.set(value, []);
    groups.get(value).push(n);
  }
  return [...groups.keys()].sort().map((value) =>
    el("div", { class: "group" }, el("h3", {}, `${key}=${value} (${groups.get(value).length})`),
       grouped(groups.get(value), rest)));
}

function nodeTable(nodes) {
  const rows = nodes.map((n) => el("tr", { "data-node": n.id },
    el("td", {}, n.id), el("td", {}, n.state), el("td", {}, n.availability),
    el("td", {}, n.used.tasks),
    el("td", {}, `${cores(milli(n.used.cpu))}/${cores(milli((n.resources || {}).cpu))}`),
    el("td", {}, `${gib(n.used.memory)}/${gib((n.resources || {}).memory || 0)}`),
    el("td", {}, Object.entries(n.labels || {}).map(([k, v]) => `${k}=${v}`).join(" "))));
  return el("table", {},
    el("tr", {}, ["node", "state", "availability", "tasks", "cpu", "memory", "labels"]
      .map((h) => el("th", {}, h))), rows);
}

// Tasks that wait ("new" for admission or a restart delay, "pending" for
// a node) are on no node's card: the cluster view says how many, and why.
const waitingOf = (tasks) => (tasks.new || 0) + (tasks.pending || 0);

function renderWaiting() {
  const waiting = waitingOf(snapshot.tasks);
  const why = Object.entries(snapshot.pending_reasons || {})
    .map(([reason, n]) => `${n} ${reason.replaceAll("_", " ")}`).join(", ");
  $("waiting").replaceChildren(...(waiting
    ? [el("p", { class: "reason" }, `${waiting} task${waiting === 1 ? "" : "s"} waiting` +
         (why ? `: ${why}` : "") + " (Services and Jobs say which)")]
    : []));
}

function renderCluster() {
  renderWaiting();
  const filter = $("node-filter").value.trim();
  const keys = $("group-by").value.split(",").map((k) => k.trim()).filter(Boolean);
  const nodes = snapshot.nodes.filter((n) => nodeMatches(n, filter));
  const view = nodes.length > CARD_LIMIT
    ? [el("p", {}, `${nodes.length} nodes: a table (filter to fewer than ${CARD_LIMIT} for cards)`),
       nodeTable(nodes)]
    : grouped(nodes, keys);
  $("nodes").replaceChildren(...[view].flat());
}

// The engine's "no suitable node (insufficient resources on 3 nodes;
// scheduling constraints not satisfied on 2 nodes)" as a line per filter,
// as Nomad's UI shows placement failures.
function reasonLines(message) {
  const m = /^(.*?) \((.*)\)$/.exec(message || "");
  return m ? [m[1], ...m[2].split("; ")] : [message || ""];
}

function pendingLines(t) {
  if (!t.pending) return [];
  const [head, ...why] = reasonLines(t.pending_message);
  const lines = [el("div", { class: "reason" }, `${t.pending} waiting: ${head}`),
                 ...why.map((w) => el("div", { class: "reason explanation" }, w))];
  for (const [reason, n] of Object.entries(t.pending_reasons || {}))
    lines.push(el("div", { class: "reason" }, `${n} × ${reason.replaceAll("_", " ")}`));
  return lines;
}

// A rollout state as words; the message (why it paused or rolled back)
// is shown where it explains more than the state.
const ROLLOUT_WORDS = {
  updating: "updating", paused: "paused", completed: "completed",
  rollback_started: "rolling back", rollback_paused: "rollback paused",
  rollback_completed: "rolled back",
};
const ROLLOUT_EXPLAINED = new Set(["paused", "rollback_paused", "rollback_started"]);

function rolloutText(status) {
  if (!status) return "";
  const words = ROLLOUT_WORDS[status.state] || status.state;
  return ROLLOUT_EXPLAINED.has(status.state) && status.message
    ? `${words}: ${status.message}` : words;
}

// "2/3", and what became of the others when they ended rather than wait
// ("0/1 · 1 complete": a one-off task that finished).
function replicasText(t) {
  const ended = ["complete", "failed", "rejected"]
    .filter((state) => t.running < t.desired && (t.states || {})[state])
    .map((state) => `${t.states[state]} ${state}`);
  return [`${t.running}/${t.desired}`, ...ended].join(" · ");
}

function renderServices() {
  const rows = snapshot.services.map((s) => {
    const t = s.tasks;
    const rollout = el("span", { title: s.update_status ? s.update_status.message || "" : "" },
                       rolloutText(s.update_status));
    return el("tr", { "data-service": s.id },
      el("td", {}, s.id), el("td", {}, s.mode),
      el("td", { class: "replicas" }, replicasText(t),
         bar("", t.running, t.desired, "", false)[1]),
      el("td", {}, s.spec_version), el("td", { class: "rollout" }, rollout),
      el("td", { class: "pending" }, pendingLines(t)));
  });
  $("service-list").replaceChildren(el("table", {},
    el("tr", {}, ["service", "mode", "running/desired", "version", "rollout", "waiting"]
      .map((h) => el("th", {}, h))), rows));
}

function spark(points) {
  const w = 120, h = 24;
  const max = Math.max(1, ...points.flatMap((p) => [p.running, p.entitlement]));
  const line = (key) => points.map((p, i) =>
    `${(i / Math.max(1, points.length - 1)) * w},${h - (p[key] / max) * h}`).join(" ");
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  for (const [key, color] of [["entitlement", "#aaa"], ["running", "#5ab0ff"]]) {
    const polyline = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    polyline.setAttribute("fill", "none");
    polyline.setAttribute("stroke", color);
    polyline.setAttribute("points", line(key));
    svg.append(polyline);
  }
  return svg;
}

function renderJobs() {
  const classes = (snapshot.admission || {}).classes || {};
  const rows = Object.entries(classes).map(([name, c]) => {
    const history = (classHistory[name] ||= []);
    history.push({ running: c.running, entitlement: c.entitlement });
    if (history.length > 60) history.shift();
    const over = c.running - c.entitlement;  // borrowed from classes that do not use their share
    return el("tr", { "data-class": name },
      el("td", {}, name), el("td", {}, `${c.percent}%`),
      el("td", { class: "entitlement" }, c.entitlement), el("td", {}, c.running),
      el("td", {}, c.waiting),
      el("td", {}, over > 0 ? `borrows ${over}` : ""),
      el("td", {}, spark(history)));
  });
  $("class-list").replaceChildren(el("table", {},
    el("tr", {}, ["class", "share", "entitlement", "running", "waiting", "above entitlement",
      "running (blue) against entitlement"].map((h) => el("th", {}, h))), rows));
  const jobs = snapshot.jobs.map((j) => el("tr", { "data-job": j.id },
    el("td", {}, j.id), el("td", {}, j.requestor), el("td", { class: "state" }, j.state),
    el("td", {}, j.tasks),
    el("td", {}, Object.entries(j.states).map(([s, n]) => `${n} ${s}`).join(", "))));
  $("job-list").replaceChildren(el("table", {},
    el("tr", {}, ["job", "requestor", "state", "tasks", "task states"]
      .map((h) => el("th", {}, h))), jobs));
}

function render() {
  const leader = snapshot.leader ? ` · leader ${snapshot.leader.id} (epoch ${snapshot.leader.epoch})` : "";
  const total = Object.values(snapshot.tasks).reduce((a, b) => a + b, 0);
  $("status").textContent = `revision ${snapshot.revision} · ${snapshot.nodes.length} nodes · ` +
    `${total} tasks (${snapshot.tasks.running || 0} running, ${waitingOf(snapshot.tasks)} ` +
    `waiting)${leader}`;
  renderCluster();
  renderServices();
  renderJobs();
}

// One snapshot, then the next after REFRESH_MS: never two at once.
async function refresh() {
  try {
    const answer = await api("/v1/snapshot");
    const body = await answer.json();
    if (!answer.ok) throw new Error(body.error ? body.error.message : answer.status);
    snapshot = body;
    noteEnded(snapshot, Date.now());
    $("login").hidden = true;
    document.querySelector("main").hidden = false;
    render();
  } catch (e) {
    if (e instanceof Refused) return showLogin(e.message);  // the form calls refresh again
    $("status").textContent = "cannot read the snapshot: " + e.message;
  }
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(refresh, REFRESH_MS);
}

// One event as `berth events` prints it: its attributes (a task's node,
// service, slot...) in parentheses, then its message.
function addEvent(e) {
  const list = $("event-list");
  const attributes = Object.entries(e.attributes || {}).map(([k, v]) => `${k}=${v}`).join(", ");
  list.prepend(el("li", { "data-topic": e.topic },
    `${e.time} ${e.topic} ${e.type} ${e.key}${attributes ? ` (${attributes})` : ""}` +
    `${e.message ? " — " + e.message : ""}`));
  while (list.children.length > EVENTS_KEPT) list.lastChild.remove();
}

// GET /v1/events as a stream, while the Events tab shows (a stream holds
// one of berthd's few streaming threads): each line a frame, a heartbeat
// ({}), or what was missed. Reconnects from the next index when a stream
// ends, after a pause when berthd refused it.
async function followEvents() {
  if (eventsStream || $("events").hidden) return;
  const stream = (eventsStream = new AbortController());
  if (eventsFrom === null) eventsFrom = Math.max(1, (snapshot ? snapshot.revision : 1) - 100);
  let wait = 1000;
  try {
    const answer = await api(`/v1/events?index=${eventsFrom}&heartbeat=10`, { signal: stream.signal });
    if (!answer.ok) {
      const body = await answer.json();
      addEvent({ time: "", topic: "error", type: "", key: "", message: body.error ? body.error.message : answer.status });
      wait = 10000;
    } else {
      await readFrames(answer.body.getReader());
    }
  } catch (e) {
    if (e instanceof Refused) {
      eventsStream = null;
      return showLogin(e.message);
    }
  }
  if (eventsStream !== stream) return;  // the tab was left: stopEvents aborted it
  eventsStream = null;
  setTimeout(followEvents, wait);
}

async function readFrames(reader) {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (!line.trim()) continue;
      const frame = JSON.parse(line);
      if (frame.missed) {
        addEvent({ time: "", topic: "missed", type: "", key: "", message: frame.message });
        eventsFrom = frame.missed.through + 1;
      }
      for (const e of frame.events || []) addEvent(e);
      if (frame.index) eventsFrom = frame.index + 1;
    }
  }
}

function stopEvents() {
  const stream = eventsStream;
  eventsStream = null;
  if (stream) stream.abort();
}

function show(view) {
  for (const b of document.querySelectorAll("nav button"))
    b.classList.toggle("active", b.dataset.view === view);
  for (const s of document.querySelectorAll("main > section")) s.hidden = s.id !== view;
  if (view === "events") followEvents();
  else stopEvents();
}

$("login").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  refresh();
});
for (const b of document.querySelectorAll("nav button"))
  b.addEventListener("click", () => show(b.dataset.view));
for (const id of ["group-by", "node-filter"])
  $(id).addEventListener("input", () => snapshot && renderCluster());
refresh();
