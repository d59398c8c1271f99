import { resolve, sep } from "node:path";
import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

const serviceSources = resolve(import.meta.dirname, "..", "src") + sep;

/**
 * The console takes the service's answer types from src/ (`import type`, erased at build); a
 * value import would put server code, or TypeBox, into the browser's bundle: the build refuses.
 */
const typesOnlyFromTheService: Plugin = {
  name: "dock-notify:types-only-from-the-service",
  load(id) {
    if (id.startsWith(serviceSources)) {
      this.error(`${id} is the service's code: the console may import only its types (import type).`);
    }
  },
};

/** The console: built into web/dist and served by the service at /console/. */
export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  plugins: [react(), typesOnlyFromTheService],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The service's CSP allows no inline script: keep Vite's module preload helper in a file.
    modulePreload: { polyfill: false },
  },
});
