// Gauntlet web UI: character counters, live attempt updates (status, benchmark progress, the
// leaderboard and its curve chart), a benchmark task's trials unfolded in place, tables
// labelled for their stacked phone layout and scrolling regions reachable by keyboard. No
// dependencies.
(function () {
  "use strict";

  var numbers = new Intl.NumberFormat("en-US");

  // A same-origin JSON GET that never comes from a cache; a non-2xx answer rejects.
  function getJson(url) {
    return fetch(url, {
      headers: { Accept: "application/json" },
      credentials: "same-origin",
      cache: "no-store",
    }).then(function (response) {
      if (!response.ok) throw new Error("status " + response.status);
      return response.json();
    });
  }

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

  // Tables stack into labelled rows on a phone (app.css): each cell gets its column's header
  // as `data-label`, which the stacked layout shows before the value. Header cells of a row
  // (th scope=row) are labelled too; cells spanning columns or without a header are not.
  function labelCells(table) {
    var headRow = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
    if (!headRow) return;
    var labels = [];
    Array.prototype.forEach.call(headRow.cells, function (cell) {
      var text = cell.textContent.replace(/\s+/g, " ").trim();
      for (var span = 0; span < (cell.colSpan || 1); span++) labels.push(text);
    });
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (row) {
        var column = 0;
        Array.prototype.forEach.call(row.cells, function (cell) {
          var label = labels[column];
          if (cell.colSpan === 1 && label && !cell.hasAttribute("data-label")) {
            cell.setAttribute("data-label", label);
          }
          column += cell.colSpan || 1;
        });
      });
    });
  }

  // A region that scrolls (a wide table above the phone breakpoint, a long text block) must
  // scroll from the keyboard too: without focusable content, it becomes focusable itself.
  var SCROLLERS = ".table-wrap, pre, .text-block";
  var FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";
  function keyboardScrollable(element) {
    var scrolls =
      element.scrollWidth > element.clientWidth + 1 ||
      element.scrollHeight > element.clientHeight + 1;
    var style = window.getComputedStyle(element);
    var scrollable = /auto|scroll/.test(style.overflowX + style.overflowY);
    if (scrolls && scrollable && !element.querySelector(FOCUSABLE)) {
      element.setAttribute("tabindex", "0");
    } else if (element.dataset.scrollFocus === undefined) {
      return;
    } else {
      element.removeAttribute("tabindex");
    }
    element.dataset.scrollFocus = "";
  }

  var resizes = new ResizeObserver(function (entries) {
    entries.forEach(function (entry) {
      keyboardScrollable(entry.target);
    });
  });

  // Applies both to the page and to whatever the live updates swap in later.
  function setUpLayout(root) {
    var tables = root.matches && root.matches("table") ? [root] : root.querySelectorAll("table");
    Array.prototype.forEach.call(tables, labelCells);
    if (root.matches && root.matches(SCROLLERS)) resizes.observe(root);
    root.querySelectorAll(SCROLLERS).forEach(function (element) {
      resizes.observe(element);
    });
  }

  function watchLayout() {
    setUpLayout(document);
    new MutationObserver(function (mutations) {
      mutations.forEach(function (mutation) {
        mutation.addedNodes.forEach(function (node) {
          if (node.nodeType !== Node.ELEMENT_NODE) return;
          var table = node.closest && node.closest("table");
          setUpLayout(table || node);
        });
      });
    }).observe(document.body, { childList: true, subtree: true });
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
      getJson(url + "?ids=" + encodeURIComponent(ids.join(",")))
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
        var version = attempt.version || attempt.status;
        if (!current || (current.dataset.version || current.dataset.status) === version) return;
        var statusChanged = current.dataset.status !== attempt.status;
        var hadFocus = current.contains(document.activeElement);
        var fresh = fragment(attempt.html);
        current.replaceWith(fresh);
        if (hadFocus) {
          var link = fresh.querySelector(".attempt-link");
          if (link) link.focus();
        }
        // Progress within a run is shown, not announced: only the status changes are.
        if (announcer && statusChanged) {
          var words = { running: "is running", completed: "has completed", error: "ended in error" };
          announcer.textContent = "Your attempt " + (words[attempt.status] || attempt.status) + ".";
        }
      });
      if (data.leaderboard_html) {
        var panel = document.getElementById("leaderboard-panel");
        if (panel) panel.replaceWith(fragment(data.leaderboard_html));
      }
      if (data.chart_html) {
        var chart = document.getElementById("curve-chart");
        if (chart) chart.replaceWith(fragment(data.chart_html));
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
        if (!attempt) return;
        if (attempt.finished) {
          finished = true;
          window.location.reload();
          return;
        }
        // A running benchmark attempt: swap in its progress (tasks done, the curve so far).
        var progress = detail.querySelector(".live-progress");
        if (progress && progress.dataset.version !== attempt.version) {
          var fresh = fragment(attempt.html).querySelector(".run-progress");
          if (fresh) {
            progress.replaceChildren(fresh);
            progress.dataset.version = attempt.version;
          }
        }
      }
    );
  }

  // "Trials" links of a benchmark attempt's task table unfold the task's trials below its row
  // (fetched once, on demand); without JavaScript they open the task's own page.
  function setUpTaskTrials(table) {
    var columns = parseInt(table.dataset.tasksColumns, 10) || 1;
    table.querySelectorAll("a.trials-toggle").forEach(function (link) {
      var index = link.dataset.taskIndex;
      var rowId = "task-" + index + "-trials-row";
      link.setAttribute("role", "button");
      link.setAttribute("aria-expanded", "false");
      link.setAttribute("aria-controls", rowId);
      function toggle(event) {
        event.preventDefault();
        var existing = document.getElementById(rowId);
        var open = link.getAttribute("aria-expanded") === "true";
        if (existing) {
          existing.hidden = open;
          link.setAttribute("aria-expanded", open ? "false" : "true");
          return;
        }
        if (link.dataset.loading) return;
        link.dataset.loading = "true";
        getJson(link.href)
          .then(function (data) {
            var row = document.createElement("tr");
            row.id = rowId;
            row.className = "trials-row";
            var cell = document.createElement("td");
            cell.colSpan = columns;
            cell.innerHTML = data.html;
            row.appendChild(cell);
            link.closest("tr").after(row);
            link.setAttribute("aria-expanded", "true");
          })
          .catch(function () {
            window.location.href = link.href;
          })
          .finally(function () {
            delete link.dataset.loading;
          });
      }
      link.addEventListener("click", toggle);
      link.addEventListener("keydown", function (event) {
        if (event.key === " ") toggle(event);
      });
    });
  }

  // A red-blue challenge page: while the participant's defenses, attacks or matches are still
  // running (or the ratings are being recomputed), polls the page's live regions (entries,
  // matches, standings, the two boards) and swaps in those whose version changed. The forms
  // are never swapped: what is being typed stays.
  function setUpRedBlue(root) {
    var announcer = document.getElementById("rb-live-status");
    var live = root.dataset.live === "true";
    var lastSummary = null;
    function versionOf(element) {
      return element.dataset.version || "";
    }
    poller(
      root.dataset.liveUrl,
      function () {
        return live ? ["page"] : [];
      },
      function (data) {
        live = data.live;
        root.dataset.live = live ? "true" : "false";
        Object.keys(data.regions).forEach(function (id) {
          var region = data.regions[id];
          var current = document.getElementById(id);
          if (!current || versionOf(current) === region.version) return;
          var hadFocus = current.contains(document.activeElement);
          var fresh = fragment(region.html);
          fresh.dataset.version = region.version;
          current.replaceWith(fresh);
          if (hadFocus) {
            var heading = fresh.querySelector("h2");
            if (heading) {
              heading.setAttribute("tabindex", "-1");
              heading.focus();
            }
          }
        });
        if (announcer && data.summary && data.summary !== lastSummary) {
          announcer.textContent = data.summary;
        }
        lastSummary = data.summary;
      }
    );
  }

  // "in 2 days 3 h", "in 5 min 20 s", "now": as the server writes it (format_until).
  function untilText(milliseconds) {
    var left = Math.floor(milliseconds / 1000);
    if (left <= 0) return "now";
    var parts = [];
    var units = [["day", 86400], ["h", 3600], ["min", 60], ["s", 1]];
    for (var i = 0; i < units.length && parts.length < 2; i++) {
      var count = Math.floor(left / units[i][1]);
      left -= count * units[i][1];
      if (count || parts.length) {
        var name = units[i][0] === "day" && count !== 1 ? "days" : units[i][0];
        parts.push(count ? count + " " + name : "");
      }
    }
    return "in " + parts.filter(Boolean).join(" ");
  }

  // Countdowns to a challenge's opening or close, kept current once a second.
  function setUpCountdowns() {
    var clocks = Array.from(document.querySelectorAll("time[data-countdown]"));
    if (!clocks.length) return;
    function tick() {
      var now = Date.now();
      clocks.forEach(function (clock) {
        clock.textContent = untilText(Date.parse(clock.getAttribute("datetime")) - now);
      });
    }
    tick();
    setInterval(tick, 1000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    watchLayout();
    setUpCountdowns();
    var redBlue = document.getElementById("redblue-play");
    if (redBlue && redBlue.dataset.liveUrl) setUpRedBlue(redBlue);
    document.querySelectorAll("textarea[data-limit]").forEach(setUpCounter);
    var list = document.getElementById("attempt-list");
    if (list && list.dataset.liveUrl) setUpAttemptList(list);
    var detail = document.getElementById("attempt-detail");
    if (detail && detail.dataset.finished === "false") setUpAttemptDetail(detail);
    document.querySelectorAll("table[data-tasks-columns]").forEach(setUpTaskTrials);
  });
})();
