import { createContext, type ReactNode, useCallback, useContext, useEffect, useState } from "react";

/** How long a confirmation stays on screen. */
const SHOWN_MS = 5000;

const AnnounceContext = createContext<(text: string) => void>(() => {});

/** A polite live region: short confirmations ("Dock ID copied") reach screen readers and eyes. */
export function AnnounceProvider({ children }: { children: ReactNode }) {
  const [text, setText] = useState("");
  const announce = useCallback((next: string) => {
    // Clearing first makes a repeated message be read again.
    setText("");
    requestAnimationFrame(() => setText(next));
  }, []);
  // Read at once by screen readers; on screen for a few seconds, then gone.
  useEffect(() => {
    if (text === "") return;
    const timer = window.setTimeout(() => setText(""), SHOWN_MS);
    return () => window.clearTimeout(timer);
  }, [text]);
  return (
    <AnnounceContext.Provider value={announce}>
      {children}
      <div className="toast" role="status" aria-live="polite">
        {text}
      </div>
    </AnnounceContext.Provider>
  );
}

/** Announces a short confirmation in the page's live region. */
export function useAnnounce(): (text: string) => void {
  return useContext(AnnounceContext);
}
