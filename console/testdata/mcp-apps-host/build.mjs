// Builds host.js: src/host.js and the published packages it imports
// (@modelcontextprotocol/ext-apps's AppBridge, @modelcontextprotocol/client)
// bundled by esbuild into one script the test page loads.
// Run: npm ci && npm run build
import { build } from "esbuild";

await build({
  entryPoints: ["src/host.js"],
  outfile: "host.js",
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});
console.log("host.js built");
