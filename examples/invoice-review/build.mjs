// Builds dist/invoice-review.html, the one file uploaded as a bundle
// version: esbuild bundles src/main.ts with the SDK into one ES module, and
// this script inlines it into src/index.html (a bundle's CSP allows inline
// scripts: docs/bundle-authors.md#from-an-empty-directory-to-an-approved-task).
import { build } from "esbuild";
import { mkdir, readFile, writeFile } from "node:fs/promises";

const out = await build({
  entryPoints: ["src/main.ts"],
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  legalComments: "none",
  write: false,
});
const js = out.outputFiles[0].text.replaceAll("</script", "<\\/script");
const page = await readFile("src/index.html", "utf8");
if (!page.includes("/*BUNDLE*/")) throw new Error("src/index.html has no /*BUNDLE*/ slot");
await mkdir("dist", { recursive: true });
const html = page.replace("/*BUNDLE*/", () => js);
await writeFile("dist/invoice-review.html", html);
console.log(`dist/invoice-review.html: ${html.length} bytes`);
