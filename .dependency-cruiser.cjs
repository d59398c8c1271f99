// The server's layering, checked by `npm run lint` (see README "Code layout"). Each rule names the
// direction that must not exist; `npx depcruise src` prints every violation with its path.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      severity: "error",
      comment: "A cycle (types included) makes modules impossible to read or load one at a time.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "domain-is-pure",
      severity: "error",
      comment: "domain/ holds rules with no I/O: it imports nothing of ours outside domain/.",
      from: { path: "^src/domain/" },
      to: { path: "^src/", pathNot: "^src/domain/" },
    },
    {
      name: "integrations-are-pure",
      comment:
        "integrations/ turns payloads into messages with no I/O: it imports nothing of ours outside domain/ and integrations/.",
      severity: "error",
      from: { path: "^src/integrations/" },
      to: { path: "^src/", pathNot: "^src/(domain|integrations)/" },
    },
    {
      name: "store-below-delivery-bot-http",
      severity: "error",
      comment: "store/ is the bottom of the service: it never reaches up to who uses it.",
      from: { path: "^src/store/" },
      to: { path: "^src/(http|delivery|bot|sandbox|cli|telegram)/|^src/(app|main|cli)\\.ts$" },
    },
    {
      name: "no-http-below-the-edge",
      severity: "error",
      comment:
        "The HTTP edge owns statuses and the error catalogue; intake, the bot and delivery return outcomes.",
      from: { path: "^src/(http/intake\\.ts$|bot/|delivery/)" },
      to: { path: "^src/(http|cli)/|^src/(app|main|cli)\\.ts$", pathNot: "^src/http/intake\\.ts$" },
    },
    {
      name: "runtime-stands-below",
      severity: "error",
      comment:
        "runtime/ is what every part of the process uses (configuration, logs, metrics, the heap, the encryption key, the workers' interface): it reaches up to none of them, and works the same with or without the sandbox.",
      from: { path: "^src/runtime/" },
      to: {
        path: "^src/(store|delivery|bot|http|cli|integrations|sandbox)/|^src/(app|main|cli)\\.ts$",
      },
    },
    {
      name: "telegram-never-imports-sandbox",
      severity: "error",
      comment: "The Telegram port works the same with or without the sandbox (which is a fake Telegram).",
      from: { path: "^src/telegram/" },
      to: { path: "^src/sandbox/" },
    },
    {
      name: "grammy-only-in-the-telegram-port",
      severity: "error",
      comment:
        "Telegram is called through src/telegram/ (the copies, the pacer, its answers read) and the bot (src/bot/, grammY's framework); the rest of the service knows the port's interfaces. Types of the Bot API's data (grammy/types) are no call, and allowed.",
      from: { path: "^src/", pathNot: "^src/(telegram|bot)/" },
      to: { path: "^node_modules/(grammy|@grammyjs)/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "telegram-port-stands-below",
      severity: "error",
      comment:
        "The Telegram port knows Telegram, the domain's rendering and the support modules; never the store, delivery, the bot or the HTTP edge that use it.",
      from: { path: "^src/telegram/" },
      to: { path: "^src/(store|delivery|bot|http|cli|integrations)/|^src/(app|main|cli)\\.ts$" },
    },
    {
      name: "sandbox-stands-apart",
      severity: "error",
      comment: "The sandbox is a fake Telegram: it knows nothing of our store, bot or delivery.",
      from: { path: "^src/sandbox/" },
      to: { path: "^src/(store|bot|delivery)/" },
    },
    {
      name: "pg-only-in-its-adapter",
      severity: "error",
      comment: "Where PostgreSQL differs from SQLite is store/postgres/ alone.",
      from: { path: "^src/", pathNot: "^src/store/postgres/" },
      to: { path: "^node_modules/(pg|pg-[a-z-]+)/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "sqlite-only-in-its-adapter",
      severity: "error",
      comment: "Where SQLite differs from PostgreSQL is store/sqlite/ alone.",
      from: { path: "^src/", pathNot: "^src/store/sqlite/" },
      to: { path: "^node:sqlite$|^sqlite$" },
    },
    {
      name: "adapters-only-through-the-port",
      severity: "error",
      comment:
        "Only store/open.ts picks an adapter (and loads it lazily); everyone else uses the neutral port.",
      from: { path: "^src/", pathNot: "^src/store/(open\\.ts$|sqlite/|postgres/)" },
      to: { path: "^src/store/(sqlite|postgres)/" },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
