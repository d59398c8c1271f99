import { defineConfig } from "vitest/config";

/**
 * `npm run test:image`: builds the container image (Dockerfile) with buildah and runs it with
 * podman. Apart from `npm test` because a cold build takes minutes (a Debian base made with
 * debootstrap, the devDependencies installed in the build stage); CI runs both.
 */
export default defineConfig({
  test: {
    include: ["test/image/**/*.test.ts"],
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
});
