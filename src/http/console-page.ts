import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance } from "fastify";
import { ownFile } from "../files.ts";
import { ApiError } from "./errors.ts";

/** Where `npm run build` puts the console (Vite's output of `web/`). */
export const CONSOLE_BUILD_DIR = fileURLToPath(ownFile("../web/dist/"));

/**
 * The console's static files at `/console/`, and `/` sends visitors there. Vite names every asset
 * after its content hash, so assets are cached for good while `index.html` is always revalidated.
 * Without a build (the server started without `npm start`), `/console/` says how to make one.
 */
export async function consolePage(app: FastifyInstance, options: { root?: string }): Promise<void> {
  const root = options.root ?? CONSOLE_BUILD_DIR;
  app.get("/", { schema: { hide: true } }, async (_request, reply) => reply.redirect("/console/", 302));
  // Typed without its slash, the console's address still leads there.
  app.get("/console", { schema: { hide: true } }, async (_request, reply) =>
    reply.redirect("/console/", 302),
  );

  if (!existsSync(`${root}/index.html`)) {
    app.get("/console/*", { schema: { hide: true } }, async () => {
      throw new ApiError("not_ready", "The console is not built: run `npm run build` (npm start does it).");
    });
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: "/console/",
    redirect: true,
    schemaHide: true,
    setHeaders: (res, path) => {
      res.header(
        "cache-control",
        path.includes("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
      );
    },
  });
}
