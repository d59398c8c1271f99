import { useEffect, useRef, useState } from "react";
import {
  api,
  type InfoAnswer,
  ServiceError,
  type SignInCancelAnswer,
  type SignInCheckAnswer,
  type SignInFinishAnswer,
  type SignInStartAnswer,
  type SignInState,
  type TelegramAccount,
} from "./api.ts";
import { onlyOnThisComputer } from "./local-address.ts";

/** What the page shows: a state of the sign-in, or how the person ended it here. */
type PageState = SignInState | "cancelled" | "failed";

/**
 * Who pressed Yes, in three separate lines: the name, which anyone can choose (an onlooker may
 * call themselves "Ada (@ada)"); the username, which nobody else can have; and the Telegram ID,
 * which every account has and the bot tells the person when they press Yes. Nothing a name can
 * hold makes one account look like another here.
 */
function ConfirmerIdentity({ confirmer }: { confirmer: TelegramAccount }) {
  return (
    <dl className="telegram-identity" aria-label="The Telegram account that confirmed">
      <dt>Name</dt>
      <dd>{confirmer.first_name || "(none)"}</dd>
      <dt>Username</dt>
      <dd>{confirmer.username ? `@${confirmer.username}` : "none"}</dd>
      <dt>Telegram ID</dt>
      <dd>
        <code>{confirmer.id}</code>
      </dd>
    </dl>
  );
}

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
 * there; this page notices by asking every second, names who confirmed, and starts the session
 * only when the person presses Continue. Someone who saw the link or its QR code could press Yes
 * first in their own Telegram: "That's not me" cancels that sign-in instead of entering their account.
 */
export function SignIn({ info, onSignedIn }: { info: InfoAnswer; onSignedIn: () => void }) {
  const [pending, setPending] = useState<SignInStartAnswer | null>(null);
  const [state, setState] = useState<PageState | null>(null);
  const [confirmer, setConfirmer] = useState<TelegramAccount | null>(null);
  /** False when who confirmed is not an owner here: the page says so instead of offering Continue. */
  const [mayIn, setMayIn] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const continueButton = useRef<HTMLButtonElement>(null);
  const startButton = useRef<HTMLButtonElement>(null);
  const widgetAnswer = new URLSearchParams(window.location.search).get("sign_in");

  const start = async () => {
    setBusy(true);
    setError(null);
    try {
      setPending(await api<SignInStartAnswer>("POST", "/sign-in"));
      setState("pending");
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  /** Back to the start page (which says why). */
  const backToStart = (next: "cancelled" | "failed", message: string | null = null) => {
    setPending(null);
    setConfirmer(null);
    setState(next);
    setError(message);
  };

  const finish = async (confirmed: TelegramAccount) => {
    setBusy(true);
    setError(null);
    try {
      // Only for the person shown: if this browser's sign-in changed since (another tab), nobody.
      await api<SignInFinishAnswer>("POST", "/sign-in/finish", { user_id: confirmed.id });
      onSignedIn();
    } catch (e) {
      // Expired, or cancelled elsewhere: this sign-in is over; the message says why.
      if (e instanceof ServiceError && (e.code === "sign_in_not_confirmed" || e.code === "not_an_owner")) {
        backToStart("failed", e.message);
      } else setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const cancel = async () => {
    setBusy(true);
    setError(null);
    try {
      await api<SignInCancelAnswer>("POST", "/sign-in/cancel");
      backToStart("cancelled");
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
        const answer = await api<SignInCheckAnswer>("POST", "/sign-in/check");
        if (stopped) return;
        if (answer.state === "confirmed" && answer.user) {
          setConfirmer(answer.user);
          setMayIn(answer.may_sign_in !== false);
        }
        if (answer.state !== "pending") setState(answer.state);
      } catch (e) {
        if (!stopped) setError((e as Error).message);
      }
    }, CHECK_EVERY_MS);
    return () => {
      stopped = true;
      window.clearInterval(timer);
    };
  }, [pending, state]);

  // The button just pressed is gone: the focus goes to the one to press next.
  useEffect(() => {
    if (state === "confirmed") continueButton.current?.focus();
    if (state === "cancelled" || state === "failed") startButton.current?.focus();
  }, [state]);

  return (
    <section className="panel sign-in" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in to Dock Notify</h1>
      <p>
        Dock Notify sends notifications from your applications to people on Telegram. You sign in with your
        Telegram account: the bot asks you to confirm, then you continue here.
      </p>
      {info.awaits_claim ? (
        <p className="note">
          This Dock Notify has no administrator yet. Whoever runs it opens the <strong>claim link</strong> the
          service printed when it started (in its log) in Telegram and presses Yes, then signs in here.
        </p>
      ) : (
        info.owners === "invited" && (
          <p className="muted">
            Owners sign in here. To become one, ask this Dock Notify's administrator for an invitation.
          </p>
        )
      )}
      {widgetAnswer === "failed" && (
        <p className="error" role="alert">
          Telegram's sign-in could not be verified. Try again.
        </p>
      )}
      {widgetAnswer === "not_owner" && (
        <p className="error" role="alert">
          That Telegram account is not an owner of this Dock Notify. Ask its administrator for an invitation.
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {pending && state === "confirmed" && confirmer && !mayIn ? (
        <div className="confirmed">
          <p id="sign-in-refused" role="alert">
            This Telegram account is not an owner of this Dock Notify, so it cannot sign in.
          </p>
          <ConfirmerIdentity confirmer={confirmer} />
          <p className="muted">
            Ask the administrator for an invitation: they send you a link, you open it in Telegram and press
            Yes, then sign in again. Give them your Telegram ID, shown above.
          </p>
          <div className="actions">
            <button ref={continueButton} type="button" onClick={cancel} disabled={busy}>
              Start again
            </button>
          </div>
        </div>
      ) : pending && state === "confirmed" && confirmer ? (
        <div className="confirmed">
          <p id="sign-in-confirmed" role="status">
            Confirmed in Telegram. Continue as this Telegram account?
          </p>
          <ConfirmerIdentity confirmer={confirmer} />
          <p className="muted">
            The bot told you your Telegram ID when you pressed Yes. If this is not your account, someone else
            pressed Yes on your sign-in link: press <strong>That's not me</strong>.
          </p>
          <div className="actions">
            <button
              ref={continueButton}
              type="button"
              className="primary"
              onClick={() => finish(confirmer)}
              disabled={busy}
              aria-describedby="sign-in-confirmed"
            >
              Continue
            </button>
            <button type="button" onClick={cancel} disabled={busy}>
              That's not me
            </button>
          </div>
        </div>
      ) : !pending || state !== "pending" ? (
        <>
          {state === "declined" && (
            <p role="alert">The sign-in was declined in Telegram (No was pressed). Start again.</p>
          )}
          {state === "cancelled" && (
            <p role="alert">
              Sign-in cancelled: nobody was signed in. Someone else may have confirmed your sign-in link (for
              example after seeing its QR code). Start again, and press Yes only in your own Telegram.
            </p>
          )}
          {state === "expired" && <p role="alert">That sign-in link expired. Start again.</p>}
          {state === "used" && <p role="alert">That sign-in link was already used. Start again.</p>}
          <button ref={startButton} type="button" className="primary" onClick={start} disabled={busy}>
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
            <li>
              Back here, check the name shown and press <strong>Continue</strong>.
            </li>
          </ol>
          <figure>
            <img
              className="qr"
              src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(pending.qr_svg)}`}
              alt="QR code of the sign-in link: scan it with your phone's camera to open Telegram"
              width={200}
              height={200}
            />
            <figcaption>
              {onlyOnThisComputer(pending.link) ? (
                <>
                  This code leads to {new URL(pending.link).host}, which only this computer reaches: to scan
                  it with a phone, start the service with <code>PUBLIC_URL</code> set to an address the phone
                  can reach.
                </>
              ) : (
                "On another device? Scan this with your phone."
              )}
            </figcaption>
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
