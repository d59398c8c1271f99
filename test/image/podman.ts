import { execFile, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);

/**
 * podman and buildah as this kind of machine runs them (no registry, a kernel on which crun fails):
 * runc, cgroupfs, host networking, ulimits no higher than the machine's hard limits, and storage of
 * its own under /var/tmp, kept between runs so that a second build is warm.
 */
const HOME = "/var/tmp/dock-notify-containers";

export const containerEnv = (() => {
  mkdirSync(HOME, { recursive: true });
  const hardNofile = Number(process.env.DOCK_NOTIFY_NOFILE ?? readHardNofile());
  writeFileSync(
    join(HOME, "containers.conf"),
    `[containers]
netns = "host"
default_ulimits = ["nofile=${hardNofile}:${hardNofile}", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
`,
  );
  writeFileSync(
    join(HOME, "storage.conf"),
    `[storage]
driver = "overlay"
runroot = "${HOME}/run"
graphroot = "${HOME}/storage"
`,
  );
  return {
    ...process.env,
    CONTAINERS_CONF: join(HOME, "containers.conf"),
    CONTAINERS_STORAGE_CONF: join(HOME, "storage.conf"),
  };
})();

function readHardNofile(): number {
  // The process's own hard limit: what runc may give a container without failing.
  const limits = readFileSync("/proc/self/limits", "utf8");
  const match = /^Max open files\s+\d+\s+(\d+)/m.exec(limits);
  return Math.min(Number(match?.[1] ?? 1024), 1_048_576);
}

/** Runs podman or buildah; resolves to its standard output, rejects with its standard error. */
export async function tool(command: "podman" | "buildah", args: string[]): Promise<string> {
  try {
    return (await exec(command, args, { env: containerEnv, maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`${command} ${args.slice(0, 2).join(" ")} failed: ${stderr?.trim() || message}`);
  }
}

/** Runs podman or buildah to its end, whatever its exit code: how a command that should fail failed. */
export async function toolOutcome(
  command: "podman" | "buildah",
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(command, args, { env: containerEnv, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof code !== "number") throw error;
    return { code, stdout: stdout ?? "", stderr: stderr ?? "" };
  }
}

/** Runs podman-compose with the container settings and `env` (the compose file's variables). */
export async function composeTool(env: Record<string, string>, args: string[]): Promise<string> {
  try {
    return (
      await exec("podman-compose", args, { env: { ...containerEnv, ...env }, maxBuffer: 64 * 1024 * 1024 })
    ).stdout;
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`podman-compose ${args.slice(-2).join(" ")} failed: ${stderr?.trim() || message}`);
  }
}

/** Runs a shell pipeline with the container settings; resolves to its standard output. */
export async function shell(script: string): Promise<string> {
  return (await exec("sh", ["-c", script], { env: containerEnv, maxBuffer: 64 * 1024 * 1024 })).stdout;
}

/** Runs a command with its output shown (long builds), rejecting on a non-zero exit. */
function loud(command: string, args: string[], options: { stdin?: string } = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(options.stdin ? "sh" : command, options.stdin ? ["-c", options.stdin] : args, {
      env: containerEnv,
      stdio: ["ignore", "inherit", "inherit"],
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}`)),
    );
  });
}

export const NODE_BASE = "docker.io/library/node:24-bookworm-slim";

/**
 * `buildah build` of `context` as `tag` on this kind of machine: chroot isolation, no pulls, the
 * host's network (for npm and apt), Docker's format (which keeps HEALTHCHECK).
 */
export function buildArgs(tag: string, context: string, extra: string[] = []): string[] {
  return [
    "build",
    "--isolation",
    "chroot",
    "--pull=never",
    "--format",
    "docker",
    "--network",
    "host",
    ...extra,
    "-t",
    tag,
    context,
  ];
}

/** The Debian mirror apt already uses on this machine. */
function debianMirror(): string {
  const sources = [
    "/etc/apt/sources.list",
    ...listDir("/etc/apt/sources.list.d").map((f) => `/etc/apt/sources.list.d/${f}`),
  ];
  for (const file of sources) {
    if (!existsSync(file) || !/\.(list|sources)$/.test(file)) continue;
    const text = readFileSync(file, "utf8");
    const deb822 = /^URIs:\s*(\S+)/m.exec(text)?.[1];
    const oneLine = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/m.exec(text)?.[1];
    const mirror = deb822 ?? oneLine;
    if (mirror && !mirror.includes("security")) return mirror;
  }
  return "http://deb.debian.org/debian";
}

function listDir(path: string): string[] {
  return existsSync(path) ? readdirSync(path) : [];
}

/**
 * The base image the Dockerfile names, made here when it is not in local storage (no registry can
 * be reached): Debian bookworm from debootstrap (minbase, apt's caches and the docs left out), with
 * this Node.js 24 binary, npm from the npm registry, and the `node` user (uid 1000) as in the
 * official image. Tagged with the official name, so the Dockerfile builds here unchanged.
 */
export async function ensureNodeBase(): Promise<void> {
  if (
    await tool("podman", ["image", "exists", NODE_BASE]).then(
      () => true,
      () => false,
    )
  )
    return;
  const work = mkdtempSync(join(tmpdir(), "dock-notify-base-"));
  try {
    const rootfs = join(work, "rootfs");
    await loud("debootstrap", ["--variant=minbase", "bookworm", rootfs, debianMirror()]);
    for (const path of [
      "var/cache/apt/archives",
      "var/lib/apt/lists",
      "usr/share/doc",
      "usr/share/man",
      "usr/share/info",
      "usr/share/locale",
    ]) {
      rmSync(join(rootfs, path), { recursive: true, force: true });
      mkdirSync(join(rootfs, path), { recursive: true });
    }
    await loud("sh", [], {
      stdin: `tar -C '${rootfs}' -c . | podman import - localhost/debian-minbase:bookworm`,
    });
    const context = join(work, "node");
    mkdirSync(context);
    await exec("cp", [process.execPath, join(context, "node")]);
    const npmVersion = (await exec("npm", ["--version"])).stdout.trim();
    await exec("npm", ["pack", `npm@${npmVersion}`, "--pack-destination", context], { env: process.env });
    writeFileSync(
      join(context, "Dockerfile"),
      `FROM localhost/debian-minbase:bookworm
COPY node /usr/local/bin/node
ADD npm-${npmVersion}.tgz /usr/local/lib/node_modules/
RUN mv /usr/local/lib/node_modules/package /usr/local/lib/node_modules/npm \\
 && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
CMD ["node"]
`,
    );
    await loud("buildah", buildArgs(NODE_BASE, context));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
