/*
 * Ready-to-run code that sends a notification to a Dock, in the languages people send from. Pure
 * functions of the service's address and the Dock's credentials, so the console shows them with a
 * Dock's own values and docs/api.md with placeholders (test/unit/send-snippets.test.ts checks the
 * docs hold exactly what this writes, and runs the ones this machine can run).
 */

export type Endpoint = "ping" | "webhook";

export const LANGUAGES = [
  { id: "curl", label: "curl" },
  { id: "python", label: "Python" },
  { id: "javascript", label: "JavaScript" },
  { id: "go", label: "Go" },
  { id: "powershell", label: "PowerShell" },
  { id: "shell", label: "Shell one-liner" },
] as const;
export type Language = (typeof LANGUAGES)[number]["id"];

export interface SnippetValues {
  /** The service's public address, without a trailing slash. */
  url: string;
  dockId: string;
  secretKey: string;
}

/** What every snippet sends. */
export const SNIPPET_MESSAGE = "Hello from Dock Notify 👋";

/** A value in single quotes for a POSIX shell (a quote inside closed, escaped and reopened). */
const sh = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;
/** A string literal for Python, JavaScript and Go: JSON's escaping is valid in all three. */
const str = (value: string) => JSON.stringify(value);

function pingBody(v: SnippetValues): string {
  return JSON.stringify({ dock_id: v.dockId, secret_key: v.secretKey, msg: SNIPPET_MESSAGE });
}

/** A Go program: the imports both need, `main` around `body` and printing the answer, whatever it is. */
function goMain(body: string[]): string {
  return [
    "package main",
    "",
    "import (",
    '\t"bytes"',
    '\t"encoding/json"',
    '\t"fmt"',
    '\t"io"',
    '\t"net/http"',
    ")",
    "",
    "func main() {",
    ...body,
    "\tif err != nil {",
    "\t\tpanic(err)",
    "\t}",
    "\tdefer response.Body.Close()",
    "\tanswer, _ := io.ReadAll(response.Body)",
    "\tfmt.Println(response.Status, string(answer))",
    "}",
  ].join("\n");
}

/**
 * A Python script: the modules `body` needs besides urllib, then `body`, which makes `request` (a
 * urllib Request); it is sent and the answer printed, a refusal's too (urllib raises on one, and
 * its text says what is wrong).
 */
function python(modules: string[], body: string[]): string {
  return [
    ...[...modules, "urllib.error", "urllib.request"].sort().map((module) => `import ${module}`),
    "",
    ...body,
    "try:",
    "    with urllib.request.urlopen(request) as response:",
    "        print(response.status, response.read().decode())",
    "except urllib.error.HTTPError as error:  # the answer says what is wrong",
    "    print(error.code, error.read().decode())",
  ].join("\n");
}

const WRITERS: Record<Language, Record<Endpoint, (v: SnippetValues) => string>> = {
  curl: {
    ping: (v) =>
      [
        `curl -X POST ${sh(`${v.url}/ping`)} \\`,
        "  -H 'Content-Type: application/json' \\",
        `  -d ${sh(pingBody(v))}`,
      ].join("\n"),
    webhook: (v) =>
      [
        `curl -X POST ${sh(`${v.url}/webhook`)} \\`,
        `  -u ${sh(`${v.dockId}:${v.secretKey}`)} \\`,
        "  -H 'Content-Type: application/json' \\",
        `  -d ${sh(JSON.stringify({ msg: SNIPPET_MESSAGE }))}`,
      ].join("\n"),
  },
  python: {
    ping: (v) =>
      python(
        ["json"],
        [
          "request = urllib.request.Request(",
          `    ${str(`${v.url}/ping`)},`,
          "    data=json.dumps({",
          `        "dock_id": ${str(v.dockId)},`,
          `        "secret_key": ${str(v.secretKey)},`,
          `        "msg": ${str(SNIPPET_MESSAGE)},`,
          "    }).encode(),",
          '    headers={"Content-Type": "application/json"},',
          ")",
        ],
      ),
    webhook: (v) =>
      python(
        ["base64", "json"],
        [
          `credentials = base64.b64encode(${str(`${v.dockId}:${v.secretKey}`)}.encode()).decode()`,
          "request = urllib.request.Request(",
          `    ${str(`${v.url}/webhook`)},`,
          `    data=json.dumps({"msg": ${str(SNIPPET_MESSAGE)}}).encode(),`,
          '    headers={"Content-Type": "application/json", "Authorization": f"Basic {credentials}"},',
          ")",
        ],
      ),
  },
  javascript: {
    ping: (v) =>
      [
        `const response = await fetch(${str(`${v.url}/ping`)}, {`,
        '  method: "POST",',
        '  headers: { "Content-Type": "application/json" },',
        "  body: JSON.stringify({",
        `    dock_id: ${str(v.dockId)},`,
        `    secret_key: ${str(v.secretKey)},`,
        `    msg: ${str(SNIPPET_MESSAGE)},`,
        "  }),",
        "});",
        "console.log(response.status, await response.json());",
      ].join("\n"),
    webhook: (v) =>
      [
        `const response = await fetch(${str(`${v.url}/webhook`)}, {`,
        '  method: "POST",',
        "  headers: {",
        '    "Content-Type": "application/json",',
        `    Authorization: \`Basic \${btoa(${str(`${v.dockId}:${v.secretKey}`)})}\`,`,
        "  },",
        `  body: JSON.stringify({ msg: ${str(SNIPPET_MESSAGE)} }),`,
        "});",
        "console.log(response.status, await response.json());",
      ].join("\n"),
  },
  go: {
    ping: (v) =>
      goMain([
        "\tbody, _ := json.Marshal(map[string]string{",
        `\t\t"dock_id":    ${str(v.dockId)},`,
        `\t\t"secret_key": ${str(v.secretKey)},`,
        `\t\t"msg":        ${str(SNIPPET_MESSAGE)},`,
        "\t})",
        `\tresponse, err := http.Post(${str(`${v.url}/ping`)}, "application/json", bytes.NewReader(body))`,
      ]),
    webhook: (v) =>
      goMain([
        `\tbody, _ := json.Marshal(map[string]string{"msg": ${str(SNIPPET_MESSAGE)}})`,
        `\trequest, _ := http.NewRequest("POST", ${str(`${v.url}/webhook`)}, bytes.NewReader(body))`,
        `\trequest.SetBasicAuth(${str(v.dockId)}, ${str(v.secretKey)})`,
        '\trequest.Header.Set("Content-Type", "application/json")',
        "\tresponse, err := http.DefaultClient.Do(request)",
      ]),
  },
  powershell: {
    ping: (v) =>
      [
        "$body = @{",
        `  dock_id    = ${ps(v.dockId)}`,
        `  secret_key = ${ps(v.secretKey)}`,
        `  msg        = ${ps(SNIPPET_MESSAGE)}`,
        "} | ConvertTo-Json",
        `Invoke-RestMethod -Method Post -Uri ${ps(`${v.url}/ping`)} \``,
        '  -ContentType "application/json; charset=utf-8" `',
        "  -Body ([System.Text.Encoding]::UTF8.GetBytes($body))",
      ].join("\n"),
    webhook: (v) =>
      [
        `$credentials = [Convert]::ToBase64String([System.Text.Encoding]::UTF8.GetBytes(${ps(`${v.dockId}:${v.secretKey}`)}))`,
        `$body = @{ msg = ${ps(SNIPPET_MESSAGE)} } | ConvertTo-Json`,
        `Invoke-RestMethod -Method Post -Uri ${ps(`${v.url}/webhook`)} \``,
        '  -Headers @{ Authorization = "Basic $credentials" } `',
        '  -ContentType "application/json; charset=utf-8" `',
        "  -Body ([System.Text.Encoding]::UTF8.GetBytes($body))",
      ].join("\n"),
  },
  shell: {
    // With wget, for machines without curl (minimal images); an error's answer is printed too.
    ping: (v) =>
      `wget -qO- --content-on-error --header='Content-Type: application/json' --post-data=${sh(pingBody(v))} ${sh(`${v.url}/ping`)}`,
    // Any command's output becomes the message (the raw body is the text); a refusal prints the
    // service's answer and fails the pipeline.
    webhook: (v) =>
      `echo "Backup finished on $(hostname)" | curl -sS --fail-with-body -u ${sh(`${v.dockId}:${v.secretKey}`)} -H 'Content-Type: text/plain' --data-binary @- ${sh(`${v.url}/webhook`)}`,
  },
};

/** A PowerShell string literal: single quotes, a quote inside doubled. */
function ps(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** The code that sends SNIPPET_MESSAGE to the Dock through `endpoint`, in `language`. */
export function sendSnippet(language: Language, endpoint: Endpoint, values: SnippetValues): string {
  return WRITERS[language][endpoint](values);
}
