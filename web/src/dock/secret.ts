/** Shows a credential's recognisable prefix and hides the rest (where it is shown on its own). */
export function mask(secret: string): string {
  return `${secret.slice(0, 5)}${"•".repeat(16)}`;
}

/**
 * What commands and settings on screen hold in place of the secret key while it is hidden: a
 * placeholder nobody takes for a key, so text copied by selection fails plainly (the service's 401
 * names it) instead of with a masked key that looks real. The Copy buttons copy the real key.
 */
export const SECRET_PLACEHOLDER = "<SECRET_KEY>";
/** The same for the hook token. */
export const HOOK_PLACEHOLDER = "<HOOK_TOKEN>";
