// MiniKafka console: one page, routed by the location's hash, reading the
// JSON API under /console/api/. Every text from the cluster goes into the
// page as text (textContent), never as HTML.
"use strict";

const API = "/console/api/";
let session = null; // {secure, user, mechanisms, readOnly}
let timer = null;   // the refresh of the page shown, if it has one
let adminKey = "";  // the admin key, once unlocked: kept in this page's memory only

// el makes an element: attrs are attributes (class, id, href, data-*),
// children are nodes or strings (added as text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// table makes a table: rows are {cells, attrs}; a cell is a string, a
// number (right-aligned) or a node.
function table(id, headers, rows, empty) {
  const t = el("table", {id});
  t.append(el("thead", {}, el("tr", {}, headers.map(h => el("th", {}, h)))));
  const body = el("tbody");
  for (const r of rows) {
    body.append(el("tr", r.attrs || {}, r.cells.map(c => typeof c === "number" ? el("td", {class: "num"}, String(c)) : (c instanceof Node && c.tagName === "TD" ? c : el("td", {}, c)))));
  }
  if (rows.length === 0) body.append(el("tr", {class: "empty"}, el("td", {colspan: headers.length, class: "muted"}, empty || "none")));
  t.append(body);
  return t;
}

class HTTPError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path, opts) {
  const r = await fetch(API + path, Object.assign({credentials: "same-origin"}, opts || {}));
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (!r.ok) throw new HTTPError(r.status, (body && body.error) || r.statusText);
  return body;
}

// write runs a write action with the admin key.
function write(path, body) {
  return api(path, {method: "POST", headers: {"Content-Type": "application/json", "X-Console-Admin-Key": adminKey},
    body: JSON.stringify(body || {})});
}

// writeForm makes a form whose submit runs action(formData) and then
// done(result); a failure is shown in the form.
function writeForm(id, fields, button, action, done) {
  const form = el("form", {id, class: "write"}, fields, el("button", {type: "submit"}, button));
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    form.querySelector(".error")?.remove();
    try {
      done(await action(new FormData(form)));
    } catch (err) {
      form.append(el("p", {class: "error write-error"}, err.message));
    }
  });
  return form;
}

function bytes(n) {
  if (n < 0) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : n.toFixed(1)) + " " + units[i];
}
const ids = a => (a && a.length ? a.join(", ") : "–");
const off = n => (n < 0 ? "–" : String(n));
const time = ms => new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC");
const link = (href, text) => el("a", {href}, text);

function params() {
  const h = location.hash.replace(/^#/, "") || "/";
  const [path, query] = h.split("?");
  return {parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query || "")};
}

// show replaces the view and marks the page ready for readers and tests.
function show(page, ...nodes) {
  const v = document.getElementById("view");
  v.replaceChildren(...nodes);
  document.body.dataset.page = page;
  document.body.dataset.state = "ready";
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.nav === page);
}

function showError(page, err) {
  if (err instanceof HTTPError && err.status === 401) { loginView(); return; }
  const msg = err instanceof HTTPError && err.status === 403 ? "Not authorized: " + err.message : err.message;
  show(page, el("h1", {}, page), el("p", {class: "error", id: "error"}, msg));
  document.body.dataset.state = "error";
}

// chart draws series of [time ms, value] as lines in an SVG.
function chart(id, series, unit) {
  const W = 760, H = 220, L = 70, R = 10, T = 10, B = 30;
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("id", id);
  svg.setAttribute("class", "chart");
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const mk = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  const all = series.flatMap(s => s.points);
  if (all.length === 0) {
    mk("text", {x: L, y: H / 2}, "No samples yet: the history fills as the node samples it.");
    return svg;
  }
  const t0 = Math.min(...all.map(p => p[0])), t1 = Math.max(...all.map(p => p[0]), t0 + 1);
  const vmax = Math.max(...all.map(p => p[1]), 1) * 1.1;
  const x = t => L + (t - t0) / (t1 - t0) * (W - L - R);
  const y = v => H - B - v / vmax * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = vmax * i / 4;
    mk("line", {x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid"});
    mk("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end"}, fmtNum(v) + (unit ? " " + unit : ""));
  }
  mk("line", {x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis"});
  mk("text", {x: L, y: H - 8}, new Date(t0).toLocaleTimeString());
  mk("text", {x: W - R, y: H - 8, "text-anchor": "end"}, new Date(t1).toLocaleTimeString());
  series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const pts = s.points.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    mk("polyline", {points: pts, class: "s" + i, "data-series": s.name});
    for (const p of s.points.slice(-60)) mk("circle", {cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 2.5, class: "d" + i, "data-v": p[1]});
  });
  return svg;
}

function fmtNum(v) {
  if (v >= 1e9) return (v / 1e9).toFixed(1) + "G";
  if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + "k";
  return v >= 10 || v === 0 ? v.toFixed(0) : v.toFixed(1);
}

function legend(names) {
  return el("p", {class: "legend"}, names.map((n, i) => el("span", {class: "s" + i}, n)));
}

async function overviewView() {
  const o = await api("overview");
  const rows = o.brokers.map(b => ({
    attrs: {class: b.up ? "up" : "down", "data-broker": b.id},
    cells: [b.id, b.addr || "–", b.up ? "up" : "down", b.downSince ? time(b.downSince) : "–",
      [b.controller ? "controller" : "", b.self ? "this node" : ""].filter(Boolean).join(", ") || "–",
      b.disk ? `${bytes(b.disk.total - b.disk.free)} used of ${bytes(b.disk.total)}` + (b.disk.alert ? (b.disk.alert === 2 ? " (refusing writes)" : " (low)") : "") : "–"],
  }));
  const down = o.brokers.filter(b => !b.up).length;
  const card = (label, n, cls) => el("div", {class: "card"}, el("span", {class: "n " + (cls || "")}, String(n)), label);
  show("overview",
    el("h1", {}, "Cluster ", el("code", {}, o.clusterId)),
    el("div", {class: "cards", id: "summary"},
      card("brokers up", o.brokers.length - down), card("brokers down", down, down ? "bad" : "ok"),
      card("controller", o.controller >= 0 ? "node " + o.controller : "none", o.controller >= 0 ? "" : "bad"),
      card("topics", o.topics), card("partitions", o.partitions),
      card("under-replicated", o.underReplicated, o.underReplicated ? "warn" : "ok"),
      card("offline", o.offline, o.offline ? "bad" : "ok")),
    el("h2", {}, "Brokers"),
    table("brokers", ["Id", "Kafka address", "State", "Down since", "Role", "Data disk"], rows),
    el("p", {class: "muted"}, `Disk use is known for the node serving this console (node ${o.nodeId}); open another node's console for its disk.`));
}

async function topicsView() {
  const ts = await api("topics");
  const rows = ts.map(t => ({
    attrs: {"data-topic": t.name},
    cells: [el("td", {}, link("#/topic/" + encodeURIComponent(t.name), t.name), t.internal ? el("span", {class: "muted"}, " (internal)") : ""),
      t.partitions, t.replication, el("td", {class: "num " + (t.underReplicated ? "warn" : "")}, String(t.underReplicated)),
      el("td", {class: "num " + (t.offline ? "bad" : "")}, String(t.offline)), t.records,
      t.sizedPartitions ? `${bytes(t.size)} (${t.sizedPartitions} of ${t.partitions})` : "–"],
  }));
  const create = adminKey ? writeForm("create-topic", [
    el("label", {}, "New topic", el("input", {name: "name", required: true})),
    el("label", {}, "Partitions", el("input", {name: "partitions", type: "number", min: 1, placeholder: "default"})),
    el("label", {}, "Replication", el("input", {name: "replication", type: "number", min: 1, placeholder: "default"})),
  ], "Create topic", f => write("topics", {name: f.get("name"), partitions: Number(f.get("partitions")) || 0,
    replicationFactor: Number(f.get("replication")) || 0}), () => route()) : "";
  show("topics", el("h1", {}, "Topics"), create,
    table("topics", ["Topic", "Partitions", "Replication", "Under-replicated", "Offline", "Records", "Size on this node"], rows, "no topics"));
}

async function topicView(name) {
  const t = await api("topics/" + encodeURIComponent(name));
  const rows = t.partitions.map(p => ({
    attrs: {"data-partition": p.partition},
    cells: [p.partition, p.leader >= 0 ? String(p.leader) : el("td", {class: "bad"}, "none"), ids(p.replicas),
      el("td", {class: p.isr.length < p.replicas.length ? "warn" : ""}, ids(p.isr)), ids(p.offline),
      off(p.start), off(p.end), p.size >= 0 ? bytes(p.size) : "–",
      link(`#/messages?topic=${encodeURIComponent(name)}&partition=${p.partition}&offset=${Math.max(p.start, 0)}`, "browse")],
  }));
  const cfgs = t.configs.map(c => ({attrs: {"data-config": c.name}, cells: [c.name, c.sensitive ? "(sensitive)" : c.value, c.source]}));
  show("topic", el("h1", {}, "Topic ", el("code", {}, t.name), t.internal ? " (internal)" : ""),
    el("h2", {}, "Partitions"),
    table("partitions", ["Partition", "Leader", "Replicas", "In sync", "Offline", "Start offset", "End offset", "Size on this node", ""], rows),
    el("h2", {}, "Configs"),
    t.configsError ? el("p", {class: "error"}, t.configsError) : table("configs", ["Name", "Value", "Source"], cfgs),
    adminKey ? writeForm("delete-topic", [el("label", {}, "Delete this topic and all its records",
      el("span", {}, el("input", {name: "confirm", type: "checkbox", required: true, id: "delete-confirm"}), " I mean it"))],
    "Delete topic", () => write("topics/" + encodeURIComponent(name) + "/delete"), () => { location.hash = "#/topics"; }) : "");
}

function fieldCell(f) {
  if (f.kind === "null") return el("td", {class: "kind-null"}, "null");
  const note = f.truncated ? el("div", {class: "muted"}, `first ${f.text.length} of ${f.bytes} bytes shown`) : null;
  return el("td", {class: "kind-" + f.kind, title: `${f.kind}, ${f.bytes} bytes`}, el("pre", {}, f.text), note);
}

async function messagesView(q) {
  const topics = await api("topics");
  const topic = q.get("topic") || (topics.find(t => !t.internal) || topics[0] || {}).name || "";
  const mode = q.has("time") ? "time" : "offset";
  const form = el("form", {id: "browse"},
    el("label", {}, "Topic", el("select", {name: "topic"}, topics.map(t => el("option", {value: t.name, selected: t.name === topic}, t.name)))),
    el("label", {}, "Partition", el("input", {name: "partition", type: "number", min: 0, value: q.get("partition") || "0"})),
    el("label", {}, "From", el("select", {name: "mode"}, el("option", {value: "offset", selected: mode === "offset"}, "offset"), el("option", {value: "time", selected: mode === "time"}, "time (UTC)"))),
    el("label", {}, "Offset", el("input", {name: "offset", type: "number", min: 0, value: q.get("offset") || "0"})),
    el("label", {}, "Time (UTC)", el("input", {name: "time", type: "datetime-local", step: 1, value: q.has("time") ? new Date(Number(q.get("time"))).toISOString().slice(0, 19) : ""})),
    el("label", {}, "Records", el("input", {name: "limit", type: "number", min: 1, max: 200, value: q.get("limit") || "50"})),
    el("button", {type: "submit"}, "Browse"));
  form.addEventListener("submit", ev => {
    ev.preventDefault();
    const f = new FormData(form);
    const p = new URLSearchParams({topic: f.get("topic"), partition: f.get("partition"), limit: f.get("limit")});
    if (f.get("mode") === "time" && f.get("time")) p.set("time", String(Date.parse(f.get("time") + "Z")));
    else p.set("offset", f.get("offset"));
    location.hash = "#/messages?" + p.toString();
  });
  if (!q.has("topic")) {
    show("messages", el("h1", {}, "Messages"), form, el("p", {class: "muted"}, "Choose a partition and where to start."));
    return;
  }
  const p = new URLSearchParams({topic, partition: q.get("partition") || "0", limit: q.get("limit") || "50"});
  if (q.has("time")) p.set("time", q.get("time")); else p.set("offset", q.get("offset") || "0");
  const r = await api("records?" + p.toString());
  const rows = r.records.map(rec => ({
    attrs: {"data-offset": rec.offset},
    cells: [rec.offset, time(rec.timestamp), fieldCell(rec.key), fieldCell(rec.value),
      el("td", {}, rec.headers.map(h => el("div", {}, el("b", {}, h.key + ": "), h.value.kind === "null" ? "null" : h.value.text)))],
  }));
  const next = new URLSearchParams({topic, partition: String(r.partition), offset: String(r.next), limit: p.get("limit")});
  show("messages", el("h1", {}, "Messages"), form,
    el("p", {id: "range"}, `${r.topic}-${r.partition}: offsets ${r.start} to ${r.end}; from ${r.from}, ${r.records.length} shown.`,
      r.capped ? el("span", {}, " ", link("#/messages?" + next.toString(), "Next records")) : ""),
    table("records", ["Offset", "Timestamp", "Key", "Value", "Headers"], rows, "no records in this range"));
}

async function groupsView() {
  const g = await api("groups");
  const rows = g.groups.map(x => ({
    attrs: {"data-group": x.name, "data-type": x.type},
    cells: [link("#/group/" + encodeURIComponent(x.name), x.name), x.type, x.state, x.members, x.protocol || "–", x.coordinator,
      x.error ? el("td", {class: "bad"}, x.error) : el("td", {class: "num " + (x.lag > 0 ? "warn" : "")}, x.lag < 0 ? "–" : String(x.lag))],
  }));
  show("groups", el("h1", {}, "Groups"),
    table("groups", ["Group", "Type", "State", "Members", "Assignor", "Coordinator", "Lag (records)"], rows, "no groups"),
    el("p", {class: "muted"}, "Classic groups are described with DescribeGroups, consumer groups (KIP-848) with ConsumerGroupDescribe, share groups (KIP-932) with ShareGroupDescribe; a share group commits no offsets, so its lag is not shown here."),
    g.truncated ? el("p", {class: "muted"}, "Only the first groups by name are shown.") : "");
}

// groupState is the line under a group's name: its type, state, protocol,
// epochs (consumer and share groups) and coordinator.
function groupState(g) {
  const epochs = g.epoch === undefined ? "" : `; group epoch ${g.epoch}, assignment epoch ${g.assignmentEpoch}`;
  return `Type ${g.type}; state ${g.state}; protocol ${g.protocolType || "–"} ${g.protocol || ""}${epochs}; coordinator node ${g.coordinator}.`;
}

async function groupView(name) {
  const g = await api("groups/" + encodeURIComponent(name));
  const members = g.members.map(m => ({attrs: {"data-member": m.id, "data-type": m.type},
    cells: [m.id, m.clientId, m.host, m.type, m.epoch === undefined ? "–" : m.epoch, m.assigned.join(", ") || "–"]}));
  const offsets = g.offsets.map(o => ({
    attrs: {"data-tp": `${o.topic}-${o.partition}`},
    cells: [o.topic, o.partition, off(o.committed), off(o.end),
      el("td", {class: "num " + (o.lag > 0 ? "warn" : "")}, o.lag < 0 ? "–" : String(o.lag)), o.member || "–"],
  }));
  const share = g.type === "share";
  show("group", el("h1", {}, "Group ", el("code", {}, g.name)),
    el("p", {id: "group-state"}, groupState(g)),
    el("h2", {}, "Members"), table("members", ["Member", "Client id", "Host", "Protocol", "Epoch", "Assigned"], members, "no members"),
    el("h2", {}, share ? "Share-partition offsets" : "Offsets and lag"),
    g.offsetsNote ? el("p", {id: "offsets-note", class: "muted"}, "Offsets " + g.offsetsNote + ".")
      : table("offsets", ["Topic", "Partition", share ? "Start" : "Committed", "End", "Lag", "Member"], offsets, share ? "no share-partition offsets" : "no committed offsets"),
    ...(share ? [] : [el("h2", {}, "Lag over time"), chart("lag-chart", [{name: "lag", points: g.history.map(p => [p.at, p.lag])}], "rec"),
      el("p", {class: "muted"}, "Sampled by this node from its copies of the groups' offsets.")]),
    adminKey && !share ? writeForm("reset-group", [
      el("label", {}, "Reset offsets of topic", el("select", {name: "topic"}, [...new Set(g.offsets.map(o => o.topic))].map(t => el("option", {value: t}, t)))),
      el("label", {}, "To", el("select", {name: "to"}, el("option", {value: "earliest"}, "earliest"), el("option", {value: "latest"}, "latest"))),
    ], "Reset offsets", f => write("groups/" + encodeURIComponent(name) + "/reset", {topic: f.get("topic"), to: f.get("to")}), () => route()) : "");
}

async function throughputView() {
  const t = await api("throughput");
  const pts = i => t.points.map(p => [p.at, p.v[i]]);
  show("throughput", el("h1", {}, `Throughput through node ${t.nodeId}`),
    el("p", {class: "muted"}, `Produced to the partitions this node leads and fetched from it, per second, sampled every ${t.interval} s.`),
    el("h2", {}, "Records per second"), legend(["in (produced)", "out (fetched)"]),
    chart("records-chart", [{name: "in", points: pts(0)}, {name: "out", points: pts(2)}], "/s"),
    el("h2", {}, "Bytes per second"), legend(["in (produced)", "out (fetched)"]),
    chart("bytes-chart", [{name: "in", points: pts(1)}, {name: "out", points: pts(3)}], "B/s"));
}

async function reassignmentsView() {
  const ms = await api("reassignments");
  const rows = ms.map(m => ({attrs: {"data-tp": `${m.topic}-${m.partition}`}, cells: [m.topic, m.partition, ids(m.replicas), ids(m.adding), ids(m.removing)]}));
  show("reassignments", el("h1", {}, "Reassignments in progress"),
    table("reassignments", ["Topic", "Partition", "Replicas", "Adding", "Removing"], rows, "none in progress"));
}

function loginView(message) {
  const form = el("form", {id: "login", class: "login"},
    el("label", {}, "User", el("input", {id: "user", name: "user", autocomplete: "username", required: true})),
    el("label", {}, "Password", el("input", {id: "password", name: "password", type: "password", autocomplete: "current-password"})),
    el("label", {}, "Mechanism", el("select", {id: "mechanism", name: "mechanism"}, (session.mechanisms || []).map(m => el("option", {value: m}, m)))),
    el("button", {type: "submit", id: "login-submit"}, "Log in"),
    message ? el("p", {class: "error", id: "login-error"}, message) : "");
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    const f = new FormData(form);
    try {
      session = await api("login", {method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({User: f.get("user"), Password: f.get("password"), Mechanism: f.get("mechanism")})});
      renderWho();
      route();
    } catch (err) {
      loginView(err.message);
    }
  });
  show("login", el("h1", {}, "Log in"), el("p", {}, "This cluster authenticates its clients: log in with your Kafka SASL user. You will see what its ACLs allow."), form);
}

function renderWho() {
  const who = document.getElementById("who");
  who.replaceChildren();
  document.getElementById("mode").textContent = session.readOnly ? "Read-only." : adminKey ? "Writes unlocked." : "Writes need the admin key.";
  if (!session.readOnly && !adminKey && !(session.secure && !session.user)) {
    const form = el("form", {id: "unlock", class: "unlock"}, el("input", {id: "admin-key", type: "password", placeholder: "admin key", autocomplete: "off"}),
      el("button", {type: "submit"}, "Unlock writes"));
    form.addEventListener("submit", async ev => {
      ev.preventDefault();
      const key = form.querySelector("#admin-key").value;
      try {
        await api("unlock", {method: "POST", headers: {"Content-Type": "application/json", "X-Console-Admin-Key": key}, body: "{}"});
        adminKey = key;
        renderWho();
        route();
      } catch (err) {
        form.append(el("span", {class: "bad", id: "unlock-error"}, " " + err.message));
      }
    });
    who.append(form);
  }
  if (session && session.secure && session.user) {
    const out = el("button", {type: "button", id: "logout"}, "Log out");
    out.addEventListener("click", async () => {
      session = await api("logout", {method: "POST"});
      adminKey = "";
      renderWho();
      loginView();
    });
    who.append("User ", el("b", {id: "user-name"}, session.user), out);
  }
}

const pages = {
  "": overviewView, topics: topicsView, topic: p => topicView(p[1]), messages: (p, q) => messagesView(q),
  groups: groupsView, group: p => groupView(p[1]), throughput: throughputView, reassignments: reassignmentsView,
};
const refreshing = new Set(["", "throughput", "group"]);

async function route() {
  clearInterval(timer);
  if (session.secure && !session.user) { loginView(); return; }
  const {parts, query} = params();
  const name = parts[0] || "";
  const page = pages[name];
  if (!page) { showError("not found", new Error("No such page: " + location.hash)); return; }
  const run = async () => {
    try { await page(parts, query); } catch (err) { showError(name || "overview", err); }
  };
  document.body.dataset.state = "loading";
  await run();
  // The refresh skips a turn while the visitor is filling in a form.
  if (refreshing.has(name)) timer = setInterval(() => { if (!document.activeElement?.closest("#view form")) run(); }, 10000);
}

async function start() {
  try {
    session = await api("session");
  } catch (err) {
    showError("overview", err);
    return;
  }
  renderWho();
  window.addEventListener("hashchange", route);
  route();
}

start();
