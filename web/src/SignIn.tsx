import { useEffect, useRef, useState } from "react";
import { api, type Info } from "./api.ts";

interface Pending {
  link: string;
  qr_svg: string;
  expires_at: number;
}

type CheckState = "pending" | "confirmed" | "signed_in" | "declined" | "expired" | "used" | "none";

/** How often the page asks whether the bot has confirmed the sign-in. */
const CHECK_EVERY_MS = 1000;

/** Telegram's Login Widget, in redirect mode: offered when the service has a login domain. */
function LoginWidget({ botUsername, authUrl }: { botUsername: string; authUrl: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const script = document.createElement("script");
    script.src = "https://telegram.org/js/telegram-widget.js?22";
    script.async = true;
    script.dataset.telegramLogin = botUsername;
    script.dataset.size = "large";
    script.dataset.authUrl = authUrl;
    box.current?.replaceChildren(script);
  }, [botUsername, authUrl]);
  return <div ref={box} className="widget" />;
}

/**
 * Sign in with Telegram: the service makes a single-use link to the bot; the person presses Yes
 * there; this page notices by asking every second and then has a session.
 */
export function SignIn({ info, onSignedIn }: { info: Info; onSignedIn: () => void }) {
  const [pending, setPending] = useState<Pending | null>(null);
  const [state, setState] = useState<CheckState | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const widgetFailed = new URLSearchParams(window.location.search).get("sign_in") === "failed";

  const start = async () => {
    setBusy(true);
    setError(null);
    try {
      setPending(await api<Pending>("POST", "/sign-in"));
      setState("pending");
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    if (!pending || state !== "pending") return;
    let stopped = false;
    const timer = window.setInterval(async () => {
      try {
        const answer = await api<{ state: CheckState }>("POST", "/sign-in/check");
        if (stopped) return;
        if (answer.state === "signed_in") onSignedIn();
        else if (answer.state !== "pending") setState(answer.state);
      } catch (e) {
        if (!stopped) setError((e as Error).message);
      }
    }, CHECK_EVERY_MS);
    return () => {
      stopped = true;
      window.clearInterval(timer);
    };
  }, [pending, state, onSignedIn]);

  return (
    <section className="panel sign-in" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in to Dock Notify</h1>
      <p>
        Dock Notify sends notifications from your applications to people on Telegram. You sign in with your
        Telegram account: the bot asks you to confirm, and that is all.
      </p>
      {widgetFailed && (
        <p className="error" role="alert">
          Telegram's sign-in could not be verified. Try again.
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {!pending || state !== "pending" ? (
        <>
          {state === "declined" && (
            <p role="alert">The sign-in was declined in Telegram (No was pressed). Start again.</p>
          )}
          {state === "expired" && <p role="alert">That sign-in link expired. Start again.</p>}
          {state === "used" && <p role="alert">That sign-in link was already used. Start again.</p>}
          <button type="button" className="primary" onClick={start} disabled={busy}>
            Sign in with Telegram
          </button>
          {info.login_widget && (
            <>
              <p className="muted">or use Telegram's login button:</p>
              <LoginWidget
                botUsername={info.login_widget.bot_username}
                authUrl={info.login_widget.auth_url}
              />
            </>
          )}
        </>
      ) : (
        <div className="pending">
          <ol>
            <li>
              Open the bot:{" "}
              <a className="button primary" href={pending.link} target="_blank" rel="noopener">
                Open Telegram to confirm
              </a>
            </li>
            <li>
              Press <strong>Yes</strong> in the chat with @{info.bot_username}.
            </li>
            <li>This page signs you in by itself.</li>
          </ol>
          <figure>
            <img
              className="qr"
              src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(pending.qr_svg)}`}
              alt="QR code of the sign-in link: scan it with your phone's camera to open Telegram"
              width={200}
              height={200}
            />
            <figcaption>On another device? Scan this with your phone.</figcaption>
          </figure>
          <p className="muted" role="status">
            Waiting for your confirmation in Telegram… The link works once and expires at{" "}
            {new Date(pending.expires_at).toLocaleTimeString()}.
          </p>
          {info.sandbox && (
            <p className="note">
              Sandbox mode: no bot token is configured, so the link opens the built-in Telegram sandbox, where
              you confirm as a simulated person.
            </p>
          )}
        </div>
      )}
    </section>
  );
}
