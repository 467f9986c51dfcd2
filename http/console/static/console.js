// Baton console: the on-page chain check and live updates. No inline
// script anywhere (the Content-Security-Policy forbids it); this file only
// reads the server's pages and trail, and never inserts executor text as
// markup: it swaps in regions of pages the server rendered and escaped.
(function () {
  "use strict";

  function hex(buf) {
    return Array.from(new Uint8Array(buf), function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  function fromBase64(s) {
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  // hash = hex(SHA-256(prevHash || canonical)); the first prevHash is the
  // genesis hash, which is itself SHA-256("baton.handoff.v1:" + id).
  async function checkChain() {
    var el = document.getElementById("chain-check");
    if (!el) return;
    if (!window.crypto || !crypto.subtle) {
      el.textContent = "This browser cannot recompute SHA-256 here (it needs HTTPS or localhost); the server's check is shown above.";
      return;
    }
    try {
      var res = await fetch(el.dataset.trail, { credentials: "same-origin", cache: "no-store" });
      if (!res.ok) throw new Error("the trail could not be read (" + res.status + ")");
      var trail = await res.json();
      var enc = new TextEncoder();
      var genesis = hex(await crypto.subtle.digest("SHA-256", enc.encode("baton.handoff.v1:" + trail.handoffId)));
      if (genesis !== trail.genesisHash) throw new Error("the genesis hash does not match the handoff id");
      var prev = genesis;
      for (var i = 0; i < trail.events.length; i++) {
        var ev = trail.events[i];
        var where = "event " + ev.seq + " (" + ev.type + ")";
        if (ev.seq !== i + 1) throw new Error(where + ": seq " + ev.seq + " where " + (i + 1) + " was expected");
        if (ev.prevHash !== prev) throw new Error(where + ": prevHash does not match the previous event's hash");
        var canon = fromBase64(ev.canonical);
        var c = JSON.parse(new TextDecoder().decode(canon));
        if (c.handoffId !== trail.handoffId || c.seq !== ev.seq || c.type !== ev.type || c.actor !== ev.actor) {
          throw new Error(where + ": the hashed bytes do not describe this event");
        }
        var buf = new Uint8Array(enc.encode(prev).length + canon.length);
        buf.set(enc.encode(prev), 0);
        buf.set(canon, enc.encode(prev).length);
        var h = hex(await crypto.subtle.digest("SHA-256", buf));
        if (h !== ev.hash) throw new Error(where + ": hash does not match the event's content");
        prev = h;
      }
      var shown = document.getElementById("head-hash");
      if (shown && trail.events.length && shown.textContent.trim() !== prev) {
        throw new Error("the recomputed head " + prev + " is not the head shown on this page");
      }
      el.className = "chain-check ok";
      el.dataset.result = "intact";
      el.textContent = "Chain intact: " + trail.events.length + " events recomputed in this browser, head " + prev.slice(0, 12) + "… matches.";
    } catch (e) {
      el.className = "chain-check bad";
      el.dataset.result = "broken";
      el.textContent = "Chain check failed: " + e.message;
    }
  }

  // Live updates: the session's event stream (same origin, cookie); on an
  // event the page's live region is fetched again from the server.
  var types = ["ContractCreated", "ApprovalGranted", "ApprovalDecided", "ApprovalEscalated", "ApprovalExpired",
    "ExecutorStarted", "ExecutorTimedOut", "ProofReceived", "ProofReviewed", "ResultReceived", "LedgerClosed"];
  var timer = null;

  function busy() {
    var a = document.activeElement;
    if (a && (a.tagName === "TEXTAREA" || a.tagName === "INPUT" || a.tagName === "SELECT")) return true;
    return Array.prototype.some.call(document.querySelectorAll("textarea"), function (t) { return t.value !== ""; });
  }

  async function refresh() {
    timer = null;
    try {
      var res = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
      if (!res.ok) return;
      var doc = new DOMParser().parseFromString(await res.text(), "text/html");
      if (busy()) {
        var live = doc.getElementById("live"), cur = document.getElementById("live");
        if (live && cur) cur.replaceWith(document.importNode(live, true));
      } else {
        var main = doc.getElementById("main"), curMain = document.getElementById("main");
        if (main && curMain) curMain.replaceWith(document.importNode(main, true));
      }
      document.body.dataset.updated = String(Date.now());
      checkChain();
    } catch (e) { /* the next event tries again */ }
  }

  function listen() {
    var live = document.getElementById("live");
    if (!live || !window.EventSource) return;
    var url = "/console/events";
    if (live.dataset.handoff) url += "?handoffId=" + encodeURIComponent(live.dataset.handoff);
    var es = new EventSource(url);
    types.forEach(function (t) {
      es.addEventListener(t, function () { if (!timer) timer = setTimeout(refresh, 200); });
    });
    es.onopen = function () { document.body.dataset.live = "open"; };
  }

  // Keep neither a link's token nor an action's one-time answer in the
  // address bar and the history: the token is in the form already, and a
  // live refresh should show the page as it now is.
  function tidyURL() {
    var q = new URLSearchParams(location.search);
    if (q.has("token") || q.has("recorded")) {
      ["token", "recorded", "seq", "hash"].forEach(function (k) { q.delete(k); });
      var rest = q.toString();
      history.replaceState(null, "", location.pathname + (rest ? "?" + rest : ""));
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    tidyURL();
    checkChain();
    listen();
  });
})();
