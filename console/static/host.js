// The console as the host of an app-tool artifact: once the bundle in the
// sandboxed iframe posts {type: "ready"}, post it the init message the page
// carries (session token, runtime descriptor, params, schema, theme). Only
// messages from that iframe's window are listened to. The frame has an opaque
// origin (sandbox without allow-same-origin), so "*" is the only target
// origin that reaches it; the source check is what binds the two.
(function () {
  "use strict";
  var frame = document.getElementById("artifact-frame");
  var host = document.getElementById("artifact-host");
  var bridge = document.getElementById("bridge-status");
  if (!frame || !host) {
    return;
  }
  var init = JSON.parse(host.getAttribute("data-init"));
  window.addEventListener("message", function (event) {
    if (event.source !== frame.contentWindow) {
      return;
    }
    var message = event.data;
    if (!message || typeof message !== "object") {
      return;
    }
    if (message.type === "ready") {
      frame.contentWindow.postMessage(init, "*");
      if (bridge) {
        bridge.textContent = "connected";
      }
    }
  });
})();
