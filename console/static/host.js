// The console as the host of an app-tool artifact: once the bundle in the
// sandboxed iframe posts {type: "ready"}, post it the init message the page
// carries (session token, runtime descriptor, params, schema, theme). Only
// messages from that iframe's window are listened to. The frame has an opaque
// origin (sandbox without allow-same-origin), so "*" is the only target
// origin that reaches it; the source check is what binds the two. The init
// message, which carries the session token, is sent once per mount: should
// the frame navigate to another page, that page would post from the same
// window and must not be handed the token. A bundle that reloads itself is
// reopened by the reviewer.
(function () {
  "use strict";
  var frame = document.getElementById("artifact-frame");
  var host = document.getElementById("artifact-host");
  var bridge = document.getElementById("bridge-status");
  if (!frame || !host) {
    return;
  }
  var init = JSON.parse(host.getAttribute("data-init"));
  var sent = false;
  window.addEventListener("message", function (event) {
    if (event.source !== frame.contentWindow) {
      return;
    }
    var message = event.data;
    if (!message || typeof message !== "object") {
      return;
    }
    if (message.type === "ready") {
      if (sent) {
        if (bridge) {
          bridge.textContent = "the artifact reloaded: reopen it to reconnect";
        }
        return;
      }
      sent = true;
      frame.contentWindow.postMessage(init, "*");
      if (bridge) {
        bridge.textContent = "connected";
      }
    }
  });
})();
