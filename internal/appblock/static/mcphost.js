// mcphost.js: the host side of MCP Apps (SEP-1865) for appruntime's pages,
// with no dependencies. It renders a reply's app blocks (seed 004) and runs
// each one only when the person clicks Run:
//
//   - the asset loads by URL in <iframe sandbox="allow-scripts">: an opaque
//     origin, no same-origin access, no popups, no top navigation, and the
//     asset's own Content-Security-Policy header (no network; see
//     internal/appblock.AssetCSP), which a srcdoc frame would not get;
//   - it speaks JSON-RPC 2.0 over postMessage with that frame only (a message
//     whose source is not the frame's window is ignored): ui/initialize,
//     then ui/notifications/tool-input and ui/notifications/tool-result from
//     the block's tool_input and tool_result (snake_case structured_content
//     becomes structuredContent), size changes up to a height cap,
//     ui/open-link through checkLink and the person's confirmation,
//     ui/message into the composer (nothing is sent), tools/call refused,
//     notifications/message (the logging the host advertises) shown in a
//     collapsible log under the app, the newest maxLogEntries kept;
//   - at most maxRunning (2) apps run per task: a third stops the oldest,
//     which shows its Run control again;
//   - a browser that cannot sandbox frames shows the block's fallback.
//
// Usage:
//   const host = MCPHost.create({ assetURL: (id) => "/assets/" + id, ownOrigins: [...],
//                                  onMessage: (text) => composer.value = text });
//   host.mount(element, block);   // block: {asset_id, title, fallback, tool_input?, tool_result?}
(function (global) {
  "use strict";

  var PROTOCOL_VERSION = "2026-01-26";
  var SUPPORTED_VERSIONS = ["2026-01-26", "2025-11-21"];
  var MAX_LINK_LENGTH = 2048;
  // An app's log keeps its newest MAX_LOG_ENTRIES lines of at most
  // MAX_LOG_LINE characters: a chatty app cannot grow the page without bound.
  var MAX_LOG_ENTRIES = 200;
  var MAX_LOG_LINE = 2000;

  // JSON-RPC error codes.
  var METHOD_NOT_FOUND = -32601;

  // checkLink applies seed 004's link policy (the same rules as
  // internal/appblock.CheckOpenLink, tested against the same table): https
  // only, no userinfo, not an IP address in any form, not localhost or
  // *.localhost, not one of ownOrigins' hosts or a name under them. It
  // returns "" when the link may be offered, else the reason. The URL is
  // read by the browser's own parser, so the host checked is the host the
  // browser would open.
  function checkLink(raw, ownOrigins) {
    if (typeof raw !== "string") return "the link is not a string";
    if (raw.length > MAX_LINK_LENGTH) return "the link is longer than " + MAX_LINK_LENGTH + " characters";
    var u;
    try {
      u = new URL(raw.trim());
    } catch (e) {
      return "the link is not a valid URL";
    }
    if (u.protocol !== "https:") return "only https links may be opened";
    if (u.username || u.password) return "a link may not carry a user name or password";
    var host = u.hostname.toLowerCase().replace(/\.$/, "");
    if (!host) return "the link has no host";
    if (isIPHost(host)) return "a link may not point at an IP address";
    // After the parser's IDNA mapping a name is ASCII letters, digits, ".",
    // "-" and "_"; anything else (a space Chromium percent-encodes) is not
    // a name the link can reach.
    if (!/^[a-z0-9._-]+$/.test(host)) return "the link's host is not a valid name";
    if (host === "localhost" || endsWith(host, ".localhost")) return "a link may not point at localhost";
    var own = ownOrigins || [];
    for (var i = 0; i < own.length; i++) {
      var oh;
      try {
        oh = new URL(own[i]).hostname.toLowerCase().replace(/\.$/, "");
      } catch (e) {
        continue;
      }
      if (oh && (host === oh || endsWith(host, "." + oh))) return "a link may not point at this service's own pages";
    }
    return "";
  }

  // isIPHost: an IPv6 literal, or a host whose last label is a number
  // (the URL parser reads such a host as IPv4, or refuses it).
  function isIPHost(host) {
    if (host.charAt(0) === "[" || host.indexOf(":") >= 0) return true;
    var labels = host.split(".");
    var last = labels[labels.length - 1];
    if (last === "" && labels.length > 1) last = labels[labels.length - 2];
    if (last === "") return false;
    return /^[0-9]+$/.test(last) || /^0x[0-9a-f]*$/i.test(last);
  }

  function endsWith(s, suffix) {
    return s.length >= suffix.length && s.slice(s.length - suffix.length) === suffix;
  }

  // supported reports whether this browser can run an app: sandboxed
  // frames and postMessage.
  function supported() {
    var f = document.createElement("iframe");
    return "sandbox" in f && typeof f.sandbox.add === "function" && typeof window.postMessage === "function";
  }

  // toolResultParams maps seed 004's tool_result to MCP's CallToolResult.
  function toolResultParams(tr) {
    var out = { content: tr.content || [] };
    if (tr.structured_content !== undefined) out.structuredContent = tr.structured_content;
    return out;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // create returns a host for one task page. Options:
  //   assetURL(id)     the URL an asset is served from (required)
  //   ownOrigins       origins ui/open-link refuses (default: this page's)
  //   maxRunning       apps running at once (default 2)
  //   maxHeight()      the height cap in pixels (default 70% of the viewport)
  //   confirmLink(url) resolves true when the person agrees to open url
  //                    (default window.confirm)
  //   openLink(url)    opens an agreed link (default a new window, no opener)
  //   onMessage(text, block)  fills the person's composer (required to
  //                    accept ui/message; nothing is ever sent)
  //   onEvent(name, detail)   observes what happens (tests, telemetry)
  //   hostInfo         {name, version}
  function create(options) {
    var o = options || {};
    if (typeof o.assetURL !== "function") throw new Error("MCPHost.create: assetURL is required");
    var maxRunning = o.maxRunning || 2;
    var ownOrigins = o.ownOrigins || [window.location.origin];
    var maxHeight = o.maxHeight || function () { return Math.floor(window.innerHeight * 0.7); };
    var confirmLink = o.confirmLink || function (url) { return Promise.resolve(window.confirm("Open this link?\n\n" + url)); };
    var openLink = o.openLink || function (url) { window.open(url, "_blank", "noopener,noreferrer"); };
    var onEvent = o.onEvent || function () {};
    var hostInfo = o.hostInfo || { name: "appruntime", version: "1" };
    var canRun = supported();
    var running = []; // apps in the order they were started
    var nextRequestId = 1;

    window.addEventListener("message", function (ev) {
      for (var i = 0; i < running.length; i++) {
        var app = running[i];
        // Only the app's own frame is heard: source is the frame's window.
        if (app.frame && ev.source === app.frame.contentWindow) {
          handle(app, ev.data);
          return;
        }
      }
    });

    function send(app, msg) {
      if (app.frame && app.frame.contentWindow) {
        msg.jsonrpc = "2.0";
        // An opaque-origin frame can be addressed only with "*"; the
        // window itself is the address.
        app.frame.contentWindow.postMessage(msg, "*");
      }
    }

    function reply(app, id, result) {
      send(app, { id: id, result: result });
    }

    function fail(app, id, code, message) {
      send(app, { id: id, error: { code: code, message: message } });
    }

    function handle(app, msg) {
      if (!msg || typeof msg !== "object" || msg.jsonrpc !== "2.0") return;
      var hasID = msg.id !== undefined && msg.id !== null;
      if (typeof msg.method !== "string") return; // a response to our own request
      var params = msg.params || {};
      if (!hasID) {
        notification(app, msg.method, params);
        return;
      }
      switch (msg.method) {
        case "ui/initialize":
          var version = SUPPORTED_VERSIONS.indexOf(params.protocolVersion) >= 0 ? params.protocolVersion : PROTOCOL_VERSION;
          reply(app, msg.id, {
            protocolVersion: version,
            hostInfo: hostInfo,
            hostCapabilities: { openLinks: {}, message: { text: {} }, logging: {} },
            hostContext: {
              theme: "light",
              displayMode: "inline",
              availableDisplayModes: ["inline"],
              platform: "web",
              containerDimensions: { maxHeight: maxHeight() },
              locale: navigator.language,
              timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
            },
          });
          onEvent("initialize", { block: app.block });
          return;
        case "ui/open-link":
          requestOpenLink(app, msg.id, params.url);
          return;
        case "ui/message":
          var text = (params.content || [])
            .filter(function (c) { return c && c.type === "text" && typeof c.text === "string"; })
            .map(function (c) { return c.text; })
            .join("\n");
          if (typeof o.onMessage !== "function" || text === "") {
            reply(app, msg.id, { isError: true });
            return;
          }
          o.onMessage(text, app.block); // fills the composer; the person decides whether to send
          onEvent("message", { text: text, block: app.block });
          reply(app, msg.id, {});
          return;
        case "tools/call":
          onEvent("tools/call", { name: params.name, block: app.block });
          fail(app, msg.id, METHOD_NOT_FOUND, "tools/call is not supported by this host");
          return;
        case "ping":
          reply(app, msg.id, {});
          return;
      }
      fail(app, msg.id, METHOD_NOT_FOUND, msg.method + " is not supported by this host");
    }

    function notification(app, method, params) {
      switch (method) {
        case "ui/notifications/initialized":
          var b = app.block;
          if (b.tool_input) send(app, { method: "ui/notifications/tool-input", params: { arguments: b.tool_input } });
          if (b.tool_result) send(app, { method: "ui/notifications/tool-result", params: toolResultParams(b.tool_result) });
          onEvent("initialized", { block: b });
          return;
        case "ui/notifications/size-changed":
          if (typeof params.height === "number" && isFinite(params.height) && params.height >= 0) {
            var h = Math.min(Math.ceil(params.height), maxHeight());
            app.frame.style.height = h + "px";
            onEvent("size", { height: h, asked: params.height, block: app.block });
          }
          return;
        case "ui/notifications/request-teardown":
          stop(app);
          return;
        case "notifications/message":
          log(app, params);
          return;
      }
    }

    // log appends an app's notifications/message ({level, logger?, data})
    // to the log under it, as text.
    function log(app, params) {
      var level = typeof params.level === "string" ? params.level : "info";
      var data = params.data;
      var text = typeof data === "string" ? data : JSON.stringify(data === undefined ? null : data);
      if (typeof params.logger === "string" && params.logger !== "") text = params.logger + ": " + text;
      if (text.length > MAX_LOG_LINE) text = text.slice(0, MAX_LOG_LINE) + "…";
      var line = el("li", "app-log-" + level.replace(/[^a-z]/g, ""));
      line.appendChild(el("span", "app-log-level", level));
      line.appendChild(document.createTextNode(" " + text));
      app.logList.appendChild(line);
      while (app.logList.children.length > MAX_LOG_ENTRIES) app.logList.removeChild(app.logList.firstChild);
      app.logCount += 1;
      app.logSummary.textContent = "App log (" + app.logCount + ")";
      app.log.hidden = false;
      onEvent("log", { level: level, text: text, block: app.block });
    }

    function requestOpenLink(app, id, url) {
      var refused = checkLink(url, ownOrigins);
      if (refused) {
        onEvent("open-link-refused", { url: url, reason: refused, block: app.block });
        reply(app, id, { isError: true });
        return;
      }
      onEvent("open-link-confirm", { url: url, block: app.block });
      Promise.resolve(confirmLink(url)).then(
        function (yes) {
          if (yes) {
            openLink(url);
            onEvent("open-link-opened", { url: url, block: app.block });
          }
          reply(app, id, yes ? {} : { isError: true });
        },
        function () { reply(app, id, { isError: true }); }
      );
    }

    function start(app) {
      // A second press (or a click on the hidden control) never mounts a second copy.
      if (running.indexOf(app) >= 0) return;
      while (running.length >= maxRunning) stop(running[0]);
      var frame = document.createElement("iframe");
      frame.setAttribute("sandbox", "allow-scripts");
      frame.setAttribute("referrerpolicy", "no-referrer");
      frame.setAttribute("title", app.block.title);
      frame.className = "app-frame";
      frame.style.width = "100%";
      frame.style.border = "0";
      frame.style.height = Math.min(150, maxHeight()) + "px";
      frame.src = o.assetURL(app.block.asset_id);
      app.frame = frame;
      app.run.hidden = true;
      app.slot.appendChild(frame);
      app.root.setAttribute("data-state", "running");
      running.push(app);
      onEvent("run", { block: app.block });
    }

    function stop(app) {
      var i = running.indexOf(app);
      if (i < 0) return;
      running.splice(i, 1);
      // Tell the app it is going away; the frame is removed without waiting.
      send(app, { id: "teardown-" + nextRequestId++, method: "ui/resource-teardown", params: {} });
      app.frame.remove();
      app.frame = null;
      app.run.hidden = false;
      app.root.setAttribute("data-state", "stopped");
      onEvent("stop", { block: app.block });
    }

    // mount renders block into container: its title and a Run control (or
    // the fallback where apps cannot run). Nothing of the app loads before
    // Run.
    function mount(container, block) {
      var root = el("section", "app-block");
      root.setAttribute("data-asset", block.asset_id);
      root.appendChild(el("h3", "app-title", block.title));
      if (!canRun) {
        root.setAttribute("data-state", "fallback");
        root.appendChild(el("p", "app-fallback", block.fallback));
        container.appendChild(root);
        return null;
      }
      var run = el("button", "app-run", "Run");
      run.type = "button";
      var slot = el("div", "app-slot");
      var logBox = el("details", "app-log");
      var logSummary = el("summary", "", "App log (0)");
      var logList = el("ol", "app-log-lines");
      logBox.appendChild(logSummary);
      logBox.appendChild(logList);
      logBox.hidden = true; // shown with the first line the app logs
      root.appendChild(run);
      root.appendChild(slot);
      root.appendChild(logBox);
      root.setAttribute("data-state", "idle");
      var app = { block: block, root: root, run: run, slot: slot, frame: null,
        log: logBox, logSummary: logSummary, logList: logList, logCount: 0 };
      run.addEventListener("click", function () { start(app); });
      container.appendChild(root);
      return {
        stop: function () { stop(app); },
        running: function () { return running.indexOf(app) >= 0; },
      };
    }

    return { mount: mount, running: function () { return running.length; } };
  }

  global.MCPHost = { create: create, checkLink: checkLink, supported: supported, PROTOCOL_VERSION: PROTOCOL_VERSION };
})(window);
