// A third-party MCP Apps host (not appruntime's): it connects to an MCP
// server at /mcp (the test's proxy adds the agent's token and task header,
// as an agent platform's backend would), finds the tool whose tools/list
// entry names a ui:// resource, reads that resource, calls the tool, and
// renders the app in <iframe sandbox="allow-scripts" srcdoc> under the CSP
// the resource's _meta.ui.csp asks for, speaking the MCP Apps bridge with
// the published AppBridge. window.hostLog records what happened.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { AppBridge, PostMessageTransport, RESOURCE_MIME_TYPE, getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";

const log = (window.hostLog = []);
const say = (entry) => {
  log.push(entry);
  document.getElementById("log").textContent = JSON.stringify(log, null, 1);
};

// cspOf is the policy a host puts on the app's document from _meta.ui.csp.
function cspOf(csp) {
  const list = (l) => (l && l.length ? l.join(" ") : "");
  const res = list(csp?.resourceDomains);
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${res}`,
    `style-src 'unsafe-inline' ${res}`,
    `img-src data: blob: ${res}`,
    `font-src ${res || "'none'"}`,
    `connect-src ${list(csp?.connectDomains) || "'none'"}`,
    `frame-src ${list(csp?.frameDomains) || "'none'"}`,
    "base-uri 'none'",
  ].join("; ");
}

async function main() {
  const client = new Client({ name: "third-party-host", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  const { tools } = await client.listTools();
  const tool = tools.find((t) => getToolUiResourceUri(t));
  const uri = getToolUiResourceUri(tool);
  say({ step: "tools/list", tool: tool.name, uri });

  const { contents } = await client.readResource({ uri });
  const content = contents[0];
  if (content.mimeType !== RESOURCE_MIME_TYPE) throw new Error("not an MCP App: " + content.mimeType);
  const csp = content._meta?.ui?.csp;
  say({ step: "resources/read", mimeType: content.mimeType, csp });

  const args = { report_id: 59137 };
  const result = await client.callTool({ name: tool.name, arguments: args });
  say({ step: "tools/call", isError: !!result.isError, text: result.content?.[0]?.text, hasSession: !!result._meta?.["appruntime/session"] });

  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.id = "app";
  document.body.append(iframe);
  const bridge = new AppBridge(client, { name: "third-party-host", version: "1.0.0" }, { openLinks: {}, serverTools: {} });
  bridge.onsizechange = ({ height }) => {
    if (height) iframe.style.height = Math.min(height, 800) + "px";
  };
  bridge.oninitialized = async () => {
    say({ step: "initialized", app: bridge.getAppVersion()?.name });
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  const policy = `<meta http-equiv="Content-Security-Policy" content="${cspOf(csp).replaceAll('"', "&quot;")}">`;
  iframe.srcdoc = content.text.replace(/<head[^>]*>/i, (m) => m + policy);
}

main().catch((err) => say({ step: "error", message: String(err && err.stack ? err.stack : err) }));
