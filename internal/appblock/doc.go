// Package appblock is seed 004 in appruntime's terms (docs/architecture.md#10-seeds-003-and-004): an agent's final reply may carry app blocks, each an MCP
// App (SEP-1865) the agent uploaded as an HTML asset, run by the host page
// only after the person clicks Run, in a sandbox with no network.
//
//   - ParseReply validates a reply {final, blocks}: app blocks only when
//     final, seed 004's field bounds, tool_input and tool_result at most
//     32768 bytes of compact JSON together, the asset the replying agent's;
//     every refusal is one invalid_blocks error with a reason per block.
//   - NewAssetID, IsAssetID and CheckAsset are the asset rules: ast_ and a
//     ULID, text/html declared and sniffed, at most 4 MiB.
//   - AssetCSP and AssetHeaders are what an asset is served with: no
//     network, inline scripts, styles and images only, no fonts, sandboxed.
//   - CheckOpenLink is the ui/open-link policy: https, not an IP address,
//     not localhost, not our own origins.
//   - Static embeds static/mcphost.js, the host side of the protocol that
//     the console and reviewer pages load.
//
// testdata/mcp-app is a real MCP App built from the published
// @modelcontextprotocol/ext-apps package into one HTML file (app.html,
// committed; `npm ci && npm run build` rebuilds it); the browser test runs
// it under the host module and the asset policy in Chromium.
package appblock
