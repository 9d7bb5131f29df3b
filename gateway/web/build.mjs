// Builds the explorer and the account dashboard into dist/ (committed, embedded by the gateway with go:embed):
// app.js and app.css bundled and minified by esbuild, the favicon and the world map
// (world-atlas countries-110m TopoJSON) copied (the gateway embeds index.html and
// account.html from beside this file), and SOURCES.sha256 listing the hash of every
// source file, so the gateway's Go test (sources_test.go) fails when dist/ is older than
// its sources. Run by `make web` (npm ci first).
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));
const dist = join(root, "dist");

// sourceFiles must match sourceFiles in sources_test.go: everything the bundle is made of.
export function sourceFiles() {
  const out = ["account.html", "build.mjs", "index.html", "package.json", "package-lock.json", "tsconfig.json"];
  const walk = (dir) => {
    for (const name of readdirSync(join(root, dir))) {
      const rel = dir + "/" + name;
      if (statSync(join(root, rel)).isDirectory()) walk(rel);
      else out.push(rel);
    }
  };
  walk("src");
  return out.sort();
}

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
await build({
  entryPoints: { app: join(root, "src/main.ts"), account: join(root, "src/account/main.ts") },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022"],
  outdir: dist,
  legalComments: "linked",
  logLevel: "warning",
  charset: "utf8",
});
copyFileSync(join(root, "src/favicon.svg"), join(dist, "favicon.svg"));
copyFileSync(join(root, "node_modules/world-atlas/countries-110m.json"), join(dist, "countries-110m.json"));

const lines = sourceFiles().map((rel) => {
  const sum = createHash("sha256").update(readFileSync(join(root, rel))).digest("hex");
  return `${sum}  ${rel}\n`;
});
writeFileSync(join(dist, "SOURCES.sha256"), lines.join(""));
for (const f of readdirSync(dist)) {
  console.log(`${relative(root, join(dist, f))}\t${statSync(join(dist, f)).size} bytes`);
}
