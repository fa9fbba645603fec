/**
 * Restrictions fail closed: a field that narrows what a key or a grant allows is never dropped unread.
 * - Upstream clients put a key's rules and allowPlatformCli inside its scope (`spec.scope.rules`,
 *   `spec.scope.allowPlatformCli`) and limit roles to projects and virtual clusters (`scope.roles[].projects`): the
 *   server stores and enforces them (a master-grouped key restricted there was unrestricted before).
 * - An unknown or duplicate field of an OwnedAccessKey's spec, a DirectClusterEndpointToken's spec, an owner or an
 *   access entry, or a Project's allowedClusters is refused (422 naming it) whatever fieldValidation says, on every
 *   write path, and leaves stored data as it was; also when the server tries a patch again.
 * - So is a "__proto__" field there (JSON.parse and js-yaml make it an own field like any other), sent as JSON or YAML,
 *   by create, update, patch or apply, and a field named as another of Object.prototype's members ("constructor").
 * - A holder may not set or change the fields the platform fills in for keys it makes (type, identity, parent, ...).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import {
  API_VERSION,
  APPLY_PATCH,
  EtcdPeek,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  PROJECTS_PATH,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, type HttpResponse } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';

const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const TOKENS = `${GROUP_PATH}/directclusterendpointtokens`;
const READ_SECRETS = { verbs: ['get'], resources: [{ group: GROUP, resources: ['sharedsecrets'] }] };

let ts: TestServer;
let peek: EtcdPeek;
let root: HttpClient;
let bob: HttpClient;

const keyBody = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: API_VERSION,
  kind: 'OwnedAccessKey',
  metadata: { name },
  spec,
});

/** Creates a key as root; answers its name and a client using it. */
async function keyClient(
  spec: Record<string, unknown>,
): Promise<{ name: string; client: HttpClient; res: HttpResponse }> {
  const name = uniq('key');
  const res = await root.post(KEYS, keyBody(name, spec));
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
  return { name, client: ts.client(res.body.spec.key), res };
}

async function storedKey(name: string): Promise<{ value: any; modRevision: string } | undefined> {
  return peek.entry(`${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`);
}

/** The 422 of an unknown or duplicate field in a restricting part, naming it. */
function expectRefusedField(res: HttpResponse, field: string, what = 'unknown field'): void {
  expect({ status: res.status, body: res.body }).toMatchObject({
    status: 422,
    body: { kind: 'Status', reason: 'Invalid', details: { causes: [{ field, reason: 'FieldValueForbidden' }] } },
  });
  expect(res.body.message).toContain(`${field}: Forbidden: ${what}`);
  expect(res.body.message).toContain('whatever fieldValidation says');
}

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], bob: [] });
  ({ root, bob } = (ts as TestServer & { as: Record<'root' | 'bob', HttpClient> }).as);
  peek = new EtcdPeek(ts);
  for (const project of ['a', 'b'])
    expect(
      (await root.post(PROJECTS_PATH, { apiVersion: API_VERSION, kind: 'Project', metadata: { name: project } }))
        .status,
    ).toBe(201);
  expect((await root.post(sharedSecretsPath('team-a'), secretBody('existing'))).status).toBe(201);
}, 120_000);

afterAll(async () => {
  peek?.close();
  await ts?.stop();
}, 60_000);

describe("upstream's placement of a key's restriction is kept and enforced", () => {
  test('a system:masters key restricted by spec.scope.rules may do only what the rules allow', async () => {
    const { name, client, res } = await keyClient({
      user: 'bob',
      groups: ['system:masters'],
      scope: { rules: [READ_SECRETS] },
    });
    expect(res.headers.warning ?? '').not.toContain('unknown field');
    expect((await storedKey(name))?.value.spec.scope).toEqual({ rules: [READ_SECRETS] });
    expect((await client.get(sharedSecretPath('team-a', 'existing'))).status).toBe(200);
    const create = await client.post(sharedSecretsPath('team-a'), secretBody(uniq('s')));
    expect({ status: create.status, reason: create.body?.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    expect((await client.get(`${GROUP_PATH}/clusters`)).status).toBe(403);
  });

  test('rules given in both places restrict together: each is a grant, nothing else is allowed', async () => {
    const { client } = await keyClient({
      user: 'bob',
      groups: ['system:masters'],
      rules: [{ verbs: ['list'], resources: [{ group: GROUP, resources: ['clusters'] }] }],
      scope: { rules: [READ_SECRETS] },
    });
    expect((await client.get(sharedSecretPath('team-a', 'existing'))).status).toBe(200);
    expect((await client.get(`${GROUP_PATH}/clusters`)).status).toBe(200);
    expect((await client.delete(sharedSecretPath('team-a', 'existing'))).status).toBe(403);
  });

  test('spec.scope.allowPlatformCli allows the command line reads and no writes', async () => {
    const { name, client } = await keyClient({
      user: 'bob',
      groups: ['system:masters'],
      scope: { allowPlatformCli: true },
    });
    expect((await storedKey(name))?.value.spec.scope).toEqual({ allowPlatformCli: true });
    expect((await client.get(sharedSecretsPath('team-a'))).status).toBe(200);
    expect((await client.post(sharedSecretsPath('team-a'), secretBody(uniq('s')))).status).toBe(403);
  });

  test('a role limited to projects reaches only those projects', async () => {
    const { name, client } = await keyClient({
      user: 'bob',
      groups: ['system:masters'],
      scope: { roles: [{ role: 'platformCLI', projects: ['a'] }] },
    });
    expect((await storedKey(name))?.value.spec.scope.roles).toEqual([{ role: 'platformCLI', projects: ['a'] }]);
    expect((await client.get(`${PROJECTS_PATH}/a`)).status).toBe(200);
    expect((await client.get(`${PROJECTS_PATH}/b`)).status).toBe(403);
    expect((await client.get(sharedSecretPath('team-a', 'existing'))).status).toBe(403);
    const list = await client.get(PROJECTS_PATH);
    expect(list.status).toBe(200);
    expect(list.body.items.map((p: any) => p.metadata.name)).toEqual(['a']);
  });
});

describe("an unknown or duplicate field of a key's spec is refused whatever fieldValidation says", () => {
  test.each([
    ['a misspelt scope field', { scope: { rulez: [READ_SECRETS] } }, 'spec.scope.rulez'],
    [
      'a field of a role',
      { scope: { roles: [{ role: 'platformCLI', namespaces: ['x'] }] } },
      'spec.scope.roles[0].namespaces',
    ],
    ['a field of a rule', { rules: [{ ...READ_SECRETS, expires: '2030-01-01T00:00:00Z' }] }, 'spec.rules[0].expires'],
    [
      'a field of a space entry',
      { scope: { spaces: [{ project: 'a', space: 's', cluster: 'c' }] } },
      'spec.scope.spaces[0].cluster',
    ],
    ['a misspelt disabled', { disable: true }, 'spec.disable'],
  ])('%s: 422 on create with every fieldValidation, nothing stored', async (_what, extra, field) => {
    for (const validation of ['', '?fieldValidation=Ignore', '?fieldValidation=Warn', '?fieldValidation=Strict']) {
      const name = uniq('unknown');
      const res = await root.post(`${KEYS}${validation}`, keyBody(name, { user: 'bob', ...extra }));
      expectRefusedField(res, field);
      expect(await storedKey(name)).toBeUndefined();
    }
  });

  test('on PUT, JSON patch, merge patch, server-side apply and dry run: 422, the key as it was', async () => {
    const { name } = await keyClient({ user: 'bob', scope: { projects: [{ project: 'a' }] } });
    const before = await storedKey(name);
    const current = (await root.get(`${KEYS}/${name}`)).body;
    const path = `${KEYS}/${name}`;
    const attempts: Array<[string, () => Promise<HttpResponse>]> = [
      [
        'PUT',
        () => root.put(path, { ...current, spec: { ...current.spec, scope: { ...current.spec.scope, rulez: [] } } }),
      ],
      ['JSON patch', () => root.patch(path, [{ op: 'add', path: '/spec/scope/rulez', value: [] }], JSON_PATCH)],
      [
        'merge patch',
        () => root.patch(`${path}?fieldValidation=Ignore`, { spec: { scope: { rulez: [] } } }, MERGE_PATCH),
      ],
      [
        'apply',
        () =>
          root.patch(
            `${path}?fieldManager=test&force=true`,
            {
              apiVersion: API_VERSION,
              kind: 'OwnedAccessKey',
              metadata: { name },
              spec: { user: 'bob', scope: { rulez: [] } },
            },
            APPLY_PATCH,
          ),
      ],
      ['dry run', () => root.patch(`${path}?dryRun=All`, { spec: { scope: { rulez: [] } } }, MERGE_PATCH)],
    ];
    for (const [, attempt] of attempts) expectRefusedField(await attempt(), 'spec.scope.rulez');
    expect(await storedKey(name)).toEqual(before);
  });

  test('a duplicate field in a spec sent as JSON text: 422 naming it (JSON.parse would keep the last)', async () => {
    const name = uniq('dup');
    const text = `{"apiVersion":"${API_VERSION}","kind":"OwnedAccessKey","metadata":{"name":"${name}"},"spec":{"user":"bob","disabled":true,"disabled":false}}`;
    expectRefusedField(await root.post(KEYS, text), 'spec.disabled', 'duplicate field');
    expect(await storedKey(name)).toBeUndefined();
  });

  test('the message names what the part defines, so a person can tell what was meant', async () => {
    const res = await root.post(KEYS, keyBody(uniq('k'), { user: 'bob', scope: { rulez: [] } }));
    expect(res.body.message).toContain(
      'fields there: roles, projects, spaces, virtualClusters, clusters, rules, allowPlatformCli',
    );
  });
});

describe('a DirectClusterEndpointToken carries both placements, and refuses what it does not understand', () => {
  const tokenBody = (spec: Record<string, unknown>) => ({
    apiVersion: API_VERSION,
    kind: 'DirectClusterEndpointToken',
    spec,
  });

  test("the rules of spec.rules and spec.scope.rules, and scope.allowPlatformCli, are in the token's scope", async () => {
    const rule = { verbs: ['list'], resources: [{ group: '', resources: ['pods'] }] };
    const res = await bob.post(
      TOKENS,
      tokenBody({ rules: [rule], scope: { rules: [READ_SECRETS], allowPlatformCli: true } }),
    );
    expect(res.status).toBe(201);
    expect(decodeJwt(res.body.status.token).scope).toEqual({
      roles: [{ role: 'platformCLI' }],
      rules: [rule, READ_SECRETS],
    });
  });

  test('an unknown field of its spec: 422 with every fieldValidation', async () => {
    for (const validation of ['', '?fieldValidation=Ignore']) {
      const res = await bob.post(`${TOKENS}${validation}`, tokenBody({ scope: { projectz: [{ project: 'a' }] } }));
      expectRefusedField(res, 'spec.scope.projectz');
    }
  });
});

describe('owners, access entries and allowed clusters narrow grants: unknown fields there are refused too', () => {
  test('an access entry with a field the server does not know: 422, nothing stored', async () => {
    const body = secretBody(uniq('s'));
    body.spec.access = [{ verbs: ['get'], users: ['bob'], expires: '2030-01-01T00:00:00Z' }];
    expectRefusedField(await root.post(sharedSecretsPath('team-a'), body), 'spec.access[0].expires');
    expect((await root.get(sharedSecretPath('team-a', body.metadata.name))).status).toBe(404);
  });

  test('a patch adding one to a stored entry: 422, the secret as it was; fields outside these parts still follow fieldValidation', async () => {
    const name = uniq('s');
    const body = secretBody(name);
    body.spec.access = [{ verbs: ['get'], users: ['bob'] }];
    expect((await root.post(sharedSecretsPath('team-a'), body)).status).toBe(201);
    const before = await peek.entry(peek.sharedSecretKey('team-a', name));
    const res = await root.patch(
      sharedSecretPath('team-a', name),
      [{ op: 'add', path: '/spec/access/0/namespaces', value: ['x'] }],
      JSON_PATCH,
    );
    expectRefusedField(res, 'spec.access[0].namespaces');
    expect(await peek.entry(peek.sharedSecretKey('team-a', name))).toEqual(before);
    const elsewhere = await root.patch(sharedSecretPath('team-a', name), { spec: { colour: 'blue' } }, MERGE_PATCH);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.headers.warning).toContain('unknown field \\"spec.colour\\"');
  });

  test('an owner with a field the server does not know: 422', async () => {
    const body = secretBody(uniq('s'));
    body.spec.owner = { user: 'bob', until: '2030-01-01T00:00:00Z' };
    expectRefusedField(await root.post(sharedSecretsPath('team-a'), body), 'spec.owner.until');
  });

  test("a Project's allowedClusters entry with an unknown field: 422", async () => {
    const res = await root.post(PROJECTS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Project',
      metadata: { name: uniq('p') },
      spec: { allowedClusters: [{ name: 'c1', namespaces: ['x'] }] },
    });
    expectRefusedField(res, 'spec.allowedClusters[0].namespaces');
  });
});

/**
 * A field named "__proto__": a computed key makes it an own field of an object literal, which JSON.stringify writes,
 * as JSON.parse reads it (a literal `__proto__:` would set the literal's prototype instead).
 */
const PROTO = '__proto__';

describe('a "__proto__" field in these parts is refused like any unknown field, not dropped unread', () => {
  const ALL_VALIDATIONS = ['', '?fieldValidation=Ignore', '?fieldValidation=Warn', '?fieldValidation=Strict'];
  const withAccess = (access: Record<string, unknown>) => {
    const body = secretBody(uniq('s'));
    body.spec.access = [access];
    return body;
  };
  const withOwner = (owner: Record<string, unknown>) => {
    const body = secretBody(uniq('s'));
    body.spec.owner = owner;
    return body;
  };

  test.each([
    ["a key's spec", { user: 'bob', [PROTO]: { disabled: true } }, 'spec.__proto__', 'fields there: displayName'],
    ["a key's spec, as null", { user: 'bob', [PROTO]: null }, 'spec.__proto__', 'fields there: displayName'],
    [
      "a key's spec, named as another of Object.prototype's members",
      { user: 'bob', constructor: { disabled: false } },
      'spec.constructor',
      'fields there: displayName',
    ],
    [
      "a key's scope",
      { user: 'bob', scope: { [PROTO]: { rules: [READ_SECRETS] } } },
      'spec.scope.__proto__',
      'fields there: roles, projects, spaces, virtualClusters, clusters, rules, allowPlatformCli',
    ],
    [
      'a rule of a key',
      { user: 'bob', rules: [{ ...READ_SECRETS, [PROTO]: 'x' }] },
      'spec.rules[0].__proto__',
      'fields there: verbs',
    ],
  ])(
    '%s: 422 naming it and the fields there with every fieldValidation, nothing stored',
    async (_what, spec, field, known) => {
      for (const validation of ALL_VALIDATIONS) {
        const name = uniq('proto');
        const res = await root.post(`${KEYS}${validation}`, keyBody(name, spec));
        expectRefusedField(res, field);
        expect(res.body.message).toContain(known);
        expect(await storedKey(name)).toBeUndefined();
      }
    },
  );

  test.each([
    [
      'an access entry',
      () => withAccess({ verbs: ['get'], users: ['bob'], [PROTO]: { users: ['eve'] } }),
      'spec.access[0].__proto__',
    ],
    ['an owner', () => withOwner({ user: 'bob', [PROTO]: { team: 'x' } }), 'spec.owner.__proto__'],
  ])('%s of a SharedSecret: 422 with every fieldValidation, nothing stored', async (_what, body, field) => {
    for (const validation of ALL_VALIDATIONS) {
      const secret = body();
      expectRefusedField(await root.post(`${sharedSecretsPath('team-a')}${validation}`, secret), field);
      expect(await peek.entry(peek.sharedSecretKey('team-a', secret.metadata.name))).toBeUndefined();
    }
  });

  test("a Project's allowedClusters entry: 422 naming it, nothing stored", async () => {
    for (const validation of ALL_VALIDATIONS) {
      const name = uniq('p');
      const res = await root.post(`${PROJECTS_PATH}${validation}`, {
        apiVersion: API_VERSION,
        kind: 'Project',
        metadata: { name },
        spec: { allowedClusters: [{ name: 'c1', [PROTO]: { name: '*' } }] },
      });
      expectRefusedField(res, 'spec.allowedClusters[0].__proto__');
      expect(res.body.message).toContain('fields there: name');
      expect((await root.get(`${PROJECTS_PATH}/${name}`)).status).toBe(404);
    }
  });

  test("an action's request (a DirectClusterEndpointToken's spec): 422, no token", async () => {
    const res = await bob.post(`${TOKENS}?fieldValidation=Ignore`, {
      apiVersion: API_VERSION,
      kind: 'DirectClusterEndpointToken',
      spec: { scope: { [PROTO]: { projects: [{ project: 'a' }] } } },
    });
    expectRefusedField(res, 'spec.scope.__proto__');
    expect(res.body).not.toHaveProperty('status.token');
  });

  test('a YAML body: 422 the same; a duplicate "__proto__" in JSON text is named as duplicate and unknown', async () => {
    const name = uniq('yaml');
    const yaml = `apiVersion: ${API_VERSION}\nkind: OwnedAccessKey\nmetadata:\n  name: ${name}\nspec:\n  user: bob\n  __proto__:\n    disabled: true\n`;
    expectRefusedField(await root.post(KEYS, yaml, { contentType: 'application/yaml' }), 'spec.__proto__');
    expect(await storedKey(name)).toBeUndefined();

    const dup = uniq('dup');
    const text = `{"apiVersion":"${API_VERSION}","kind":"OwnedAccessKey","metadata":{"name":"${dup}"},"spec":{"user":"bob","__proto__":{},"__proto__":{}}}`;
    const res = await root.post(`${KEYS}?fieldValidation=Ignore`, text);
    expect({ status: res.status, reason: res.body.reason, causes: res.body.details?.causes }).toEqual({
      status: 422,
      reason: 'Invalid',
      causes: [
        expect.objectContaining({ field: 'spec.__proto__', reason: 'FieldValueForbidden' }),
        expect.objectContaining({ field: 'spec.__proto__', reason: 'FieldValueForbidden' }),
      ],
    });
    expect(res.body.message).toContain('spec.__proto__: Forbidden: duplicate field');
    expect(res.body.message).toContain('spec.__proto__: Forbidden: unknown field');
    expect(await storedKey(dup)).toBeUndefined();
    // YAML has no duplicate keys at all: 400, as kube's YAML decoder answers.
    const yamlDup = `apiVersion: ${API_VERSION}\nkind: OwnedAccessKey\nmetadata: {name: ${dup}}\nspec: {user: bob, __proto__: {}, __proto__: {}}\n`;
    const refused = await root.post(KEYS, yamlDup, { contentType: 'application/yaml' });
    expect({ status: refused.status, reason: refused.body.reason }).toEqual({ status: 400, reason: 'BadRequest' });
    expect(refused.body.message).toContain('duplicated mapping key');
    expect(await storedKey(dup)).toBeUndefined();
  });

  test('on PUT, merge patch, JSON patch, server-side apply (JSON and YAML) and dry run: 422, the key as it was', async () => {
    const { name } = await keyClient({ user: 'bob', scope: { projects: [{ project: 'a' }] } });
    const before = await storedKey(name);
    const current = (await root.get(`${KEYS}/${name}`)).body;
    const path = `${KEYS}/${name}`;
    const applyYaml = `apiVersion: ${API_VERSION}\nkind: OwnedAccessKey\nmetadata:\n  name: ${name}\nspec:\n  user: bob\n  scope:\n    __proto__: {projects: []}\n`;
    const attempts: Array<[string, () => Promise<HttpResponse>]> = [
      ['PUT', () => root.put(path, { ...current, spec: { ...current.spec, scope: { [PROTO]: {} } } })],
      [
        'merge patch',
        () => root.patch(`${path}?fieldValidation=Ignore`, { spec: { scope: { [PROTO]: {} } } }, MERGE_PATCH),
      ],
      ['JSON patch', () => root.patch(path, [{ op: 'add', path: '/spec/scope', value: { [PROTO]: {} } }], JSON_PATCH)],
      [
        'apply',
        () =>
          root.patch(
            `${path}?fieldManager=test&force=true`,
            {
              apiVersion: API_VERSION,
              kind: 'OwnedAccessKey',
              metadata: { name },
              spec: { user: 'bob', scope: { [PROTO]: {} } },
            },
            APPLY_PATCH,
          ),
      ],
      ['apply as YAML', () => root.patch(`${path}?fieldManager=test&force=true`, applyYaml, APPLY_PATCH)],
      ['dry run', () => root.patch(`${path}?dryRun=All`, { spec: { scope: { [PROTO]: {} } } }, MERGE_PATCH)],
    ];
    for (const [, attempt] of attempts) expectRefusedField(await attempt(), 'spec.scope.__proto__');
    expect(await storedKey(name)).toEqual(before);
  });

  test('one who may only update a SharedSecret cannot strip its owner by putting "__proto__" in its place', async () => {
    // The owner {user: root} and {"__proto__": {}} both have one field: compared through the prototype they looked
    // equal, so the owner passed as unchanged (neither pruned nor refused, nor guarded) and was stored empty.
    const body = secretBody(uniq('s'));
    body.spec.owner = { user: 'root' };
    body.spec.access = [{ verbs: ['get', 'update'], users: ['bob'] }];
    const created = await root.post(sharedSecretsPath('team-a'), body);
    expect(created.status).toBe(201);
    const key = peek.sharedSecretKey('team-a', body.metadata.name);
    const before = await peek.entry(key);
    const res = await bob.put(sharedSecretPath('team-a', body.metadata.name), {
      ...created.body,
      spec: { ...created.body.spec, owner: { [PROTO]: {} } },
    });
    expect({ status: res.status, reason: res.body.reason, message: res.body.message }).toEqual({
      status: 403,
      reason: 'Forbidden',
      message: expect.stringContaining('User "bob" cannot change spec.owner or spec.access'),
    });
    expect(await peek.entry(key)).toEqual(before);
  });

  test('a JSON patch whose path goes through "__proto__": 422 saying so, the key as it was', async () => {
    const { name } = await keyClient({ user: 'bob', scope: { projects: [{ project: 'a' }] } });
    const before = await storedKey(name);
    const res = await root.patch(
      `${KEYS}/${name}`,
      [{ op: 'add', path: '/spec/scope/__proto__', value: { projects: [] } }],
      JSON_PATCH,
    );
    expect({ status: res.status, reason: res.body.reason, causes: res.body.details?.causes }).toEqual({
      status: 422,
      reason: 'Invalid',
      causes: [
        {
          field: 'patch',
          reason: 'UnexpectedServerResponse',
          message:
            'a path through "__proto__" or "constructor/prototype" is refused: no object here has such a field, and a patch may not add one (operation 0: {"op":"add","path":"/spec/scope/__proto__"})',
        },
      ],
    });
    expect(await storedKey(name)).toEqual(before);
  });
});

describe('a patch tried again is the patch the client sent', () => {
  // An update starts from the cached object; when it fails there, it is tried once more on what etcd holds, with
  // the same patch. Pruning the first try's result must not have changed the patch, or the second try passes.
  test('an unknown field a patch value brings into these parts: 422 on the second try too, the object as it was', async () => {
    const key = await keyClient({ user: 'bob', scope: { projects: [{ project: 'a' }] } });
    const body = secretBody(uniq('s'));
    body.spec.access = [{ verbs: ['get'], users: ['bob'] }];
    const secret = await root.post(sharedSecretsPath('team-a'), body);
    expect(secret.status).toBe(201);
    const keyPath = `${KEYS}/${key.name}`;
    const secretPath = sharedSecretPath('team-a', body.metadata.name);
    const ofKey = { path: keyPath, written: key.res, stored: () => storedKey(key.name) };
    const ofSecret = {
      path: secretPath,
      written: secret,
      stored: () => peek.entry(peek.sharedSecretKey('team-a', body.metadata.name)),
    };
    const cases = [
      {
        ...ofKey,
        field: 'spec.scope.rulez',
        send: () =>
          root.patch(keyPath, [{ op: 'add', path: '/spec/scope', value: { rulez: [READ_SECRETS] } }], JSON_PATCH),
      },
      {
        ...ofKey,
        field: 'spec.scope.__proto__',
        send: () => root.patch(keyPath, [{ op: 'replace', path: '/spec/scope', value: { [PROTO]: {} } }], JSON_PATCH),
      },
      {
        ...ofSecret,
        field: 'spec.access[0].expires',
        send: () =>
          root.patch(
            `${secretPath}?fieldValidation=Ignore`,
            { spec: { access: [{ verbs: ['get'], users: ['bob'], expires: '2030-01-01T00:00:00Z' }] } },
            MERGE_PATCH,
          ),
      },
    ];
    for (const { path, written, stored, field, send } of cases) {
      // A read at the write's resourceVersion waits for the cache to hold it: the first try starts from the cache.
      expect((await root.get(`${path}?resourceVersion=${written.body.metadata.resourceVersion}`)).status).toBe(200);
      const before = await stored();
      expectRefusedField(await send(), field);
      expect(await stored()).toEqual(before);
    }
  });
});

describe("the platform's fields of a key are not a holder's to write", () => {
  test.each([
    ['type', { type: 'Login' }, 'spec.type'],
    ['identity', { identity: { username: 'root', groups: ['admins'] } }, 'spec.identity'],
    ['parent', { parent: 'someone-elses-key' }, 'spec.parent'],
    ['oidcProvider', { oidcProvider: { clientId: 'x' } }, 'spec.oidcProvider'],
    ['oidcLogin', { oidcLogin: { idToken: 'eyJ' } }, 'spec.oidcLogin'],
  ])('creating a key of its own with %s: 403 naming it', async (_what, extra, field) => {
    const name = uniq('own');
    const res = await bob.post(KEYS, keyBody(name, { user: 'bob', ...extra }));
    expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    expect(res.body.message).toContain(field);
    expect(await storedKey(name)).toBeUndefined();
  });

  test("a type of User is a holder's own to give; changing type or parent later is 403 and changes nothing", async () => {
    const name = uniq('own');
    expect((await bob.post(KEYS, keyBody(name, { user: 'bob', type: 'User' }))).status).toBe(201);
    const before = await storedKey(name);
    for (const change of [{ type: 'Login' }, { parent: 'x' }, { identity: { username: 'root' } }]) {
      const res = await bob.patch(`${KEYS}/${name}`, { spec: change }, MERGE_PATCH);
      expect({ status: res.status, reason: res.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    }
    expect(await storedKey(name)).toEqual(before);
  });

  test('system:masters may set them', async () => {
    const { name } = await keyClient({ user: 'bob', type: 'Login', parent: 'p', identity: { username: 'bob' } });
    expect((await storedKey(name))?.value.spec).toMatchObject({
      type: 'Login',
      parent: 'p',
      identity: { username: 'bob' },
    });
  });
});
