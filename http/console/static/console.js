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
  // What this page has recomputed so far is kept (the hash of each event up
  // to the last checked), and a later check fetches only the events past it
  // (trail.json?after=N) and chains them on from its hash: as strong as a
  // check of the whole trail, since an event that hashes onto a checked one
  // extends that very chain. Under a stream of proofs each live update
  // fetched and hashed the whole trail again.
  // One check at a time: one asked for meanwhile runs after it, and then
  // says the result (the page drawn since may show a later head).
  var checked = null, checking = false, recheck = false;
  async function checkChain() {
    if (!document.getElementById("chain-check")) return;
    if (checking) { recheck = true; return; }
    checking = true;
    try {
      await checkOnce();
    } finally {
      checking = false;
      if (recheck) { recheck = false; checkChain(); }
    }
  }
  function unread(msg) {
    var e = new Error(msg);
    e.unread = true;
    return e;
  }
  async function checkOnce() {
    var el = document.getElementById("chain-check");
    if (!el.dataset.result) el.textContent = "Checking the chain in this browser…";
    if (!window.crypto || !crypto.subtle) {
      el.textContent = "This browser cannot recompute SHA-256 here (it needs HTTPS or localhost); the server's check is shown above.";
      return;
    }
    var said = function (cls, result, text) {
      if (recheck) return; // the check that follows says it
      var at = document.getElementById("chain-check");
      if (!at) return;
      at.className = cls;
      at.dataset.result = result;
      at.textContent = text;
      return at;
    };
    try {
      var base = checked && checked.trail === el.dataset.trail ? checked : null;
      var url = el.dataset.trail + (base ? "?after=" + base.hashes.length : "");
      var res;
      try {
        res = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      } catch (x) {
        throw unread("the trail could not be fetched");
      }
      if (!res.ok) throw unread("the trail could not be read (" + res.status + ")");
      var trail = await res.json();
      var enc = new TextEncoder();
      var prev, hashes;
      if (base) {
        if (trail.handoffId !== base.id) throw new Error("the trail is of another handoff");
        hashes = base.hashes.slice();
        prev = hashes[hashes.length - 1];
      } else {
        prev = hex(await crypto.subtle.digest("SHA-256", enc.encode("baton.handoff.v1:" + trail.handoffId)));
        if (prev !== trail.genesisHash) throw new Error("the genesis hash does not match the handoff id");
        hashes = [];
      }
      for (var i = 0; i < trail.events.length; i++) {
        var ev = trail.events[i], seq = hashes.length + 1;
        var where = "event " + ev.seq + " (" + ev.type + ")";
        if (ev.seq !== seq) throw new Error(where + ": seq " + ev.seq + " where " + seq + " was expected");
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
        hashes.push(h);
      }
      if (!hashes.length) throw new Error("the trail holds no events: a handoff's ledger begins with its contract");
      checked = { trail: el.dataset.trail, id: trail.handoffId, hashes: hashes };
      // The head shown is checked at its own event: the trail, read after
      // the page, may hold events that came since (the handoff moved on;
      // its chain is not broken for that).
      var n = hashes.length, shown = document.getElementById("head-hash"), seqEl = document.getElementById("head-seq");
      var at = seqEl ? parseInt(seqEl.textContent, 10) : n, want = shown ? shown.textContent.trim() : prev;
      if (!(at >= 1 && at <= n)) throw new Error("the trail ends at event " + n + ", before the head shown on this page (event " + at + ")");
      if (hashes[at - 1] !== want) {
        throw new Error("the recomputed hash of event " + at + ", " + hashes[at - 1] + ", is not the head shown on this page");
      }
      said("chain-check ok", "intact", "Chain intact: " + n + (n === 1 ? " event" : " events") + " recomputed in this browser, head " + want.slice(0, 12) + "… matches" +
        (n > at ? " (" + (n - at) + (n - at === 1 ? " event" : " events") + " came since this page was drawn)." : "."));
    } catch (e) {
      if (e.unread) {
        // Not read is not broken: a dropped connection or a server busy
        // for a moment said "Chain check failed", as a tampered trail does.
        said("chain-check", "unread", "The chain could not be checked in this browser just now: " + e.message +
          ". It is checked again at the next update, or reload the page; the server's check is shown above.");
        return;
      }
      var bad = said("chain-check bad", "broken", "Chain check failed: " + e.message);
      var st = document.getElementById("live-status");
      if (bad && !bad.hasAttribute("role") && st) st.textContent = bad.textContent; // after a live update: said, as a break must be
    }
  }

  // Live updates: the session's event stream (same origin, cookie); on an
  // event the page's live region is fetched again from the server.
  var types = ["ContractCreated", "ApprovalGranted", "ApprovalDecided", "ApprovalEscalated", "ApprovalExpired",
    "ExecutorStarted", "ExecutorTimedOut", "ProofReceived", "ProofReviewed", "ResultReceived", "LedgerClosed"];
  var timer = null;

  // A form being filled in: text typed, a verdict chosen, or focus on one
  // of its controls (a keyboard user on the submit button).
  function busy() {
    var a = document.activeElement;
    if (a && (a.tagName === "TEXTAREA" || a.tagName === "INPUT" || a.tagName === "SELECT" || (a.tagName === "BUTTON" && a.form))) return true;
    if (document.querySelector("form input[type=radio]:checked")) return true;
    return Array.prototype.some.call(document.querySelectorAll("textarea"), function (t) { return t.value !== ""; });
  }

  // The page to fetch again: a handoff's own page, even when this one is
  // the answer to a refused action (its address takes POSTs only).
  function pageURL() {
    var live = document.getElementById("live");
    if (live && live.dataset.handoff) return "/console/handoffs/" + encodeURIComponent(live.dataset.handoff);
    return location.pathname + location.search;
  }

  // announce says in one short line what a live update changed, for a
  // screen reader (the page's region is replaced whole, which a live
  // region would read as nothing, or as all of it).
  function announce() {
    var st = document.getElementById("live-status");
    if (!st) return;
    var state = document.getElementById("state");
    var msg;
    if (state) {
      msg = "Updated: the handoff is " + state.textContent.trim().replace(/_/g, " ") + ".";
    } else {
      var counts = Array.prototype.map.call(document.querySelectorAll("#live h2"), function (h) { return h.textContent.trim().replace(/\s+/g, " "); });
      msg = "Updated: " + counts.join(", ") + ".";
    }
    if (st.textContent !== msg) st.textContent = msg;
  }

  // One refresh at a time: events that come while one is under way ask for
  // one more after it, not a fetch each (on a slow link they piled up and
  // held every connection the browser had to this server).
  // A page fetches itself again at most once every `every` ms: an inbox's
  // fetch reads every queue whole, a handoff's its whole ledger (and the
  // chain check follows), and under a fleet of executors posting progress
  // (hundreds of events a second) each open page fetched itself after
  // every event's 200 ms. A hidden page does not fetch at all; shown again,
  // it fetches once if an event came meanwhile. No update is lost: an
  // event in the quiet time asks for a fetch at its end.
  var inflight = false, pending = false, hiddenPending = false, lastStart = 0, every = 2000;
  function schedule() {
    if (document.hidden) { hiddenPending = true; return; }
    if (inflight) { pending = true; return; }
    if (timer) return;
    timer = setTimeout(refresh, Math.max(200, lastStart + every - Date.now()));
  }
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && hiddenPending) { hiddenPending = false; schedule(); }
  });

  // where is the focused element, found again in the page drawn anew: by
  // its id, a link by its address, else by its place among its kind.
  function where(el) {
    if (!el || el === document.body) return null;
    if (el.id) return { id: el.id };
    if (el.tagName === "A" && el.getAttribute("href")) return { href: el.getAttribute("href") };
    var all = Array.prototype.slice.call(document.querySelectorAll(el.tagName));
    return { tag: el.tagName, n: all.indexOf(el) };
  }
  function find(w) {
    if (!w) return null;
    if (w.id) return document.getElementById(w.id);
    if (w.href) return Array.prototype.find.call(document.querySelectorAll("a[href]"), function (a) { return a.getAttribute("href") === w.href; });
    return document.querySelectorAll(w.tag)[w.n] || null;
  }
  // The timeline's events and the folded proof opened by the reader stay
  // open.
  function openEvents() {
    return Array.prototype.map.call(document.querySelectorAll("li.event[data-seq] > details[open]"), function (d) { return d.parentNode.dataset.seq; });
  }
  function openFolds() {
    return Array.prototype.map.call(document.querySelectorAll("details.fold[open][id]"), function (d) { return d.id; });
  }

  // A refresh that failed (the network, a server busy for a moment) is
  // tried again, twice, before the page says it no longer updates: the
  // event that asked for it does not come again, and the page showed the
  // handoff as it no longer was while it said it was live.
  var failures = 0;
  async function refresh() {
    timer = null;
    if (document.hidden) { hiddenPending = true; return; }
    inflight = true;
    lastStart = Date.now();
    try {
      var res = await fetch(pageURL(), { credentials: "same-origin", cache: "no-store" });
      var doc = new DOMParser().parseFromString(await res.text(), "text/html");
      if (res.status === 401 || res.status === 403) {
        stopped(endedWhy(doc));
        return;
      }
      if (!res.ok) throw new Error("the page could not be read (" + res.status + ")");
      // Another sign-in in this browser (another tab) changed the cookie:
      // the page fetched is that session's, whose forms record as its
      // person, under this page's header naming the one signed in before.
      var mine = document.getElementById("live"), theirs = doc.getElementById("live");
      if (mine && theirs && mine.dataset.session !== theirs.dataset.session) {
        stopped(signedInAgain(doc));
        return;
      }
      failures = 0;
      var focused = where(document.activeElement), opened = openEvents(), folds = openFolds();
      if (busy()) {
        var live = doc.getElementById("live"), cur = document.getElementById("live");
        if (live && cur) cur.replaceWith(document.importNode(live, true));
      } else {
        var main = doc.getElementById("main"), curMain = document.getElementById("main");
        // The answer to this person's form (what was recorded, or why
        // not) came with the address this page was drawn at, not with the
        // page fetched again: it stays, or it vanished at the next event
        // (an executor acting at once), unread.
        var answers = ["notice", "problem", "unsent"].map(function (id) { return document.getElementById(id); }).filter(Boolean);
        if (main && curMain) {
          curMain.replaceWith(document.importNode(main, true));
          var at = document.getElementById("live-status");
          answers.forEach(function (el) { if (at && !document.getElementById(el.id)) at.before(el); });
        }
      }
      opened.forEach(function (seq) {
        var d = document.querySelector('li.event[data-seq="' + seq + '"] > details');
        if (d) d.open = true;
      });
      folds.forEach(function (id) {
        var d = document.getElementById(id);
        if (d) d.open = true;
      });
      var again = find(focused);
      if (again && again !== document.activeElement) again.focus();
      // The status line says what the update changed; the chain check
      // drawn anew is no live region of its own, or each update said
      // "Checking the chain…" and its answer besides.
      var cc = document.getElementById("chain-check");
      if (cc) cc.removeAttribute("role");
      announce();
      document.body.dataset.updated = String(Date.now());
      checkChain();
    } catch (e) {
      if (++failures <= 2) setTimeout(schedule, 1000 * failures);
      else stopped(/^the page/.test(e.message) ? e.message : "the page could not be fetched");
    } finally {
      inflight = false;
      if (pending) { pending = false; schedule(); }
    }
  }

  // endedWhy is why the session ended, as the sign-in page the server
  // answered with tells it (revoked by an admin, expired, signed out).
  function endedWhy(doc) {
    var el = doc && doc.getElementById("session-ended");
    return el && el.dataset.why ? el.dataset.why : "your session has ended";
  }

  // signedInAgain says that the cookie is now another session's, naming
  // its person as the page fetched with it does (as text, never markup).
  function signedInAgain(doc) {
    var el = doc.querySelector(".who span");
    return "this browser has signed in again since this page was drawn" + (el ? ", as " + el.textContent.trim() : "");
  }

  // whyClosed asks the server why a stream it ended will not come back:
  // a session that ended says how; "" when the page still reads.
  async function whyClosed() {
    try {
      var res = await fetch(pageURL(), { credentials: "same-origin", cache: "no-store" });
      var doc = new DOMParser().parseFromString(await res.text(), "text/html");
      if (res.status === 401) return endedWhy(doc);
      var mine = document.getElementById("live"), theirs = doc.getElementById("live");
      if (res.ok && mine && theirs && mine.dataset.session !== theirs.dataset.session) return signedInAgain(doc);
      return "";
    } catch (e) { return ""; }
  }

  // stopped says on the page that it no longer updates by itself, and why
  // (the browser does not retry a stream refused with 401 or 429).
  function stopped(why) {
    document.body.dataset.live = "closed";
    var note = document.getElementById("live-off");
    if (!note) {
      note = document.createElement("p");
      note.id = "live-off";
      note.className = "live-off";
      note.setAttribute("role", "status");
      var main = document.getElementById("main");
      (main || document.body).prepend(note);
    }
    note.textContent = "This page no longer updates by itself: " + why + ". ";
    var a = document.createElement("a");
    a.href = pageURL();
    a.textContent = "Reload it";
    note.appendChild(a);
  }

  var es = null;

  // deliver acts on what the page that listens saw: an event (refresh when
  // it is this page's handoff, or any on the inbox), the stream's state,
  // or a catch-up after the listening page changed.
  function deliver(m) {
    var live = document.getElementById("live");
    if (m.kind === "event") {
      if (!live || (live.dataset.handoff && m.handoffId && m.handoffId !== live.dataset.handoff)) return;
      schedule();
    } else if (m.kind === "catchup") {
      if (live) schedule();
    } else if (m.kind === "seen") {
      // The listening page saw an event after this page was drawn, before
      // this page joined: fetch it again.
      if (live && m.id && live.dataset.after && later(m.id, live.dataset.after)) schedule();
    } else if (m.kind === "state") {
      if (m.live === "closed") { stopped(m.why); return; }
      document.body.dataset.live = m.live;
      var note = document.getElementById("live-off");
      if (m.live === "open" && note) note.remove();
    }
  }

  // later says whether event id (position) a comes after b: "commit/prepare".
  function later(a, b) {
    var x = String(a).split("/").map(Number), y = String(b).split("/").map(Number);
    return x[0] > y[0] || (x[0] === y[0] && x[1] > y[1]);
  }

  // since is url following from where this page was drawn, so that an
  // event that came while the page loaded still comes (the stream starts
  // from now otherwise, and the page showed the handoff as it no longer
  // was while it said it was live).
  function since(url) {
    var live = document.getElementById("live");
    if (!live || !live.dataset.after) return url;
    return url + (url.indexOf("?") < 0 ? "?" : "&") + "after=" + encodeURIComponent(live.dataset.after);
  }

  // stream opens an event stream and hands what it sees to tell.
  function stream(url, tell, onOpen) {
    es = new EventSource(url);
    types.forEach(function (t) {
      es.addEventListener(t, function (e) {
        var id = "";
        try { id = JSON.parse(e.data).handoffId || ""; } catch (x) { /* refresh all the same */ }
        tell({ kind: "event", handoffId: id, id: e.lastEventId });
      });
    });
    es.onopen = function () {
      tell({ kind: "state", live: "open" });
      if (onOpen) { onOpen(); onOpen = null; }
    };
    es.onerror = function () {
      if (es && es.readyState === EventSource.CLOSED) {
        es = null;
        tell({ kind: "state", live: "closed", why: "the server ended its updates (the session may have ended, or too many pages are open)" });
        whyClosed().then(function (why) { if (why) tell({ kind: "state", live: "closed", why: why }); });
      } else {
        tell({ kind: "state", live: "reconnecting" }); // the browser tries again by itself
      }
    };
  }

  // One stream for all of a person's open pages: a browser opens at most
  // six connections to a server, and a stream for each page would hold
  // them all. The page holding the session's lock listens to the tenant's
  // events and tells the others over a channel; when it closes, another
  // takes the lock and its stream, and every page catches up.
  function share(session) {
    var name = "baton-console-live-" + session, last = null, seen = "";
    var channel = new BroadcastChannel(name);
    function tell(m) {
      if (m.kind === "state") last = m;
      if (m.kind === "event" && m.id) seen = m.id;
      deliver(m);
      channel.postMessage(m);
    }
    function lead(handover) {
      return new Promise(function () { // held while this page is open
        // Taking over, every page fetches itself again (catchup); the
        // first page follows from where it was drawn.
        if (handover) stream("/console/events", tell, function () { tell({ kind: "catchup" }); });
        else stream(since("/console/events"), tell, null);
      });
    }
    channel.onmessage = function (e) {
      var m = e.data || {};
      if (m.kind === "hello") {
        if (last) channel.postMessage(last);
        if (seen) channel.postMessage({ kind: "seen", id: seen });
        return;
      }
      deliver(m);
    };
    navigator.locks.request(name, { ifAvailable: true }, function (lock) {
      if (lock) return lead(false);
      channel.postMessage({ kind: "hello" });
      navigator.locks.request(name, function () { return lead(true); });
    });
  }

  function listen(first) {
    var live = document.getElementById("live");
    if (!live || !window.EventSource || es) return;
    var url = "/console/events";
    if (live.dataset.handoff) url += "?handoffId=" + encodeURIComponent(live.dataset.handoff);
    stream(first ? since(url) : url, deliver); // shown again, it catches up by a fetch
  }

  // Without a shared stream, a hidden tab gives its own back. Shown again,
  // it listens and catches up.
  function onVisibility() {
    if (document.hidden) {
      if (es) { es.close(); es = null; document.body.dataset.live = "paused"; }
    } else if (!es && document.body.dataset.live !== "closed") {
      listen();
      schedule();
    }
  }

  function start() {
    var live = document.getElementById("live");
    if (!live || !window.EventSource) return;
    if (live.dataset.session && window.BroadcastChannel && navigator.locks) {
      share(live.dataset.session);
      return;
    }
    listen(true);
    document.addEventListener("visibilitychange", onVisibility);
  }
  // Keep neither a link's token nor an action's one-time answer in the
  // address bar and the history: the token is in the form already, and a
  // live refresh should show the page as it now is.
  function tidyURL() {
    if (/\/actions$/.test(location.pathname)) {
      // A form refused before the ledger saw it (403): its address takes
      // POSTs only, so a reload or a copied link shows the handoff instead.
      // This page has no live region to name the handoff (pageURL kept the
      // address, and the reload its 403 asks for answered 405).
      history.replaceState(null, "", location.pathname.replace(/\/actions$/, ""));
      return;
    }
    if (location.pathname === "/console/signout") {
      // Sign out's answer, or its refusal (a page of a session this browser
      // has since replaced): a reload posted the form again, refused again.
      history.replaceState(null, "", "/console/");
      return;
    }
    var q = new URLSearchParams(location.search);
    if (q.has("token") || q.has("recorded")) {
      ["token", "recorded", "seq", "hash"].forEach(function (k) { q.delete(k); });
      var rest = q.toString();
      history.replaceState(null, "", location.pathname + (rest ? "?" + rest : ""));
    }
  }

  // A decision is sent once: a second click (another button on a slow
  // link) is not sent, and the buttons say so until the answer comes. So
  // is a sign-in: sent again, the link the first had used was refused, and
  // that refusal was the page shown to a person the first had signed in.
  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f || !f.matches('form[action$="/actions"], form[action="/console/signin"]')) return;
    if (f.dataset.sent) { e.preventDefault(); return; }
    f.dataset.sent = "1";
    f.setAttribute("aria-busy", "true");
    setTimeout(function () { // after the form's data was taken, the button clicked among it
      Array.prototype.forEach.call(f.querySelectorAll("button"), function (b) { b.disabled = true; });
    }, 0);
  });

  document.addEventListener("DOMContentLoaded", function () {
    tidyURL();
    checkChain();
    start();
  });
})();
