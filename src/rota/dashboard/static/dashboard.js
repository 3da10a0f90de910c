// rota dashboard: the only script of our own. Without it every page still reads and
// every form still works; with it, times show in the viewer's zone and live regions
// refresh when the server's change feed says something changed.
(function () {
  "use strict";

  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      if (el.dataset.local) { return; }
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when.getTime())) { return; }
      el.textContent = when.toLocaleString(undefined, {
        year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short"
      });
      el.dataset.local = "1";
    });
  }

  function refreshLive() {
    document.querySelectorAll("[data-live]").forEach(function (el) {
      // A selection being made is not thrown away under the viewer's cursor.
      if (el.querySelector("input[type=checkbox]:checked")) { return; }
      if (window.htmx) { window.htmx.trigger(el, "rota-change"); }
    });
  }

  // A busy cluster changes every feed interval: a page refreshes at most once a
  // second, and a tab in the background not at all until it is looked at again (a
  // hundred open tabs must not mean a hundred renders per change).
  var lastRefresh = 0;
  var timer = null;
  var missed = false;

  function refreshSoon() {
    if (document.hidden) { missed = true; return; }
    if (timer) { return; }
    var wait = Math.max(0, lastRefresh + 1000 - Date.now());
    timer = window.setTimeout(function () {
      timer = null;
      lastRefresh = Date.now();
      refreshLive();
    }, wait);
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && missed) {
      missed = false;
      refreshSoon();
    }
  });

  function listen() {
    var url = document.body.dataset.feed;
    if (!url || !window.EventSource) { return; }
    // The browser reconnects by itself, sending Last-Event-ID; the server answers
    // with a change at once if the page missed one.
    var source = new EventSource(url);
    source.addEventListener("change", refreshSoon);
    window.addEventListener("pagehide", function () { source.close(); });
  }

  function selectAll(event) {
    var box = event.target;
    if (!box.matches || !box.matches("[data-select-all]")) { return; }
    document.querySelectorAll("input[name=run_id][form=bulk]").forEach(function (el) {
      el.checked = box.checked;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    listen();
  });
  document.addEventListener("htmx:afterSettle", function (event) { localTimes(event.target); });
  document.addEventListener("change", selectAll);
})();
