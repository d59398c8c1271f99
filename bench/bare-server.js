import Fastify from "fastify";

/**
 * The yardstick for bench:ingest and bench:memory: a Fastify route that does nothing but answer
 * 202. Plain JavaScript, as the service runs compiled (dist/): Node's TypeScript stripper, loaded
 * for a .ts file, would add ~15 MB to its memory.
 */
const app = Fastify({ logger: false });
app.post("/ping", async (_request, reply) =>
  reply.code(202).send({ ok: true, message_id: "msg_x", subscribers: 0 }),
);
await app.listen({ port: 0, host: "127.0.0.1" });
const address = app.server.address();
console.log(JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 }));
process.once("SIGTERM", () => void app.close().then(() => process.exit(0)));
