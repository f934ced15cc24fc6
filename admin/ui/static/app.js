"use strict";
// Dotty's dashboard: the controls (actions as JSON POSTs, status polled),
// agent health (polled), devices (polled and nudged by events), the
// perception event stream and voice turns (SSE), the memory review
// (approve and redact as JSON POSTs) and today's journal (polled and
// nudged by events).
(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  // One formatter for every row: toLocaleTimeString builds a new one per
  // call, which costs more than the rest of a row.
  const timeFormat = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" });
  const clock = (secs) => timeFormat.format(secs * 1000);
  const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "short" });
  // stamp is a time of today, or the date and time of another day.
  function stamp(t) {
    if (!t) return "";
    const when = clock(t);
    return new Date(t * 1000).toDateString() === new Date().toDateString() ? when : dayFormat.format(t * 1000) + " " + when;
  }
  // isoSecs reads an RFC 3339 time as the bridge writes it (often with
  // microseconds, trimmed to the milliseconds every browser parses): Unix
  // seconds, or 0.
  const isoSecs = (s) => {
    if (typeof s !== "string" || !s) return 0;
    const ms = Date.parse(s.replace(/(\.\d{3})\d+/, "$1"));
    return Number.isFinite(ms) ? ms / 1000 : 0;
  };
  const str = (v) => typeof v === "string" ? v : "";
  const ago = (s) => s == null ? "never" : s < 1 ? "just now" : s < 90 ? `${Math.round(s)} s ago` : `${Math.round(s / 60)} min ago`;
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
      const name = [a.agent_name, a.agent_version].filter(Boolean).join(" ");
      const up = a.uptime_s ? (a.uptime_s < 5400 ? `${Math.round(a.uptime_s / 60)} min` : `${(a.uptime_s / 3600).toFixed(1)} h`) : "";
      const rows = [["agent", name || a.command], ["dialect", a.dialect], ["uptime", up], ["pid", a.pid], ["restarts", a.restarts],
        ["sessions", h.sessions], ["session turns", h.session_turns], ["last error", a.last_error],
        ["problems", (h.problems || []).join("; ")]];
      for (const [k, v] of rows) {
        if (v === undefined || v === null || v === "") continue;
        dl.append(el("dt", "", k), el("dd", "", String(v)));
      }
    } catch (e) {
      $("agent-state").textContent = "unreachable";
      $("agent-dot").className = "dot bad";
    }
  }

  // later runs fn once, ms after the first of a burst of calls with the
  // same key: a flood of events becomes one request.
  const timers = new Set();
  function later(key, ms, fn) {
    if (timers.has(key)) return;
    timers.add(key);
    setTimeout(() => { timers.delete(key); fn(); }, ms);
  }
  // notice shows a quiet inline line (hidden when text is empty).
  function notice(id, text) {
    const n = $(id);
    n.textContent = text || "";
    n.hidden = !text;
  }
  const why = (e) => /^\d+$/.test(e.message) ? `HTTP ${e.message}` : e.message || "no answer";

  // Devices.
  const devices = new Map();
  const deviceStates = new Map(); // the last state each card shows
  function renderDevice(id, s) {
    deviceStates.set(id, s);
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
    const sc = scenes.get(id);
    if (sc) {
      const dd = el("dd", "scene", sc.text);
      if (typeof sc.ts_wall === "number") dd.append(" ", el("span", "time", ago(Math.max(0, Date.now() / 1000 - sc.ts_wall))));
      dl.append(el("dt", "", "scene"), dd);
    }
    card.append(h, dl);
    checkWatch();
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

  // Scenes: each robot's latest one-line summary, on its device card.
  // Every answer carries the number of the request that asked for it, so
  // a slow older answer never replaces a newer one.
  const scenes = new Map(); // device → {text, ts_wall, seq}
  let sceneSeq = 0;
  async function loadScenes(id) {
    const seq = ++sceneSeq;
    let got;
    try {
      got = await getJSON("/api/perception/scene" + (id ? "?device_id=" + encodeURIComponent(id) : ""));
      if (!got || typeof got !== "object" || Array.isArray(got)) throw new Error("unexpected answer");
    } catch (e) {
      notice("scene-note", `Scene summaries unavailable (${why(e)}).`);
      return;
    }
    notice("scene-note", "");
    const scope = new Set(id ? [id] : [...scenes.keys(), ...Object.keys(got)]);
    for (const d of scope) {
      const old = scenes.get(d);
      if (old && old.seq > seq) continue;
      const sc = Object.hasOwn(got, d) ? got[d] : null;
      if (sc && typeof sc.text === "string" && sc.text) scenes.set(d, { text: sc.text, ts_wall: sc.ts_wall, seq });
      else scenes.delete(d);
      if (deviceStates.has(d)) renderDevice(d, deviceStates.get(d));
    }
  }

  // Security watch: the recent records of robots in the security state,
  // and which robots are watching now.
  const SEC_MAX = 20;
  const photoWords = { photo_dispatch_failed: "camera route missing on xiaozhi", photo_poll_miss: "no description in time" };
  // secText says what a capture saw, or why there is no photo; audio says
  // whether an audio error came with it.
  function secText(desc, errs) {
    errs = Array.isArray(errs) ? errs.filter((x) => typeof x === "string") : [];
    const photo = errs.filter((x) => !x.startsWith("audio_")).map((x) => photoWords[x] || x.replace(/_/g, " "));
    return {
      text: typeof desc === "string" && desc ? desc : "no photo" + (photo.length ? " — " + photo.join("; ") : ""),
      miss: !(typeof desc === "string" && desc),
      audio: errs.some((x) => x.startsWith("audio_")),
    };
  }
  function secRow(r, t) {
    const li = el("li");
    li.dataset.device = typeof r.device === "string" ? r.device : "";
    const when = stamp(t);
    const s = secText(r.photo_desc, r.errors);
    const body = el("div");
    body.append(el("div", "name", li.dataset.device || "(no device)"), el("div", s.miss ? "desc miss" : "desc", s.text));
    if (typeof r.audio_transcript === "string" && r.audio_transcript) body.append(el("div", "heard", "Heard: " + r.audio_transcript));
    if (typeof r.audio_classification === "string" && r.audio_classification) body.append(el("div", "heard", "Sound: " + r.audio_classification));
    if (s.audio) body.append(el("div", "note", "audio not available"));
    li.append(el("span", "time", when), body);
    return li;
  }
  let secSeq = 0, secShown = 0, secRecords = 0, secFailed = "", watching = [], watchKey = null;
  function secVisible() {
    $("security-card").hidden = !secRecords && !watching.length && !secFailed;
  }
  async function loadSecurity() {
    const seq = ++secSeq;
    let list;
    try {
      list = await getJSON("/api/security/recent?limit=" + SEC_MAX);
      if (!Array.isArray(list)) throw new Error("unexpected answer");
    } catch (e) {
      if (seq < secShown) return;
      secShown = seq;
      secFailed = `Security records unavailable (${why(e)}).`;
      notice("sec-note", secFailed);
      secVisible();
      return;
    }
    if (seq < secShown) return;
    secShown = seq;
    secFailed = "";
    notice("sec-note", "");
    const rows = list.filter((r) => r && typeof r === "object").map((r) => [r, typeof r.ts === "string" ? turnTime(r) || 0 : 0])
      .sort((a, b) => b[1] - a[1]).slice(0, SEC_MAX);
    $("sec-list").replaceChildren(...rows.map(([r, t]) => secRow(r, t)));
    secRecords = rows.length;
    secVisible();
  }
  // checkWatch follows which robots are in the security state: the badge
  // shows while any is, and the records are fetched again when one enters
  // or leaves it.
  function checkWatch() {
    const ids = [...deviceStates].filter(([, s]) => s && s.current_state === "security").map(([id]) => id).sort();
    const key = ids.join("\n");
    if (key === watchKey) return;
    const first = watchKey === null;
    watchKey = key;
    watching = ids;
    $("sec-watching").hidden = !ids.length;
    notice("sec-who", ids.length ? "On watch: " + ids.join(", ") : "");
    secVisible();
    if (!first) later("security", 300, loadSecurity);
  }

  // The feed: perception events and voice turns in one list, newest
  // first, filtered by tab. History and the live streams may overlap, so
  // rows are keyed.
  const FEED_MAX = 500;
  const seen = new Set();
  let errors = 0;
  function countError(d) {
    errors += d;
    const c = $("error-count");
    c.textContent = String(errors);
    c.classList.toggle("some", errors > 0);
  }
  function trim() {
    const list = $("feed");
    while (list.children.length > FEED_MAX) {
      const last = list.lastChild;
      seen.delete(last.dataset.key);
      if (last.dataset.error) countError(-1);
      last.remove();
    }
  }
  function row(key, kind, ts, isError) {
    if (seen.has(key)) return null;
    seen.add(key);
    const li = el("li");
    li.dataset.key = key;
    li.dataset.kind = kind;
    li.dataset.ts = String(ts);
    if (isError) { li.dataset.error = "1"; countError(1); }
    return li;
  }
  // Events shown as a short sentence rather than their data.
  const sceneReasons = { tick: "periodic", face_recognized: "face recognised", audio_captioned: "new sound", state_changed: "state changed" };
  const summaries = new Map([
    ["security_capture", (d) => { const s = secText(d.photo_desc, d.errors); return s.text + (s.audio ? " · audio not available" : ""); }],
    ["scene_synthesised", (d) => `${sceneReasons[d.reason] || d.reason || "new scene"}: ${d.preview ?? ""}`],
  ]);
  function eventRow(ev) {
    const isError = /(^|_)(error|failed)$/.test(ev.name || "");
    const li = row(`e|${ev.device_id}|${ev.ts}|${ev.name}`, "event", ev.ts || 0, isError);
    if (!li) return null;
    li.dataset.eventName = ev.name;
    li.dataset.device = ev.device_id || "";
    const what = el("div");
    what.append(el("span", "name", ev.name || "(unnamed)"), document.createTextNode(" "), el("span", "time", ev.device_id || ""));
    const sum = summaries.get(ev.name);
    if (sum && ev.data && typeof ev.data === "object") what.append(el("div", "summary", String(sum(ev.data))));
    else {
      const data = ev.data && Object.keys(ev.data).length ? JSON.stringify(ev.data) : "";
      if (data) what.append(el("div", "data", data));
    }
    li.append(el("span", "time", clock(ev.ts)), what);
    return li;
  }
  // Turn timestamps carry microseconds; trimmed to milliseconds, which
  // every browser parses.
  const turnTime = (t) => t.ts ? Date.parse(t.ts.replace(/(\.\d{3})\d+/, "$1")) / 1000 : 0;
  function turnRow(t) {
    const ts = turnTime(t);
    const li = row(`t|${t.ts}|${t.channel}|${t.latency_ms}`, "turn", ts, !!t.error);
    if (!li) return null;
    const body = el("div");
    const head = el("div");
    const lat = el("span", "lat " + (t.latency_ms < 1500 ? "fast" : t.latency_ms < 4000 ? "mid" : "slow"), `${t.latency_ms} ms`);
    head.append(lat, document.createTextNode(" "), el("span", "badge", t.emotion || "neutral"), document.createTextNode(" "),
      el("span", "time", t.channel || ""));
    if (t.error) head.append(document.createTextNode(" "), el("span", "badge err", t.error));
    body.append(head, el("div", "req", t.request_text || ""), el("div", "reply", t.response_text || ""));
    const p = t.latency_phases;
    if (p) body.append(el("div", "phases", `agent ${p.total_ms} ms · new session ${p.new_ms} ms · prompt ${p.prompt_ms} ms${p.reused >= 1 ? " · session reused" : ""}`));
    li.append(el("span", "time", ts ? clock(ts) : ""), body);
    return li;
  }
  function live(li) {
    if (!li) return;
    $("feed").prepend(li);
    trim();
  }
  // history places rows already in the feed's order (newest first) at its end.
  function history(rows) {
    rows = rows.filter(Boolean).sort((a, b) => Number(b.dataset.ts) - Number(a.dataset.ts));
    const frag = document.createDocumentFragment();
    frag.append(...rows);
    $("feed").append(frag);
    trim();
  }
  function setupTabs() {
    for (const tab of document.querySelectorAll(".tabs [role=tab]")) {
      tab.addEventListener("click", () => {
        for (const t of document.querySelectorAll(".tabs [role=tab]")) t.setAttribute("aria-selected", String(t === tab));
        $("feed").dataset.tab = tab.dataset.tab;
      });
    }
  }
  function connection(id, source) {
    const set = (state) => { $(id).dataset.state = state; $(id).title = state; };
    source.onopen = () => set("live");
    source.onerror = () => set(source.readyState === EventSource.CLOSED ? "down" : "reconnecting");
  }
  function followFeed() {
    const src = new EventSource("/api/perception/feed");
    connection("conn-feed", src);
    // After a reconnect, what the stream missed is fetched again.
    let opens = 0;
    src.addEventListener("open", () => {
      $("feed-note").hidden = true;
      if (opens++) { later("scenes", 300, () => loadScenes("")); later("security", 300, loadSecurity); later("journal", 300, loadJournal); }
    });
    src.onmessage = (m) => {
      let ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      if (ev.name === "fell_behind") { $("feed-note").hidden = false; return; }
      $("feed-note").hidden = true;
      live(eventRow(ev));
      if (ev.device_id) refreshDevice(ev.device_id);
      if (ev.name === "scene_synthesised") {
        const id = ev.device_id || "";
        later("scene|" + id, 300, () => loadScenes(id));
      } else if (ev.name === "security_capture") later("security", 300, loadSecurity);
      if (journalEvent(ev)) refreshJournal();
    };
  }
  function followTurns() {
    const src = new EventSource("/ui/events");
    connection("conn-turns", src);
    src.onmessage = (m) => { try { live(turnRow(JSON.parse(m.data))); } catch (e) { /* skip */ } };
  }

  // Controls: every action is a same-origin JSON POST; its button is
  // disabled while it runs, and the result line says what happened.
  const stateLabels = { idle: "Idle", talk: "Talk", story_time: "Story", security: "Security", dance: "Dance", sleep: "Sleep" };
  const moods = [["😊", "happy"], ["😆", "laughing"], ["😢", "sad"], ["😮", "surprised"], ["🤔", "thinking"],
    ["😠", "angry"], ["😐", "neutral"], ["😍", "loving"], ["😴", "sleepy"]];
  // show writes the result line out (the controls' by default).
  function show(text, kind, out = "result") {
    const r = $(out);
    r.textContent = text;
    r.dataset.kind = kind;
  }
  function detailText(d) {
    if (typeof d === "string") return d;
    if (Array.isArray(d)) return d.map((i) => `${(i.loc || []).slice(1).join(".")}: ${i.msg}`).join("; ");
    return "";
  }
  // act POSTs an action; btn is the button (or the buttons) disabled
  // while it runs, out the result line it answers on.
  async function act(path, body, btn, out = "result") {
    const btns = [].concat(btn || []);
    for (const b of btns) b.disabled = true;
    show("…", "busy", out);
    try {
      const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}) });
      let j = {};
      try { j = await r.json(); } catch (e) { /* no body */ }
      if (!r.ok) {
        show(detailText(j.detail) || `The bridge answered HTTP ${r.status}.`, "bad", out);
        return null;
      }
      if (j.warning) show(j.warning, "warn", out);
      else if (j.response) show(`${j.sent ? j.sent + " → " : ""}${j.response}`, "ok", out);
      else show("Done.", "ok", out);
      return j;
    } catch (e) {
      show("The bridge did not answer: " + e.message, "bad", out);
      return null;
    } finally {
      for (const b of btns) b.disabled = false;
    }
  }
  window.dotty = { $, el, act, show }; // for ops.js
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
    $("photo-meta").textContent = `${p.device_id} · ${clock(Date.parse(p.at) / 1000)}`;
    $("photo-download").href = src + "&download=1";
    $("photo-large-img").setAttribute("src", src);
    $("photo-large-img").alt = img.alt;
  }

  // Memory review: the facts Dotty learned about people. Facts about
  // children and people it did not know are held until a grown-up
  // approves them; Redact deletes a fact on a second press. The lists are
  // not redrawn while an action runs or a Redact waits for its second
  // press (memHold), and are read again after every action.
  const MEM_CONFIRM_MS = 8000;
  let memSeq = 0, memShown = 0, memHold = 0, memStale = false, memFocus = null;
  const cut = (s, n) => s.length > n ? s.slice(0, n - 1).trimEnd() + "…" : s;
  function memRelease() {
    memHold--;
    if (!memHold && memStale) loadMemory();
  }
  function memButton(kind, id, who, fact) {
    const label = kind === "approve" ? "Approve" : "Redact";
    const about = `fact about ${who}: ${cut(fact, 80)}`;
    const b = el("button", kind, label);
    b.type = "button";
    b.dataset.action = kind;
    b.setAttribute("aria-label", `${label} ${about}`);
    let timer = 0; // set while a Redact waits for its second press
    const disarm = () => {
      clearTimeout(timer);
      timer = 0;
      b.textContent = label;
      b.classList.remove("armed");
      b.setAttribute("aria-label", `${label} ${about}`);
    };
    const cancel = () => {
      if (!timer) return;
      disarm();
      show("", "", "mem-result");
      memRelease();
    };
    b.addEventListener("click", async () => {
      if (kind === "redact" && !timer) {
        memHold++;
        timer = setTimeout(cancel, MEM_CONFIRM_MS);
        b.textContent = "Confirm redact";
        b.classList.add("armed");
        b.setAttribute("aria-label", `Confirm: redact ${about}`);
        show(`Press “Confirm redact” to delete the fact about ${who} for good.`, "warn", "mem-result");
        return;
      }
      if (timer) disarm(); // the second press: the hold stays until the answer
      else memHold++;
      const li = b.closest("li");
      const list = li.parentElement;
      const j = await act(`/ui/api/memory/${kind}`, { id }, [...li.querySelectorAll("button")], "mem-result");
      if (j) show(kind === "approve" ? `Approved: Dotty may now use the fact about ${who}.` : `Redacted: the fact about ${who} is deleted.`, "ok", "mem-result");
      // Keyboard users stay in the list: the next fact's first button
      // gets the focus once the list is read again.
      memFocus = { list: list.id, index: [...list.children].indexOf(li) };
      memStale = true;
      memRelease();
    });
    b.addEventListener("keydown", (e) => { if (e.key === "Escape") cancel(); });
    b.addEventListener("blur", cancel);
    return b;
  }
  function memRow(r) {
    const li = el("li");
    li.dataset.id = r.id;
    const who = str(r.person_id) || "someone";
    const fact = str(r.content);
    const actions = el("div", "mem-actions");
    if (r.pending) actions.append(memButton("approve", r.id, who, fact));
    actions.append(memButton("redact", r.id, who, fact));
    const body = el("div");
    body.append(el("div", "name", who), el("div", "fact", fact), actions);
    const when = el("span", "time", stamp(isoSecs(r.created_at)));
    when.title = str(r.created_at);
    li.append(when, body);
    return li;
  }
  async function loadMemory() {
    if (memHold) { memStale = true; return; }
    memStale = false;
    const seq = ++memSeq;
    let r = null, j = null;
    try {
      r = await fetch("/ui/api/memory", { cache: "no-store" });
      j = await r.json();
    } catch (e) { /* no answer, or not JSON */ }
    if (seq < memShown) return;
    memShown = seq;
    if (memHold) { memStale = true; return; } // an action started meanwhile
    const card = $("memory-card");
    if (r && r.status === 404) { card.hidden = true; return; } // an older bridge
    if (!r || !r.ok || !j || !Array.isArray(j.records)) {
      // The reason ("Memory not configured", a busy store) in a quiet
      // line; facts already shown stay until a listing succeeds.
      const detail = j && detailText(j.detail);
      notice("mem-note", detail || `Memory unavailable (${r ? "HTTP " + r.status : "no answer"}).`);
      card.hidden = false;
      return;
    }
    notice("mem-note", "");
    const recs = j.records.filter((x) => x && typeof x === "object" && typeof x.id === "string");
    const held = recs.filter((x) => x.pending === true), approved = recs.filter((x) => x.pending !== true);
    $("mem-pending").replaceChildren(...held.map(memRow));
    $("mem-approved").replaceChildren(...approved.map(memRow));
    $("mem-approved-box").hidden = !approved.length;
    $("mem-approved-count").textContent = String(approved.length);
    const count = $("mem-count");
    count.textContent = `${held.length} to review`;
    count.hidden = !held.length;
    $("mem-more").hidden = j.more !== true;
    $("mem-body").hidden = false;
    card.hidden = false;
    const f = memFocus;
    memFocus = null;
    const active = document.activeElement;
    if (f && (!active || active === document.body || card.contains(active))) {
      const list = $(f.list);
      const li = list.children[Math.min(f.index, list.children.length - 1)];
      (li?.querySelector("button") || $("memory-title")).focus();
    }
  }

  // Today: the robot's journal of the day, its last dream, its last dance
  // reflection and the greetings it gave. Every answer carries the number
  // of the request that asked for it, so a slow older answer never
  // replaces a newer one.
  const DREAM_PREVIEW = 200;
  let journalSeq = 0, journalShown = 0, dreamShown = "";
  // preview is the first DREAM_PREVIEW characters of s, cut at a word.
  function preview(s) {
    if (s.length <= DREAM_PREVIEW) return s;
    const head = s.slice(0, DREAM_PREVIEW);
    const sp = head.lastIndexOf(" ");
    return (sp > DREAM_PREVIEW / 2 ? head.slice(0, sp) : head).trimEnd() + "…";
  }
  function greetRow(g) {
    const li = el("li");
    const who = el("div", "name", str(g.identity) || "someone");
    if (str(g.device)) who.append(" ", el("span", "time", g.device));
    const body = el("div");
    body.append(who);
    if (str(g.text)) body.append(el("div", "said", g.text));
    if (g.error != null && g.error !== "") body.append(el("div", "note", "not spoken: " + String(g.error)));
    li.append(el("span", "time", stamp(isoSecs(g.ts))), body);
    return li;
  }
  async function loadJournal() {
    const seq = ++journalSeq;
    let j;
    try {
      j = await getJSON("/api/journal/today");
      if (!j || typeof j !== "object" || Array.isArray(j)) throw new Error("unexpected answer");
    } catch (e) {
      if (seq < journalShown) return;
      journalShown = seq;
      notice("today-note", `Today's journal unavailable (${why(e)}).`);
      for (const id of ["today-dream", "today-dance", "today-greet"]) $(id).hidden = true;
      $("today-date").textContent = "";
      $("today-card").hidden = false;
      return;
    }
    if (seq < journalShown) return;
    journalShown = seq;
    notice("today-note", "");
    const list = (k) => Array.isArray(j[k]) ? j[k].filter((x) => x && typeof x === "object") : [];
    const [dreams, dances, greetings] = [list("dreams"), list("dances"), list("greetings")];
    $("today-date").textContent = str(j.date);
    const d = dreams[0];
    $("today-dream").hidden = !d;
    if (d) {
      const full = str(d.full_text).trim(), summary = str(d.summary).trim();
      const shown = summary || preview(full);
      $("today-dream-text").textContent = shown || "(no words)";
      $("today-dream-meta").textContent = [str(d.seed) && "seed: " + d.seed, stamp(isoSecs(d.ts))].filter(Boolean).join(" · ");
      const more = $("today-dream-more");
      more.hidden = !full || full === shown;
      const key = str(d.dream_id) || str(d.ts);
      if (key !== dreamShown) { more.open = false; dreamShown = key; }
      $("today-dream-full").textContent = full;
    }
    const x = dances[0];
    $("today-dance").hidden = !x;
    if (x) {
      $("today-dance-meta").textContent = [str(x.dance), str(x.device), stamp(isoSecs(x.ts))].filter(Boolean).join(" · ");
      $("today-dance-text").textContent = str(x.reflection) || "(no reflection)";
    }
    $("today-greetings").replaceChildren(...greetings.map(greetRow));
    $("today-greet").hidden = !greetings.length;
    $("today-card").hidden = !d && !x && !greetings.length;
  }
  // journalEvent reports whether a feed event can change the journal: a
  // robot going to sleep or waking (dreams), a dance ending (its
  // reflection) or a face recognised (a greeting).
  const lastStates = new Map(); // device → the state its last state_changed named
  function journalEvent(ev) {
    if (ev.name === "dance_ended" || ev.name === "face_recognized") return true;
    if (ev.name !== "state_changed") return false;
    const id = ev.device_id || "";
    const now = ev.data && typeof ev.data.state === "string" ? ev.data.state : "";
    const before = lastStates.has(id) ? lastStates.get(id) : deviceStates.get(id)?.current_state;
    lastStates.set(id, now);
    return now === "sleep" || before === "sleep";
  }
  // refreshJournal reads the journal 300 ms after the first of a burst of
  // such events, and again 15 s later: the reflection and the greeting
  // are written once the model has answered.
  function refreshJournal() {
    later("journal", 300, loadJournal);
    later("journal-late", 15000, loadJournal);
  }

  // ---- host view: the machine the bridge runs on, from /ui/api/status.
  // Every figure the bridge could not read shows as "unknown".
  const GiB = 1024 ** 3;
  const gib = (b) => `${(b / GiB).toFixed(1)} GiB`;
  function uptimeText(s) {
    const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    return d ? `${d} d ${h} h` : h ? `${h} h ${m} min` : `${m} min`;
  }
  function hostFig(id, text, level, data) {
    const dd = $(id);
    dd.textContent = text == null ? "unknown" : text;
    dd.dataset.level = text == null ? "unknown" : level || "";
    for (const [k, v] of Object.entries(data || {})) dd.dataset[k] = String(v);
  }
  function renderHost(h) {
    if (!h || typeof h !== "object") return;
    const t = h.cpu_temp_c;
    hostFig("host-temp", typeof t === "number" ? `${t.toFixed(1)} °C` : null, t >= 75 ? "warn" : "");
    const l = Array.isArray(h.load) && h.load.length === 3 ? h.load : null;
    hostFig("host-load", l && l.map((x) => x.toFixed(2)).join(" · ") + (h.cpus ? ` (${h.cpus} CPUs)` : ""),
      l && h.cpus && l[0] > h.cpus ? "warn" : "");
    const m = h.memory;
    hostFig("host-mem", m && `${gib(m.total_bytes - m.available_bytes)} used of ${gib(m.total_bytes)} (${Math.round(m.used_percent)} %)`,
      m && m.used_percent > 85 ? "warn" : "", m ? { total: m.total_bytes, available: m.available_bytes } : {});
    const d = h.disk;
    hostFig("host-disk", d && `${gib(d.free_bytes)} free of ${gib(d.total_bytes)} (${Math.round(d.used_percent)} % used)`,
      d && d.used_percent > 85 ? "warn" : "", d ? { total: d.total_bytes, free: d.free_bytes } : {});
    if (d) $("host-disk").title = d.path;
    hostFig("host-uptime", typeof h.uptime_s === "number" ? uptimeText(h.uptime_s) : null, "",
      typeof h.uptime_s === "number" ? { seconds: h.uptime_s } : {});
    const x = h.xiaozhi || {};
    const port = (name, n, open) => n ? `${name} :${n} ${open ? "answers" : "closed"}` : "";
    hostFig("host-ports", x.host ? [port("HTTP", x.http_port, x.http), port("WebSocket", x.ws_port, x.websocket)].filter(Boolean).join(" · ")
      : "XIAOZHI_HOST not set", x.host && ((x.http_port && !x.http) || (x.ws_port && !x.websocket)) ? "warn" : "");
    hostFig("host-robots", typeof h.robots_seen === "number" ? String(h.robots_seen) : null);
  }
  // ---- /host view

  // ---- today's errors: the failed turns of the day from the
  // conversation log (so they survive a restart of the bridge), placed in
  // the feed by time; the Errors tab says how many the day had.
  async function loadErrorsToday() {
    let j;
    try {
      j = await getJSON("/ui/api/errors/today");
      if (!j || !Array.isArray(j.errors)) throw new Error("unexpected answer");
    } catch (e) {
      notice("errors-today", e.message === "404" ? "" : `Today's errors unavailable (${why(e)}).`);
      return;
    }
    const list = $("feed");
    for (const t of j.errors) {
      const li = turnRow(t);
      if (!li) continue; // already shown
      const ts = Number(li.dataset.ts);
      const after = [...list.children].find((x) => Number(x.dataset.ts) < ts);
      list.insertBefore(li, after || null);
    }
    trim();
    const n = typeof j.count === "number" ? j.count : 0;
    notice("errors-today", j.error ? j.error : `${n} failed ${n === 1 ? "turn" : "turns"} today (${str(j.date)}, from the conversation log)` +
      (j.partial ? "; only the end of a long log was read." : "."));
  }
  // ---- /today's errors

  let built = false;
  async function status() {
    let s;
    try { s = await getJSON("/ui/api/status"); } catch (e) { return; }
    if (!built) { buildControls(s.states || []); built = true; }
    $("st-version").textContent = s.version || "";
    $("banner-demo").hidden = !s.demo_agent;
    if (s.demo_advice) $("demo-advice").textContent = s.demo_advice;
    $("banner-open").hidden = !s.open;
    renderHost(s.host);
    document.dispatchEvent(new CustomEvent("dotty:status", { detail: s })); // ops.js reads s.operator
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
    const t0 = performance.now();
    setupControls();
    setupTabs();
    followFeed();
    followTurns();
    setTimeout(() => { status(); photos(); health(); }, 0);
    setInterval(status, 5000);
    setInterval(photos, 5000);
    setInterval(health, 5000);
    // History: every robot's recent events in one request when the bridge
    // offers it, else one request per robot.
    const [turns, events] = await Promise.all([
      getJSON("/ui/api/turns").catch(() => []),
      getJSON("/ui/api/events").catch(async () => {
        const ids = await loadDevices();
        const lists = await Promise.all(ids.map((id) => getJSON("/api/perception/recent?device_id=" + encodeURIComponent(id))
          .then((list) => list.map((r) => ({ ...r, device_id: id }))).catch(() => [])));
        return lists.flat();
      }),
      loadDevices(),
    ]);
    const t1 = performance.now();
    history([...turns.map(turnRow), ...events.map(eventRow)]);
    // For the browser test: how long the first full feed took from the
    // script's start, and how much of it was building the rows.
    window.feedBuild = performance.now() - t1;
    window.feedReady = performance.now() - t0;
    // Scenes and security records after the history: the browser's few
    // connections to the bridge go to the feed first.
    loadScenes("");
    loadSecurity();
    loadMemory();
    loadJournal();
    loadErrorsToday();
    setInterval(loadErrorsToday, 60000);
    setInterval(loadDevices, 5000);
    setInterval(loadMemory, 60000);
    setInterval(loadJournal, 180000);
  }
  start();
})();
