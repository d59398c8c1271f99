import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

const root = join(import.meta.dirname, "..", "..");

/** .github/workflows/release.yml, where the release's image and package are made. */
export const RELEASE_WORKFLOW = join(root, ".github", "workflows", "release.yml");

export interface WorkflowStep {
  name?: string;
  id?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string | number | boolean>;
  env?: Record<string, string>;
}

export interface Workflow {
  on: { push?: { tags?: string[]; branches?: string[] } };
  permissions?: Record<string, string>;
  jobs: Record<string, { permissions?: Record<string, string>; steps: WorkflowStep[] }>;
}

/** The release workflow as GitHub reads it. */
export function releaseWorkflow(): Workflow {
  return parse(readFileSync(RELEASE_WORKFLOW, "utf8")) as Workflow;
}

/** The steps of every job that use `action` (`owner/name`, any version). */
export function stepsUsing(workflow: Workflow, action: string): WorkflowStep[] {
  return Object.values(workflow.jobs).flatMap((job) =>
    job.steps.filter((step) => step.uses?.split("@")[0] === action),
  );
}

/**
 * The image build the release runs (its docker/build-push-action step): the context and the
 * Dockerfile, relative to the repository, and its build arguments (`NAME=value`). The container
 * test builds with these, so what it tests is what a release publishes.
 */
export function releaseImageBuild(): {
  context: string;
  file: string;
  buildArgs: string[];
  platforms: string[];
} {
  const [step, ...more] = stepsUsing(releaseWorkflow(), "docker/build-push-action");
  if (step === undefined || more.length > 0)
    throw new Error("release.yml: not one docker/build-push-action step");
  const list = (value: unknown) =>
    String(value ?? "")
      .split(/[\n,]/)
      .map((entry) => entry.trim())
      .filter((entry) => entry !== "");
  return {
    context: String(step.with?.context ?? "."),
    file: String(step.with?.file ?? "Dockerfile"),
    buildArgs: String(step.with?.["build-args"] ?? "")
      .split("\n")
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ""),
    platforms: list(step.with?.platforms),
  };
}
