/** What a person allowed into the console may do there: `admin` also manages the owners. */
export type OwnerRole = "admin" | "owner";

/**
 * What a person signed in to the console is there: an instance's `admin` or `owner`, or a
 * `co_owner` — someone who may not own Docks here but was given a role on some (issue 37): they
 * see only those, and create none. A Dock owner's invitation never opens a closed instance wider.
 */
export type ConsoleRole = OwnerRole | "co_owner";

/**
 * OWNERS as configured: `anyone` (`*`, and the sandbox's default: it is local), a list of Telegram
 * user ids who are administrators, or unset (`null`): the instance is closed until claimed.
 */
export type OwnersSetting = "anyone" | readonly number[] | null;

/** Who may use the console, worked out once from the configuration. */
export interface OwnerPolicy {
  /** Anyone who signs in may own Docks (OWNERS=*, or unset in the sandbox). */
  open: boolean;
  /** Administrators by configuration (OWNERS' ids): never locked out, never removed by the console. */
  admins: ReadonlySet<number>;
  /**
   * Whether an unclaimed instance prints a claim link: OWNERS unset with a real bot. An instance
   * whose OWNERS names its administrators, or that is open, needs no claim.
   */
  claimable: boolean;
  /**
   * The built-in sandbox plays Telegram. Its people have ids real people may have too: a row the
   * store made for one of them (marked `sandbox`) lets nobody in once a real bot runs.
   */
  sandbox: boolean;
}

/** The policy of an instance: `sandbox` is true when the built-in Telegram sandbox plays the bot. */
export function ownerPolicy(setting: OwnersSetting, sandbox: boolean): OwnerPolicy {
  if (setting === "anyone" || (setting === null && sandbox)) {
    return { open: true, admins: new Set(), claimable: false, sandbox };
  }
  if (setting === null) return { open: false, admins: new Set(), claimable: true, sandbox };
  return { open: false, admins: new Set(setting), claimable: false, sandbox };
}

/** What anyone may do: an open instance's policy (the default of parts built without one). */
export const OPEN_POLICY: OwnerPolicy = ownerPolicy("anyone", true);

/**
 * The one answer to "may this person use the console, and as what?": an administrator named by
 * OWNERS; otherwise the role the store holds for them; otherwise an owner on an open instance;
 * otherwise, on a closed one, a co-owner when some Dock is shared with them (`coOwns`), and
 * nobody else. `stored` is the person's row in `owners`, if any.
 */
export function roleOf(
  policy: OwnerPolicy,
  userId: number,
  stored: OwnerRole | null,
  coOwns = false,
): ConsoleRole | null {
  if (policy.admins.has(userId)) return "admin";
  if (stored !== null) return stored;
  if (policy.open) return "owner";
  return coOwns ? "co_owner" : null;
}

/** The deep-link payload of the claim link: `claim_<token>`. */
export const CLAIM_PAYLOAD_PREFIX = "claim_";
/** The deep-link payload of an invitation to become an owner: `invite_<token>`. */
export const INVITE_PAYLOAD_PREFIX = "invite_";
/** The deep-link payload of an invitation to co-own one Dock with a role: `coown_<token>`. */
export const CO_OWNER_PAYLOAD_PREFIX = "coown_";
