import { Fragment } from "react";

/** What the service says of its bot when the console cannot start without it (`bot` beside the error). */
export interface BotTrouble {
  state: string;
  /** What is wrong, e.g. "Telegram refused the bot token (401)". */
  what?: string;
  /** What to do, e.g. "set TELEGRAM_BOT_TOKEN to the token @BotFather gave you, then restart Dock Notify". */
  fix?: string;
}

/** The error codes for which the console shows this page instead of a bare message. */
export const BOT_TROUBLE_CODES = new Set(["bot_token_refused", "telegram_unavailable"]);

/** A sentence's first letter in capitals. */
function sentence(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}${text.endsWith(".") ? "" : "."}`;
}

/** The fix, with the settings it names (TELEGRAM_BOT_TOKEN, …) set as code. */
function Fix({ text }: { text: string }) {
  const parts = sentence(text).split(/\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b/);
  return (
    <>
      {parts.map((part, index) =>
        // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one fixed text, never reordered
        index % 2 === 1 ? <code key={index}>{part}</code> : <Fragment key={index}>{part}</Fragment>,
      )}
    </>
  );
}

/**
 * The console's page while the bot cannot be used (so nobody can sign in): what is wrong and what
 * to set, instead of a blank page with "try again". The fix is for whoever runs Dock Notify.
 */
export function BotProblem({
  code,
  message,
  bot,
  onRetry,
}: {
  code: string;
  message: string;
  bot: BotTrouble | null;
  onRetry: () => void;
}) {
  const title =
    code === "bot_token_refused"
      ? "Telegram refused the bot token"
      : bot?.state === "unreachable"
        ? "Telegram cannot be reached"
        : "The bot is not ready";
  return (
    <section className="panel bot-problem" aria-labelledby="bot-problem-title">
      <h1 id="bot-problem-title">{title}</h1>
      <p role="alert">{bot?.what ? sentence(bot.what) : message}</p>
      <p>Nobody can sign in until Dock Notify's bot works: signing in goes through the bot.</p>
      {bot?.fix && (
        <>
          <h2>What to do</h2>
          <p>
            <Fix text={bot.fix} />
          </p>
          <p className="muted">
            Whoever runs this Dock Notify sets this in its environment (the service's unit, compose file or
            shell). Its log and <code>dock-notify doctor</code> say the same.
          </p>
        </>
      )}
      <div className="actions">
        <button type="button" onClick={onRetry}>
          Try again
        </button>
      </div>
    </section>
  );
}
