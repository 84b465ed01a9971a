// Live refresh, the dashboard's only script. Pages work without it.
//
// Every element with a data-live-src attribute is re-fetched every few seconds; when the
// server-rendered fragment changed (ETag), it replaces the element's content. The fragment is
// HTML the server escaped; no data travels in scripts. Rows that were not there before are
// marked "fresh" for a moment. Open <details> stay open across refreshes.
(function () {
  "use strict";
  var PERIOD_MS = 3000;
  var status = document.getElementById("live-status");

  function show(text, ok) {
    if (!status) return;
    status.hidden = false;
    status.textContent = text;
    status.className = "live-status " + (ok ? "ok" : "down");
  }

  function rowKeys(root) {
    var keys = new Set();
    root.querySelectorAll("[data-fix-id], [data-report-id]").forEach(function (row) {
      keys.add(row.getAttribute("data-fix-id") || "r" + row.getAttribute("data-report-id"));
    });
    return keys;
  }

  function openDetails(root) {
    var open = new Set();
    root.querySelectorAll("details").forEach(function (d, i) {
      if (d.open) open.add(i);
    });
    return open;
  }

  function watch(root) {
    var etag = null;
    var busy = false;
    var seen = rowKeys(root);

    function swap(html) {
      var open = openDetails(root);
      root.innerHTML = html;
      root.querySelectorAll("details").forEach(function (d, i) {
        if (open.has(i)) d.open = true;
      });
      root.querySelectorAll("[data-fix-id], [data-report-id]").forEach(function (row) {
        var key = row.getAttribute("data-fix-id") || "r" + row.getAttribute("data-report-id");
        if (!seen.has(key)) row.classList.add("fresh");
        seen.add(key);
      });
    }

    function tick() {
      if (busy || document.hidden) return;
      busy = true;
      var headers = etag ? { "If-None-Match": etag } : {};
      fetch(root.getAttribute("data-live-src"), { headers: headers, cache: "no-store" })
        .then(function (response) {
          if (response.status === 304) return null;
          if (!response.ok) throw new Error("HTTP " + response.status);
          etag = response.headers.get("ETag");
          return response.text();
        })
        .then(function (html) {
          if (html !== null) swap(html);
          show("live", true);
        })
        .catch(function () {
          show("offline, retrying", false);
        })
        .finally(function () {
          busy = false;
        });
    }

    setInterval(tick, PERIOD_MS);
    document.addEventListener("visibilitychange", tick);
    show("live", true);
  }

  document.querySelectorAll("[data-live-src]").forEach(watch);
})();
