// Practice and test-run pages: while a run is pending, asks the page's `/live` address for a
// fresh list of runs and swaps in the list alone, so the form above keeps what is being typed
// (and its focus). Without JavaScript the list has a "refresh" link. No dependencies, no other
// origin: the Content-Security-Policy allows this file and requests to the page's own origin.
(function () {
  "use strict";

  var WORDS = {
    completed: "The run has completed.",
    error: "The run ended in error.",
  };

  function delay(started) {
    var elapsed = Date.now() - started;
    var base = elapsed < 30000 ? 1000 : elapsed < 300000 ? 3000 : 10000;
    return document.hidden ? Math.max(base, 5000) : base;
  }

  function fragment(html) {
    var holder = document.createElement("div");
    holder.innerHTML = html.trim();
    return holder.firstElementChild;
  }

  function setUp(list) {
    var url = list.dataset.liveUrl;
    var announcer = document.getElementById("runs-live-status");
    var started = Date.now();

    function swap(data) {
      var current = document.getElementById("run-list");
      if (!current || current.dataset.version === data.version) return;
      var fresh = fragment(data.html);
      if (!fresh) return;
      var hadFocus = current.contains(document.activeElement);
      current.replaceWith(fresh);
      if (hadFocus) {
        var heading = fresh.querySelector("h2");
        if (heading) {
          heading.setAttribute("tabindex", "-1");
          heading.focus();
        }
      }
      if (announcer && !data.pending) {
        var newest = fresh.querySelector("[data-run-id]");
        announcer.textContent = (newest && WORDS[newest.dataset.status]) || "The runs have ended.";
      }
    }

    function poll() {
      fetch(url, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
        cache: "no-store",
      })
        .then(function (response) {
          // Signed out, or the challenge is gone: the "refresh" link says the rest.
          if (response.status >= 400 && response.status < 500) return null;
          if (!response.ok) throw new Error("status " + response.status);
          return response.json();
        })
        .then(function (data) {
          if (!data) return;
          swap(data);
          if (data.pending) window.setTimeout(poll, delay(started));
        })
        .catch(function () {
          // A network hiccup: try again later.
          window.setTimeout(poll, delay(started));
        });
    }

    window.setTimeout(poll, delay(started));
  }

  document.addEventListener("DOMContentLoaded", function () {
    var list = document.getElementById("run-list");
    if (list && list.dataset.liveUrl && list.dataset.pending === "true") setUp(list);
  });
})();
