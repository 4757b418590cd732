// Tokenize .craft files with the committed TextMate grammar, the way VS Code does
// (vscode-textmate + the Oniguruma regex engine VS Code ships).
//
//   node editors/tokenize.mjs FILE...   ->  JSON on stdout:
//   {"FILE": [[line, startColumn, endColumn, "scope scope ..."], ...], ...}
//
// Lines and columns are 0-based; a file that makes the tokenizer throw exits 1.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const wasm = readFileSync(join(dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));

const grammarPath = join(here, "textmate", "craft.tmLanguage.json");
const registry = new vsctm.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (sources) => new oniguruma.OnigScanner(sources),
    createOnigString: (text) => new oniguruma.OnigString(text),
  }),
  loadGrammar: async (scopeName) =>
    scopeName === "source.craft"
      ? vsctm.parseRawGrammar(readFileSync(grammarPath, "utf8"), grammarPath)
      : null,
});
const grammar = await registry.loadGrammar("source.craft");

const out = {};
for (const file of process.argv.slice(2)) {
  const lines = readFileSync(file, "utf8").split(/\r?\n/);
  let state = vsctm.INITIAL;
  const tokens = [];
  lines.forEach((line, index) => {
    const result = grammar.tokenizeLine(line, state, 1000);
    for (const token of result.tokens) {
      tokens.push([index, token.startIndex, Math.min(token.endIndex, line.length), token.scopes.join(" ")]);
    }
    state = result.ruleStack;
  });
  out[file] = tokens;
}
process.stdout.write(JSON.stringify(out));
