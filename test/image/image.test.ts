import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, lstatSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { releaseImageBuild } from "../helpers/release-workflow.ts";
import { buildArgs, composeTool, ensureNodeBase, NODE_BASE, shell, tool, toolOutcome } from "./podman.ts";

const root = join(import.meta.dirname, "..", "..");
const IMAGE = "localhost/dock-notify:test";
const NAME = `dock-notify-test-${process.pid}`;
const VOLUME = `dock-notify-test-data-${process.pid}`;
const POSTGRES_STANDIN = "localhost/postgres-standin:15";
/** The image's `node` user, which runs the service. */
const NODE_UID = 1000;

/** A TCP port free on this machine now (the container shares the host's network). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** A Dock made with the CLI inside `container`, as an operator would. */
async function createDock(container: string, name: string): Promise<{ id: string; secret_key: string }> {
  return JSON.parse(
    await tool("podman", [
      "exec",
      container,
      "dock-notify",
      "docks",
      "create",
      "--owner",
      "1",
      "--name",
      name,
      "--json",
    ]),
  );
}

/** POST /ping with the Dock's ID and secret key. */
function ping(url: string, dock: { id: string; secret_key: string }, msg: string): Promise<Response> {
  return fetch(`${url}/ping`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ dock_id: dock.id, secret_key: dock.secret_key, msg }),
  });
}

/**
 * How PID 1 of `container` (the service) runs: its real, effective, saved and file-system user
 * and group ids, its effective capabilities, and whether it may gain privileges.
 */
async function serviceProcess(
  container: string,
): Promise<{ uids: number[]; gids: number[]; capEff: string; noNewPrivs: string }> {
  const status = await tool("podman", ["exec", container, "cat", "/proc/1/status"]);
  const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, "m").exec(status)?.[1]?.trim() ?? "";
  return {
    uids: field("Uid").split(/\s+/).map(Number),
    gids: field("Gid").split(/\s+/).map(Number),
    capEff: field("CapEff"),
    noNewPrivs: field("NoNewPrivs"),
  };
}

/**
 * The owners (uids) of everything in a folder on this machine, the folder itself included; a
 * symbolic link's own owner, not its target's.
 */
function ownersIn(folder: string): Set<number> {
  return new Set([
    lstatSync(folder).uid,
    ...readdirSync(folder, { recursive: true }).map((name) => lstatSync(join(folder, String(name))).uid),
  ]);
}

async function waitFor<T>(what: string, check: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(250);
  }
}

/**
 * The container image as a self-hoster runs it: built from the Dockerfile with buildah (the base
 * image made locally, see podman.ts), run with podman on the host's network, the data in a volume.
 */
describe("the container image", () => {
  let url = "";
  const sandbox = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${url}/sandbox/api/${path}`, {
      method: init.method ?? "GET",
      ...(init.body === undefined
        ? {}
        : { headers: { "content-type": "application/json" }, body: JSON.stringify(init.body) }),
    });

  beforeAll(async () => {
    await ensureNodeBase();
    // This machine reaches the npm registry through a TLS-intercepting proxy: its CA goes into the
    // build (a mounted file, named by the Dockerfile's NODE_EXTRA_CA_CERTS build argument).
    const ca = process.env.NODE_EXTRA_CA_CERTS;
    const caArgs =
      ca && existsSync(ca)
        ? ["--volume", `${ca}:/run/extra-ca.pem:ro`, "--build-arg", "NODE_EXTRA_CA_CERTS=/run/extra-ca.pem"]
        : [];
    // The build a release publishes (.github/workflows/release.yml): its Dockerfile, context and
    // build arguments; only its platforms differ (this machine builds its own, amd64).
    const release = releaseImageBuild();
    await tool(
      "buildah",
      buildArgs(IMAGE, join(root, release.context), [
        ...caArgs,
        ...release.buildArgs.flatMap((arg) => ["--build-arg", arg]),
        "--file",
        join(root, release.file),
      ]),
    );
    await tool("podman", ["volume", "create", VOLUME]);
  });

  afterAll(async () => {
    await tool("podman", ["rm", "--force", "--time", "0", NAME]).catch(() => {});
    await tool("podman", ["volume", "rm", "--force", VOLUME]).catch(() => {});
  });

  it("adds little to Node's image and pulls as less than 200 MB", async () => {
    const size = async (image: string) =>
      Number(await tool("podman", ["image", "inspect", "--format", "{{.Size}}", image]));
    const [image, base] = [await size(IMAGE), await size(NODE_BASE)];
    // What a registry stores and a host downloads: the image's layers compressed.
    const compressed = Number((await shell(`podman save ${IMAGE} | gzip -c | wc -c`)).trim());
    console.log(
      `image ${IMAGE}: ${(image / 1e6).toFixed(1)} MB (${NODE_BASE}: ${(base / 1e6).toFixed(1)} MB), ${(compressed / 1e6).toFixed(1)} MB compressed`,
    );
    // The service, its two external dependencies and the console: no devDependencies, no sources.
    expect(image - base).toBeLessThan(30e6);
    expect(compressed).toBeLessThan(200e6);
  });

  it("serves, takes a Dock from its CLI, delivers a ping, keeps its data across a restart and stops on SIGTERM", async () => {
    const port = await freePort();
    const start = async () => {
      await tool("podman", [
        "run",
        "--detach",
        "--name",
        NAME,
        "--network",
        "host",
        "--env",
        `PORT=${port}`,
        // Listening on 0.0.0.0 with the sandbox as Telegram: allowed only when said so.
        "--env",
        "SANDBOX_ALLOW_REMOTE=true",
        "--volume",
        `${VOLUME}:/data`,
        IMAGE,
      ]);
      url = `http://127.0.0.1:${port}`;
      const health = await waitFor("/healthz", async () => {
        const response = await fetch(`${url}/healthz`);
        return response.ok ? ((await response.json()) as { ok: boolean; version: string }) : undefined;
      });
      expect(health).toEqual({ ok: true, version: pkg.version });
    };
    await start();
    // The image's HEALTHCHECK (GET /healthz from inside the container) passes.
    await tool("podman", ["healthcheck", "run", NAME]);

    // The service runs as `node`, every id of it, with no capability and no way to gain one (the
    // image starts as root only to hand /data over: deploy/container-entrypoint.sh).
    expect(await serviceProcess(NAME)).toEqual({
      uids: [NODE_UID, NODE_UID, NODE_UID, NODE_UID],
      gids: [NODE_UID, NODE_UID, NODE_UID, NODE_UID],
      capEff: "0000000000000000",
      noNewPrivs: "1",
    });
    const created = await createDock(NAME, "Image");
    // The CLI, run by `podman exec` as root, ran as `node` too: nothing in /data is another's.
    expect(await tool("podman", ["exec", NAME, "find", "/data", "!", "-user", "node"])).toBe("");

    // Someone subscribes in the sandbox: the Dock's deep link, then Yes.
    const person = (await (
      await sandbox("users", { method: "POST", body: { first_name: "Ida" } })
    ).json()) as {
      id: number;
    };
    await sandbox(`users/${person.id}/start`, { method: "POST", body: { payload: created.id } });
    const messages = () =>
      sandbox(`chats/${person.id}/messages`).then(
        (response) => response.json() as Promise<{ message_id: number; text?: string; from_bot?: boolean }[]>,
      );
    const prompt = await waitFor("the subscription prompt", async () =>
      (await messages()).find((message) => message.text?.includes("Image")),
    );
    const pressed = await sandbox(`chats/${person.id}/messages/${prompt.message_id}/press`, {
      method: "POST",
      body: { callback_data: `sub:y:${created.id}` },
    });
    expect(pressed.status).toBeLessThan(300);
    await waitFor("the subscription", async () => {
      const dock = JSON.parse(
        await tool("podman", ["exec", NAME, "dock-notify", "docks", "show", created.id, "--json"]),
      );
      return dock.active_subscribers === 1 ? true : undefined;
    });

    expect((await ping(url, created, "built and shipped")).status).toBe(202);
    await waitFor("the delivered message", async () =>
      (await messages()).find((message) => message.text?.includes("built and shipped")),
    );

    // SIGTERM (what `podman stop` and `docker stop` send): a clean exit, well before the kill.
    await tool("podman", ["stop", "--time", "20", NAME]);
    const state = JSON.parse(await tool("podman", ["inspect", "--format", "{{json .State}}", NAME])) as {
      ExitCode: number;
    };
    expect(state.ExitCode).toBe(0);
    await tool("podman", ["rm", NAME]);

    // A new container on the same volume has the Dock and its subscriber.
    await start();
    const again = JSON.parse(
      await tool("podman", ["exec", NAME, "dock-notify", "docks", "show", created.id, "--json"]),
    );
    expect(again).toMatchObject({ id: created.id, name: "Image", active_subscribers: 1 });
  });

  it("takes a root-owned host folder as /data: gives it to node, and the database is written there", async () => {
    // A folder made on the host by root (mode 0700), as `mkdir data` under sudo or Docker makes
    // one, with a file of root's in it already, and a link planted to get root to hand over a
    // file of the container's own.
    const folder = mkdtempSync(join(tmpdir(), "dock-notify-bind-"));
    writeFileSync(join(folder, "notes.txt"), "kept\n");
    symlinkSync("/etc/passwd", join(folder, "passwd"));
    expect(ownersIn(folder)).toEqual(new Set([0]));
    const name = `${NAME}-bind`;
    const port = await freePort();
    const start = async () => {
      await tool("podman", [
        "run",
        "--detach",
        "--name",
        name,
        "--network",
        "host",
        "--env",
        `PORT=${port}`,
        "--env",
        "SANDBOX_ALLOW_REMOTE=true",
        "--volume",
        `${folder}:/data`,
        IMAGE,
      ]);
      await waitFor("/healthz", async () =>
        (await fetch(`http://127.0.0.1:${port}/healthz`)).ok ? true : undefined,
      );
    };
    try {
      await start();
      const created = await createDock(name, "Bound");
      expect(await serviceProcess(name)).toMatchObject({ uids: [NODE_UID, NODE_UID, NODE_UID, NODE_UID] });
      // On the host: the database and the key are in the folder, and everything there is node's.
      expect(readdirSync(folder)).toEqual(
        expect.arrayContaining(["dock-notify.db", "encryption.key", "notes.txt"]),
      );
      expect(ownersIn(folder)).toEqual(new Set([NODE_UID]));
      // The link was given itself: what it points at is still root's.
      expect((await tool("podman", ["exec", name, "stat", "-c", "%u", "/etc/passwd"])).trim()).toBe("0");
      // A new container on the same host folder has the Dock.
      await tool("podman", ["stop", "--time", "20", name]);
      await tool("podman", ["rm", name]);
      await start();
      const again = JSON.parse(
        await tool("podman", ["exec", name, "dock-notify", "docks", "show", created.id, "--json"]),
      );
      expect(again).toMatchObject({ id: created.id, name: "Bound" });
    } finally {
      await tool("podman", ["rm", "--force", "--time", "0", name]).catch(() => {});
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("run as uid 1000 on a root-owned folder, stops with exit 2 naming the uid and the chown that fixes it", async () => {
    const folder = mkdtempSync(join(tmpdir(), "dock-notify-bind-"));
    try {
      const outcome = await toolOutcome("podman", [
        "run",
        "--rm",
        "--network",
        "host",
        "--user",
        `${NODE_UID}:${NODE_UID}`,
        "--env",
        `PORT=${await freePort()}`,
        "--env",
        "SANDBOX_ALLOW_REMOTE=true",
        "--volume",
        `${folder}:/data`,
        IMAGE,
      ]);
      expect(outcome.code).toBe(2);
      expect(outcome.stderr).toContain("DATA_DIR (/data) belongs to uid 0");
      expect(outcome.stderr).toContain(`runs as uid ${NODE_UID}`);
      expect(outcome.stderr).toContain(`sudo chown -R ${NODE_UID}:${NODE_UID} <the folder mounted at /data>`);
      expect(readdirSync(folder)).toEqual([]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

/**
 * compose.yaml (with PostgreSQL) and compose.sqlite.yaml, run by podman-compose as a self-hoster
 * would, on the image built above. PostgreSQL's official image cannot be pulled here: compose.yaml
 * takes POSTGRES_IMAGE, and the test names a stand-in (test/image/postgres) with the same contract.
 */
describe.each([
  ["compose.yaml", "postgres"],
  ["compose.sqlite.yaml", "sqlite"],
] as const)("%s", (file, database) => {
  const project = `dntest${database}${process.pid}`;
  let env: Record<string, string> = {};
  const compose = (...args: string[]) => composeTool(env, ["-p", project, "-f", join(root, file), ...args]);

  beforeAll(async () => {
    await ensureNodeBase();
    // The image built above, named through DOCK_NOTIFY_IMAGE, so podman-compose builds nothing.
    if (
      !(await tool("podman", ["image", "exists", IMAGE]).then(
        () => true,
        () => false,
      ))
    ) {
      throw new Error(`${IMAGE} is built by the first test file's describe; run the whole file`);
    }
    if (database === "postgres") {
      await tool("buildah", buildArgs(POSTGRES_STANDIN, join(import.meta.dirname, "postgres")));
    }
    const port = await freePort();
    env = {
      TELEGRAM_BOT_TOKEN: "7000000001:AAE-compose-test-not-a-real-token",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      PORT: String(port),
      POSTGRES_PASSWORD: randomBytes(24).toString("hex"),
      POSTGRES_IMAGE: POSTGRES_STANDIN,
      DOCK_NOTIFY_IMAGE: IMAGE,
    };
  });

  afterAll(async () => {
    await compose("down", "-v").catch(() => {});
    await tool("podman", ["network", "rm", "--force", `${project}_default`]).catch(() => {});
  });

  it("comes up, takes a Dock and a ping, and keeps them across down and up", async () => {
    const service = `${project}_dock-notify_1`;
    const url = env.PUBLIC_URL ?? "";
    const up = async () => {
      await compose("up", "-d");
      // PostgreSQL initialises its cluster first: the service restarts until it can connect.
      await waitFor(
        "/readyz",
        async () => ((await fetch(`${url}/readyz`)).status === 200 ? true : undefined),
        180_000,
      );
    };
    await up();
    const logs = await tool("podman", ["logs", service]);
    expect(logs).toContain(database === "postgres" ? '"database":"postgres://' : '"database":"sqlite:/data/');
    expect(logs).not.toContain(env.POSTGRES_PASSWORD ?? "never");

    const created = await createDock(service, "Compose");
    expect((await ping(url, created, "composed")).status).toBe(202);

    await compose("down");
    await up();
    const again = JSON.parse(
      await tool("podman", ["exec", service, "dock-notify", "docks", "show", created.id, "--json"]),
    );
    expect(again).toMatchObject({ id: created.id, name: "Compose" });
  });
});

/**
 * compose.sandbox.yaml, as someone trying Dock Notify runs it: no token and nothing to fill in,
 * the port published on the host's loopback, and every link the service prints opened from the
 * host, as a browser there would (not from inside the container).
 */
describe("compose.sandbox.yaml", () => {
  const project = `dntestsandbox${process.pid}`;
  let env: Record<string, string> = {};
  const compose = (...args: string[]) =>
    composeTool(env, ["-p", project, "-f", join(root, "compose.sandbox.yaml"), ...args]);

  beforeAll(async () => {
    if (
      !(await tool("podman", ["image", "exists", IMAGE]).then(
        () => true,
        () => false,
      ))
    ) {
      throw new Error(`${IMAGE} is built by the first test file's describe; run the whole file`);
    }
    env = { PORT: String(await freePort()), DOCK_NOTIFY_IMAGE: IMAGE };
  });

  afterAll(async () => {
    await compose("down", "-v").catch(() => {});
    await tool("podman", ["network", "rm", "--force", `${project}_default`]).catch(() => {});
  });

  it("runs the sandbox with no token, reachable from the host: the banner's links, the sandbox, the CLI's curl line", async () => {
    const service = `${project}_dock-notify_1`;
    const host = `http://localhost:${env.PORT}`;
    await compose("up", "-d");
    await waitFor(
      "/readyz from the host",
      async () => ((await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status === 200 ? true : undefined),
      180_000,
    );
    // Published on the host's loopback only: the sandbox lets whoever reaches it act as anyone.
    expect((await tool("podman", ["port", service])).trim()).toBe(`8080/tcp -> 127.0.0.1:${env.PORT}`);
    // The banner (tty: true gives the readable one, as `npm start` on a terminal), the last thing
    // the start prints. Fastify's own "Server listening at" lines before it name the container's
    // addresses: the banner is what a person is told to open.
    const banner = await waitFor("the banner", async () => {
      const text = await tool("podman", ["logs", service]);
      return /is running[\s\S]*Press Ctrl\+C/.exec(text)?.[0];
    });
    const links = [...new Set(banner.match(/http:\/\/[\w.:/-]+/g) ?? [])];
    expect(links).toEqual(expect.arrayContaining([`${host}/console/`, `${host}/sandbox`, `${host}/docs`]));
    for (const link of links) {
      const response = await fetch(link);
      expect({ link, status: response.status }).toEqual({ link, status: 200 });
      expect(response.headers.get("content-type")).toContain("text/html");
    }

    // A Dock from the CLI in the container: its curl line names the host's address.
    const printed = await tool("podman", [
      "exec",
      service,
      "dock-notify",
      "docks",
      "create",
      "--owner",
      "100000001",
      "--name",
      "Trial",
    ]);
    const curl = /^\s*(curl .*)$/m.exec(printed)?.[1] ?? "";
    expect(curl).toMatch(new RegExp(` ${host.replace(/[.:/]/g, "\\$&")}/ping$`));
    const dockId = /Dock ID:\s+(\w+)/.exec(printed)?.[1] ?? "";

    // Someone subscribes through the sandbox's API, from the host.
    const sandbox = (path: string, body?: unknown) =>
      fetch(`${host}/sandbox/api/${path}`, {
        method: body === undefined ? "GET" : "POST",
        ...(body === undefined
          ? {}
          : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
      });
    const person = (await (await sandbox("users", { first_name: "Tia" })).json()) as { id: number };
    await sandbox(`users/${person.id}/start`, { payload: dockId });
    const messages = async () =>
      (await (await sandbox(`chats/${person.id}/messages`)).json()) as {
        message_id: number;
        text?: string;
      }[];
    const prompt = await waitFor("the subscription prompt", async () =>
      (await messages()).find((message) => message.text?.includes("Trial")),
    );
    const pressed = await sandbox(`chats/${person.id}/messages/${prompt.message_id}/press`, {
      callback_data: `sub:y:${dockId}`,
    });
    expect(pressed.status).toBeLessThan(300);
    await waitFor("the subscription", async () => {
      const dock = JSON.parse(
        await tool("podman", ["exec", service, "dock-notify", "docks", "show", dockId, "--json"]),
      );
      return dock.active_subscribers === 1 ? true : undefined;
    });

    // The printed curl line, run as copied on the host, is delivered in the sandbox.
    const sent = await promisify(execFile)("sh", ["-c", `${curl} --silent --show-error --fail`]);
    expect(JSON.parse(sent.stdout)).toMatchObject({ ok: true });
    await waitFor("the delivered message", async () =>
      (await messages()).find((message) => message.text?.includes("Hello")),
    );
  });
});
