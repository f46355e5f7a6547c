// The reviewer's document viewer: page images with their text on top (OCR's
// words laid at their boxes, selectable), zoom, page thumbnails,
// find-in-document and keyboard navigation (PageUp/PageDown and the arrow
// keys move between pages when the focus is not in a field or the
// artifact). A sheet shows as a table paged by 100 rows. Styles are set through the CSSOM: the page's CSP refuses
// inline style attributes.
(function () {
  "use strict";
  var viewer = document.getElementById("viewer");
  if (!viewer) {
    return;
  }
  var ZOOMS = [0.5, 0.75, 1, 1.25, 1.5, 2, 3];
  var zoom = 2;

  // Lay each OCR word at its box, its font sized to the box's height, so
  // that a selection covers what the reviewer sees.
  function layWords() {
    viewer.querySelectorAll(".page-canvas").forEach(function (canvas) {
      var h = canvas.clientHeight;
      canvas.querySelectorAll(".text-layer .word").forEach(function (w) {
        var box = wordBox(w);
        w.style.left = (box.x * 100) + "%";
        w.style.top = (box.y * 100) + "%";
        w.style.width = (box.w * 100) + "%";
        w.style.height = (box.h * 100) + "%";
        w.style.fontSize = Math.max(box.h * h * 0.9, 1) + "px";
      });
    });
  }

  function wordBox(w) {
    return {
      x: Number(w.getAttribute("data-x")), y: Number(w.getAttribute("data-y")),
      w: Number(w.getAttribute("data-w")), h: Number(w.getAttribute("data-h"))
    };
  }

  function setZoom(i) {
    zoom = Math.max(0, Math.min(ZOOMS.length - 1, i));
    viewer.style.setProperty("--zoom", String(ZOOMS[zoom]));
    document.getElementById("zoom-level").textContent = Math.round(ZOOMS[zoom] * 100) + "%";
    layWords();
  }

  function pages() {
    return Array.prototype.slice.call(viewer.querySelectorAll(".document .page"));
  }

  // current is the page at the top of the viewer's scrolled area.
  function current() {
    var all = pages();
    var top = viewer.getBoundingClientRect().top;
    for (var i = 0; i < all.length; i++) {
      if (all[i].getBoundingClientRect().bottom > top + 8) {
        return i;
      }
    }
    return all.length - 1;
  }

  function go(i) {
    var all = pages();
    if (!all.length) {
      return;
    }
    var el = all[Math.max(0, Math.min(all.length - 1, i))];
    el.scrollIntoView({ block: "start" });
    markThumb(el);
  }

  function markThumb(page) {
    viewer.querySelectorAll(".thumb.current").forEach(function (t) { t.classList.remove("current"); });
    var doc = page.closest(".document");
    var t = doc && doc.querySelector('.thumb[data-page="' + page.getAttribute("data-page") + '"]');
    if (t) {
      t.classList.add("current");
    }
  }

  // Sheets: a sheet's (or CSV file's) table shows SHEET_ROWS rows at a
  // time, "rows X–Y of N" between its previous and next buttons. Rows are
  // hidden with the hidden attribute (the CSP refuses inline styles).
  var SHEET_ROWS = 100;
  function showRows(page, first) {
    var rows = page.querySelectorAll("table.sheet tr");
    var n = rows.length;
    first = Math.max(0, Math.min(first, Math.floor(Math.max(n - 1, 0) / SHEET_ROWS) * SHEET_ROWS));
    page.setAttribute("data-first-row", String(first));
    for (var i = 0; i < n; i++) {
      rows[i].hidden = i < first || i >= first + SHEET_ROWS;
    }
    page.querySelector(".sheet-status").textContent = n ?
      "rows " + (first + 1) + "–" + Math.min(first + SHEET_ROWS, n) + " of " + n : "no rows";
    page.querySelector(".sheet-prev").disabled = first === 0;
    page.querySelector(".sheet-next").disabled = first + SHEET_ROWS >= n;
  }
  viewer.querySelectorAll(".page").forEach(function (page) {
    if (!page.querySelector("table.sheet")) {
      return;
    }
    showRows(page, 0);
    page.querySelector(".sheet-prev").addEventListener("click", function () {
      showRows(page, Number(page.getAttribute("data-first-row")) - SHEET_ROWS);
    });
    page.querySelector(".sheet-next").addEventListener("click", function () {
      showRows(page, Number(page.getAttribute("data-first-row")) + SHEET_ROWS);
    });
  });

  // findRows marks a sheet's rows holding q and shows the rows' page of
  // the first one; it reports whether any row holds q.
  function findRows(page, q) {
    var rows = page.querySelectorAll("table.sheet tr");
    var first = -1;
    for (var i = 0; i < rows.length; i++) {
      if ((rows[i].textContent || "").toLowerCase().indexOf(q) >= 0) {
        rows[i].classList.add("found");
        if (first < 0) {
          first = i;
        }
      }
    }
    if (first >= 0) {
      showRows(page, first - first % SHEET_ROWS);
    }
    return first >= 0;
  }

  // Find: the pages whose text holds the query (case-insensitive), OCR's
  // words marked; Enter moves to the next match.
  var found = [];
  var at = -1;
  var lastQuery = "";
  function find(q) {
    viewer.querySelectorAll(".found").forEach(function (el) { el.classList.remove("found"); });
    viewer.querySelectorAll(".found-current").forEach(function (el) { el.classList.remove("found-current"); });
    found = [];
    at = -1;
    lastQuery = q;
    var status = document.getElementById("find-status");
    q = q.trim().toLowerCase();
    if (!q) {
      status.textContent = "";
      return;
    }
    var terms = q.split(/\s+/);
    pages().forEach(function (p) {
      if (p.querySelector("table.sheet")) {
        if (findRows(p, q)) {
          found.push(p);
        }
        return;
      }
      var text = (p.querySelector(".page-text").textContent || "").toLowerCase();
      if (text.indexOf(q) < 0) {
        return;
      }
      found.push(p);
      p.querySelectorAll(".text-layer .word").forEach(function (w) {
        var t = w.textContent.trim().toLowerCase();
        if (t && terms.some(function (term) { return t.indexOf(term) >= 0 || term.indexOf(t) >= 0; })) {
          w.classList.add("found");
        }
      });
    });
    status.textContent = found.length ? found.length + (found.length === 1 ? " page" : " pages") : "not found";
    next();
  }

  function next() {
    if (!found.length) {
      return;
    }
    if (at >= 0) {
      found[at].classList.remove("found-current");
    }
    at = (at + 1) % found.length;
    found[at].classList.add("found-current");
    found[at].scrollIntoView({ block: "start" });
    markThumb(found[at]);
    document.getElementById("find-status").textContent = (at + 1) + " of " + found.length +
      (found.length === 1 ? " page" : " pages");
  }

  var input = document.getElementById("viewer-find");
  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter") {
      e.preventDefault();
      if (input.value === lastQuery && found.length) {
        next();
      } else {
        find(input.value);
      }
    }
  });
  input.addEventListener("search", function () { find(input.value); });

  document.getElementById("zoom-in").addEventListener("click", function () { setZoom(zoom + 1); });
  document.getElementById("zoom-out").addEventListener("click", function () { setZoom(zoom - 1); });

  viewer.querySelectorAll(".thumb").forEach(function (t) {
    t.addEventListener("click", function (e) {
      e.preventDefault();
      var doc = t.closest(".document");
      var page = doc.querySelector('.page[data-page="' + t.getAttribute("data-page") + '"]');
      if (page) {
        page.scrollIntoView({ block: "start" });
        markThumb(page);
      }
    });
  });

  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.altKey || e.ctrlKey || e.metaKey || (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable))) {
      return;
    }
    var step = { PageDown: 1, ArrowDown: 1, ArrowRight: 1, PageUp: -1, ArrowUp: -1, ArrowLeft: -1 }[e.key];
    if (!step) {
      return;
    }
    e.preventDefault();
    go(current() + step);
  });

  viewer.querySelectorAll(".page-image").forEach(function (img) {
    img.addEventListener("load", layWords);
  });

  // A page image refused for now (503: the page readers are busy, see
  // docs/operators.md's DOCUMENT_RENDER_WAIT) is asked for again for about a
  // minute and a quarter: after 1, 2, 4 and 8 seconds, then every 15 (eight
  // tries), so that a burst of busy readers longer than a few seconds (an
  // upload's OCR pass holding the workspace's share) still ends in the image.
  viewer.querySelectorAll("img").forEach(function (img) {
    var tries = 0;
    var base = img.getAttribute("src");
    img.addEventListener("error", function () {
      if (tries >= 8) {
        return;
      }
      tries++;
      setTimeout(function () {
        img.src = base + (base.indexOf("?") < 0 ? "?" : "&") + "retry=" + tries;
      }, 1000 * Math.min(Math.pow(2, tries - 1), 15));
    });
  });
  window.addEventListener("resize", layWords);
  layWords();
})();
