"use strict";
// The operator controls: Restart bridge and Reboot all (each pressed
// twice), the xiaozhi restart command's output, and a card per daemon
// unit. State comes from app.js's status poll (the "dotty:status" event,
// its "operator" object); actions go through app.js's act; its $ and el build the cards.
(() => {
  const { $, el } = window.dotty; // app.js's, loaded first
  const CONFIRM_MS = 6000; // a first press waits this long for the second
  const BACK_MS = 90000; // how long the page waits for the bridge to come back
  const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "short", timeStyle: "medium" });
  let op = null; // the latest status's operator object
  let waiting = null; // {since, timer} while waiting for the restarted bridge

  // confirmed arms a button on its first press; true on the second.
  function confirmed(b, what) {
    if (b.dataset.armed) {
      clearTimeout(Number(b.dataset.armed));
      delete b.dataset.armed;
      b.classList.remove("armed");
      b.textContent = b.dataset.label;
      return true;
    }
    b.dataset.armed = String(setTimeout(() => {
      delete b.dataset.armed;
      b.classList.remove("armed");
      b.textContent = b.dataset.label;
      window.dotty.show("", "", "ops-result");
    }, CONFIRM_MS));
    b.classList.add("armed");
    b.textContent = "Press again to " + what;
    window.dotty.show(`Press “Press again to ${what}” to go ahead.`, "warn", "ops-result");
    return false;
  }

  // waitForBridge watches the status poll for a new process (started
  // changes), then says the bridge is back.
  function waitForBridge(since) {
    if (waiting) return;
    waiting = { since, timer: setTimeout(() => {
      waiting = null;
      window.dotty.show("The bridge did not come back within 90 s. Check “systemctl status zeroclaw-bridge” or the container’s logs.", "bad", "ops-result");
      render();
    }, BACK_MS) };
    render();
  }

  function stepRow(s) {
    const li = el("li");
    li.dataset.step = s.name;
    li.dataset.ok = String(!!s.ok);
    li.append(el("span", "verdict", `${s.name}: ${s.ok ? "ok" : s.skipped ? "skipped" : "failed"}`), el("span", "", "— " + (s.detail || "")));
    return li;
  }

  async function restart() {
    const b = $("ops-restart");
    if (!confirmed(b, "restart")) return;
    const since = op && op.started;
    $("ops-steps").hidden = $("ops-output").hidden = true;
    if (await window.dotty.act("/ui/api/restart", {}, [b, $("ops-reboot")], "ops-result")) waitForBridge(since);
  }

  async function reboot() {
    const b = $("ops-reboot");
    if (!confirmed(b, "reboot all")) return;
    const since = op && op.started;
    const j = await window.dotty.act("/ui/api/reboot-all", {}, [b, $("ops-restart")], "ops-result");
    if (!j) return;
    const steps = j.steps || [];
    $("ops-steps").replaceChildren(...steps.map(stepRow));
    $("ops-steps").hidden = !steps.length;
    const xz = steps.find((s) => s.name === "xiaozhi") || {};
    $("ops-output").textContent = (xz.output_cut ? "…\n" : "") + (xz.output || "");
    $("ops-output").hidden = !xz.output;
    const bridge = steps.find((s) => s.name === "bridge") || {};
    if (bridge.ok) {
      window.dotty.show("Rebooting: the bridge restarts now; the page reconnects when it is back.", "ok", "ops-result");
      waitForBridge(since);
    } else {
      window.dotty.show("Reboot all finished without restarting the bridge: " + (bridge.detail || ""), "warn", "ops-result");
    }
  }

  const unitState = (u) => {
    if (!u.active) return "state unknown";
    if (u.load === "not-found") return "not installed on this host";
    const since = u.since ? " · since " + timeFormat.format(new Date(u.since)) : "";
    return `${u.active}${u.sub ? ` (${u.sub})` : ""}${since}`;
  };
  function unitRow(u) {
    const li = el("li");
    li.dataset.unit = u.name;
    li.dataset.active = u.active || "unknown";
    const dot = el("span", "dot " + (u.active === "active" ? "ok" : u.active === "failed" ? "bad" : u.active ? "" : "unknown"));
    li.append(dot, el("span", "unit", u.name), el("span", "state", unitState(u)));
    return li;
  }

  function render() {
    if (!op) return;
    const busy = !!op.busy || !!waiting;
    const r = $("ops-restart"), rb = $("ops-reboot");
    for (const b of [r, rb]) if (!b.dataset.armed) b.disabled = busy;
    if (!op.restart) {
      r.disabled = true;
      r.title = "This bridge cannot restart itself here.";
    }
    const x = op.xiaozhi_restart || {};
    $("ops-xiaozhi").textContent = x.configured
      ? `Reboot all announces the reboot on the robot, restarts xiaozhi with ${x.program} (at most ${x.timeout_s} s), then restarts the bridge.`
      : "Reboot all announces the reboot on the robot and restarts the bridge; restarting xiaozhi is not configured (BRIDGE_XIAOZHI_RESTART_CMD).";
    $("ops-xiaozhi").dataset.configured = String(!!x.configured);
    $("ops-units").replaceChildren(...(op.units || []).map(unitRow));
    $("ops-units-note").textContent = op.units_error || "";
    $("ops-units-note").hidden = !op.units_error;
  }

  document.addEventListener("dotty:status", (e) => {
    op = e.detail.operator || null;
    if (waiting && op && op.started !== waiting.since) {
      clearTimeout(waiting.timer);
      waiting = null;
      window.dotty.show("The bridge is back.", "ok", "ops-result");
    }
    render();
  });
  $("ops-restart").addEventListener("click", restart);
  $("ops-reboot").addEventListener("click", reboot);
})();
