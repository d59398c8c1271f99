/** Quotes a value for a POSIX shell: single quotes, with any single quote closed, escaped and reopened. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Ready-to-run commands for a Dock, named as the console API's `examples` names them. */
export interface CurlExamples {
  /** Send, credentials in the JSON body. */
  ping: string;
  /** Send, credentials in HTTP Basic authentication. */
  webhook: string;
  /** Send with a key: a later send with the same key edits that message in place. */
  replace: string;
  /** Edit a sent message; `<MESSAGE_ID>` is the `message_id` its send answered. */
  edit: string;
  /** Delete a sent message from every chat. */
  delete: string;
  /** Send with an Acknowledge button. */
  ack: string;
}

/** Where a command names the message to change: the `message_id` a send answered. */
export const MESSAGE_ID_PLACEHOLDER = "<MESSAGE_ID>";

/**
 * Ready-to-run `curl` commands for a Dock, with its real credentials — one per send endpoint, and
 * one each to send with a key, edit, delete and ask for an acknowledgement — so an owner can paste
 * one into a terminal without reading the API reference.
 */
export function curlExamples(
  publicUrl: string,
  dockId: string,
  secretKey: string,
  msg = "Hello from Dock Notify 👋",
): CurlExamples {
  const body = JSON.stringify({ dock_id: dockId, secret_key: secretKey, msg });
  const user = `  -u ${shellQuote(`${dockId}:${secretKey}`)}`;
  const json = "  -H 'Content-Type: application/json' \\";
  const messageUrl = shellQuote(`${publicUrl}/messages/${MESSAGE_ID_PLACEHOLDER}`);
  /** A POST to /webhook with this JSON body. */
  const webhook = (fields: Record<string, unknown>) =>
    [
      `curl -X POST ${shellQuote(`${publicUrl}/webhook`)} \\`,
      `${user} \\`,
      json,
      `  -d ${shellQuote(JSON.stringify(fields))}`,
    ].join("\n");
  return {
    ping: [
      `curl -X POST ${shellQuote(`${publicUrl}/ping`)} \\`,
      "  -H 'Content-Type: application/json' \\",
      `  -d ${shellQuote(body)}`,
    ].join("\n"),
    webhook: webhook({ msg }),
    replace: webhook({ msg: "Deploy started", key: "deploy" }),
    edit: [
      `curl -X PATCH ${messageUrl} \\`,
      `${user} \\`,
      json,
      `  -d ${shellQuote(JSON.stringify({ msg: "Deploy finished" }))}`,
    ].join("\n"),
    delete: [`curl -X DELETE ${messageUrl} \\`, user].join("\n"),
    ack: webhook({ msg: "Disk almost full on db-1", ack: true }),
  };
}
