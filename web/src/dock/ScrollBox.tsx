import type { ReactNode } from "react";

/** A box a table wider than a phone scrolls in, which the keyboard reaches too. */
export function ScrollBox({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a region that scrolls must take the focus to be scrolled from the keyboard (WCAG 2.1.1; axe's scrollable-region-focusable).
    <section className="table-scroll" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}
