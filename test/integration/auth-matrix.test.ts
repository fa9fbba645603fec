/**
 * Who may do what, end to end over HTTPS: one server with static tokens (--token-auth-file), a front proxy CA
 * (--requestheader-client-ca-file, --requestheader-allowed-names) and a client CA (--client-ca-file), and a matrix of
 * callers × verbs × kinds (SharedSecret namespaced, Cluster cluster-scoped) × path forms (/apis/... and
 * /orchestrator/management/apis/...):
 *
 * - no credentials and unknown bearer tokens are 401 everywhere but /healthz, /livez, /readyz and /version;
 * - system:masters may do everything; everyone else is 403 with kube's Forbidden message unless the object's
 *   access list (users, teams = groups platform:team:<team>, verbs, subresources) or owner grants the verb;
 * - lists and watches by such callers show only the objects they may get;
 * - X-Remote-* headers count only on a connection with a front proxy certificate whose CN is allowed;
 *   client certificates from the client CA are CN/O identities; certificates from other CAs authenticate nobody;
 * - no token shows up in any response body received (the last test of the file).
 *
 * Delegated authentication/authorization against the host cluster stand-in is in auth-delegated.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCa, makeCert, type TestCert } from '../support/certs.js';
import {
  authMatrix,
  bodyOf,
  collectionPath,
  expectAllowed,
  KINDS,
  listedNames as names,
  objectPath,
  RecordingClient,
  seen,
  type Caller,
  type Target,
  type Verb,
} from '../support/authmatrix.js';
import { DIRECT_PREFIX, GROUP, MERGE_PATCH, uniq } from '../support/fixtures.js';
import { GROUP_PATH, HttpClient, type HttpResponse } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { closeWatches, openWatch, type WatchStream } from '../support/watch.js';

// ---------------------------------------------------------------------------------------------------------------
// Identities
// ---------------------------------------------------------------------------------------------------------------

const secret = (who: string) => `${who}-${randomBytes(24).toString('hex')}`;

/** Static tokens: root is in system:masters; alice is in no group; bob is in team blue; eve in team red (granted nothing). */
const TOKENS = { root: secret('root'), alice: secret('alice'), bob: secret('bob'), eve: secret('eve') };
const TOKEN_FILE = [
  `${TOKENS.root},root,uid-root,"system:masters"`,
  `${TOKENS.alice},alice,uid-alice`,
  `${TOKENS.bob},bob,uid-bob,"platform:team:blue"`,
  `${TOKENS.eve},eve,uid-eve,"platform:team:red,developers"`,
].join('\n');

const FRONT_PROXY_CN = 'front-proxy-client';

// Certificates are made once for the file (RSA key generation is slow).
const frontProxyCa = makeCa('front-proxy-ca');
const clientCa = makeCa('client-ca');
const rogueCa = makeCa('rogue-ca');
const CERTS = {
  /** The aggregator's --proxy-client-cert-file. */
  frontProxy: makeCert({ commonName: FRONT_PROXY_CN, issuer: frontProxyCa }),
  /** Signed by the front proxy CA, but its CN is not in --requestheader-allowed-names. */
  frontProxyOtherName: makeCert({ commonName: 'not-the-front-proxy', issuer: frontProxyCa }),
  /** The allowed CN, but expired. */
  frontProxyExpired: makeCert({
    commonName: FRONT_PROXY_CN,
    issuer: frontProxyCa,
    notBefore: new Date(Date.now() - 2 * 86_400_000),
    notAfter: new Date(Date.now() - 86_400_000),
  }),
  /** The allowed CN from a CA the server does not know. */
  frontProxyRogue: makeCert({ commonName: FRONT_PROXY_CN, issuer: rogueCa }),
  /** --client-ca-file users. */
  carol: makeCert({ commonName: 'carol', issuer: clientCa }),
  dave: makeCert({ commonName: 'dave', organizations: ['platform:team:blue', 'qa'], issuer: clientCa }),
  ops: makeCert({ commonName: 'ops', organizations: ['system:masters'], issuer: clientCa }),
  /** Claims to be a master, from an unknown CA. */
  rogueMaster: makeCert({ commonName: 'root', organizations: ['system:masters'], issuer: rogueCa }),
  /** Self-signed, claims to be a master. */
  selfSigned: makeCert({ commonName: 'root', organizations: ['system:masters'] }),
};

/** Forged aggregator headers claiming a master. */
const FORGED: Array<[string, string]> = [
  ['X-Remote-User', 'admin'],
  ['X-Remote-Group', 'system:masters'],
  ['X-Remote-Extra-Scopes', 'all'],
];

// ---------------------------------------------------------------------------------------------------------------
// Clients that remember every response (for the final leak scan)
// ---------------------------------------------------------------------------------------------------------------

const streams: WatchStream[] = [];

/** A recording client with an optional client certificate, a bearer token and headers given as [name, value] pairs. */
class CertClient extends RecordingClient {
  constructor(opts: { cert?: TestCert; token?: string; headers?: Array<[string, string]> } = {}) {
    super(ts.server.url, ts.server.caPem ?? '', opts.token, { cert: opts.cert, headers: opts.headers });
  }
}

async function watch(client: HttpClient, path: string): Promise<WatchStream> {
  const stream = await openWatch(client, path);
  streams.push(stream);
  return stream;
}

// ---------------------------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------------------------

let ts: TestServer;
let dir: string;
let root: RecordingClient;
let alice: RecordingClient;
let bob: RecordingClient;
let eve: RecordingClient;
let nobody: RecordingClient;

function tokenClient(token?: string): RecordingClient {
  return new RecordingClient(ts.server.url, ts.server.caPem ?? '', token);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'auth-matrix-'));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text, { mode: 0o600 });
    return join(dir, name);
  };
  ts = await startTestServer({
    tokenAuthFile: file('tokens.csv', TOKEN_FILE),
    requestheaderClientCaFile: file('front-proxy-ca.crt', frontProxyCa.certPem),
    requestheaderAllowedNames: [FRONT_PROXY_CN],
    clientCaFile: file('client-ca.crt', clientCa.certPem),
  });
  root = tokenClient(TOKENS.root);
  alice = tokenClient(TOKENS.alice);
  bob = tokenClient(TOKENS.bob);
  eve = tokenClient(TOKENS.eve);
  nobody = tokenClient();
}, 120_000);

afterEach(() => closeWatches());

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

// ---------------------------------------------------------------------------------------------------------------
// Objects and verbs
// ---------------------------------------------------------------------------------------------------------------

const PREFIXES = [
  ['/apis', ''],
  ['/orchestrator/management/apis', DIRECT_PREFIX],
] as const;

/** One namespace for the objects of most tests; tests that list or watch use their own. */
const NS = uniq('auth');

const { make, current, act } = authMatrix(() => root, NS, { owner: { user: 'anyone' } });

/** kube's 401: `Unauthorized` Status. */
function expectUnauthorized(res: HttpResponse, what = ''): void {
  expect({ what, status: res.status, body: res.body }).toEqual({
    what,
    status: 401,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    },
  });
}

/** The verb and subresource authorization sees for one of our verbs. */
function authzVerb(verb: Verb): { verb: string; sub: string; named: boolean } {
  const [v, sub = ''] = verb.split(' ');
  return { verb: v, sub, named: !['create', 'list', 'watch', 'deletecollection'].includes(v) };
}

/** kube's responsewriters.Forbidden message and Status for `user` doing `verb` on `t`. */
function forbiddenStatus(user: string, verb: Verb, t: Target): Record<string, any> {
  const { verb: v, sub, named } = authzVerb(verb);
  const gr = `${t.kind}.${GROUP}`;
  const subject = named ? `${gr} ${JSON.stringify(t.name)}` : gr;
  const scope = t.kind === 'clusters' ? 'at the cluster scope' : `in the namespace ${JSON.stringify(t.ns)}`;
  const resource = sub ? `${t.kind}/${sub}` : t.kind;
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `${subject} is forbidden: User ${JSON.stringify(user)} cannot ${v} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(GROUP)} ${scope}`,
    reason: 'Forbidden',
    details: { ...(named ? { name: t.name } : {}), group: GROUP, kind: t.kind },
    code: 403,
  };
}

function expectForbidden(res: HttpResponse, user: string, verb: Verb, t: Target): void {
  expect({ verb, status: res.status, body: res.body }).toEqual({
    verb,
    status: 403,
    body: forbiddenStatus(user, verb, t),
  });
}

/** Callers in system:masters. */
const MASTERS = ['root', 'ops', 'system:kube-aggregator'];
const STATUS_WRITES: Verb[] = ['update status', 'patch status'];

/**
 * A write of /status that authorization allowed, refused by the registry all the same: a status is written by the
 * server and system:masters only, whatever an owner or an access entry grants.
 */
function expectStatusWriteRefused(res: HttpResponse, user: string, verb: Verb, t: Target): void {
  const body = forbiddenStatus(user, verb, t);
  body.message += `: the status of ${t.kind} is written by the server and by members of system:masters only`;
  expect({ verb, status: res.status, body: res.body }).toEqual({ verb, status: 403, body });
}

/**
 * Expects each verb to be allowed or forbidden for `who` (named `user` in messages) and the object to change only
 * when allowed. Status writes that authorization allows are refused by the registry unless `user` is a master.
 */
async function expectVerbs(
  who: Caller,
  user: string,
  t: Target,
  allowed: Verb[],
  forbidden: Verb[] = [],
  prefix = '',
): Promise<void> {
  for (const verb of forbidden) {
    const before =
      verb === 'create' || verb === 'list' || verb === 'watch' || verb === 'deletecollection'
        ? undefined
        : await current(t);
    expectForbidden(await act(who, verb, t, prefix), user, verb, t);
    // A refused write changes nothing.
    if (before) expect((await current(t)).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  }
  // delete last: it removes the object the others need.
  for (const verb of [...allowed.filter((v) => v !== 'delete'), ...allowed.filter((v) => v === 'delete')]) {
    if (STATUS_WRITES.includes(verb) && !MASTERS.includes(user)) {
      const before = await current(t);
      expectStatusWriteRefused(await act(who, verb, t, prefix), user, verb, t);
      expect((await current(t)).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
      continue;
    }
    expectAllowed(await act(who, verb, t, prefix), verb, `${user} ${t.kind}/${t.name}${prefix}`);
  }
  if (allowed.includes('delete')) expect((await root.request('GET', objectPath(t))).status).toBe(404);
}

// ---------------------------------------------------------------------------------------------------------------
// Anonymous and unknown credentials
// ---------------------------------------------------------------------------------------------------------------

const ALL_VERBS: Verb[] = [
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
  'get status',
  'update status',
  'patch status',
];
const DISCOVERY_PATHS = [
  '/api',
  '/apis',
  `/apis/${GROUP}`,
  `/apis/${GROUP}/v1`,
  '/openapi/v2',
  '/openapi/v3',
  `/openapi/v3/apis/${GROUP}/v1`,
  '/api/v1/namespaces/default',
];
const PUBLIC_PATHS = ['/healthz', '/livez', '/readyz', '/version'];

describe('no credentials', () => {
  test.each(KINDS)('every verb on %s, both path forms, is 401 Unauthorized', async (kind) => {
    const t = await make(kind);
    for (const [, prefix] of PREFIXES) {
      for (const verb of ALL_VERBS) expectUnauthorized(await act(nobody, verb, t, prefix), `${verb} ${prefix}`);
    }
    // Nothing was changed and the object is still there.
    expect((await current(t)).spec.description).toBeUndefined();
  });

  test('discovery and OpenAPI are 401, on both path forms', async () => {
    for (const [, prefix] of PREFIXES) {
      for (const path of DISCOVERY_PATHS)
        expectUnauthorized(await nobody.request('GET', `${prefix}${path}`), `${prefix}${path}`);
    }
  });

  test('a path nothing serves is 401 too (no 404 before authentication)', async () => {
    expectUnauthorized(await nobody.request('GET', '/no/such/path'));
    expectUnauthorized(await nobody.request('GET', `${GROUP_PATH}/nosuchresources`));
  });

  test('/healthz, /livez, /readyz and /version stay open', async () => {
    for (const path of PUBLIC_PATHS) {
      const res = await nobody.request('GET', path);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
    expect((await nobody.request('GET', '/version')).body).toMatchObject({
      major: expect.any(String),
      minor: expect.any(String),
      gitVersion: expect.any(String),
    });
  });
});

describe('unknown bearer token', () => {
  const unknown = () => tokenClient(secret('unknown'));

  test.each(KINDS)('every verb on %s, both path forms, is 401 Unauthorized', async (kind) => {
    const t = await make(kind);
    for (const [, prefix] of PREFIXES) {
      for (const verb of ALL_VERBS) expectUnauthorized(await act(unknown(), verb, t, prefix), `${verb} ${prefix}`);
    }
  });

  test('discovery is 401, and so are the public paths: a failed login is never anonymous', async () => {
    for (const path of [...DISCOVERY_PATHS, ...PUBLIC_PATHS])
      expectUnauthorized(await unknown().request('GET', path), path);
  });

  test('a static token with something appended, or in another case, is unknown', async () => {
    expectUnauthorized(await tokenClient(`${TOKENS.root}x`).request('GET', collectionPath('clusters', '')));
    expectUnauthorized(await tokenClient(TOKENS.root.toUpperCase()).request('GET', collectionPath('clusters', '')));
  });

  test('a malformed Authorization header authenticates nobody', async () => {
    const res = await nobody.request('GET', collectionPath('clusters', ''), {
      headers: { Authorization: `Basic ${Buffer.from(`root:${TOKENS.root}`).toString('base64')}` },
    });
    expectUnauthorized(res);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Static tokens: masters and the others
// ---------------------------------------------------------------------------------------------------------------

describe('a static-token user in system:masters', () => {
  test.each(KINDS)('may do every verb on %s, on both path forms', async (kind) => {
    for (const [, prefix] of PREFIXES) {
      const t = await make(kind);
      await expectVerbs(
        root,
        'root',
        t,
        [
          'get',
          'list',
          'watch',
          'create',
          'update',
          'patch',
          'deletecollection',
          'get status',
          'update status',
          'patch status',
          'delete',
        ],
        [],
        prefix,
      );
    }
  });

  test('lists show every object, whoever it grants', async () => {
    const ns = uniq('masters');
    const made = [
      await make('sharedsecrets', {}, { ns }),
      await make('sharedsecrets', { owner: { user: 'alice' } }, { ns }),
      await make('sharedsecrets', { access: [{ verbs: ['get'], teams: ['blue'] }] }, { ns }),
    ];
    for (const [, prefix] of PREFIXES)
      expect(names(await root.request('GET', collectionPath('sharedsecrets', ns, prefix)))).toEqual(
        made.map((t) => t.name).sort(),
      );
  });

  test('deletecollection removes what it selects', async () => {
    const batch = uniq('batch');
    const ns = uniq('dc');
    const t = await make('sharedsecrets', {}, { ns, labels: { batch } });
    const c = await make('clusters', {}, { labels: { batch } });
    for (const target of [t, c]) {
      const res = await root.request(
        'DELETE',
        `${collectionPath(target.kind, target.ns)}?labelSelector=batch%3D${batch}`,
      );
      expect(res.status).toBe(200);
      expect((await root.request('GET', objectPath(target))).status).toBe(404);
    }
  });
});

describe('a static-token user outside system:masters, granted nothing', () => {
  test.each(KINDS)("is 403 with kube's Forbidden message for every verb on a %s, on both path forms", async (kind) => {
    const t = await make(kind, {
      owner: { user: 'alice' },
      access: [{ verbs: ['*'], subresources: ['*'], users: ['alice'], teams: ['blue'] }],
    });
    for (const [, prefix] of PREFIXES)
      await expectVerbs(
        eve,
        'eve',
        t,
        [],
        [
          'get',
          'update',
          'patch',
          'delete',
          'create',
          'deletecollection',
          'get status',
          'update status',
          'patch status',
        ],
        prefix,
      );
  });

  test('a create whose body makes the caller the owner is still 403, and stores nothing', async () => {
    for (const kind of KINDS) {
      const t: Target = { kind, ns: kind === 'clusters' ? '' : NS, name: uniq('mine') };
      const res = await eve.request('POST', collectionPath(kind, t.ns), {
        body: bodyOf(kind, t.name, { owner: { user: 'eve' }, access: [{ verbs: ['*'], users: ['eve'] }] }),
      });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 403,
        body: forbiddenStatus('eve', 'create', t),
      });
      expect((await root.request('GET', objectPath(t))).status).toBe(404);
    }
  });

  test('a server-side apply that would create an object granting the caller is 403, and stores nothing', async () => {
    const t: Target = { kind: 'sharedsecrets', ns: NS, name: uniq('apply') };
    const body = bodyOf('sharedsecrets', t.name, { owner: { user: 'eve' } });
    const res = await eve.request('PATCH', `${objectPath(t)}?fieldManager=eve`, {
      body: JSON.stringify(body),
      contentType: 'application/apply-patch+yaml',
    });
    expectForbidden(res, 'eve', 'patch', t);
    expect((await root.request('GET', objectPath(t))).status).toBe(404);
  });

  test('an object that does not exist is 403, not 404 (existence is not revealed)', async () => {
    for (const kind of KINDS) {
      const t: Target = { kind, ns: kind === 'clusters' ? '' : NS, name: uniq('ghost') };
      expectForbidden(await eve.request('GET', objectPath(t)), 'eve', 'get', t);
      expectForbidden(await eve.request('DELETE', objectPath(t)), 'eve', 'delete', t);
    }
  });

  test('lists are 200 with none of the objects', async () => {
    const ns = uniq('none');
    await make('sharedsecrets', {}, { ns });
    await make('sharedsecrets', { access: [{ verbs: ['*'], users: ['alice'] }] }, { ns });
    const c = await make('clusters', { owner: { team: 'blue' } });
    for (const [, prefix] of PREFIXES) {
      const list = await eve.request('GET', collectionPath('sharedsecrets', ns, prefix));
      expect({ status: list.status, kind: list.body?.kind, items: list.body?.items }).toEqual({
        status: 200,
        kind: 'SharedSecretList',
        items: [],
      });
      const all = await eve.request('GET', `${prefix}${GROUP_PATH}/sharedsecrets`);
      expect({ status: all.status, items: all.body?.items }).toEqual({ status: 200, items: [] });
      const clusters = await eve.request('GET', collectionPath('clusters', '', prefix));
      expect(clusters.status).toBe(200);
      expect(names(clusters)).not.toContain(c.name);
      expect(clusters.body.items).toEqual([]);
    }
  });

  test('discovery and OpenAPI are allowed to every authenticated user', async () => {
    for (const [, prefix] of PREFIXES) {
      for (const path of DISCOVERY_PATHS) {
        const res = await eve.request('GET', `${prefix}${path}`);
        expect({ path: `${prefix}${path}`, status: res.status }).toEqual({ path: `${prefix}${path}`, status: 200 });
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Access lists, teams, owners
// ---------------------------------------------------------------------------------------------------------------

describe('access list', () => {
  test.each(KINDS)(
    'users entry with verbs [get] on a %s: get is allowed (both path forms), every other verb 403',
    async (kind) => {
      const t = await make(kind, { access: [{ verbs: ['get'], users: ['alice'] }] });
      for (const [, prefix] of PREFIXES)
        await expectVerbs(
          alice,
          'alice',
          t,
          ['get'],
          ['update', 'patch', 'delete', 'get status', 'update status', 'patch status', 'create', 'deletecollection'],
          prefix,
        );
      // bob is not in the entry.
      expectForbidden(await act(bob, 'get', t), 'bob', 'get', t);
    },
  );

  test.each(KINDS)('verbs [get, update] on a %s: get and update allowed, patch and delete 403', async (kind) => {
    const t = await make(kind, { access: [{ verbs: ['get', 'update'], users: ['alice'] }] });
    await expectVerbs(alice, 'alice', t, ['get', 'update'], ['patch', 'delete', 'update status']);
  });

  test.each(KINDS)(
    "verbs ['*'] on a %s: every verb on the object, on both path forms; none on its status; no create",
    async (kind) => {
      for (const [, prefix] of PREFIXES) {
        const t = await make(kind, { access: [{ verbs: ['*'], users: ['alice'] }] });
        await expectVerbs(
          alice,
          'alice',
          t,
          ['get', 'update', 'patch', 'delete'],
          ['get status', 'update status', 'patch status', 'create', 'deletecollection'],
          prefix,
        );
      }
    },
  );

  test.each(KINDS)(
    'subresource status on a %s only when listed in subresources, with the listed verbs (writes refused by the registry)',
    async (kind) => {
      const t = await make(kind, {
        access: [{ verbs: ['get', 'update'], subresources: ['status'], users: ['alice'] }],
      });
      await expectVerbs(alice, 'alice', t, ['get status', 'update status'], ['patch status']);
      const all = await make(kind, { access: [{ verbs: ['*'], subresources: ['*'], users: ['alice'] }] });
      await expectVerbs(alice, 'alice', all, ['get status', 'update status', 'patch status']);
      // The status writes authorization allowed were refused all the same: nothing was written.
      expect((await current(all)).status).toBeUndefined();
    },
  );

  test('an entry for another user or another verb grants nothing', async () => {
    const t = await make('sharedsecrets', {
      access: [
        { verbs: ['*'], users: ['alice-2', 'Alice'] },
        { verbs: ['list', 'watch'], users: ['alice'] },
      ],
    });
    expectForbidden(await act(alice, 'get', t), 'alice', 'get', t);
  });

  test('a grant takes effect at once and its removal too', async () => {
    const t = await make('sharedsecrets');
    expectForbidden(await act(alice, 'get', t), 'alice', 'get', t);
    expect(
      (
        await root.request('PATCH', objectPath(t), {
          body: { spec: { access: [{ verbs: ['get'], users: ['alice'] }] } },
          contentType: MERGE_PATCH,
        })
      ).status,
    ).toBe(200);
    expectAllowed(await act(alice, 'get', t), 'get');
    expect(
      (await root.request('PATCH', objectPath(t), { body: { spec: { access: null } }, contentType: MERGE_PATCH }))
        .status,
    ).toBe(200);
    expectForbidden(await act(alice, 'get', t), 'alice', 'get', t);
  });

  test('a grant on an object in one namespace says nothing about the same name in another', async () => {
    const t = await make('sharedsecrets', { access: [{ verbs: ['*'], users: ['alice'] }] });
    const other = uniq('other');
    const twin: Target = { kind: 'sharedsecrets', ns: other, name: t.name };
    expect(
      (await root.request('POST', collectionPath('sharedsecrets', other), { body: bodyOf('sharedsecrets', t.name) }))
        .status,
    ).toBe(201);
    expectAllowed(await act(alice, 'get', t), 'get');
    expectForbidden(await act(alice, 'get', twin), 'alice', 'get', twin);
  });
});

describe('team member (group platform:team:<team> in the token file)', () => {
  test.each(KINDS)('a teams entry on a %s grants its verbs to members only', async (kind) => {
    const t = await make(kind, { access: [{ verbs: ['get', 'patch'], teams: ['blue'] }] });
    for (const [, prefix] of PREFIXES)
      await expectVerbs(bob, 'bob', t, ['get', 'patch'], ['update', 'delete', 'get status'], prefix);
    // alice is in no team; eve is in team red; a user named like the team is not a member.
    expectForbidden(await act(alice, 'get', t), 'alice', 'get', t);
    expectForbidden(await act(eve, 'get', t), 'eve', 'get', t);
  });

  test('the team is the group without its prefix: a user entry naming the group, or a team entry naming the group, grants nothing', async () => {
    const t = await make('sharedsecrets', {
      access: [{ verbs: ['*'], users: ['platform:team:blue'], teams: ['platform:team:blue', 'Blue'] }],
    });
    expectForbidden(await act(bob, 'get', t), 'bob', 'get', t);
  });

  test("a teams entry with verbs ['*'] and subresources ['status']", async () => {
    const t = await make('clusters', { access: [{ verbs: ['*'], subresources: ['status'], teams: ['blue'] }] });
    await expectVerbs(bob, 'bob', t, ['get', 'update', 'get status', 'patch status', 'delete'], []);
  });
});

describe('owner', () => {
  test.each(KINDS)('spec.owner.user has full access to a %s, on both path forms; others none', async (kind) => {
    for (const [, prefix] of PREFIXES) {
      const t = await make(kind, { owner: { user: 'alice' } });
      expectForbidden(await act(bob, 'get', t, prefix), 'bob', 'get', t);
      expectForbidden(await act(eve, 'update', t, prefix), 'eve', 'update', t);
      await expectVerbs(
        alice,
        'alice',
        t,
        ['get', 'update', 'patch', 'get status', 'update status', 'patch status', 'delete'],
        ['create', 'deletecollection'],
        prefix,
      );
    }
  });

  test.each(KINDS)('spec.owner.team gives every member full access to a %s', async (kind) => {
    const t = await make(kind, { owner: { team: 'blue' } });
    expectForbidden(await act(alice, 'get', t), 'alice', 'get', t);
    expectForbidden(await act(eve, 'delete', t), 'eve', 'delete', t);
    await expectVerbs(
      bob,
      'bob',
      t,
      ['get', 'update', 'patch', 'get status', 'update status', 'patch status', 'delete'],
      [],
    );
  });

  test('an owner who hands the object to someone else loses it', async () => {
    const t = await make('sharedsecrets', { owner: { user: 'alice' } });
    const res = await alice.request('PATCH', objectPath(t), {
      body: { spec: { owner: { user: 'bob' } } },
      contentType: MERGE_PATCH,
    });
    expect(res.status).toBe(200);
    expectForbidden(await act(alice, 'get', t), 'alice', 'get', t);
    expectAllowed(await act(bob, 'get', t), 'get');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Filtered lists and watches
// ---------------------------------------------------------------------------------------------------------------

describe('lists and watches by callers outside system:masters', () => {
  test('a list shows only the objects whose owner or access list grants get, on both path forms', async () => {
    const ns = uniq('list');
    const s = {
      aliceGet: await make('sharedsecrets', { access: [{ verbs: ['get'], users: ['alice'] }] }, { ns }),
      aliceAll: await make('sharedsecrets', { access: [{ verbs: ['*'], users: ['alice'] }] }, { ns }),
      aliceOwner: await make('sharedsecrets', { owner: { user: 'alice' } }, { ns }),
      aliceUpdateOnly: await make(
        'sharedsecrets',
        { access: [{ verbs: ['update', 'list'], users: ['alice'] }] },
        { ns },
      ),
      aliceStatusOnly: await make(
        'sharedsecrets',
        { access: [{ verbs: ['list'], subresources: ['status'], users: ['alice'] }] },
        { ns },
      ),
      blueGet: await make('sharedsecrets', { access: [{ verbs: ['get'], teams: ['blue'] }] }, { ns }),
      blueOwner: await make('sharedsecrets', { owner: { team: 'blue' } }, { ns }),
      nobody: await make('sharedsecrets', {}, { ns }),
    };
    const expected = {
      alice: [s.aliceGet, s.aliceAll, s.aliceOwner].map((t) => t.name).sort(),
      bob: [s.blueGet, s.blueOwner].map((t) => t.name).sort(),
    };
    for (const [, prefix] of PREFIXES) {
      expect(names(await alice.request('GET', collectionPath('sharedsecrets', ns, prefix)))).toEqual(expected.alice);
      expect(names(await bob.request('GET', collectionPath('sharedsecrets', ns, prefix)))).toEqual(expected.bob);
      expect(names(await eve.request('GET', collectionPath('sharedsecrets', ns, prefix)))).toEqual([]);
      // Across namespaces: the same objects from this namespace, and only objects that grant the caller elsewhere.
      const all = await alice.request('GET', `${prefix}${GROUP_PATH}/sharedsecrets`);
      expect(all.status).toBe(200);
      expect(
        all.body.items
          .filter((o: any) => o.metadata.namespace === ns)
          .map((o: any) => o.metadata.name)
          .sort(),
      ).toEqual(expected.alice);
      for (const o of all.body.items)
        expect({ name: o.metadata.name, grants: grantsGet(o, 'alice', []) }).toEqual({
          name: o.metadata.name,
          grants: true,
        });
    }
    // Selectors still apply on top.
    const one = await alice.request(
      'GET',
      `${collectionPath('sharedsecrets', ns)}?fieldSelector=metadata.name%3D${s.aliceOwner.name}`,
    );
    expect(names(one)).toEqual([s.aliceOwner.name]);
    const hidden = await alice.request(
      'GET',
      `${collectionPath('sharedsecrets', ns)}?fieldSelector=metadata.name%3D${s.nobody.name}`,
    );
    expect({ status: hidden.status, items: hidden.body.items }).toEqual({ status: 200, items: [] });
  });

  test('a cluster list shows only the clusters that grant the caller', async () => {
    const c = {
      alice: await make('clusters', { access: [{ verbs: ['get'], users: ['alice'] }] }),
      blue: await make('clusters', { owner: { team: 'blue' } }),
      none: await make('clusters'),
    };
    for (const [, prefix] of PREFIXES) {
      const forAlice = await alice.request('GET', collectionPath('clusters', '', prefix));
      expect(names(forAlice)).toContain(c.alice.name);
      expect(names(forAlice)).not.toContain(c.blue.name);
      expect(names(forAlice)).not.toContain(c.none.name);
      for (const o of forAlice.body.items)
        expect({ name: o.metadata.name, grants: grantsGet(o, 'alice', []) }).toEqual({
          name: o.metadata.name,
          grants: true,
        });
      const forBob = await bob.request('GET', collectionPath('clusters', '', prefix));
      expect(names(forBob)).toContain(c.blue.name);
      expect(names(forBob)).not.toContain(c.alice.name);
      for (const o of forBob.body.items)
        expect({ name: o.metadata.name, grants: grantsGet(o, 'bob', ['blue']) }).toEqual({
          name: o.metadata.name,
          grants: true,
        });
      expect(
        (await root.request('GET', collectionPath('clusters', '', prefix))).body.items.length,
      ).toBeGreaterThanOrEqual(3);
    }
  });

  test('a watch shows only the events of the objects the caller may get', async () => {
    const ns = uniq('watch');
    const aliceWatch = await watch(alice, collectionPath('sharedsecrets', ns));
    const directWatch = await watch(alice, collectionPath('sharedsecrets', ns, DIRECT_PREFIX));
    const bobWatch = await watch(bob, collectionPath('sharedsecrets', ns));
    const eveWatch = await watch(eve, collectionPath('sharedsecrets', ns));
    for (const s of [aliceWatch, directWatch, bobWatch, eveWatch]) expect(s.status).toBe(200);

    const hidden = await make('sharedsecrets', {}, { ns });
    const granted = await make('sharedsecrets', { access: [{ verbs: ['get'], users: ['alice'] }] }, { ns });
    const blue = await make('sharedsecrets', { access: [{ verbs: ['get'], teams: ['blue'] }] }, { ns });
    for (const t of [hidden, granted, blue]) {
      expect(
        (
          await root.request('PATCH', objectPath(t), {
            body: { metadata: { labels: { touched: 'yes' } } },
            contentType: MERGE_PATCH,
          })
        ).status,
      ).toBe(200);
    }
    for (const t of [hidden, granted, blue]) expect((await root.request('DELETE', objectPath(t))).status).toBe(200);

    const expected = [`ADDED ${ns}/${granted.name}`, `MODIFIED ${ns}/${granted.name}`, `DELETED ${ns}/${granted.name}`];
    const short = (s: WatchStream) => s.summary().map((e) => e.replace(/@.*$/, ''));
    for (const s of [aliceWatch, directWatch]) {
      await s.count(3);
      await s.quiet(300);
      expect(short(s)).toEqual(expected);
    }
    await bobWatch.count(3);
    await bobWatch.quiet(100);
    expect(short(bobWatch)).toEqual([
      `ADDED ${ns}/${blue.name}`,
      `MODIFIED ${ns}/${blue.name}`,
      `DELETED ${ns}/${blue.name}`,
    ]);
    await eveWatch.quiet(100);
    expect(eveWatch.events).toEqual([]);
  });

  test('granting and revoking during a watch show as ADDED and DELETED, as a selector transition does', async () => {
    const ns = uniq('watch');
    const t = await make('sharedsecrets', {}, { ns });
    const list = await root.request('GET', collectionPath('sharedsecrets', ns));
    const s = await watch(
      alice,
      `${collectionPath('sharedsecrets', ns)}?resourceVersion=${list.body.metadata.resourceVersion}`,
    );
    const grant = await root.request('PATCH', objectPath(t), {
      body: { spec: { access: [{ verbs: ['get'], users: ['alice'] }] } },
      contentType: MERGE_PATCH,
    });
    expect(grant.status).toBe(200);
    const revoke = await root.request('PATCH', objectPath(t), {
      body: { spec: { access: null } },
      contentType: MERGE_PATCH,
    });
    expect(revoke.status).toBe(200);
    await s.count(2);
    await s.quiet(200);
    expect(s.events.map((e) => [e.type, e.object.metadata.name, e.object.metadata.resourceVersion])).toEqual([
      ['ADDED', t.name, grant.body.metadata.resourceVersion],
      ['DELETED', t.name, revoke.body.metadata.resourceVersion],
    ]);
  });

  test('a cluster watch from a resourceVersion shows only the granted cluster', async () => {
    const list = await root.request('GET', collectionPath('clusters', ''));
    const s = await watch(
      alice,
      `${collectionPath('clusters', '', DIRECT_PREFIX)}?resourceVersion=${list.body.metadata.resourceVersion}`,
    );
    const none = await make('clusters');
    const granted = await make('clusters', { owner: { user: 'alice' } });
    expect((await root.request('DELETE', objectPath(none))).status).toBe(200);
    expect((await root.request('DELETE', objectPath(granted))).status).toBe(200);
    await s.count(2);
    await s.quiet(300);
    expect(s.events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
      `ADDED ${granted.name}`,
      `DELETED ${granted.name}`,
    ]);
  });

  test('a watch without resourceVersion starts with the granted objects only', async () => {
    const ns = uniq('watch');
    const granted = await make('sharedsecrets', { owner: { team: 'blue' } }, { ns });
    await make('sharedsecrets', {}, { ns });
    const s = await watch(bob, collectionPath('sharedsecrets', ns));
    await s.count(1);
    await s.quiet(300);
    expect(s.events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([`ADDED ${granted.name}`]);
  });

  test('watching one object that is not granted shows nothing of it', async () => {
    const ns = uniq('watch');
    const t = await make('sharedsecrets', {}, { ns });
    const byName = await watch(alice, `${collectionPath('sharedsecrets', ns)}?fieldSelector=metadata.name%3D${t.name}`);
    expect(byName.status).toBe(200);
    expect(
      (
        await root.request('PATCH', objectPath(t), {
          body: { spec: { description: 'changed' } },
          contentType: MERGE_PATCH,
        })
      ).status,
    ).toBe(200);
    await byName.quiet(300);
    expect(byName.events).toEqual([]);
  });

  test('a watch of one object granted by its access list ends in DELETED when the grant goes, and shows nothing after', async () => {
    const ns = uniq('watch');
    const t = await make('sharedsecrets', { access: [{ verbs: ['get', 'list', 'watch'], users: ['alice'] }] }, { ns });
    const forms = [
      `${objectPath(t)}?watch=true`,
      `${collectionPath('sharedsecrets', ns)}?fieldSelector=metadata.name%3D${t.name}`,
    ];
    const streams = await Promise.all(forms.map((path) => watch(alice, path)));
    for (const s of streams) expect(s.status).toBe(200);
    await Promise.all(streams.map((s) => s.count(1)));
    const revoke = await root.request('PATCH', objectPath(t), {
      body: { spec: { access: null } },
      contentType: MERGE_PATCH,
    });
    expect(revoke.status).toBe(200);
    const changed = await root.request('PATCH', objectPath(t), {
      body: { spec: { data: { token: 'bmV3LXNlY3JldA==' } } },
      contentType: MERGE_PATCH,
    });
    expect(changed.status).toBe(200);
    for (const [i, s] of streams.entries()) {
      await s.count(2);
      await s.quiet(300);
      const seen = s.events.map((e) => ({
        type: e.type,
        rv: e.object.metadata.resourceVersion,
        data: e.object.spec?.data,
      }));
      // DELETED carries the last state alice could see (the data before the change), never the new data.
      expect({ form: forms[i], seen }).toEqual({
        form: forms[i],
        seen: [
          { type: 'ADDED', rv: expect.any(String), data: { token: 'c2VjcmV0' } },
          { type: 'DELETED', rv: revoke.body.metadata.resourceVersion, data: { token: 'c2VjcmV0' } },
        ],
      });
    }
  });
});

/** The rule the server is expected to follow for lists, re-stated: owner or an access entry with get (or '*'). */
function grantsGet(obj: any, user: string, teams: string[]): boolean {
  const owner = obj.spec?.owner ?? {};
  if (owner.user === user || (owner.team && teams.includes(owner.team))) return true;
  return (obj.spec?.access ?? []).some(
    (e: any) =>
      (e.users?.includes(user) || e.teams?.some((t: string) => teams.includes(t))) &&
      (e.verbs?.includes('*') || e.verbs?.includes('get')),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Forged identity headers, front proxy certificates, client certificates
// ---------------------------------------------------------------------------------------------------------------

describe('forged X-Remote-* headers without a client certificate', () => {
  test.each(KINDS)(
    'are ignored: 401 on every verb on %s, both path forms, when nothing else identifies the caller',
    async (kind) => {
      const t = await make(kind);
      const forger = new CertClient({ headers: FORGED });
      for (const [, prefix] of PREFIXES) {
        for (const verb of ['get', 'list', 'create', 'update', 'patch', 'delete', 'get status'] as Verb[])
          expectUnauthorized(await act(forger, verb, t, prefix), `${verb} ${prefix}`);
      }
      expectUnauthorized(await forger.request('GET', `/apis/${GROUP}/v1`));
      expect((await root.request('GET', objectPath(t))).status).toBe(200);
    },
  );

  test('sent through HttpClient too (plain TLS, no certificate): 401', async () => {
    const t = await make('sharedsecrets');
    const headers = Object.fromEntries(FORGED);
    expectUnauthorized(await nobody.request('GET', objectPath(t), { headers }));
    expectUnauthorized(await nobody.request('DELETE', objectPath(t), { headers }));
  });

  test.each(KINDS)("with a valid bearer token the token's identity is used on %s, not the headers", async (kind) => {
    const t = await make(kind, { access: [{ verbs: ['get'], users: ['alice'] }] });
    const eveForging = new CertClient({ token: TOKENS.eve, headers: [...FORGED, ['X-Remote-User', 'alice']] });
    for (const [, prefix] of PREFIXES) {
      for (const verb of ['get', 'update', 'delete', 'create'] as Verb[])
        expectForbidden(await act(eveForging, verb, t, prefix), 'eve', verb, t);
    }
    // And a list is filtered for eve, not for a master nor alice.
    expect((await eveForging.request('GET', collectionPath(kind, t.ns))).body.items).toEqual([]);
    const aliceForging = new CertClient({ token: TOKENS.alice, headers: FORGED });
    expectAllowed(await act(aliceForging, 'get', t), 'get');
    expectForbidden(await act(aliceForging, 'update', t), 'alice', 'update', t);
  });
});

describe('front proxy certificate (signed by the requestheader CA)', () => {
  const proxied = (headers: Array<[string, string]>, cert: TestCert = CERTS.frontProxy, token?: string) =>
    new CertClient({ cert, headers, token });

  test.each(KINDS)(
    'with an allowed CN, the header identity is used: a masters group may do every verb on %s, both path forms',
    async (kind) => {
      const master = proxied([
        ['X-Remote-User', 'system:kube-aggregator'],
        ['X-Remote-Group', 'system:masters'],
      ]);
      for (const [, prefix] of PREFIXES) {
        const t = await make(kind);
        await expectVerbs(
          master,
          'system:kube-aggregator',
          t,
          [
            'get',
            'list',
            'watch',
            'create',
            'update',
            'patch',
            'get status',
            'update status',
            'patch status',
            'deletecollection',
            'delete',
          ],
          [],
          prefix,
        );
      }
    },
  );

  test("the aggregator's discovery check passes", async () => {
    const aggregator = proxied([
      ['X-Remote-User', 'system:kube-aggregator'],
      ['X-Remote-Group', 'system:masters'],
    ]);
    for (const [, prefix] of PREFIXES)
      expect((await aggregator.request('GET', `${prefix}/apis/${GROUP}/v1`)).status).toBe(200);
  });

  test.each(KINDS)('the header user without masters gets exactly its access on %s', async (kind) => {
    const t = await make(kind, { access: [{ verbs: ['get'], users: ['alice'] }] });
    const asAlice = proxied([
      ['X-Remote-User', 'alice'],
      ['X-Remote-Group', 'system:authenticated'],
    ]);
    for (const [, prefix] of PREFIXES)
      await expectVerbs(asAlice, 'alice', t, ['get'], ['update', 'patch', 'delete', 'create'], prefix);
    expect(names(await asAlice.request('GET', collectionPath(kind, t.ns)))).toContain(t.name);
  });

  test('header groups count: several X-Remote-Group lines, one of them a team', async () => {
    const t = await make('sharedsecrets', { owner: { team: 'green' } });
    const zed = proxied([
      ['X-Remote-User', 'zed'],
      ['X-Remote-Group', 'developers'],
      ['X-Remote-Group', 'platform:team:green'],
    ]);
    await expectVerbs(zed, 'zed', t, ['get', 'update', 'delete'], []);
    const zedAlone = proxied([
      ['X-Remote-User', 'zed'],
      ['X-Remote-Group', 'developers'],
    ]);
    const u = await make('sharedsecrets', { owner: { team: 'green' } });
    expectForbidden(await act(zedAlone, 'get', u), 'zed', 'get', u);
  });

  test("the headers win over a bearer token on the same request (kube's order: request header first)", async () => {
    const t = await make('sharedsecrets');
    const master = proxied(
      [
        ['X-Remote-User', 'proxied-admin'],
        ['X-Remote-Group', 'system:masters'],
      ],
      CERTS.frontProxy,
      TOKENS.eve,
    );
    expectAllowed(await act(master, 'get', t), 'get');
    const asBob = proxied([['X-Remote-User', 'bob']], CERTS.frontProxy, TOKENS.root);
    expectForbidden(await act(asBob, 'get', t), 'bob', 'get', t);
  });

  test('without an X-Remote-User header the front proxy certificate alone is nobody: 401', async () => {
    const t = await make('sharedsecrets');
    expectUnauthorized(await act(proxied([['X-Remote-Group', 'system:masters']]), 'get', t));
    expectUnauthorized(await act(proxied([]), 'list', t));
  });

  test.each(KINDS)(
    'with a CN not in --requestheader-allowed-names the headers are ignored: 401 on %s, both path forms',
    async (kind) => {
      const t = await make(kind);
      const wrongName = proxied(FORGED, CERTS.frontProxyOtherName);
      for (const [, prefix] of PREFIXES) {
        for (const verb of ['get', 'list', 'create', 'update', 'delete'] as Verb[])
          expectUnauthorized(await act(wrongName, verb, t, prefix), `${verb} ${prefix}`);
      }
      expectUnauthorized(await wrongName.request('GET', `/apis/${GROUP}/v1`));
      // With a bearer token as well, the token decides.
      expectForbidden(await act(proxied(FORGED, CERTS.frontProxyOtherName, TOKENS.eve), 'get', t), 'eve', 'get', t);
    },
  );

  test('an expired front proxy certificate, or one from another CA, is not believed: 401', async () => {
    const t = await make('clusters');
    for (const cert of [CERTS.frontProxyExpired, CERTS.frontProxyRogue]) {
      expectUnauthorized(await act(proxied(FORGED, cert), 'get', t));
      expectUnauthorized(await act(proxied(FORGED, cert), 'delete', t));
    }
    expect((await root.request('GET', objectPath(t))).status).toBe(200);
  });

  test('a client certificate from --client-ca-file does not make the headers believed', async () => {
    const t = await make('sharedsecrets');
    // carol's certificate is good for carol, not for whoever the headers name.
    const res = await act(new CertClient({ cert: CERTS.carol, headers: FORGED }), 'get', t);
    expectForbidden(res, 'carol', 'get', t);
  });
});

describe('client certificate (signed by --client-ca-file)', () => {
  test.each(KINDS)('CN is the user: access-list grants on %s apply, others are 403 naming the CN', async (kind) => {
    const carol = new CertClient({ cert: CERTS.carol });
    const t = await make(kind, { access: [{ verbs: ['get', 'update'], users: ['carol'] }] });
    for (const [, prefix] of PREFIXES)
      await expectVerbs(carol, 'carol', t, ['get', 'update'], ['patch', 'delete', 'create', 'get status'], prefix);
    const list = await carol.request('GET', collectionPath(kind, t.ns));
    expect(names(list)).toContain(t.name);
    for (const o of list.body.items)
      expect({ name: o.metadata.name, grants: grantsGet(o, 'carol', []) }).toEqual({
        name: o.metadata.name,
        grants: true,
      });
  });

  test('O values are the groups: a team in O reaches team grants', async () => {
    const dave = new CertClient({ cert: CERTS.dave });
    const t = await make('clusters', { owner: { team: 'blue' } });
    await expectVerbs(dave, 'dave', t, ['get', 'patch', 'update status', 'delete'], []);
    const u = await make('sharedsecrets', { access: [{ verbs: ['get'], teams: ['blue'] }] });
    expectAllowed(await act(dave, 'get', u), 'get');
    expectForbidden(await act(dave, 'update', u), 'dave', 'update', u);
    // O=qa is a group, not a team: only platform:team:<team> groups are teams.
    const v = await make('sharedsecrets', { access: [{ verbs: ['get'], teams: ['qa'] }] });
    expectForbidden(await act(dave, 'get', v), 'dave', 'get', v);
  });

  test.each(KINDS)('O=system:masters may do every verb on %s', async (kind) => {
    const ops = new CertClient({ cert: CERTS.ops });
    for (const [, prefix] of PREFIXES) {
      const t = await make(kind);
      await expectVerbs(
        ops,
        'ops',
        t,
        ['get', 'list', 'create', 'update', 'patch', 'get status', 'update status', 'deletecollection', 'delete'],
        [],
        prefix,
      );
    }
  });

  test('a certificate from an unknown CA, or self-signed, authenticates nobody: 401 even when it claims system:masters', async () => {
    const t = await make('sharedsecrets', { owner: { user: 'root' } });
    for (const cert of [CERTS.rogueMaster, CERTS.selfSigned]) {
      const rogue = new CertClient({ cert });
      for (const [, prefix] of PREFIXES) {
        for (const verb of ['get', 'list', 'create', 'update', 'delete'] as Verb[])
          expectUnauthorized(await act(rogue, verb, t, prefix), `${verb} ${prefix}`);
        expectUnauthorized(await rogue.request('GET', `${prefix}/apis/${GROUP}/v1`));
      }
    }
    expect((await root.request('GET', objectPath(t))).status).toBe(200);
  });

  test('a certificate from an unknown CA next to a valid bearer token: the token decides', async () => {
    const t = await make('sharedsecrets');
    expectForbidden(
      await act(new CertClient({ cert: CERTS.rogueMaster, token: TOKENS.alice }), 'get', t),
      'alice',
      'get',
      t,
    );
  });

  test('the front proxy certificate is not a client certificate: its CN is nobody', async () => {
    const t = await make('sharedsecrets', { owner: { user: FRONT_PROXY_CN } });
    expectUnauthorized(await act(new CertClient({ cert: CERTS.frontProxy }), 'get', t));
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Secrets never leak
// ---------------------------------------------------------------------------------------------------------------

describe('secrets', () => {
  test('no token, nor any private key, appears in any response received in this file (headers, bodies, watch streams)', () => {
    for (const s of streams) seen.push(...s.lines, s.partial);
    expect(seen.length).toBeGreaterThan(500);
    const secrets = [...Object.values(TOKENS), ...Object.values(CERTS).map((c) => c.keyPem.split('\n')[1])];
    const leaks = secrets.flatMap((s) =>
      seen.filter((text) => text.includes(s)).map((text) => `${s.slice(0, 8)}… in ${text.slice(0, 200)}`),
    );
    expect(leaks).toEqual([]);
  });
});
