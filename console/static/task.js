// A host page of a task (the console's task page, the reviewer's page):
// app blocks of the agent's replies run through MCPHost
// (internal/appblock/static/mcphost.js) only when the person clicks Run, at
// most two at once, each in a sandboxed no-network frame loaded from the
// page's own asset route (data-asset-base); an app's ui/message fills the
// composer and sends nothing. A tool result's embedUrl
// frame may post {__kazzle_height: n} to size itself, up to 70 % of the
// viewport (seed 003).
(function () {
  "use strict";
  var hostEl = document.getElementById("task-host");
  if (!hostEl) {
    return;
  }
  var assetBase = hostEl.getAttribute("data-asset-base");
  var ownOrigins = JSON.parse(hostEl.getAttribute("data-own-origins") || "[]") || [];
  if (ownOrigins.indexOf(window.location.origin) < 0) {
    ownOrigins.push(window.location.origin);
  }
  var composer = document.getElementById("composer");

  var slots = document.querySelectorAll(".app-block-slot");
  if (slots.length > 0 && window.MCPHost) {
    var host = window.MCPHost.create({
      assetURL: function (id) {
        return assetBase + encodeURIComponent(id);
      },
      ownOrigins: ownOrigins,
      onMessage: function (text) {
        if (composer) {
          composer.value = text;
          composer.focus();
        }
      },
    });
    Array.prototype.forEach.call(slots, function (slot) {
      var block = JSON.parse(slot.getAttribute("data-block"));
      slot.textContent = "";
      host.mount(slot, block);
    });
  }

  var embeds = document.querySelectorAll("iframe.tool-embed");
  if (embeds.length > 0) {
    window.addEventListener("message", function (ev) {
      var h = ev.data && ev.data.__kazzle_height;
      if (typeof h !== "number" || !isFinite(h)) {
        return;
      }
      Array.prototype.forEach.call(embeds, function (f) {
        if (ev.source === f.contentWindow) {
          var max = Math.floor(window.innerHeight * 0.7);
          f.style.height = Math.max(0, Math.min(Math.round(h), max)) + "px";
        }
      });
    });
  }
})();
