import { useCallback, useEffect, useState } from "react";
import { AnnounceProvider } from "./announce.tsx";
import { api, type InfoAnswer, ServiceError, type SessionAnswer, setCsrfToken } from "./api.ts";
import { BOT_TROUBLE_CODES, BotProblem, type BotTrouble } from "./BotProblem.tsx";
import { DocksList } from "./DocksList.tsx";
import { DockPage } from "./dock/DockPage.tsx";
import { HelpPage } from "./HelpPage.tsx";
import { LiveProvider, useLivePaused } from "./live.tsx";
import { NewDockPage } from "./NewDockPage.tsx";
import { useRoute } from "./navigation.ts";
import { OwnersPage } from "./OwnersPage.tsx";
import { SignIn } from "./SignIn.tsx";

/** The console: sign-in until there is a session, then the Docks and the help page. */
export function App() {
  const [info, setInfo] = useState<InfoAnswer | null>(null);
  const [session, setSession] = useState<SessionAnswer | null | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  /** /info failed because the bot cannot be used: its own page says what to set. */
  const [botTrouble, setBotTrouble] = useState<ServiceError | null>(null);
  const route = useRoute();

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

  const loadInfo = useCallback(() => {
    setBotTrouble(null);
    setError(null);
    api<InfoAnswer>("GET", "/info").then(setInfo, (e: Error) => {
      if (e instanceof ServiceError && BOT_TROUBLE_CODES.has(e.code)) setBotTrouble(e);
      else setError(e.message);
    });
  }, []);

  useEffect(() => {
    loadInfo();
    void loadSession();
  }, [loadInfo, loadSession]);

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

  /** Runs a call; a lost session sends the person back to sign-in instead of showing an error. */
  const guarded = useCallback(
    async <T,>(call: () => Promise<T>): Promise<T> => {
      try {
        return await call();
      } catch (e) {
        if (e instanceof ServiceError && e.code === "not_signed_in") onSessionLost();
        throw e;
      }
    },
    [onSessionLost],
  );

  // The document's title names the page: tabs, history and screen readers tell pages apart by it.
  useEffect(() => {
    const titles = { docks: "Docks", new: "New Dock", help: "API & bot", owners: "Owners" } as const;
    // A Dock's page names itself (its name and section) once read.
    if (session && route.page === "dock") return;
    if (botTrouble) {
      document.title = "Bot not working · Dock Notify";
      return;
    }
    document.title =
      session && route.page !== "dock" ? `${titles[route.page]} · Dock Notify` : "Sign in · Dock Notify";
  }, [route.page, session, botTrouble]);

  const name = session?.user.first_name ?? (session?.user.username ? `@${session.user.username}` : null);

  return (
    <AnnounceProvider>
      <header className="top">
        <a className="brand" href="#/">
          Dock Notify
        </a>
        {session && (
          <nav aria-label="Console">
            <a href="#/" aria-current={route.page === "help" || route.page === "owners" ? undefined : "page"}>
              Docks
            </a>
            {session.role === "admin" && (
              <a href="#/owners" aria-current={route.page === "owners" ? "page" : undefined}>
                Owners
              </a>
            )}
            <a href="#/help" aria-current={route.page === "help" ? "page" : undefined}>
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
        {botTrouble && (
          <BotProblem
            code={botTrouble.code}
            message={botTrouble.message}
            bot={(botTrouble.context.bot as BotTrouble | undefined) ?? null}
            onRetry={loadInfo}
          />
        )}
        {info && session === null && <SignIn info={info} onSignedIn={loadSession} />}
        {info && session && (
          <LiveProvider onSignedOut={onSessionLost}>
            <LivePaused />
            {route.page === "docks" && (
              <DocksList
                guarded={guarded}
                mayCreate={session.role !== "co_owner"}
                admin={session.role === "admin"}
              />
            )}
            {route.page === "new" && <NewDockPage guarded={guarded} />}
            {route.page === "dock" && (
              <DockPage
                key={route.id}
                id={route.id}
                tab={route.tab}
                messageId={route.messageId}
                info={info}
                guarded={guarded}
                selfId={session.user.id}
              />
            )}
            {route.page === "help" && <HelpPage info={info} />}
            {route.page === "owners" &&
              (session.role === "admin" ? (
                <OwnersPage guarded={guarded} selfId={session.user.id} anyone={info.owners === "anyone"} />
              ) : (
                <p className="muted">Only an administrator manages who may own Docks.</p>
              ))}
          </LiveProvider>
        )}
        {(!info || session === undefined) && !error && !botTrouble && <p className="muted">Loading…</p>}
      </main>
    </AnnounceProvider>
  );
}

/** Says so while the live stream is broken: what the page shows may be old until it is back. */
function LivePaused() {
  if (!useLivePaused()) return null;
  return <p className="muted small live-paused">Live updates paused: reconnecting…</p>;
}
