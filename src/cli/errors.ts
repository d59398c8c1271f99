/**
 * The command line's part of the error catalogue (the HTTP part is src/http/errors.ts, which the
 * command line does not load): the codes it prints with `--json`, in the same error format, with
 * its exit codes. docs/api.md lists them beside the HTTP ones, and the same test keeps them in step.
 */
export const CLI_ERRORS = {
  invalid_input: {
    exitCode: 2,
    meaning: "a usage error: an unknown command or option, a missing or invalid argument",
  },
  invalid_configuration: { exitCode: 2, meaning: "the environment (DATABASE_URL, DATA_DIR, …) is not valid" },
  not_found: { exitCode: 1, meaning: "no Dock with that ID" },
  failed: {
    exitCode: 1,
    meaning: "the command could not be carried out (the database, the disk); the message says why",
  },
} as const satisfies Record<string, { exitCode: number; meaning: string }>;

export type CliErrorCode = keyof typeof CLI_ERRORS;
