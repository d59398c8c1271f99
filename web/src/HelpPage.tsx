import type { InfoAnswer } from "./api.ts";

/** Where the API reference and the bot are, and the whole path in four steps. */
export function HelpPage({ info }: { info: InfoAnswer }) {
  return (
    <section className="panel" aria-labelledby="help-title">
      <h1 id="help-title">API &amp; bot</h1>
      <h2>The bot</h2>
      <p>
        People receive notifications from{" "}
        <a href={info.bot_link} target="_blank" rel="noopener">
          @{info.bot_username}
        </a>
        {info.sandbox && " (the built-in Telegram sandbox: no bot token is configured)"}. They subscribe by
        pressing a Dock's <strong>Open in Telegram</strong> link, or by sending the bot a Dock ID.
      </p>
      <h2>The API</h2>
      <p>
        Applications send with <code>POST {info.api_base_url}/ping</code> (credentials in the JSON body) or{" "}
        <code>POST {info.api_base_url}/webhook</code> (credentials in HTTP Basic authentication). Each Dock
        card has ready-to-run <code>curl</code> commands.
      </p>
      <p>
        <a className="button" href={info.docs_url}>
          Open the API reference
        </a>
      </p>
      <h2>From nothing to a notification</h2>
      <ol>
        <li>Create a Dock.</li>
        <li>
          Press <strong>Open in Telegram</strong> on its card and answer <strong>Yes</strong>.
        </li>
        <li>Run the card's curl command, or press Send test message.</li>
        <li>The message arrives in Telegram, and the card shows it as sent.</li>
      </ol>
    </section>
  );
}
