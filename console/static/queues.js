// The Queues page's auto-refresh: the page reloads itself every
// data-seconds seconds until the admin pauses it; the choice is kept in
// localStorage, so it holds across reloads and pages. A reload waits while
// the admin is selecting tasks or typing a search (it would lose their
// input) and while the tab is hidden. Also the "select every task" box of
// the bulk actions.
(function () {
  "use strict";
  var KEY = "appruntime.queues.autorefresh";
  var box = document.getElementById("autorefresh");
  var toggle = document.getElementById("autorefresh-toggle");
  if (box && toggle) {
    var seconds = parseInt(box.getAttribute("data-seconds"), 10) || 10;
    var state = box.querySelector(".state");
    var timer = null;
    // Where the choice is kept when localStorage is refused (it then lasts
    // until the page reloads).
    var pausedHere = false;
    var paused = function () {
      try {
        return window.localStorage.getItem(KEY) === "paused";
      } catch (e) {
        return pausedHere;
      }
    };
    var busy = function () {
      if (document.hidden) return true;
      if (document.querySelector('#tasks input[type="checkbox"]:checked')) return true;
      var a = document.activeElement;
      return !!(a && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT"));
    };
    var reload = function () {
      if (busy()) {
        timer = window.setTimeout(reload, seconds * 1000);
        return;
      }
      // A GET of the page without its one-time notice.
      var url = new URL(window.location.href);
      url.searchParams.delete("notice");
      window.location.replace(url.toString());
    };
    var show = function () {
      var p = paused();
      box.setAttribute("data-state", p ? "paused" : "on");
      state.textContent = p ? "Auto-refresh paused." : "Auto-refresh every " + seconds + " s.";
      toggle.textContent = p ? "Resume auto-refresh" : "Pause auto-refresh";
      window.clearTimeout(timer);
      timer = p ? null : window.setTimeout(reload, seconds * 1000);
    };
    toggle.addEventListener("click", function () {
      try {
        if (paused()) window.localStorage.removeItem(KEY);
        else window.localStorage.setItem(KEY, "paused");
      } catch (e) {
        pausedHere = !pausedHere;
      }
      show();
    });
    show();
  }

  var all = document.getElementById("select-all");
  if (all) {
    all.addEventListener("change", function () {
      var boxes = document.querySelectorAll('#tasks input[name="id"]');
      for (var i = 0; i < boxes.length; i++) boxes[i].checked = all.checked;
    });
  }
})();
