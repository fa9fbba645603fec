/**
 * Attacks on revocable direct cluster endpoint tokens and their TokenReview webhook (issue 43), as tenants would make
 * them. The first tests were findings (each comment says the attack and what happens instead since the fix); the
 * `held` tests are regressions for attacks that did not work. One server, real etcd; setup as direct-tokens-webhook.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { API_VERSION, MERGE_PATCH, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const WEBHOOK = '/authenticate/direct-cluster-endpoint';
const THIS_CLUSTER = 'eu-1';
const OTHER_CLUSTER = 'eu-2';
const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const KEY_CLAIM = 'management.platform.sh/access-key';

type Users = 'root' | 'alice' | 'reviewer';
let ts: TestServer & { as: Record<Users, HttpClient> };

const post = (client: HttpClient, path: string, kind: string, body: Record<string, unknown>) =>
  client.post(path, { apiVersion: API_VERSION, kind, ...body });

async function createKey(client: HttpClient, name: string, spec: Record<string, unknown>): Promise<string> {
  const res = await post(client, KEYS, 'OwnedAccessKey', { metadata: { name }, spec });
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body.spec.key;
}

async function tokenOf(client: HttpClient, spec: Record<string, unknown> = {}): Promise<string> {
  const res = await post(client, `${GROUP_PATH}/directclusterendpointtokens`, 'DirectClusterEndpointToken', { spec });
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return res.body.status.token;
}

const tokenReview = (token: string) => ({
  apiVersion: 'authentication.k8s.io/v1',
  kind: 'TokenReview',
  spec: { token },
});

/** A review posted straight to the webhook, as eu-1's kube-apiserver would (the reviewer holds eu-1's grant). */
const review = (token: string, path = `${WEBHOOK}/${THIS_CLUSTER}`, client: HttpClient = ts.as.reviewer) =>
  client.post(path, tokenReview(token));

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: ['platform:team:web'], reviewer: [] });
  const grant = { verbs: ['create'], subresources: ['tokenreviews'], users: ['reviewer'] };
  for (const [name, access] of [
    [THIS_CLUSTER, [grant]],
    [OTHER_CLUSTER, []],
  ] as const)
    expect(
      (
        await post(ts.as.root, `${GROUP_PATH}/clusters`, 'Cluster', {
          metadata: { name },
          spec: { networkPeer: true, access },
        })
      ).status,
    ).toBe(201);
  // billing is team web's (alice's) project, allowed only on eu-2.
  expect(
    (
      await post(ts.as.root, `${GROUP_PATH}/projects`, 'Project', {
        metadata: { name: 'billing' },
        spec: { owner: { team: 'web' }, allowedClusters: [{ name: OTHER_CLUSTER }] },
      })
    ).status,
  ).toBe(201);
}, 120_000);

afterAll(async () => {
  await ts?.stop();
}, 60_000);

describe('a token does not outlive a change to the key that issued it', () => {
  // Attack: an admin gave alice's CI key the group `ops` (say, cluster-admin on the connected clusters). The key
  // asks for a direct token (groups [ops, ...], no scope). Then the admin narrows the key: removes `ops` and limits
  // it to eu-2 (an update the key's holder could not undo). The key still "works", so valueRefused passes, and the
  // webhook keeps answering eu-1 with the groups the key no longer has, for the token's whole life (up to
  // --token-max-ttl). Should: refuse a token whose key's identity (user, groups) or restriction is no longer what it
  // was issued with (e.g. compare with the key's current identity, or bind the claim to metadata.generation of the
  // key's spec and refuse when it moved), as a restricted key could not have been issued the token at all.
  test('an admin takes a group away from the key and scopes it to another cluster: the token is refused on eu-1', async () => {
    const name = uniq('ops-ci');
    const key = await createKey(ts.as.root, name, { user: 'alice', groups: ['ops'] });
    const token = await tokenOf(ts.client(key), { ttl: 3600 });
    expect(decodeJwt(token).groups).toContain('ops');
    expect((await review(token)).body.status).toMatchObject({
      authenticated: true,
      user: { groups: expect.arrayContaining(['ops']) },
    });

    const patched = await ts.as.root.patch(
      `${KEYS}/${name}`,
      { spec: { groups: [], scope: { clusters: [{ cluster: OTHER_CLUSTER }] } } },
      MERGE_PATCH,
    );
    expect(patched.status).toBe(200);
    // The key itself now acts without `ops`, and only on eu-2: it may no longer even ask for a token.
    await waitFor('the key to be restricted', async () => {
      const res = await post(
        ts.client(key),
        `${GROUP_PATH}/directclusterendpointtokens`,
        'DirectClusterEndpointToken',
        {
          spec: {},
        },
      );
      return res.status === 403;
    });
    const status = (await review(token)).body.status;
    expect(status).toMatchObject({ authenticated: false });
  });

  // Attack: an admin moves a key to another identity (system:masters may change spec.user). The token issued to
  // the key's previous identity keeps authenticating as that identity. Should: refused (the key no longer stands
  // for the token's subject).
  test('an admin re-points the key at another user: the token no longer authenticates as the old one', async () => {
    const name = uniq('moved');
    const key = await createKey(ts.as.root, name, { user: 'alice' });
    const token = await tokenOf(ts.client(key));
    expect((await ts.as.root.patch(`${KEYS}/${name}`, { spec: { user: 'bob' } }, MERGE_PATCH)).status).toBe(200);
    await waitFor('the key to act as bob', async () => {
      const res = await ts.client(key).get(`${GROUP_PATH}/clusters/${THIS_CLUSTER}`);
      return res.status === 403 && String(res.body?.message).includes('"bob"');
    });
    const status = (await review(token)).body.status;
    expect(status).toMatchObject({ authenticated: false });
  });
});

describe('a key minted with a key falls with it', () => {
  // Attack: alice's CI key leaks (or is about to be revoked). With it, the holder creates a second key for alice
  // (allowed: an unrestricted key may create keys for its own user) and asks for a direct token with that one, then
  // the first key is deleted. The child key records the value it was made with (status.issuedWith) and is refused
  // once that value is, and so is every token it was issued: revoking a key revokes what was made with it.
  test('a token from a key made with a deleted key is refused', async () => {
    const parent = uniq('leaked');
    const leaked = await createKey(ts.as.alice, parent, { user: 'alice' });
    const child = uniq('persist');
    const childValue = await createKey(ts.client(leaked), child, { user: 'alice' });
    const token = await tokenOf(ts.client(childValue));
    expect((decodeJwt(token)[KEY_CLAIM] as { name: string }).name).toBe(child);
    expect((await review(token)).body.status).toMatchObject({ authenticated: true });
    expect((await ts.as.root.delete(`${KEYS}/${parent}`)).status).toBe(200);
    await waitFor('the leaked key to be refused', async () => (await ts.client(leaked).get(`${KEYS}`)).status === 401);
    expect((await review(token)).body.status).toEqual({
      authenticated: false,
      error: expect.stringContaining(
        `access key "${child}" works only while the access keys it was made with work (status.issuedWith): access key "${parent}" no longer exists`,
      ),
    });
    expect((await ts.client(childValue).get(KEYS)).status).toBe(401);
  });
});

describe('a webhook credential scoped to its own Cluster reviews for it', () => {
  // Attack (least privilege, the defender's side): the doc has the cluster's kube-apiserver review with an access
  // key, kept in a file on every control-plane node. An admin narrows that key to what it needs, scope.clusters
  // [eu-1], which docs/security.md says covers "the clusters object named eu-1 and its subresources": the grant the
  // review asks for is create on clusters/eu-1/tokenreviews. The restriction is checked against the raw POST of a
  // non-resource path instead, so the scoped key is 403 and every cluster must be given an unrestricted key (all
  // its user may do, from a file on each node). Should: check the restriction against the grant's attributes
  // (create on clusters/tokenreviews named eu-1) as the authorizers are, so a key scoped to eu-1 reviews for eu-1
  // and nothing else.
  test('a key scoped to clusters [eu-1] may review at eu-1', async () => {
    const key = await createKey(ts.as.root, uniq('reviewer-eu-1'), {
      user: 'reviewer',
      scope: { clusters: [{ cluster: THIS_CLUSTER }] },
    });
    const token = await tokenOf(ts.as.alice);
    const res = await review(token, `${WEBHOOK}/${THIS_CLUSTER}`, ts.client(key));
    expect({ status: res.status, review: res.body?.status }).toMatchObject({
      status: 200,
      review: { authenticated: true },
    });
  });
});

describe('a token with a huge scope.projects is never issued', () => {
  // Attack: any tenant asks for a token whose scope.projects lists 15,000 made-up projects (the create takes a few
  // hundred ms; nothing caps the list, and the token, ~850 KB, still fits kube-apiserver's 1 MiB of headers). She
  // sends it to a connected cluster whose kube-apiserver uses the webhook: each request is a review, since a refusal
  // with a reason is not cached by kube (docs/api.md). Each review verifies the ~850 KB token and looks up every
  // project (15,000 lookups on the event loop: ~0.2 s of this server's CPU during which it serves nothing else;
  // ~0.9 s for 30,000, which a Cluster's owner can post to the webhook herself) and answers an error quoting all
  // 15,000 names (~450 KB, which kube-apiserver logs). Should: scope lists capped (maxItems, at token create as at
  // key create, say ACCESS_LIMITS' 64), and the review refusing a token with more entries than that before any
  // lookup; an error naming how many projects, not each.
  test('a token scoped to 15,000 projects is 422 at create; one of 256 (the most) is refused with a short answer', async () => {
    const projects = (n: number) => Array.from({ length: n }, (_, i) => ({ project: `p-${i}-${'x'.repeat(20)}` }));
    const tooMany = await post(ts.as.alice, `${GROUP_PATH}/directclusterendpointtokens`, 'DirectClusterEndpointToken', {
      spec: { scope: { projects: projects(15_000) } },
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.details.causes).toEqual([
      expect.objectContaining({ reason: 'FieldValueTooMany', field: 'spec.scope.projects' }),
    ]);
    const most = await post(ts.as.alice, `${GROUP_PATH}/directclusterendpointtokens`, 'DirectClusterEndpointToken', {
      spec: { scope: { projects: projects(256) } },
    });
    expect(most.status).toBe(201);
    const r = await review(most.body.status.token as string);
    expect(r.body.status.authenticated).toBe(false);
    expect(r.body.status.error).toContain('and 251 more');
    expect(r.text.length).toBeLessThan(16 * 1024);
  });
});

describe('held', () => {
  // Attack: alice owns project billing (allowed on eu-2 only); she edits its allowedClusters to add eu-1 so that her
  // token scoped to billing passes at eu-1. allowedClusters is an admin field: 403, and the token stays refused.
  test('the owner of a project cannot widen its allowedClusters to carry a project-scoped token elsewhere', async () => {
    const token = await tokenOf(ts.as.alice, { scope: { projects: [{ project: 'billing' }] } });
    const res = await ts.as.alice.patch(
      `${GROUP_PATH}/projects/billing`,
      { spec: { allowedClusters: [{ name: OTHER_CLUSTER }, { name: THIS_CLUSTER }] } },
      MERGE_PATCH,
    );
    expect(res.status).toBe(403);
    expect((await review(token)).body.status).toMatchObject({
      authenticated: false,
      error: expect.stringContaining("none of the token's scope.projects (billing)"),
    });
  });

  // Attack: the reviewer (allowed eu-1 only) reaches eu-2's review, whose grant she lacks, by writing the path
  // another way: trailing slashes, a %-escaped name, an encoded slash or dot segments, NUL or space, upper case, the
  // bare path. Each is 403 (400 for a name that is none, 404 for another path), never a review.
  test('path tricks do not review for a Cluster the caller may not review for', async () => {
    const token = await tokenOf(ts.as.alice, { scope: { clusters: [{ cluster: OTHER_CLUSTER }] } });
    for (const path of [
      `${WEBHOOK}/${OTHER_CLUSTER}/`,
      `${WEBHOOK}/${OTHER_CLUSTER}//`,
      `${WEBHOOK}/%65u-2`,
      `${WEBHOOK}/${THIS_CLUSTER}%2F..%2F${OTHER_CLUSTER}`,
      `${WEBHOOK}/${OTHER_CLUSTER}%00`,
      `${WEBHOOK}/${OTHER_CLUSTER}%20`,
      `${WEBHOOK}/${THIS_CLUSTER}/../${OTHER_CLUSTER}`,
      `${WEBHOOK}/EU-2`,
      `${WEBHOOK.toUpperCase()}/${OTHER_CLUSTER}`,
      `${WEBHOOK}`,
    ]) {
      const res = await review(token, path);
      expect({ path, status: res.status, authenticated: res.body?.status?.authenticated }).toEqual({
        path,
        status: expect.any(Number),
        authenticated: undefined,
      });
      if (![400, 403, 404].includes(res.status)) throw new Error(`${path}: ${res.status} ${res.text.slice(0, 400)}`);
    }
    // eu-1's own review refuses the eu-2 token; an eu-1 token with a trailing slash passes.
    expect((await review(token, `${WEBHOOK}/${THIS_CLUSTER}/`)).body.status).toMatchObject({ authenticated: false });
    const own = await tokenOf(ts.as.alice, { scope: { clusters: [{ cluster: THIS_CLUSTER }] } });
    expect((await review(own, `${WEBHOOK}/${THIS_CLUSTER}/`)).body.status).toMatchObject({ authenticated: true });
  });

  // Attack: the key is deleted, then created again with the same name and the uid the old token names (a create
  // sending metadata.uid). The server gives the new key a uid of its own, so the old token stays refused.
  test('a key recreated with the old uid does not bring its tokens back', async () => {
    const name = uniq('reborn');
    const token = await tokenOf(ts.client(await createKey(ts.as.alice, name, { user: 'alice' })));
    const { uid } = decodeJwt(token)[KEY_CLAIM] as { uid: string };
    expect((await ts.as.alice.delete(`${KEYS}/${name}`)).status).toBe(200);
    const again = await post(ts.as.alice, KEYS, 'OwnedAccessKey', { metadata: { name, uid }, spec: { user: 'alice' } });
    if (again.status === 201) expect(again.body.metadata.uid).not.toBe(uid);
    await waitFor('the token to be refused', async () => (await review(token)).body.status.authenticated === false);
    expect((await review(token)).body.status.error).toContain(`access key "${name}" no longer exists`);
  });

  // Attack: a reviewer posts an access key value (not a JWT) to learn whether it is a working key. The answer is the
  // same as for garbage: the webhook is no oracle for key values.
  test('an access key value reviewed is "not a JWT", as garbage is', async () => {
    const value = await createKey(ts.as.alice, uniq('oracle'), { user: 'alice' });
    const asKey = (await review(value)).body.status;
    const asGarbage = (await review(`${value.slice(0, -4)}AAAA`)).body.status;
    expect(asKey).toEqual({ authenticated: false, error: 'the token is not a JWT' });
    expect(asGarbage).toEqual(asKey);
  });

  // Attack: the reviewer calls the webhook with an access key of hers scoped to eu-2, hoping the grant on eu-1 holds
  // whatever her key's scope says. A scoped credential is narrowed to its scope: 403.
  test('a scoped key of a reviewer cannot review, even for the cluster her user may review for', async () => {
    const key = await createKey(ts.as.root, uniq('reviewer-scoped'), {
      user: 'reviewer',
      scope: { clusters: [{ cluster: OTHER_CLUSTER }] },
    });
    const token = await tokenOf(ts.as.alice);
    const res = await review(token, `${WEBHOOK}/${THIS_CLUSTER}`, ts.client(key));
    expect(res.status).toBe(403);
  });

  // Attack: the rotated-away value asks for a fresh token during its grace, hoping for one that lives past it. The
  // token's exp is capped at the grace's end, and once the grace has passed it is refused.
  test('a token asked by a rotated-away value lives no longer than the grace', async () => {
    const name = uniq('rot');
    const old = await createKey(ts.as.alice, name, { user: 'alice' });
    const rotated = await post(ts.as.alice, `${KEYS}/${name}/rotate`, 'OwnedAccessKey', {
      metadata: { name },
      spec: { rotationGracePeriod: 5 },
    });
    expect(rotated.status).toBe(201);
    const during = await tokenOf(ts.client(old), { ttl: 3600 });
    const { exp, iat } = decodeJwt(during);
    expect(exp! - iat!).toBeLessThanOrEqual(5);
    expect((await review(during)).body.status).toMatchObject({ authenticated: true });
    await waitFor('the grace to pass', async () => (await review(during)).body.status.authenticated === false, 15_000);
  });

  // Attack: bodies meant to hurt the parser: YAML (accepted by the webhook) nested deeply or full of aliases, a body
  // past 3 MiB, a content type that is neither. Each is a 4xx quickly, and the server keeps answering.
  test('hostile bodies are 4xx and the server keeps reviewing', async () => {
    const token = await tokenOf(ts.as.alice);
    const path = `${WEBHOOK}/${THIS_CLUSTER}`;
    const deep = `apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec: {token: x, audiences: ${'['.repeat(200_000)}${']'.repeat(200_000)}}\n`;
    const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 12; i++) {
      const prev = String.fromCharCode(96 + i);
      const next = String.fromCharCode(97 + i);
      laughs.push(`${next}: &${next} [${Array(9).fill(`*${prev}`).join(',')}]`);
    }
    const bomb = `${laughs.join('\n')}\napiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec: {token: x, audiences: *l}\n`;
    for (const [body, contentType, status] of [
      [deep, 'application/yaml', 400],
      [bomb, 'application/yaml', 400],
      [JSON.stringify({ ...tokenReview(token), pad: 'x'.repeat(3 * 1024 * 1024) }), 'application/json', 413],
      [JSON.stringify(tokenReview(token)), 'application/vnd.kubernetes.protobuf', undefined],
    ] as const) {
      const res = await ts.as.reviewer.post(path, body, { contentType });
      if (status) expect({ contentType, status: res.status }).toEqual({ contentType, status });
      else expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.text).not.toContain(token);
    }
    expect((await review(token)).body.status).toMatchObject({ authenticated: true });
  });
});
