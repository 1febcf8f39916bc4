// Serve many dsh oracle requests from one Node process.
//
// `node oracle.mjs CMD FILE` pays Node's start-up (about a quarter of a second) on every
// call; the differential tests make thousands of calls. This driver loads the oracle's
// text once, at run time, from the shared directory (nothing of it is copied here), and
// evaluates it as the body of a factory function. Each request calls the factory afresh,
// so the oracle's module-level state (it remembers a placeholder cwd and tool list per
// file) starts clean, exactly as in a new `node oracle.mjs` process; the compiled code is
// shared, so a request costs only the oracle's own work.
//
// Usage: node oracle_driver.mjs [ORACLE_MJS]   (default: $DSHLOG_SHARED/oracle/oracle.mjs,
// else ../../../shared/oracle/oracle.mjs relative to this file)
//
// Protocol: one JSON object per line on stdin, {"id": ANY, "argv": ["migrate", FILE, ...]};
// one JSON object per line on stdout, {"id", "exit", "stdout", "stderr"} with what the
// oracle's `main(argv)` returned and wrote, or {"id", "crash"} when it threw. The first
// line written is {"ready": true, "oracle": PATH, "sha256": HEX}.

import * as fs from "node:fs";
import * as nodePath from "node:path";
import * as crypto from "node:crypto";
import * as util from "node:util";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

const MODULES = { "node:fs": fs, "node:path": nodePath, "node:crypto": crypto, "node:util": util };

function defaultOraclePath() {
  if (process.env.DSHLOG_SHARED) return nodePath.join(process.env.DSHLOG_SHARED, "oracle", "oracle.mjs");
  const here = nodePath.dirname(fileURLToPath(import.meta.url));
  return nodePath.resolve(here, "..", "..", "..", "shared", "oracle", "oracle.mjs");
}

// The oracle is one ES module whose only module syntax is `import {a, b as c} from "node:x"`
// lines and a last line that runs main on process.argv. Turn it into a function body that
// takes `process` and the imported modules and returns `main`; refuse anything else, so a
// changed bundle fails loudly instead of being evaluated wrongly.
function compileOracle(text, filename) {
  const IMPORT = /^import \{([^}]*)\} from "(node:[a-z_]+)";$/gm;
  let body = text.replace(IMPORT, (_line, names, mod) => {
    if (!(mod in MODULES)) throw new Error(`oracle imports ${mod}, which the driver does not provide`);
    const fields = names.split(",").map((n) => n.trim()).filter(Boolean).map((n) => {
      const m = /^(\w+)(?: as (\w+))?$/.exec(n);
      if (!m) throw new Error(`cannot read import specifier ${JSON.stringify(n)}`);
      return m[2] ? `${m[1]}: ${m[2]}` : m[1];
    });
    return `const { ${fields.join(", ")} } = __modules[${JSON.stringify(mod)}];`;
  });
  if (/^\s*(import|export)\b/m.test(body) || /\bimport\.meta\b/.test(body)) {
    throw new Error("oracle uses module syntax the driver does not handle");
  }
  const RUN = "process.exitCode = main(process.argv.slice(2));";
  const at = body.lastIndexOf(RUN);
  if (at < 0 || body.slice(at + RUN.length).trim() !== "") throw new Error("oracle does not end by running main");
  body = body.slice(0, at) + "return main;\n";
  // ES modules are strict; keep the oracle's code strict too. The wrapper adds two lines
  // before the oracle's first, so stack traces are offset by 2.
  const source = `(function (process, __modules) {\n"use strict";\n${body}})`;
  return new vm.Script(source, { filename }).runInThisContext();
}

function fakeProcess(argv, out, err) {
  return {
    argv: [process.argv[0], "oracle.mjs", ...argv],
    env: process.env,
    exitCode: undefined,
    stdout: { write: (s) => (out.push(String(s)), true) },
    stderr: { write: (s) => (err.push(String(s)), true) },
  };
}

function serve(factory, request) {
  const argv = request.argv;
  if (!Array.isArray(argv) || !argv.every((a) => typeof a === "string")) {
    return { id: request.id, crash: "request argv must be an array of strings" };
  }
  const out = [];
  const err = [];
  try {
    const main = factory(fakeProcess(argv, out, err), MODULES);
    const exit = main(argv);
    return { id: request.id, exit, stdout: out.join(""), stderr: err.join("") };
  } catch (error) {
    return { id: request.id, crash: error instanceof Error ? String(error.stack) : String(error) };
  }
}

const oraclePath = nodePath.resolve(process.argv[2] ?? defaultOraclePath());
const text = fs.readFileSync(oraclePath, "utf8");
const factory = compileOracle(text, oraclePath);
const write = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
write({ ready: true, oracle: oraclePath, sha256: crypto.createHash("sha256").update(text).digest("hex") });

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (line.trim() === "") continue;
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    write({ id: null, crash: `unparsable request: ${error.message}` });
    continue;
  }
  write(serve(factory, request));
}
