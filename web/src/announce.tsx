import { createContext, type ReactNode, useCallback, useContext, useState } from "react";

const AnnounceContext = createContext<(text: string) => void>(() => {});

/** A polite live region: short confirmations ("Dock ID copied") reach screen readers and eyes. */
export function AnnounceProvider({ children }: { children: ReactNode }) {
  const [text, setText] = useState("");
  const announce = useCallback((next: string) => {
    // Clearing first makes a repeated message be read again.
    setText("");
    requestAnimationFrame(() => setText(next));
  }, []);
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
