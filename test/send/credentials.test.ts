import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newDockId } from "../../src/domain/ids.ts";
import { MAX_GITHUB_CREDENTIALS } from "../../src/domain/principal.ts";
import { encryptSecret, newSecretKey } from "../../src/domain/secrets.ts";
import { checkCredentials, credentialsQuery, signingQuery } from "../../src/store/credentials.ts";
import { dialects, type RunningService, startService } from "../helpers/harness.ts";

const DIALECTS = await dialects();

/**
 * Authentication answers an unknown Dock and a wrong key with the same work: the credentials query
 * returns one row either way (`npm run bench:timing` measures that the time does not tell them
 * apart).
 */
describe.each(DIALECTS)("credentials on %s", (dialect) => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService(dialect);
  });
  afterAll(async () => service.close());

  it("the query answers exactly one row for a Dock that exists and for one that does not", async () => {
    const dock = await service.app.docks.create(1, { name: "Real", link: null, description: null });
    const query = credentialsQuery(service.db.kysely);
    const found = (await service.db.kysely.executeQuery(query({ id: dock.id }))).rows;
    const missing = (await service.db.kysely.executeQuery(query({ id: newDockId() }))).rows;
    expect(found).toHaveLength(1);
    expect(missing).toHaveLength(1);
    expect(found[0]).toMatchObject({ id: dock.id, name: "Real", absent: 0 });
    expect(missing[0]).toMatchObject({ absent: 1 });
    expect((found[0] as { secret_hash: string }).secret_hash).toHaveLength(64);
    expect((missing[0] as { secret_hash: string }).secret_hash).toHaveLength(64);

    expect(checkCredentials(found[0], dock.secretKey)).toEqual({
      id: dock.id,
      name: "Real",
      watched: false,
      inbound: null,
    });
    expect(checkCredentials(found[0], "dnsk_wrong")).toBeUndefined();
    expect(checkCredentials(missing[0], dock.secretKey)).toBeUndefined();
    // A secret that hashes to the stand-in's hash cannot exist; even a stand-in row with a hash
    // that matched would not be a Dock.
    expect(
      checkCredentials(
        { ...(missing[0] as { id: string; name: string; secret_hash: string; watched: number }), absent: 1 },
        "x",
      ),
    ).toBeUndefined();
  });

  it("a signature's lookup answers exactly one row, with a sealed secret, for a Dock that exists and for one that does not", async () => {
    const dock = await service.app.docks.create(1, { name: "Signed", link: null, description: null });
    const standIn = encryptSecret(newSecretKey(), randomBytes(32));
    const query = signingQuery(service.db.kysely);
    const standInGithub = encryptSecret("[]", randomBytes(32));
    const found = (await service.db.kysely.executeQuery(query({ id: dock.id, standIn, standInGithub }))).rows;
    const missing = (await service.db.kysely.executeQuery(query({ id: newDockId(), standIn, standInGithub })))
      .rows;
    expect(found).toHaveLength(1);
    expect(missing).toHaveLength(1);
    expect(found[0]).toMatchObject({ id: dock.id, name: "Signed", absent: 0, watched: 0 });
    expect(missing[0]).toMatchObject({ absent: 1, secret_sealed: standIn, github_sealed: standInGithub });
    // A Dock that never had a GitHub credential reads the stand-in's slots too.
    expect(found[0]).toMatchObject({ github_sealed: standInGithub });
    // Both are unsealed alike (a secret of the same length); the unknown Dock is then answered with nothing.
    expect((found[0] as { secret_sealed: string }).secret_sealed).toHaveLength(standIn.length);
  });

  it("a signature is checked against as many secrets for any Dock: its GitHub credentials, its secret key, stand-ins for the rest", async () => {
    const docks = service.app.docks;
    const dock = await docks.create(1, { name: "Signers", link: null, description: null });
    const bare = await docks.signersOf(dock.id);
    const unknown = await docks.signersOf(newDockId());
    const malformed = await docks.signersOf("not a Dock ID");
    for (const signers of [bare, unknown, malformed]) {
      expect(signers.secrets).toHaveLength(MAX_GITHUB_CREDENTIALS + 1);
      expect(signers.credentials).toHaveLength(MAX_GITHUB_CREDENTIALS + 1);
    }
    expect(bare.dock).toMatchObject({ id: dock.id, name: "Signers" });
    expect(bare.secrets.at(-1)).toBe(dock.secretKey);
    expect(bare.credentials.every((c) => c === null)).toBe(true);
    expect(unknown.dock).toBeUndefined();
    expect(malformed.dock).toBeUndefined();
    // The stand-ins are one secret nobody holds, not the Dock's.
    expect(new Set([...bare.secrets.slice(0, -1), ...unknown.secrets]).size).toBe(1);
    expect(unknown.secrets).not.toContain(dock.secretKey);

    const first = await docks.credentials.create(dock.id, "org", "github");
    const second = await docks.credentials.create(dock.id, "rotated", "github");
    await docks.credentials.create(dock.id, "ci", "send");
    const two = await docks.signersOf(dock.id);
    expect(two.secrets.slice(0, 2)).toEqual([first.secret, second.secret]);
    expect(two.credentials.slice(0, 2).map((c) => c?.id)).toEqual([
      first.credential.id,
      second.credential.id,
    ]);
    expect(two.secrets).toHaveLength(MAX_GITHUB_CREDENTIALS + 1);
    expect(two.secrets.at(-1)).toBe(dock.secretKey);
  });
});
