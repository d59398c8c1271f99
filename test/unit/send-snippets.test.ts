import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type Endpoint, LANGUAGES, sendSnippet } from "../../web/src/dock/send-snippets.ts";

const ENDPOINTS: Endpoint[] = ["ping", "webhook"];
const hasGofmt = (() => {
  try {
    execFileSync("sh", ["-c", "command -v gofmt"]);
    return true;
  } catch {
    return Boolean(process.env.CI);
  }
})();
const PLACEHOLDERS = { url: "https://notify.example.com", dockId: "<DOCK_ID>", secretKey: "<SECRET_KEY>" };

describe("the console's send snippets", () => {
  it("docs/api.md shows exactly what the console shows, for every language and endpoint", () => {
    const docs = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
    for (const { id } of LANGUAGES) {
      for (const endpoint of ENDPOINTS) {
        expect(docs, `${id} ${endpoint}`).toContain(`\n${sendSnippet(id, endpoint, PLACEHOLDERS)}\n\`\`\``);
      }
    }
  });

  // The ID and key are [A-Za-z0-9_]; the URL is the owner's PUBLIC_URL and may hold anything a URL may.
  const awkward = {
    url: 'https://host.example/it\'s/a "path"\\$HOME`x`',
    dockId: "ID",
    secretKey: "dnsk_key",
  };

  it("shell code quotes an awkward URL so the shell passes it on unchanged", () => {
    for (const language of ["curl", "shell"] as const) {
      for (const endpoint of ENDPOINTS) {
        const code = sendSnippet(language, endpoint, awkward);
        // The shell parses it; echoing its arguments instead of sending shows the URL arrives whole.
        const echoed = execFileSync(
          "bash",
          ["-c", `curl() { printf '%s\\n' "$@"; }; wget() { printf '%s\\n' "$@"; }; ${code}`],
          {
            encoding: "utf8",
            env: { ...process.env, PATH: "/usr/bin:/bin" },
          },
        );
        expect(echoed.split("\n"), `${language} ${endpoint}`).toContain(`${awkward.url}/${endpoint}`);
      }
    }
  });

  it("Python code is valid Python with the awkward URL as a string", () => {
    for (const endpoint of ENDPOINTS) {
      const code = sendSnippet("python", endpoint, awkward);
      const urls = execFileSync(
        "python3",
        [
          "-c",
          "import ast, sys; print('\\n'.join(n.value for n in ast.walk(ast.parse(sys.stdin.read())) if isinstance(n, ast.Constant) and isinstance(n.value, str)))",
        ],
        { input: code, encoding: "utf8" },
      );
      expect(urls.split("\n")).toContain(`${awkward.url}/${endpoint}`);
    }
  });

  it.skipIf(!hasGofmt)("Go code is valid, formatted Go", () => {
    for (const endpoint of ENDPOINTS) {
      const code = sendSnippet("go", endpoint, awkward);
      // gofmt -l names a file it would change; -e reports every syntax error.
      const unformatted = execFileSync("gofmt", ["-e", "-l"], { input: `${code}\n`, encoding: "utf8" });
      expect(unformatted.trim(), endpoint).toBe("");
    }
  });

  it("JavaScript code is a valid module", () => {
    for (const endpoint of ENDPOINTS) {
      const code = sendSnippet("javascript", endpoint, awkward);
      execFileSync(process.execPath, ["--check", "--input-type=module"], { input: code });
    }
  });
});
