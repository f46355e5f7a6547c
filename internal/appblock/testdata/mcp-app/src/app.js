// The fixture MCP App: a View built on the published
// @modelcontextprotocol/ext-apps App class, exercising what a host must
// handle (SEP-1865): the ui/initialize handshake, the tool-input and
// tool-result notifications, ui/open-link, ui/message, tools/call and
// size-changed notifications. It also tries the network, which the asset's
// content security policy must refuse.
import { App, PostMessageTransport } from "@modelcontextprotocol/ext-apps";

const $ = (id) => document.getElementById(id);
const show = (id, text) => {
  $(id).textContent = text;
};

// The link the "Open link" button asks for; tool_input.link replaces it.
let link = "https://example.com/";

const app = new App({ name: "appruntime-fixture", version: "1.0.0" }, {});

app.ontoolinput = (params) => {
  const args = params.arguments ?? {};
  if (typeof args.link === "string") link = args.link;
  show("input", "input: " + JSON.stringify(args));
};

app.ontoolresult = (result) => {
  const text = (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
  show("result", text);
  if (result.structuredContent) show("structured", "structured: " + JSON.stringify(result.structuredContent));
};

// A refused fetch rejects with a TypeError that does not say why; the
// policy's violation event does.
document.addEventListener("securitypolicyviolation", (e) => {
  if (e.effectiveDirective === "connect-src") show("fetch-status", "fetch: blocked by CSP (" + e.effectiveDirective + ")");
});

$("fetch").addEventListener("click", async () => {
  show("fetch-status", "fetch: trying");
  try {
    const res = await fetch("https://example.com/");
    show("fetch-status", "fetch: allowed (" + res.status + ")");
  } catch (err) {
    if (!$("fetch-status").textContent.includes("CSP")) show("fetch-status", "fetch: failed: " + err.message);
  }
});

$("open").addEventListener("click", async () => {
  show("open-status", "open-link: asking for " + link);
  try {
    const res = await app.openLink({ url: link });
    show("open-status", "open-link: " + (res.isError ? "refused" : "opened") + " " + link);
  } catch (err) {
    show("open-status", "open-link: error " + err.message);
  }
});

$("message").addEventListener("click", async () => {
  try {
    const res = await app.sendMessage({ role: "user", content: [{ type: "text", text: "Hello from the app" }] });
    show("message-status", "message: " + (res.isError ? "refused" : "accepted"));
  } catch (err) {
    show("message-status", "message: error " + err.message);
  }
});

$("tool").addEventListener("click", async () => {
  try {
    await app.callServerTool({ name: "get_time", arguments: {} });
    show("tool-status", "tools/call: answered");
  } catch (err) {
    show("tool-status", "tools/call: refused: " + err.message);
  }
});

$("grow").addEventListener("click", () => {
  $("spacer").style.height = "2000px";
});

const reportSize = () => show("size", "size: " + document.documentElement.scrollHeight + "px");
new ResizeObserver(reportSize).observe(document.documentElement);

app
  .connect(new PostMessageTransport(window.parent, window.parent))
  .then(() => {
    const host = app.getHostVersion();
    show("status", "connected to " + (host ? host.name : "a host"));
    reportSize();
  })
  .catch((err) => show("status", "connect failed: " + err.message));
