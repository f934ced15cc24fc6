"use strict";
// Dotty's dashboard: the controls (actions as JSON POSTs, status polled),
// agent health (polled), devices (polled and nudged by events), the
// perception event stream and voice turns (SSE).
(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const clock = (secs) => new Date(secs * 1000).toLocaleTimeString();
  const ago = (s) => s == null ? "never" : s < 1 ? "just now" : s < 90 ? `${Math.round(s)} s ago` : `${Math.round(s / 60)} min ago`;
  const cap = (list, n, seen) => { while (list.children.length > n) { seen.delete(list.lastChild.dataset.key); list.lastChild.remove(); } };
  const getJSON = async (url) => { const r = await fetch(url, { cache: "no-store" }); if (!r.ok) throw new Error(r.status); return r.json(); };

  // Agent health.
  async function health() {
    try {
      const h = await getJSON("/health");
      const a = h.agent || {};
      const state = a.state || (h.acp_running ? "ready" : "down");
      $("agent-state").textContent = state;
      $("agent-dot").className = "dot " + (state === "ready" ? "ok" : ["backoff", "binary_missing", "down"].includes(state) ? "bad" : "");
      const dl = $("agent");
      dl.replaceChildren();
      const rows = [["dialect", a.dialect], ["pid", a.pid], ["restarts", a.restarts], ["sessions", h.sessions],
        ["session turns", h.session_turns], ["last error", a.last_error]];
      for (const [k, v] of rows) {
        if (v === undefined || v === null || v === "") continue;
        dl.append(el("dt", "", k), el("dd", "", String(v)));
      }
    } catch (e) {
      $("agent-state").textContent = "unreachable";
      $("agent-dot").className = "dot bad";
    }
  }

  // Devices.
  const devices = new Map();
  function renderDevice(id, s) {
    let card = devices.get(id);
    if (!card) {
      card = el("article", "device");
      card.dataset.device = id;
      devices.set(id, card);
      const box = $("devices");
      box.querySelector(".empty")?.remove();
      box.append(card);
    }
    card.replaceChildren();
    const h = el("h3", "", id);
    const stale = el("span", "badge" + (s.sensor_stale ? " stale" : ""), s.sensor_stale ? "stale" : "live");
    h.append(stale);
    const dl = el("dl");
    const add = (k, v) => dl.append(el("dt", "", k), el("dd", "", v));
    add("state", s.current_state || "idle");
    add("face", s.face_present ? "present" : "none");
    if (s.last_face_id) add("identity", s.last_face_id);
    add("listening", s.listening ? "yes" : "no");
    if (s.dance_active) add("dancing", "yes");
    if (s.last_sound_dir != null) add("last sound", String(s.last_sound_dir));
    add("last event", `${s.last_event_name || "—"} · ${ago(s.sensor_age_s)}`);
    card.append(h, dl);
  }
  async function loadDevices() {
    try {
      const all = await getJSON("/api/perception/state");
      for (const [id, s] of Object.entries(all)) renderDevice(id, s);
      const first = Object.values(all).find((s) => s && s.current_state);
      if (first && first.current_state !== currentState) { currentState = first.current_state; markState(); }
      return Object.keys(all);
    } catch (e) { return []; }
  }
  const pending = new Set();
  function refreshDevice(id) {
    if (pending.has(id)) return;
    pending.add(id);
    setTimeout(async () => {
      pending.delete(id);
      try {
        const one = await getJSON("/api/perception/state?device_id=" + encodeURIComponent(id));
        if (one[id]) renderDevice(id, one[id]);
      } catch (e) { /* next poll */ }
    }, 150);
  }

  // Events; history and the live feed may overlap, so rows are keyed.
  const seenEvents = new Set();
  function eventRow(ev, prepend) {
    const key = `${ev.device_id}|${ev.ts}|${ev.name}`;
    if (seenEvents.has(key)) return;
    seenEvents.add(key);
    const li = el("li");
    li.dataset.key = key;
    li.dataset.eventName = ev.name;
    li.dataset.device = ev.device_id || "";
    const what = el("div");
    what.append(el("span", "name", ev.name || "(unnamed)"), document.createTextNode(" "), el("span", "time", ev.device_id || ""));
    const data = ev.data && Object.keys(ev.data).length ? JSON.stringify(ev.data) : "";
    if (data) what.append(el("div", "data", data));
    li.append(el("span", "time", clock(ev.ts)), what);
    const list = $("events");
    prepend ? list.prepend(li) : list.append(li);
    cap(list, 100, seenEvents);
  }
  function live(id, source) {
    const set = (state) => { $(id).dataset.state = state; $(id).title = state; };
    source.onopen = () => set("live");
    source.onerror = () => set(source.readyState === EventSource.CLOSED ? "down" : "reconnecting");
  }
  function followFeed() {
    const src = new EventSource("/api/perception/feed");
    live("conn-feed", src);
    src.addEventListener("open", () => { $("feed-note").hidden = true; });
    src.onmessage = (m) => {
      let ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      if (ev.name === "fell_behind") { $("feed-note").hidden = false; return; }
      $("feed-note").hidden = true;
      eventRow(ev, true);
      if (ev.device_id) refreshDevice(ev.device_id);
    };
  }

  // Voice turns, keyed like events.
  const seenTurns = new Set();
  function turnRow(t, prepend) {
    const key = `${t.ts}|${t.channel}|${t.latency_ms}`;
    if (seenTurns.has(key)) return;
    seenTurns.add(key);
    const li = el("li");
    li.dataset.key = key;
    // Microseconds trimmed to milliseconds, which every browser parses.
    const when = t.ts ? new Date(t.ts.replace(/(\.\d{3})\d+/, "$1")).toLocaleTimeString() : "";
    const body = el("div");
    const head = el("div");
    const lat = el("span", "lat " + (t.latency_ms < 1500 ? "fast" : t.latency_ms < 4000 ? "mid" : "slow"), `${t.latency_ms} ms`);
    head.append(lat, document.createTextNode(" "), el("span", "badge", t.emotion || "neutral"), document.createTextNode(" "),
      el("span", "time", t.channel || ""));
    if (t.error) head.append(document.createTextNode(" "), el("span", "badge err", t.error));
    body.append(head, el("div", "req", t.request_text || ""), el("div", "reply", t.response_text || ""));
    li.append(el("span", "time", when), body);
    const list = $("turns");
    prepend ? list.prepend(li) : list.append(li);
    cap(list, 50, seenTurns);
  }
  async function followTurns() {
    const src = new EventSource("/ui/events");
    live("conn-turns", src);
    src.onmessage = (m) => { try { turnRow(JSON.parse(m.data), true); } catch (e) { /* skip */ } };
    try { for (const t of await getJSON("/ui/api/turns")) turnRow(t, false); } catch (e) { /* the feed still works */ }
  }


  // Controls: every action is a same-origin JSON POST; its button is
  // disabled while it runs, and the result line says what happened.
  const stateLabels = { idle: "Idle", talk: "Talk", story_time: "Story", security: "Security", dance: "Dance", sleep: "Sleep" };
  const moods = [["😊", "happy"], ["😆", "laughing"], ["😢", "sad"], ["😮", "surprised"], ["🤔", "thinking"],
    ["😠", "angry"], ["😐", "neutral"], ["😍", "loving"], ["😴", "sleepy"]];
  function show(text, kind) {
    const r = $("result");
    r.textContent = text;
    r.dataset.kind = kind;
  }
  function detailText(d) {
    if (typeof d === "string") return d;
    if (Array.isArray(d)) return d.map((i) => `${(i.loc || []).slice(1).join(".")}: ${i.msg}`).join("; ");
    return "";
  }
  async function act(path, body, btn) {
    if (btn) btn.disabled = true;
    show("…", "busy");
    try {
      const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}) });
      let j = {};
      try { j = await r.json(); } catch (e) { /* no body */ }
      if (!r.ok) {
        show(detailText(j.detail) || `The bridge answered HTTP ${r.status}.`, "bad");
        return null;
      }
      if (j.warning) show(j.warning, "warn");
      else if (j.response) show(`${j.sent ? j.sent + " → " : ""}${j.response}`, "ok");
      else show("Done.", "ok");
      return j;
    } catch (e) {
      show("The bridge did not answer: " + e.message, "bad");
      return null;
    } finally {
      if (btn) btn.disabled = false;
    }
  }
  function toggle(id, path) {
    const box = $(id);
    box.addEventListener("change", async () => {
      const want = box.checked;
      const j = await act(path, { enabled: want }, box);
      if (!j) box.checked = !want;
      else if (!j.warning) show(`${id === "kid-mode" ? "Kid mode" : "Smart mode"} ${want ? "on" : "off"}${j.model ? " — " + j.model : ""}.`, "ok");
    });
  }
  let currentState = "";
  function markState() {
    for (const b of $("states").children) b.setAttribute("aria-pressed", String(b.dataset.state === currentState));
  }
  function buildControls(states) {
    const box = $("states");
    box.replaceChildren();
    for (const st of states) {
      const b = el("button", "", stateLabels[st] || st);
      b.type = "button";
      b.dataset.state = st;
      b.addEventListener("click", async () => {
        if (await act("/ui/api/state", { state: st }, b)) { currentState = st; markState(); show(`State: ${stateLabels[st] || st}.`, "ok"); }
      });
      box.append(b);
    }
    markState();
  }
  function setupControls() {
    toggle("kid-mode", "/ui/api/kid-mode");
    toggle("smart-mode", "/ui/api/smart-mode");
    for (const [emoji, name] of moods) {
      const b = el("button", "", emoji);
      b.type = "button";
      b.dataset.emoji = emoji;
      b.setAttribute("aria-label", name + " face");
      b.title = name;
      b.addEventListener("click", () => act("/ui/api/mood", { emoji }, b));
      $("moods").append(b);
    }
    $("say-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (await act("/ui/api/say", { text: $("say-text").value }, $("say-send"))) $("say-text").value = "";
    });
    $("story-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (await act("/ui/api/story", { text: $("story-text").value }, $("story-send"))) $("story-text").value = "";
    });
    $("dance").addEventListener("click", () => act("/ui/api/dance", {}, $("dance")));
    $("take-photo").addEventListener("click", async () => {
      if (await act("/ui/api/take-photo", {}, $("take-photo"))) for (const ms of [2000, 5000, 10000]) setTimeout(photos, ms);
    });
    $("load-songs").addEventListener("click", loadSongs);
    $("photo-open").addEventListener("click", () => $("photo-large").showModal());
  }
  async function loadSongs() {
    const btn = $("load-songs");
    const list = $("songs");
    btn.disabled = true;
    try {
      const j = await getJSON("/ui/api/songs");
      list.replaceChildren();
      for (const name of j.songs) {
        const li = el("li");
        const play = el("button", "", "Play");
        play.type = "button";
        play.dataset.song = name;
        play.setAttribute("aria-label", "Play " + name);
        play.addEventListener("click", () => act("/ui/api/play-song", { filename: name }, play));
        li.append(el("span", "", name.replace(/\.[^.]+$/, "")), play);
        list.append(li);
      }
      list.hidden = false;
      btn.setAttribute("aria-expanded", "true");
      if (j.error) show("Songs unavailable: " + j.error, "bad");
      else if (!j.songs.length) show("xiaozhi has no songs.", "warn");
    } catch (e) {
      show("The bridge did not answer: " + e.message, "bad");
    } finally {
      btn.disabled = false;
    }
  }
  // Latest photo: the chosen robot's (the newest by default).
  let photoDevice = "";
  async function photos() {
    let list;
    try { list = await getJSON("/ui/api/photos"); } catch (e) { return; }
    $("photo-empty").hidden = list.length > 0;
    $("photo").hidden = list.length === 0;
    const chooser = $("photo-devices");
    chooser.hidden = list.length < 2;
    chooser.replaceChildren();
    if (!list.length) return;
    let p = list.find((x) => x.device_id === photoDevice) || list[0];
    for (const x of list) {
      const b = el("button", "", x.device_id || "(no id)");
      b.type = "button";
      b.setAttribute("aria-pressed", String(x === p));
      b.addEventListener("click", () => { photoDevice = x.device_id; photos(); });
      chooser.append(b);
    }
    const src = `/ui/api/photo?device_id=${encodeURIComponent(p.device_id)}&at=${encodeURIComponent(p.at)}`;
    const img = $("photo-img");
    if (img.getAttribute("src") !== src) img.setAttribute("src", src);
    img.alt = p.description || "photo from " + p.device_id;
    $("photo-desc").textContent = p.description || "(no description)";
    $("photo-meta").textContent = `${p.device_id} · ${new Date(p.at).toLocaleTimeString()}`;
    $("photo-download").href = src + "&download=1";
    $("photo-large-img").setAttribute("src", src);
    $("photo-large-img").alt = img.alt;
  }

  let built = false;
  async function status() {
    let s;
    try { s = await getJSON("/ui/api/status"); } catch (e) { return; }
    if (!built) { buildControls(s.states || []); built = true; }
    $("st-version").textContent = s.version || "";
    $("banner-demo").hidden = !s.demo_agent;
    $("banner-open").hidden = !s.open;
    for (const [id, on] of [["kid-mode", s.kid_mode], ["smart-mode", s.smart_mode]]) if (!$(id).disabled) $(id).checked = on;
    $("smart-models").textContent = s.smart_off_model || s.smart_on_model ? `off: ${s.smart_off_model} · on: ${s.smart_on_model}` : "";
    const x = s.xiaozhi || {};
    const light = (id, state, title) => { $(id).dataset.state = state; $(id).title = title; };
    if (!x.configured) {
      light("st-xiaozhi", "off", "XIAOZHI_HOST is not set");
      light("st-robot", "off", "xiaozhi is not configured");
    } else {
      light("st-xiaozhi", x.reachable ? "live" : "down", x.reachable ? "admin API answering" : x.error || "unreachable");
      const n = (x.devices || []).length;
      light("st-robot", n ? "live" : "down", n ? `${n} connected: ${x.devices.join(", ")}` : x.websocket ? "none connected" : "WebSocket port closed");
    }
  }

  async function start() {
    setupControls();
    status();
    setInterval(status, 5000);
    photos();
    setInterval(photos, 5000);
    followFeed();
    followTurns();
    health();
    setInterval(health, 5000);
    const ids = await loadDevices();
    const history = [];
    for (const id of ids) {
      try { for (const r of await getJSON("/api/perception/recent?device_id=" + encodeURIComponent(id))) history.push({ ...r, device_id: id }); } catch (e) { /* skip */ }
    }
    history.sort((a, b) => b.ts - a.ts);
    for (const ev of history) eventRow(ev, false);
    setInterval(loadDevices, 5000);
  }
  start();
})();
