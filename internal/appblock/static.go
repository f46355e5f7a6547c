package appblock

import "embed"

// Static holds the browser side of app blocks for the host pages to serve:
// static/mcphost.js, the MCP Apps host (MCPHost.create, MCPHost.checkLink).
//
//go:embed static
var Static embed.FS
