// Gauntlet web UI: the prompt character counter and live attempt updates. No dependencies.
(function () {
  "use strict";

  var numbers = new Intl.NumberFormat("en-US");

  // Counts characters as the server does (code points; line breaks as one character).
  function setUpCounter(textarea) {
    var counter = document.querySelector('[data-counter-for="' + textarea.id + '"]');
    var limit = parseInt(textarea.dataset.limit, 10);
    if (!counter || !limit) return;
    function update() {
      var length = Array.from(textarea.value).length;
      var over = length - limit;
      var text = numbers.format(length) + " / " + numbers.format(limit) + " characters";
      if (over > 0) text += " — " + numbers.format(over) + " over the limit";
      counter.textContent = text;
      counter.classList.toggle("over", over > 0);
    }
    textarea.addEventListener("input", update);
    update();
  }

  function fragment(html) {
    var holder = document.createElement("div");
    holder.innerHTML = html.trim();
    return holder.firstElementChild;
  }

  // Polls the JSON endpoint while some attempts are queued or running: quickly at first, then
  // more slowly, and slowly while the tab is hidden. Stops when every attempt has finished.
  function poller(url, pendingIds, onData) {
    var started = Date.now();
    function delay() {
      var elapsed = Date.now() - started;
      var base = elapsed < 30000 ? 1000 : elapsed < 300000 ? 3000 : 10000;
      return document.hidden ? Math.max(base, 5000) : base;
    }
    function schedule() {
      if (pendingIds().length) window.setTimeout(poll, delay());
    }
    function poll() {
      var ids = pendingIds();
      if (!ids.length) return;
      fetch(url + "?ids=" + encodeURIComponent(ids.join(",")), {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
        cache: "no-store",
      })
        .then(function (response) {
          if (!response.ok) throw new Error("status " + response.status);
          return response.json();
        })
        .then(onData)
        .catch(function () {
          /* A network hiccup: the next poll tries again. */
        })
        .finally(schedule);
    }
    schedule();
  }

  function setUpAttemptList(list) {
    var announcer = document.getElementById("live-status");
    function pendingIds() {
      return Array.prototype.map.call(
        list.querySelectorAll('[data-attempt-id][data-finished="false"]'),
        function (element) {
          return element.dataset.attemptId;
        }
      );
    }
    poller(list.dataset.liveUrl, pendingIds, function (data) {
      data.attempts.forEach(function (attempt) {
        var current = document.getElementById("attempt-" + attempt.id);
        if (!current || current.dataset.status === attempt.status) return;
        var hadFocus = current.contains(document.activeElement);
        var fresh = fragment(attempt.html);
        current.replaceWith(fresh);
        if (hadFocus) {
          var link = fresh.querySelector(".attempt-link");
          if (link) link.focus();
        }
        if (announcer) {
          var words = { running: "is running", completed: "has completed", error: "ended in error" };
          announcer.textContent = "Your attempt " + (words[attempt.status] || attempt.status) + ".";
        }
      });
      if (data.leaderboard_html) {
        var panel = document.getElementById("leaderboard-panel");
        if (panel) panel.replaceWith(fragment(data.leaderboard_html));
      }
    });
  }

  function setUpAttemptDetail(detail) {
    var id = detail.dataset.attemptId;
    var finished = false;
    poller(
      detail.dataset.liveUrl,
      function () {
        return finished ? [] : [id];
      },
      function (data) {
        var attempt = data.attempts[0];
        if (attempt && attempt.finished) {
          finished = true;
          window.location.reload();
        }
      }
    );
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("textarea[data-limit]").forEach(setUpCounter);
    var list = document.getElementById("attempt-list");
    if (list && list.dataset.liveUrl) setUpAttemptList(list);
    var detail = document.getElementById("attempt-detail");
    if (detail && detail.dataset.finished === "false") setUpAttemptDetail(detail);
  });
})();
