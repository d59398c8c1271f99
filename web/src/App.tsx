import { useCallback, useEffect, useState } from "react";
import { AnnounceProvider } from "./announce.tsx";
import { api, type InfoAnswer, ServiceError, type SessionAnswer, setCsrfToken } from "./api.ts";
import { DocksPage } from "./DocksPage.tsx";
import { HelpPage } from "./HelpPage.tsx";
import { SignIn } from "./SignIn.tsx";

type Page = "docks" | "help";

function pageFromHash(): Page {
  return window.location.hash === "#/help" ? "help" : "docks";
}

/** The console: sign-in until there is a session, then the Docks and the help page. */
export function App() {
  const [info, setInfo] = useState<InfoAnswer | null>(null);
  const [session, setSession] = useState<SessionAnswer | null | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [page, setPage] = useState<Page>(pageFromHash);

  const loadSession = useCallback(async () => {
    try {
      const current = await api<SessionAnswer>("GET", "/session");
      setCsrfToken(current.csrf_token);
      setSession(current);
    } catch (e) {
      if (e instanceof ServiceError && e.code === "not_signed_in") {
        setCsrfToken(null);
        setSession(null);
      } else {
        setError((e as Error).message);
      }
    }
  }, []);

  useEffect(() => {
    api<InfoAnswer>("GET", "/info").then(setInfo, (e: Error) => setError(e.message));
    void loadSession();
    const onHash = () => setPage(pageFromHash());
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, [loadSession]);

  const signOut = async () => {
    try {
      await api("POST", "/sign-out", {});
    } finally {
      setCsrfToken(null);
      setSession(null);
    }
  };

  /** Any call that finds the session gone (expired, signed out elsewhere) returns to sign-in. */
  const onSessionLost = useCallback(() => {
    setCsrfToken(null);
    setSession(null);
  }, []);

  const name = session?.user.first_name ?? (session?.user.username ? `@${session.user.username}` : null);

  return (
    <AnnounceProvider>
      <header className="top">
        <a className="brand" href="#/">
          Dock Notify
        </a>
        {session && (
          <nav aria-label="Console">
            <a href="#/" aria-current={page === "docks" ? "page" : undefined}>
              Docks
            </a>
            <a href="#/help" aria-current={page === "help" ? "page" : undefined}>
              API &amp; bot
            </a>
            <span className="who">{name ?? `Telegram user ${session.user.id}`}</span>
            <button type="button" className="secondary" onClick={signOut}>
              Sign out
            </button>
          </nav>
        )}
      </header>
      <main>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {info && session === null && <SignIn info={info} onSignedIn={loadSession} />}
        {info && session && page === "docks" && <DocksPage onSessionLost={onSessionLost} />}
        {info && session && page === "help" && <HelpPage info={info} />}
        {(!info || session === undefined) && !error && <p className="muted">Loading…</p>}
      </main>
    </AnnounceProvider>
  );
}
