import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/** The console: built into web/dist and served by the service at /console/. */
export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The service's CSP allows no inline script: keep Vite's module preload helper in a file.
    modulePreload: { polyfill: false },
  },
});
