/** What a person allowed into the console may do there: `admin` also manages the owners. */
export type OwnerRole = "admin" | "owner";

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
}

/** The policy of an instance: `sandbox` is true when the built-in Telegram sandbox plays the bot. */
export function ownerPolicy(setting: OwnersSetting, sandbox: boolean): OwnerPolicy {
  if (setting === "anyone" || (setting === null && sandbox)) {
    return { open: true, admins: new Set(), claimable: false };
  }
  if (setting === null) return { open: false, admins: new Set(), claimable: true };
  return { open: false, admins: new Set(setting), claimable: false };
}

/** What anyone may do: an open instance's policy (the default of parts built without one). */
export const OPEN_POLICY: OwnerPolicy = ownerPolicy("anyone", true);

/**
 * The one answer to "may this person use the console, and as what?": an administrator named by
 * OWNERS; otherwise the role the store holds for them; otherwise an owner on an open instance, and
 * nobody on a closed one. `stored` is the person's row in `owners`, if any.
 */
export function roleOf(policy: OwnerPolicy, userId: number, stored: OwnerRole | null): OwnerRole | null {
  if (policy.admins.has(userId)) return "admin";
  if (stored !== null) return stored;
  return policy.open ? "owner" : null;
}

/** The deep-link payload of the claim link: `claim_<token>`. */
export const CLAIM_PAYLOAD_PREFIX = "claim_";
/** The deep-link payload of an invitation to become an owner: `invite_<token>`. */
export const INVITE_PAYLOAD_PREFIX = "invite_";
