import { BUILT_IN_FORMATS } from "./formats.ts";
import { HOOK_TOKEN_PLACEHOLDER, type SettingsTarget, shellQuote, yamlString } from "./settings.ts";

/**
 * Ready-to-paste settings for the tools people already run, filled with a Dock's real URL and
 * credentials: what the console's Integrations section shows and docs/integrations.md explains.
 * Each is what the tool's own settings screen or file asks for, so nothing has to be translated.
 * A format's own settings are in its file (InboundFormat.settings); two more are not a format's:
 * Home Assistant sends our own message, and "template" is the Dock's own.
 */

/** Settings for one tool. */
export interface Snippet {
  /** The inbound format it sends (`/webhook/<format>`), or `message` for our own message body. */
  format: string;
  /** As people know the tool. */
  tool: string;
  /** Where it goes, in the tool's own words. */
  where: string;
  /** What to paste: a file's lines, a form's fields, or a command. */
  text: string;
  /**
   * Needs the Dock's hook token (a URL-only credential) and the Dock has none: `text` then shows
   * `<HOOK_TOKEN>`, and the owner creates one first.
   */
  needsHookToken: boolean;
}

/**
 * Every tool's settings for a Dock: the built-in formats' in their registry's order, then Home
 * Assistant's and the template's. `hookToken` null: the URL-only snippets show
 * HOOK_TOKEN_PLACEHOLDER and say so (`needsHookToken`).
 */
export function integrationSnippets(input: {
  publicUrl: string;
  dockId: string;
  secretKey: string;
  hookToken: string | null;
}): Snippet[] {
  const base = input.publicUrl.replace(/\/$/, "");
  const { dockId, secretKey } = input;
  const hookTokenMissing = input.hookToken === null;
  const hook = `${base}/hook/${input.hookToken ?? HOOK_TOKEN_PLACEHOLDER}`;
  const target: SettingsTarget = { base, dockId, secretKey, hook, hookTokenMissing };
  const formats = BUILT_IN_FORMATS.map((format): Snippet => {
    const { usesHookUrl, ...settings } = format.settings(target);
    return { format: format.name, ...settings, needsHookToken: usesHookUrl && hookTokenMissing };
  });
  return [
    ...formats,
    {
      format: "message",
      tool: "Home Assistant",
      where: "configuration.yaml: a RESTful notifier (then call notify.dock_notify)",
      text: [
        "notify:",
        "  - name: dock_notify",
        "    platform: rest",
        `    resource: ${yamlString(hook)}`,
        "    method: POST_JSON",
        "    message_param_name: msg",
        "    title_param_name: title",
      ].join("\n"),
      needsHookToken: hookTokenMissing,
    },
    {
      format: "template",
      tool: "Your own payload (the Dock's template)",
      where: "Any tool that posts JSON: the Dock's template turns it into the message",
      text: [
        `curl -X POST ${shellQuote(`${base}/webhook/template`)} \\`,
        `  -u ${shellQuote(`${dockId}:${secretKey}`)} \\`,
        "  -H 'Content-Type: application/json' \\",
        `  -d ${shellQuote(JSON.stringify({ status: "firing", name: "disk", value: 97 }))}`,
      ].join("\n"),
      needsHookToken: false,
    },
  ];
}
