/** Quotes a value for a POSIX shell: single quotes, with any single quote closed, escaped and reopened. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * Ready-to-run `curl` commands for a Dock, one per send endpoint, so an owner can paste one into a
 * terminal and get a notification without reading the API reference.
 */
export function curlExamples(
  publicUrl: string,
  dockId: string,
  secretKey: string,
  msg = "Hello from Dock Notify 👋",
): { ping: string; webhook: string } {
  const body = JSON.stringify({ dock_id: dockId, secret_key: secretKey, msg });
  return {
    ping: [
      `curl -X POST ${shellQuote(`${publicUrl}/ping`)} \\`,
      "  -H 'Content-Type: application/json' \\",
      `  -d ${shellQuote(body)}`,
    ].join("\n"),
    webhook: [
      `curl -X POST ${shellQuote(`${publicUrl}/webhook`)} \\`,
      `  -u ${shellQuote(`${dockId}:${secretKey}`)} \\`,
      "  -H 'Content-Type: application/json' \\",
      `  -d ${shellQuote(JSON.stringify({ msg }))}`,
    ].join("\n"),
  };
}
