/**
 * Whether a link leads to this computer only (localhost, 127.x, ::1): the sandbox's links when
 * PUBLIC_URL is left at its default. A phone, or anyone it is shared with, cannot open it.
 */
export function onlyOnThisComputer(link: string): boolean {
  let host: string;
  try {
    host = new URL(link).hostname;
  } catch {
    return false;
  }
  return host === "localhost" || host.endsWith(".localhost") || /^127\./.test(host) || host === "[::1]";
}
