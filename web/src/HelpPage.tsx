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
        <code>POST {info.api_base_url}/webhook</code> (credentials in HTTP Basic authentication). Each Dock's{" "}
        <strong>Send</strong> section has code ready to run in curl, Python, JavaScript, Go, PowerShell and
        the shell.
      </p>
      <p>
        <a className="button" href={info.docs_url}>
          Open the API reference
        </a>
      </p>
      <h2>From nothing to a notification</h2>
      <ol>
        <li>
          Press <strong>New Dock</strong> and create one.
        </li>
        <li>
          On its page, press <strong>Open in Telegram</strong> and answer <strong>Yes</strong>.
        </li>
        <li>
          Press <strong>Send test message</strong>, or copy its code with <strong>Copy with key</strong> and
          run it.
        </li>
        <li>The message arrives in Telegram, and the Dock's Messages show it as sent.</li>
      </ol>
    </section>
  );
}
