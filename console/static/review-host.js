// The reviewer's host page: it mounts the task's artifact in the sandboxed
// iframe (at once while the await is pending), honours default_fullscreen
// unless the reviewer chose otherwise, and relays the bridge messages of
// seed 000, and asks the reviewer for the reason an action requires
// (request_reason, issue 29 §3). A message is listened to only when it comes from the mounted
// frame's window, has the expected shape, and its capability is granted
// (runtime.capabilities of the init message); anything else is ignored.
(function () {
  "use strict";
  var host = document.getElementById("review-host");
  var frame = document.getElementById("artifact-frame");
  if (!host) {
    return;
  }
  var taskID = host.getAttribute("data-task");
  var stepID = host.getAttribute("data-step");
  var csrf = host.getAttribute("data-csrf");
  var section = document.getElementById("artifact-section");
  var bridge = document.getElementById("bridge-status");
  var openButton = document.getElementById("open-artifact");
  var fullButton = document.getElementById("toggle-fullscreen");
  var highlighter = document.getElementById("highlighter");
  var reasonDialog = document.getElementById("reason-dialog");
  var reasonText = document.getElementById("reason-text");
  var reasonAction = document.getElementById("reason-action");
  var reasonFor = null;        // the request_reason the dialog answers ({id})
  var MAX_LABEL = 200;

  var init = null;
  var granted = [];
  var sent = false;
  // The reviewer's own expand/collapse, kept for the tab's session per task:
  // it wins over default_fullscreen on this mount and every later one (a
  // reload after the task's status changed, the next visit), seed 000.
  var pinKey = "appruntime.review.fullscreen." + taskID;
  var pinnedChoice = readPin(); // "on", "off", or null while the reviewer has not chosen
  var pinned = pinnedChoice !== null;
  var selectionWanted = false; // the bundle asked for document_selection
  var highlighting = false;    // the reviewer is using the highlighter
  var translating = false;
  var opening = false;         // a session was asked for (or the artifact is open)
  var sessionID = "";          // the session handed to the bundle, which a renewal replaces
  var renewing = false;

  function status(text) {
    if (bridge) {
      bridge.textContent = text;
    }
  }

  function post(path, body) {
    return fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf, "Accept": "application/json", "Content-Type": "application/json" },
      body: JSON.stringify(body || {})
    }).then(function (res) {
      return res.json().then(function (data) {
        if (!res.ok) {
          throw new Error((data && data.error) || ("HTTP " + res.status));
        }
        return data;
      });
    });
  }

  function readPin() {
    try {
      var v = window.sessionStorage.getItem(pinKey);
      return v === "on" || v === "off" ? v : null;
    } catch (e) {
      return null; // storage refused: the choice lasts for this page
    }
  }

  function pin(on) {
    pinned = true;
    try {
      window.sessionStorage.setItem(pinKey, on ? "on" : "off");
    } catch (e) { /* storage refused: the choice lasts for this page */ }
  }

  function setFullscreen(on) {
    section.classList.toggle("fullscreen", on);
    if (fullButton) {
      fullButton.textContent = on ? "Leave full screen" : "Full screen";
    }
  }

  function mount() {
    // One session per page: a second press while (or after) the artifact
    // opens would mint another session and end the first.
    if (!frame || !stepID || opening) {
      return Promise.resolve();
    }
    opening = true;
    status("opening…");
    return post("/review/tasks/" + taskID + "/session?step=" + encodeURIComponent(stepID)).then(function (s) {
      init = s.init;
      sessionID = s.session_id || "";
      granted = (init.runtime && Array.isArray(init.runtime.capabilities)) ? init.runtime.capabilities : [];
      sent = false;
      frame.src = s.bundle_url;
      frame.hidden = false;
      if (openButton) {
        openButton.hidden = true;
      }
      if (s.default_fullscreen && !pinned) {
        setFullscreen(true);
      }
      status("waiting for the bundle…");
    }).catch(function (err) {
      opening = false;
      status("could not open: " + err.message);
    });
  }

  function toFrame(message) {
    if (frame && frame.contentWindow && sent) {
      frame.contentWindow.postMessage(message, "*");
    }
  }

  function selectionMode() {
    return selectionWanted && !highlighting ? "text" : "off";
  }

  function sendHostState() {
    toFrame({ type: "host_state", selectionMode: selectionMode() });
  }

  function isGranted(name) {
    return granted.indexOf(name) >= 0;
  }

  // renew answers the SDK's renew_session: a fresh session for the same
  // step, replacing the one the bundle holds, sent as {type: "session"}.
  function renew() {
    if (renewing) {
      return;
    }
    renewing = true;
    post("/review/tasks/" + taskID + "/session?step=" + encodeURIComponent(stepID), { replaces: sessionID }).then(function (s) {
      sessionID = s.session_id || "";
      toFrame({ type: "session", session_token: s.init.session_token, expires_at: s.init.expires_at });
    }).catch(function (err) {
      toFrame({ type: "session", error: err.message });
    }).then(function () {
      renewing = false;
    });
  }

  // Each handler checks its message's shape; a false return means ignored.
  var handlers = {
    renew_session: {
      run: function () {
        renew();
        return true;
      }
    },
    set_selection_mode: {
      requires: "document_selection",
      run: function (m) {
        if (typeof m.enabled !== "boolean") {
          return false;
        }
        selectionWanted = m.enabled;
        host.setAttribute("data-selection", selectionMode());
        sendHostState();
        return true;
      }
    },
    set_translation: {
      requires: "get_translation",
      run: function (m) {
        if (typeof m.show !== "boolean") {
          return false;
        }
        showTranslation(m.show);
        return true;
      }
    },
    request_next_review: {
      requires: "next_review_task",
      run: function () {
        post("/review/next").then(function (r) {
          if (r.url) {
            window.location.assign(r.url);
          } else {
            status("nothing else to review");
          }
        }).catch(function (err) { status("next review failed: " + err.message); });
        return true;
      }
    },
    abort_review_task: {
      requires: "abort_review_task",
      run: function () {
        post("/review/tasks/" + taskID + "/abort").then(function (r) {
          window.location.assign(r.url || "/review");
        }).catch(function (err) { status("could not put it back: " + err.message); });
        return true;
      }
    },
    // request_reason {id, op}: the bundle (the SDK) calls an action of the
    // binding's reason_required list without a reason; the reviewer types
    // one in the dialog and it goes back as {type: "reason", id, reason},
    // or {type: "reason", id, cancelled: true}. One at a time: a second
    // request while the dialog is open is cancelled at once.
    request_reason: {
      requires: null,
      run: function (m) {
        var required = (init && init.runtime && Array.isArray(init.runtime.reason_required)) ? init.runtime.reason_required : [];
        if (!Number.isInteger(m.id) || typeof m.op !== "string" || required.indexOf(m.op) < 0 || !reasonDialog) {
          return false;
        }
        if (reasonFor) {
          toFrame({ type: "reason", id: m.id, cancelled: true });
          return true;
        }
        reasonFor = { id: m.id };
        reasonAction.textContent = m.op;
        reasonText.value = "";
        reasonDialog.returnValue = "";
        reasonDialog.showModal();
        reasonText.focus();
        return true;
      }
    },
    open_citation: {
      requires: null,
      run: function (m) {
        var ids = m.citation_ids;
        if (ids !== undefined && (!Array.isArray(ids) || ids.length === 0 ||
            !ids.every(function (x) { return typeof x === "number" && isFinite(x); }))) {
          return false;
        }
        if (m.source_page !== undefined && !(Number.isInteger(m.source_page) && m.source_page >= 1)) {
          return false;
        }
        if (ids === undefined && m.source_page === undefined) {
          return false;
        }
        if (m.label !== undefined && (typeof m.label !== "string" || Array.from(m.label).length > MAX_LABEL)) {
          return false;
        }
        if (m.file_name !== undefined && (typeof m.file_name !== "string" || m.file_name === "")) {
          return false;
        }
        if (ids !== undefined) {
          openCitationsByID(ids, m.label);
          return true;
        }
        if (!openCitation(m.file_name, m.source_page, ids, m.label)) {
          return false;
        }
        clearCitationHighlights();
        return true;
      }
    },
    open_split: {
      requires: "split_document",
      run: function (m) {
        return openSplit(m);
      }
    }
  };

  var openDocument = null;

  // documentNamed is the document called name, or without a name the one
  // open (the last cited or highlighted, else the first); null when there
  // is no such document.
  function documentNamed(name) {
    var docs = document.querySelectorAll(".document");
    if (name === undefined) {
      return openDocument || docs[0] || null;
    }
    for (var i = 0; i < docs.length; i++) {
      if (docs[i].getAttribute("data-file-name") === name) {
        return docs[i];
      }
    }
    return null;
  }

  // openCitation scrolls to page of the named (else the open) document and
  // marks it with the citation's ids and label; the previous mark goes.
  function openCitation(fileName, page, ids, label) {
    var doc = documentNamed(fileName);
    if (!doc) {
      return false;
    }
    openDocument = doc;
    var el = doc.querySelector('.page[data-page="' + page + '"]');
    if (!el) {
      return false;
    }
    var marked = document.querySelectorAll(".page.cited");
    for (var i = 0; i < marked.length; i++) {
      marked[i].classList.remove("cited");
      marked[i].removeAttribute("data-citation-ids");
      marked[i].removeAttribute("data-citation-label");
    }
    if (ids) {
      el.setAttribute("data-citation-ids", ids.join(","));
    }
    if (label) {
      el.setAttribute("data-citation-label", label);
    }
    el.classList.add("cited");
    el.scrollIntoView({ block: "start" });
    return true;
  }

  // openCitationsByID opens stored citations (issue 30 §2): the first's
  // file at its page, marked; each cited box highlighted on its page's
  // image or, without a box, its quote found on the page (OCR's words, else
  // the page's text). An id the task does not hold is told to the bundle as
  // {type: "citation_error", citation_ids, message}, and the viewer stays.
  function openCitationsByID(ids, label) {
    post("/review/tasks/" + taskID + "/citations", { citation_ids: ids }).then(function (r) {
      var first = r.citations[0];
      if (!openCitation(first.file, first.page, ids, label)) {
        throw new Error("citation " + first.id + " cites page " + first.page + " of " + first.file + ", which the viewer does not show");
      }
      clearCitationHighlights();
      r.citations.forEach(highlightCitation);
      var shown = document.querySelector(".citation-box, mark.cited-quote");
      if (shown) {
        shown.scrollIntoView({ block: "center" });
      }
    }).catch(function (err) {
      toFrame({ type: "citation_error", citation_ids: ids, message: err.message });
    });
  }

  function clearCitationHighlights() {
    Array.prototype.forEach.call(document.querySelectorAll(".citation-box"), function (el) { el.remove(); });
    Array.prototype.forEach.call(document.querySelectorAll("mark.cited-quote"), function (el) {
      var parent = el.parentNode;
      parent.replaceChild(document.createTextNode(el.textContent), el);
      parent.normalize();
    });
  }

  function highlightCitation(c) {
    var doc = documentNamed(c.file);
    var page = doc && doc.querySelector('.page[data-page="' + c.page + '"]');
    if (!page) {
      return;
    }
    var canvas = page.querySelector(".page-canvas");
    var box = c.box || (canvas ? quoteBox(canvas, c.quote) : null);
    if (box && canvas) {
      var el = document.createElement("div");
      el.className = "citation-box";
      el.setAttribute("data-citation-id", String(c.id));
      el.style.left = (box.x * 100) + "%";
      el.style.top = (box.y * 100) + "%";
      el.style.width = (box.w * 100) + "%";
      el.style.height = (box.h * 100) + "%";
      canvas.appendChild(el);
    }
    if (!c.box) {
      markQuote(page.querySelector(".page-text"), c.quote, c.id);
    }
  }

  function words(text) {
    return text.toLowerCase().split(/\s+/).filter(Boolean);
  }

  // quoteBox is the box around the run of OCR words that reads the quote
  // (case and spacing aside), or null.
  function quoteBox(canvas, quote) {
    var want = words(quote || "");
    var spans = canvas.querySelectorAll(".text-layer .word");
    for (var i = 0; want.length && i + want.length <= spans.length; i++) {
      var j = 0;
      while (j < want.length && spans[i + j].textContent.trim().toLowerCase() === want[j]) {
        j++;
      }
      if (j === want.length) {
        var x0 = 1, y0 = 1, x1 = 0, y1 = 0;
        for (var k = i; k < i + j; k++) {
          var b = spans[k].dataset;
          x0 = Math.min(x0, Number(b.x));
          y0 = Math.min(y0, Number(b.y));
          x1 = Math.max(x1, Number(b.x) + Number(b.w));
          y1 = Math.max(y1, Number(b.y) + Number(b.h));
        }
        return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
      }
    }
    return null;
  }

  // markQuote wraps the first place the page's text reads the quote (case
  // and spacing aside) in <mark class="cited-quote">.
  function markQuote(pre, quote, id) {
    var want = words(quote || "");
    if (!pre || !want.length || !pre.firstChild || pre.firstChild.nodeType !== 3) {
      return;
    }
    var escaped = want.map(function (w) { return w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); });
    var found = new RegExp(escaped.join("\\s+"), "i").exec(pre.firstChild.data);
    if (!found) {
      return;
    }
    var range = document.createRange();
    range.setStart(pre.firstChild, found.index);
    range.setEnd(pre.firstChild, found.index + found[0].length);
    var mark = document.createElement("mark");
    mark.className = "cited-quote";
    mark.setAttribute("data-citation-id", String(id));
    range.surroundContents(mark);
  }

  // openSplit shows a split of a document side by side (issue 30 §3): the
  // original's pages, then each part's, for {file_id, ranges: [{from,
  // to}]} (split_document's parts). Between two parts the reviewer moves
  // the boundary a page earlier or later (each part keeps a page); Confirm
  // sends {type: "split_confirmed", file_id, ranges} to the bundle, Cancel
  // {type: "split_cancelled", file_id}. A malformed message is ignored.
  function openSplit(m) {
    var doc = document.querySelector('.document[data-file-id="' + String(m.file_id) + '"]');
    var pages = doc ? doc.querySelectorAll(".page").length : 0;
    if (!doc || !Array.isArray(m.ranges) || m.ranges.length === 0 || m.ranges.length > 50 ||
        !m.ranges.every(function (r) {
          return r && Number.isInteger(r.from) && Number.isInteger(r.to) && r.from >= 1 && r.from <= r.to && r.to <= pages;
        })) {
      return false;
    }
    var ranges = m.ranges.map(function (r) { return { from: r.from, to: r.to }; });
    var old = document.getElementById("split-view");
    if (old) {
      old.remove();
    }
    var view = document.createElement("section");
    view.id = "split-view";
    view.className = "split-view card";
    view.setAttribute("data-file-id", m.file_id);
    var viewer = document.getElementById("viewer");
    viewer.parentNode.insertBefore(view, viewer);

    function thumb(n) {
      var fig = document.createElement("figure");
      fig.className = "split-page";
      fig.setAttribute("data-page", String(n));
      var img = doc.querySelector('.thumb[data-page="' + n + '"] img');
      if (img) {
        var copy = document.createElement("img");
        copy.src = img.getAttribute("src");
        copy.alt = "Page " + n;
        fig.appendChild(copy);
      }
      var cap = document.createElement("figcaption");
      cap.textContent = "Page " + n;
      fig.appendChild(cap);
      return fig;
    }

    function column(title, from, to, cls) {
      var col = document.createElement("div");
      col.className = "split-column " + cls;
      var h = document.createElement("h3");
      h.textContent = title;
      col.appendChild(h);
      for (var n = from; n <= to; n++) {
        col.appendChild(thumb(n));
      }
      return col;
    }

    function button(text, id, enabled, onClick) {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "link";
      b.id = id;
      b.textContent = text;
      b.disabled = !enabled;
      b.addEventListener("click", onClick);
      return b;
    }

    function render() {
      view.textContent = "";
      var head = document.createElement("h2");
      head.textContent = "Split of " + doc.getAttribute("data-file-name");
      view.appendChild(head);
      var cols = document.createElement("div");
      cols.className = "split-columns";
      cols.appendChild(column("Original", 1, pages, "split-original"));
      ranges.forEach(function (r, i) {
        if (i > 0) {
          var prev = ranges[i - 1];
          var bound = document.createElement("div");
          bound.className = "split-boundary";
          bound.appendChild(button("◀ earlier", "split-boundary-" + i + "-earlier", prev.to > prev.from, function () {
            prev.to--;
            r.from--;
            render();
          }));
          bound.appendChild(button("later ▶", "split-boundary-" + i + "-later", r.from < r.to, function () {
            prev.to++;
            r.from++;
            render();
          }));
          cols.appendChild(bound);
        }
        var col = column("Part " + (i + 1) + ": pages " + r.from + "–" + r.to, r.from, r.to, "split-part");
        col.setAttribute("data-part", String(i + 1));
        col.setAttribute("data-from", String(r.from));
        col.setAttribute("data-to", String(r.to));
        cols.appendChild(col);
      });
      view.appendChild(cols);
      var actions = document.createElement("p");
      actions.appendChild(button("Confirm split", "split-confirm", true, function () {
        view.remove();
        toFrame({ type: "split_confirmed", file_id: m.file_id, ranges: ranges });
      }));
      actions.appendChild(document.createTextNode(" "));
      actions.appendChild(button("Cancel", "split-cancel", true, function () {
        view.remove();
        toFrame({ type: "split_cancelled", file_id: m.file_id });
      }));
      actions.firstChild.className = "primary";
      view.appendChild(actions);
    }
    render();
    view.scrollIntoView({ block: "start" });
    return true;
  }

  function showTranslation(show) {
    translating = show;
    var pages = document.querySelectorAll(".document .page");
    pages.forEach(function (el) {
      var out = el.querySelector(".page-translation");
      if (!show) {
        out.hidden = true;
        return;
      }
      var doc = el.closest(".document");
      post("/review/tasks/" + taskID + "/translation", {
        file_id: doc.getAttribute("data-file-id"),
        page: Number(el.getAttribute("data-page")),
        target_language: (navigator.language || "en").split("-")[0]
      }).then(function (t) {
        if (!translating) {
          return;
        }
        out.textContent = (t.segments || []).map(function (s) { return s.translated; }).join("\n");
        out.hidden = false;
      }).catch(function () { /* the overlay stays off for this page */ });
    });
  }

  window.addEventListener("message", function (event) {
    if (!frame || event.source !== frame.contentWindow) {
      return;
    }
    var m = event.data;
    if (!m || typeof m !== "object" || typeof m.type !== "string") {
      return;
    }
    if (m.type === "ready") {
      if (sent || !init) {
        status("the artifact reloaded: reopen it to reconnect");
        return;
      }
      sent = true;
      frame.contentWindow.postMessage(init, "*");
      status("connected");
      return;
    }
    var h = handlers[m.type];
    if (!h || (h.requires && !isGranted(h.requires))) {
      return;
    }
    h.run(m);
  });

  // The viewer hands the bundle the text the reviewer highlights, while
  // the bundle asked for it and the highlighter tool is not in use.
  document.addEventListener("mouseup", function () {
    if (selectionMode() === "off" || !isGranted("document_selection")) {
      return;
    }
    var sel = window.getSelection();
    var text = sel ? sel.toString().trim() : "";
    if (!text || !sel.anchorNode) {
      return;
    }
    var node = sel.anchorNode.nodeType === 1 ? sel.anchorNode : sel.anchorNode.parentElement;
    var page = node && node.closest ? node.closest(".page") : null;
    if (!page) {
      return;
    }
    var doc = page.closest(".document");
    openDocument = doc;
    var message = { type: "document_selection", text: text, page: Number(page.getAttribute("data-page")) };
    // On a page image, the box of the selection: fractions of the page's
    // width and height from its top left (as OCR's word boxes).
    var canvas = page.querySelector(".page-canvas");
    if (canvas && canvas.contains(node) && sel.rangeCount) {
      var r = sel.getRangeAt(0).getBoundingClientRect();
      var c = canvas.getBoundingClientRect();
      if (r.width > 0 && c.width > 0 && c.height > 0) {
        var round = function (v) { return Math.round(Math.max(0, Math.min(1, v)) * 10000) / 10000; };
        message.box = { x: round((r.left - c.left) / c.width), y: round((r.top - c.top) / c.height),
          w: round(r.width / c.width), h: round(r.height / c.height) };
      }
    }
    if (doc) {
      message.label = doc.getAttribute("data-file-name");
    }
    toFrame(message);
  });

  if (highlighter) {
    highlighter.addEventListener("click", function () {
      highlighting = !highlighting;
      highlighter.textContent = highlighting ? "on" : "off";
      host.setAttribute("data-selection", selectionMode());
      sendHostState();
    });
  }
  if (reasonDialog) {
    // Send closes the dialog with "send" once a reason is typed; Cancel
    // (or Escape) closes it without.
    document.getElementById("reason-send").addEventListener("click", function () {
      if (reasonText.value.trim() === "") {
        reasonText.focus();
        return;
      }
      reasonDialog.close("send");
    });
    document.getElementById("reason-cancel").addEventListener("click", function () {
      reasonDialog.close("cancel");
    });
    reasonDialog.addEventListener("close", function () {
      if (!reasonFor) {
        return;
      }
      var id = reasonFor.id;
      reasonFor = null;
      var reason = reasonText.value.trim();
      if (reasonDialog.returnValue === "send" && reason !== "") {
        toFrame({ type: "reason", id: id, reason: reason });
      } else {
        toFrame({ type: "reason", id: id, cancelled: true });
      }
    });
  }
  if (fullButton) {
    fullButton.addEventListener("click", function () {
      var on = !section.classList.contains("fullscreen");
      pin(on);
      setFullscreen(on);
    });
  }
  if (pinned && section) {
    setFullscreen(pinnedChoice === "on");
  }
  if (openButton) {
    openButton.addEventListener("click", function () { mount(); });
  }
  if (host.getAttribute("data-pending") === "true") {
    mount();
  }
})();
