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
//
// The host also answers the SDK's {type: "renew_session"} (sent before the
// session expires) with a fresh mint from the console (a same-origin POST
// with the page's CSRF token), which replaces the session it renews:
// {type: "session", session_token, expires_at}, or {type: "session", error}.
(function () {
  "use strict";
  var frame = document.getElementById("artifact-frame");
  var host = document.getElementById("artifact-host");
  var bridge = document.getElementById("bridge-status");
  if (!frame || !host) {
    return;
  }
  var init = JSON.parse(host.getAttribute("data-init"));
  var sessionID = host.getAttribute("data-session");
  var csrf = host.getAttribute("data-csrf");
  var renewURL = host.getAttribute("data-renew");
  var sent = false;
  var renewing = false;
  var reloaded = false;

  function toFrame(message) {
    frame.contentWindow.postMessage(message, "*");
  }

  function renew() {
    if (renewing) {
      return;
    }
    if (!renewURL) { // a preview session: pressing Preview again mints another
      toFrame({ type: "session", error: "preview sessions are not renewed: press Preview with data again" });
      return;
    }
    renewing = true;
    fetch(renewURL, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf, "Accept": "application/json", "Content-Type": "application/json" },
      body: JSON.stringify({ replaces: sessionID })
    }).then(function (res) {
      if (!res.ok) {
        throw new Error("the console answered " + res.status);
      }
      return res.json();
    }).then(function (s) {
      sessionID = s.session_id;
      toFrame({ type: "session", session_token: s.session_token, expires_at: s.expires_at });
      if (bridge) {
        bridge.textContent = "connected (session renewed)";
      }
    }).catch(function (err) {
      toFrame({ type: "session", error: err.message });
      if (bridge) {
        bridge.textContent = "the session could not be renewed: " + err.message;
      }
    }).then(function () {
      renewing = false;
    });
  }
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
        reloaded = true; // nor a fresh session: the page is no longer the one mounted
        if (bridge) {
          bridge.textContent = "the artifact reloaded: reopen it to reconnect";
        }
        return;
      }
      sent = true;
      toFrame(init);
      if (bridge) {
        bridge.textContent = "connected";
      }
      return;
    }
    if (message.type === "renew_session" && sent && !reloaded) {
      renew();
    }
  });
})();
