import type { Acceptance } from "./accept.ts";
import type { Authentication } from "./auth.ts";
import type { Integration } from "./integrate.ts";
import type { SendApiOptions } from "./options.ts";

/**
 * What each door's plugin is given by sendApi: the options, and the steps the doors share — made
 * once, so the failed-authentication allowance and the template budget are one for all doors.
 */
export interface SendDoors {
  options: SendApiOptions;
  auth: Authentication;
  integration: Integration;
  acceptance: Acceptance;
}
