// Builds app.html: src/app.js and its dependencies bundled by esbuild into
// one inline script of src/index.html, so the app is one self-contained
// HTML file (what an agent uploads as an asset). Run: npm ci && npm run build
import { build } from "esbuild";
import { readFile, writeFile } from "node:fs/promises";

const result = await build({
  entryPoints: ["src/app.js"],
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2020",
  minify: true,
  legalComments: "none",
  write: false,
  logLevel: "warning",
});
// "</script" inside the bundle would end the inline script early.
const js = result.outputFiles[0].text.replaceAll("</script", "<\\/script");
const template = await readFile("src/index.html", "utf8");
if (!template.includes("/*APP_BUNDLE*/")) throw new Error("src/index.html lacks the /*APP_BUNDLE*/ marker");
await writeFile("app.html", template.replace("/*APP_BUNDLE*/", () => js));
console.log(`app.html: ${Buffer.byteLength(template) + Buffer.byteLength(js)} bytes`);
