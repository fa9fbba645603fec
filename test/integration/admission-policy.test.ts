/**
 * ValidatingAdmissionPolicy and its bindings, put in the host stand-in: CEL validations over object, oldObject,
 * request, params (a ConfigMap on the host), namespaceObject and variables; messages (message, messageExpression,
 * the expression itself), reasons and codes; validationActions Deny and Warn; failurePolicy for expressions that
 * fail and for params that are missing; matchConstraints and the binding's matchResources; every write path.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GROUP, MERGE_PATCH, secretBody, sharedSecretPath, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn, type KubeObj } from '../support/hostcluster.js';
import type { HttpResponse } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { answerWhen, waitFor } from '../support/wait.js';

let host: HostClusterStandIn;
let ts: TestServer;
let auditLog: string;
const NS = 'team-policy';
const OTHER = 'team-free';

/** The ResponseComplete audit event of the request that answered `res` (written as the answer goes out). */
function auditEventOf(res: HttpResponse): Promise<any> {
  const find = () =>
    readFileSync(auditLog, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .find((e) => e.auditID === res.headers['audit-id'] && e.stage === 'ResponseComplete');
  return waitFor('the audit event', find, 2000, 20);
}

beforeAll(async () => {
  host = await startHostCluster();
  host.addNamespace(NS, { policed: 'yes', owner: 'platform' });
  host.addNamespace(OTHER);
  host.addConfigMap(NS, 'limits', { prefix: 'ok-' });
  auditLog = join(mkdtempSync(join(tmpdir(), 'policy-audit-')), 'audit.log');
  ts = await startTestServer({ kubeconfig: host.kubeconfigPath, auditLogPath: auditLog });
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await host?.stop();
}, 60_000);

const made: [string, string][] = [];
beforeEach(() => {
  for (const [resource, name] of made.splice(0).reverse())
    host.removeAdmission(resource as 'validatingadmissionpolicies', name);
});

const SECRETS = {
  operations: ['CREATE', 'UPDATE'],
  apiGroups: [GROUP],
  apiVersions: ['v1'],
  resources: ['sharedsecrets'],
};

/** A policy and one binding of it, in force once a dry run in NS is answered as `expected` says. */
async function policy(
  spec: Record<string, unknown>,
  binding: Record<string, unknown> = {},
  inForce: (r: HttpResponse) => boolean = (r) => r.status !== 201,
  probe: () => Promise<HttpResponse> = () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe')),
): Promise<{ policy: string; binding: string }> {
  const name = uniq('policy');
  host.putAdmission('validatingadmissionpolicies', {
    metadata: { name },
    spec: { failurePolicy: 'Fail', matchConstraints: { resourceRules: [SECRETS] }, ...spec },
  } as KubeObj);
  made.push(['validatingadmissionpolicies', name]);
  const bindingName = `${name}-binding`;
  host.putAdmission('validatingadmissionpolicybindings', {
    metadata: { name: bindingName },
    spec: { policyName: name, validationActions: ['Deny'], ...binding },
  } as KubeObj);
  made.push(['validatingadmissionpolicybindings', bindingName]);
  await answerWhen('the policy to come into force', probe, inForce);
  return { policy: name, binding: bindingName };
}

describe('validations', () => {
  test("a false validation denies with kube's message, 422 Invalid by default, on create, patch and dry run; nothing stored", async () => {
    const { policy: p, binding: b } = await policy({
      validations: [
        { expression: "object.spec.displayName.startsWith('ok-')", message: 'displayName must start with ok-' },
      ],
    });
    const name = uniq('s');
    const res = await ts.admin.post(sharedSecretsPath(NS), secretBody(name));
    const message = `ValidatingAdmissionPolicy '${p}' with binding '${b}' denied request: displayName must start with ok-`;
    expect(res.body).toMatchObject({
      kind: 'Status',
      code: 422,
      reason: 'Invalid',
      message: `sharedsecrets.${GROUP} "${name}" is forbidden: ${message}`,
      details: { name, group: GROUP, kind: 'sharedsecrets', causes: [{ message }] },
    });
    expect((await ts.admin.get(sharedSecretPath(NS, name))).status).toBe(404);
    const good = { ...secretBody(name), spec: { ...secretBody(name).spec, displayName: 'ok-db' } };
    expect((await ts.admin.post(sharedSecretsPath(NS), good)).status).toBe(201);
    const patched = await ts.admin.patch(sharedSecretPath(NS, name), { spec: { displayName: 'bad' } }, MERGE_PATCH);
    expect([patched.status, patched.body.message]).toEqual([
      422,
      `sharedsecrets.${GROUP} "${name}" is forbidden: ${message}`,
    ]);
    expect((await ts.admin.get(sharedSecretPath(NS, name))).body.spec.displayName).toBe('ok-db');
  });

  test('messageExpression, else message, else the expression; a validation reason sets the code', async () => {
    await policy(
      {
        validations: [
          {
            expression: "object.metadata.name != 'a'",
            messageExpression: "'name ' + object.metadata.name + ' is taken'",
            reason: 'Forbidden',
          },
          { expression: "object.metadata.name != 'b'" },
        ],
      },
      {},
      (r) => r.status === 403,
      () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('a')),
    );
    const a = await ts.admin.post(sharedSecretsPath(NS), secretBody('a'));
    expect([a.status, a.body.reason]).toEqual([403, 'Forbidden']);
    expect(a.body.message).toMatch(/denied request: name a is taken$/);
    const b = await ts.admin.post(sharedSecretsPath(NS), secretBody('b'));
    expect([b.status, b.body.message]).toEqual([
      422,
      expect.stringMatching(/denied request: failed expression: object\.metadata\.name != 'b'$/),
    ]);
  });

  test('Warn: the write goes through with a Warning naming policy and binding', async () => {
    const { policy: p, binding: b } = await policy(
      {
        validations: [
          {
            expression: "has(object.metadata.labels) && 'team' in object.metadata.labels",
            message: 'label team missing',
          },
        ],
      },
      { validationActions: ['Warn'] },
      () => true,
    );
    const res = await answerWhen(
      'the warning',
      () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody(uniq('w'))),
      (r) => String(r.headers.warning ?? '').includes('label team missing'),
    );
    expect(res.status).toBe(201);
    expect(String(res.headers.warning)).toContain(
      `Validation failed for ValidatingAdmissionPolicy '${p}' with binding '${b}': label team missing`,
    );
  });

  test('an expression that fails: denied under Fail with the error; ignored under Ignore', async () => {
    const failing = { validations: [{ expression: "object.spec.nope == 'x'" }] };
    const { policy: p, binding: b } = await policy(failing);
    const res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('f')));
    expect([res.status, res.body.message]).toEqual([
      422,
      expect.stringContaining(
        `ValidatingAdmissionPolicy '${p}' with binding '${b}' denied request: expression 'object.spec.nope == 'x'' resulted in error: no such key: nope`,
      ),
    ]);
    // The same failing expression under Ignore, beside one that refuses a marker name: in force once it does.
    await policy(
      {
        validations: [...failing.validations, { expression: "object.metadata.name != 'marker'" }],
        failurePolicy: 'Ignore',
      },
      {},
      (r) => r.status === 422,
      () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('marker')),
    );
    host.removeAdmission('validatingadmissionpolicies', p);
    await answerWhen(
      'the change to take effect',
      () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe')),
      (r) => r.status === 201,
    );
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('f')))).status).toBe(201);
  });
});

describe('audit', () => {
  test("Audit records the failure in the audit event (kube's validation_failure annotation), and auditAnnotations add <policy>/<key>", async () => {
    const { policy: p, binding: b } = await policy(
      {
        validations: [
          { expression: 'true' },
          { expression: "object.metadata.name != 'watched'", message: 'watched name' },
        ],
        auditAnnotations: [{ key: 'owner', valueExpression: "'team of ' + object.metadata.name" }],
      },
      { validationActions: ['Audit'] },
      () => true,
    );
    let res: HttpResponse | undefined;
    for (let i = 0; i < 200; i++) {
      res = await ts.admin.post(sharedSecretsPath(NS), secretBody(`watched`));
      const event = await auditEventOf(res);
      await ts.admin.delete(sharedSecretPath(NS, 'watched'));
      if (event.annotations?.['validation.policy.admission.k8s.io/validation_failure']) {
        expect(res.status).toBe(201);
        expect(JSON.parse(event.annotations['validation.policy.admission.k8s.io/validation_failure'])).toEqual([
          { message: 'watched name', policy: p, binding: b, expressionIndex: 1, validationActions: ['Audit'] },
        ]);
        expect(event.annotations[`${p}/owner`]).toBe('team of watched');
        return;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('the policy never came into force');
  });
});

describe('inputs', () => {
  test('params from a ConfigMap on the host (paramRef in the namespace of the request), variables, namespaceObject, request and oldObject', async () => {
    await policy(
      {
        paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
        variables: [
          { name: 'prefix', expression: 'params.data.prefix' },
          { name: 'shown', expression: 'object.spec.displayName' },
        ],
        validations: [
          {
            expression: 'variables.shown.startsWith(variables.prefix)',
            messageExpression: "'must start with ' + variables.prefix",
          },
          { expression: "namespaceObject.metadata.labels.owner == 'platform'" },
          {
            expression: "request.operation != 'UPDATE' || oldObject.spec.displayName == object.spec.displayName",
            message: 'displayName is fixed',
          },
        ],
      },
      { paramRef: { name: 'limits', parameterNotFoundAction: 'Deny' } },
    );
    const name = uniq('p');
    const bad = await ts.admin.post(sharedSecretsPath(NS), secretBody(name));
    expect(bad.body.message).toMatch(/denied request: must start with ok-$/);
    const good = { ...secretBody(name), spec: { ...secretBody(name).spec, displayName: 'ok-x' } };
    expect((await ts.admin.post(sharedSecretsPath(NS), good)).status).toBe(201);
    const changed = await ts.admin.patch(sharedSecretPath(NS, name), { spec: { displayName: 'ok-y' } }, MERGE_PATCH);
    expect([changed.status, changed.body.message]).toEqual([
      422,
      expect.stringMatching(/denied request: displayName is fixed$/),
    ]);
  });

  test("params that are missing: Deny refuses with kube's message, Allow lets the write through", async () => {
    const { policy: p, binding: b } = await policy(
      { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, validations: [{ expression: 'true' }] },
      { paramRef: { name: 'absent', parameterNotFoundAction: 'Deny' } },
    );
    const res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('m')));
    expect([res.status, res.body.message]).toEqual([
      422,
      expect.stringContaining(
        `ValidatingAdmissionPolicy '${p}' with binding '${b}' denied request: failed to configure binding: no params found for policy binding with \`Deny\` parameterNotFoundAction`,
      ),
    ]);
    host.putAdmission('validatingadmissionpolicybindings', {
      metadata: { name: b },
      spec: {
        policyName: p,
        validationActions: ['Deny'],
        paramRef: { name: 'absent', parameterNotFoundAction: 'Allow' },
      },
    } as KubeObj);
    await answerWhen(
      'the change to take effect',
      () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe')),
      (r) => r.status === 201,
    );
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('m')))).status).toBe(201);
  });
});

describe('matching', () => {
  test("the binding's matchResources narrow the policy: only namespaces with its labels; excludeResourceRules and resourceNames", async () => {
    await policy(
      {
        matchConstraints: {
          resourceRules: [SECRETS],
          excludeResourceRules: [{ ...SECRETS, resourceNames: ['exempt'] }],
        },
        validations: [{ expression: 'false', message: 'frozen' }],
      },
      { matchResources: { namespaceSelector: { matchLabels: { policed: 'yes' } } } },
    );
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('x')))).status).toBe(422);
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody('exempt'))).status).toBe(201);
    expect((await ts.admin.post(sharedSecretsPath(OTHER), secretBody(uniq('x')))).status).toBe(201);
  });

  test('a policy without a binding does nothing; matchConditions false skip it', async () => {
    const name = uniq('unbound');
    host.putAdmission('validatingadmissionpolicies', {
      metadata: { name },
      spec: { matchConstraints: { resourceRules: [SECRETS] }, validations: [{ expression: 'false' }] },
    } as KubeObj);
    made.push(['validatingadmissionpolicies', name]);
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('u')))).status).toBe(201);
    await policy(
      {
        matchConditions: [
          { name: 'only-gold', expression: "has(object.metadata.labels) && object.metadata.labels['tier'] == 'gold'" },
        ],
        validations: [{ expression: 'false', message: 'gold is closed' }],
      },
      {},
      (r) => r.status === 422,
      () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe', { tier: 'gold' })),
    );
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('u'), { tier: 'silver' }))).status).toBe(201);
  });
});

describe('actions', () => {
  test("an action's create goes through admission as kube's subresource creates do: a policy on directclusterendpointtokens refuses it before it is served", async () => {
    const path = `/apis/${GROUP}/v1/directclusterendpointtokens`;
    const body = { apiVersion: `${GROUP}/v1`, kind: 'DirectClusterEndpointToken', spec: {} };
    const { policy: p, binding: b } = await policy(
      {
        matchConstraints: {
          resourceRules: [
            {
              operations: ['CREATE'],
              apiGroups: [GROUP],
              apiVersions: ['v1'],
              resources: ['directclusterendpointtokens'],
            },
          ],
        },
        validations: [{ expression: "request.userInfo.username == 'nobody'", message: 'tokens are off' }],
      },
      {},
      (r) => String(r.body?.message).includes('tokens are off'),
      () => ts.admin.post(path, body),
    );
    const res = await ts.admin.post(path, body);
    expect([res.status, res.body.reason, res.body.message]).toEqual([
      422,
      'Invalid',
      expect.stringContaining(`ValidatingAdmissionPolicy '${p}' with binding '${b}' denied request: tokens are off`),
    ]);
  });
});

describe("policies see what a reader sees: an access key's hidden fields are not in object or oldObject", () => {
  test('a policy denying any key whose spec holds key or connectorData lets every create and update through', async () => {
    const KEYS = `/apis/${GROUP}/v1/ownedaccesskeys`;
    const keyBody = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: `${GROUP}/v1`,
      kind: 'OwnedAccessKey',
      metadata: { name },
      spec,
    });
    const leaked = (o: string) =>
      `${o} != null && (has(${o}.spec.key) || (has(${o}.spec.identity) && has(${o}.spec.identity.connectorData)))`;
    await policy(
      {
        matchConstraints: {
          resourceRules: [{ ...SECRETS, resources: ['ownedaccesskeys'] }],
        },
        validations: [
          { expression: `!(${leaked('object')}) && !(${leaked('oldObject')})`, message: 'a key reached the policy' },
          { expression: "!has(object.metadata.labels) || !('probe' in object.metadata.labels)", message: 'probe' },
        ],
      },
      {},
      (r) => r.status === 422,
      () =>
        ts.admin.post(`${KEYS}?dryRun=All`, {
          ...keyBody(uniq('probe'), { user: 'alice' }),
          metadata: { name: uniq('probe'), labels: { probe: 'yes' } },
        }),
    );
    const name = uniq('key');
    const spec = { user: 'alice', key: `given-${uniq('k')}`, identity: { username: 'alice', connectorData: 'opaque' } };
    const created = await ts.admin.post(KEYS, keyBody(name, spec));
    expect([created.status, created.body.message]).toEqual([201, undefined]);
    const generated = await ts.admin.post(KEYS, keyBody(uniq('key'), { user: 'alice' }));
    expect(generated.status).toBe(201);
    const updated = await ts.admin.patch(`${KEYS}/${name}`, { spec: { displayName: 'ci' } }, MERGE_PATCH);
    expect([updated.status, updated.body.message]).toEqual([200, undefined]);
  });
});
