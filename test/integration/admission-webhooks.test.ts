/**
 * MutatingAdmissionWebhook and ValidatingAdmissionWebhook: webhook configurations put in the host stand-in, a real
 * HTTPS webhook (its own CA as caBundle). What the webhook receives (AdmissionReview v1, or v1beta1 when that is
 * all it takes), which requests reach it (rules, scope, subresources, namespace and object selectors), how its
 * answers come back to the client (denials with kube's message and the webhook's code, patches applied and then
 * validated, warnings), failure policies for a webhook that cannot be called, dry run and side effects, and
 * reinvocation.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLUSTERS_PATH,
  clusterBody,
  GROUP,
  MERGE_PATCH,
  secretBody,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
} from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn, type KubeObj } from '../support/hostcluster.js';
import type { HttpResponse } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { answerWhen, waitFor } from '../support/wait.js';
import { startWebhookServer, type WebhookServer } from '../support/webhookserver.js';

let host: HostClusterStandIn;
let hook: WebhookServer;
let ts: TestServer;
let auditLog: string;
const NS = 'team-hooks';

/** The ResponseComplete audit event of the request that answered `res`. */
function auditEventOf(res: HttpResponse): any {
  const id = res.headers['audit-id'];
  return readFileSync(auditLog, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
    .find((e) => e.auditID === id && e.stage === 'ResponseComplete');
}
const PROD = 'team-prod';

beforeAll(async () => {
  host = await startHostCluster();
  host.addNamespace(NS);
  host.addNamespace(PROD, { env: 'prod' });
  hook = await startWebhookServer();
  auditLog = join(mkdtempSync(join(tmpdir(), 'admission-audit-')), 'audit.log');
  ts = await startTestServer({ kubeconfig: host.kubeconfigPath, auditLogPath: auditLog });
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await hook?.stop();
  await host?.stop();
}, 60_000);

const configs: [string, string][] = [];
beforeEach(() => {
  for (const [resource, name] of configs.splice(0))
    host.removeAdmission(resource as 'validatingwebhookconfigurations', name);
  hook.received.splice(0);
});

const SECRET_RULE = {
  operations: ['CREATE', 'UPDATE'],
  apiGroups: [GROUP],
  apiVersions: ['v1'],
  resources: ['sharedsecrets'],
};

/** A webhook configuration with one webhook at `path` (on the test webhook, caBundle set), in force once seen. */
async function configure(
  kind: 'validating' | 'mutating',
  path: string,
  webhook: Record<string, unknown> = {},
  probe: () => Promise<HttpResponse> = () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe')),
): Promise<string> {
  const resource = `${kind}webhookconfigurations` as const;
  const name = uniq(kind);
  host.putAdmission(resource, {
    metadata: { name },
    webhooks: [
      {
        name: `${name}.hooks.example.com`,
        clientConfig: { url: hook.url(path), caBundle: hook.caBundle },
        rules: [SECRET_RULE],
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        ...webhook,
      },
    ],
  } as KubeObj);
  configs.push([resource, name]);
  // The informer hears of it: wait until a request reaches the webhook.
  await answerWhen(`the webhook at ${path} to be asked`, probe, () => hook.received.some((r) => r.path === path));
  hook.received.splice(0);
  return `${name}.hooks.example.com`;
}

const allow = () => ({ response: { allowed: true } });

/** The last review of a client's request (the server's own writes, as system:apiserver, may come after it). */
function lastFromClient(): { review: any; query: string } {
  const mine = hook.received.filter((r) => r.review.request.userInfo.username !== 'system:apiserver');
  expect(mine.length).toBeGreaterThan(0);
  return mine[mine.length - 1];
}

describe('ValidatingAdmissionWebhook', () => {
  test("a denial answers with kube's message and the webhook's code, and stores nothing; what the webhook received is kube's AdmissionReview v1", async () => {
    hook.handle('/deny-labelled', (review) =>
      review.request.object?.metadata?.labels?.deny
        ? { response: { allowed: false, status: { code: 403, reason: 'Forbidden', message: 'labelled deny' } } }
        : allow(),
    );
    const name = await configure('validating', '/deny-labelled');
    const denied = await ts.admin.post(sharedSecretsPath(NS), secretBody('denied', { deny: 'yes' }));
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      code: 403,
      reason: 'Forbidden',
      message: `admission webhook "${name}" denied the request: labelled deny`,
    });
    expect((await ts.admin.get(sharedSecretPath(NS, 'denied'))).status).toBe(404);

    const created = await ts.admin.post(sharedSecretsPath(NS), secretBody('allowed'));
    expect(created.status).toBe(201);
    const { review, query } = lastFromClient();
    expect(query).toBe('?timeout=10s');
    expect(review).toMatchObject({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        kind: { group: GROUP, version: 'v1', kind: 'SharedSecret' },
        resource: { group: GROUP, version: 'v1', resource: 'sharedsecrets' },
        requestKind: { group: GROUP, version: 'v1', kind: 'SharedSecret' },
        name: 'allowed',
        namespace: NS,
        operation: 'CREATE',
        userInfo: { username: expect.any(String), groups: expect.arrayContaining(['system:masters']) },
        oldObject: null,
        dryRun: false,
        options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
      },
    });
    expect(review.request.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(review.request.object.spec.displayName).toBe('Secret allowed');

    // An update: the old object comes along; a denial on update leaves the stored object as it was.
    const patched = await ts.admin.patch(
      sharedSecretPath(NS, 'allowed'),
      { metadata: { labels: { deny: 'x' } } },
      MERGE_PATCH,
    );
    expect(patched.status).toBe(403);
    const update = lastFromClient().review.request;
    expect(update.operation).toBe('UPDATE');
    expect(update.oldObject.metadata.name).toBe('allowed');
    expect(update.options.kind).toBe('UpdateOptions');
    expect((await ts.admin.get(sharedSecretPath(NS, 'allowed'))).body.metadata.labels ?? {}).toEqual({});
  });

  test('a denial without a code is 400; without a message the reason is said, without either "without explanation"', async () => {
    let status: Record<string, unknown> = {};
    hook.handle('/deny-all', () => ({ response: { allowed: false, status } }));
    const name = await configure('validating', '/deny-all', {}, () =>
      ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe')),
    );
    status = { message: 'plain no' };
    let res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('s')));
    expect([res.status, res.body.message]).toEqual([400, `admission webhook "${name}" denied the request: plain no`]);
    status = { reason: 'NoReason' };
    res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('s')));
    expect([res.status, res.body.message]).toEqual([400, `admission webhook "${name}" denied the request: NoReason`]);
    status = {};
    res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('s')));
    expect([res.status, res.body.message]).toEqual([
      400,
      `admission webhook "${name}" denied the request without explanation`,
    ]);
  });

  test('warnings come back as Warning headers; audit annotations go to the audit event as <webhook>/<key>', async () => {
    hook.handle('/warn', () => ({
      response: { allowed: true, warnings: ['mind the gap'], auditAnnotations: { checked: 'by-the-book' } },
    }));
    const name = await configure('validating', '/warn');
    const res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('w')));
    expect(res.status).toBe(201);
    expect(String(res.headers.warning)).toContain('mind the gap');
    const event = await waitFor('the audit event', () => auditEventOf(res), 2000, 20);
    expect(event.annotations).toMatchObject({ [`${name}/checked`]: 'by-the-book' });
  });

  test('rules, scope and subresources decide what is sent: a status write only to a status rule, Clusters only to a Cluster-scoped rule', async () => {
    hook.handle('/status-only', allow);
    const created = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('st')));
    await configure(
      'validating',
      '/status-only',
      {
        rules: [{ ...SECRET_RULE, resources: ['sharedsecrets/status'] }],
      },
      () =>
        ts.admin.patch(
          `${sharedSecretPath(NS, created.body.metadata.name)}/status?dryRun=All`,
          { status: {} },
          MERGE_PATCH,
        ),
    );
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('st')))).status).toBe(201);
    // The create is not sent (the access sync's status write of the new object may be, a moment later).
    expect(hook.received.filter((r) => r.review.request.subResource !== 'status')).toEqual([]);
    await ts.admin.patch(`${sharedSecretPath(NS, created.body.metadata.name)}/status`, { status: {} }, MERGE_PATCH);
    // The server's own status writes (the access sync's) reach it too, as kube's controllers' writes do.
    expect(new Set(hook.received.map((r) => r.review.request.subResource))).toEqual(new Set(['status']));
    expect(hook.received.some((r) => r.review.request.userInfo.username !== 'system:apiserver')).toBe(true);

    hook.handle('/clusters', allow);
    hook.received.splice(0);
    await configure(
      'validating',
      '/clusters',
      { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'], scope: 'Cluster' }] },
      () => ts.admin.post(`${CLUSTERS_PATH}?dryRun=All`, clusterBody(uniq('probe'))),
    );
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('st')))).status).toBe(201);
    expect(hook.received.filter((r) => r.path === '/clusters')).toEqual([]);
    expect((await ts.admin.post(CLUSTERS_PATH, clusterBody(uniq('c')))).status).toBe(201);
    const clusterCreates = hook.received.filter(
      (r) => r.path === '/clusters' && r.review.request.operation === 'CREATE',
    );
    expect(clusterCreates.map((r) => r.review.request.resource.resource)).toEqual(['clusters']);
  });

  test('namespaceSelector and objectSelector: only writes in a namespace with the labels, of objects with the labels', async () => {
    hook.handle('/prod', () => ({ response: { allowed: false, status: { message: 'prod is frozen' } } }));
    await configure('validating', '/prod', { namespaceSelector: { matchLabels: { env: 'prod' } } }, () =>
      ts.admin.post(`${sharedSecretsPath(PROD)}?dryRun=All`, secretBody('probe')),
    );
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('n')))).status).toBe(201);
    expect((await ts.admin.post(sharedSecretsPath(PROD), secretBody(uniq('n')))).status).toBe(400);

    hook.handle('/tier', () => ({ response: { allowed: false, status: { message: 'tier gold is closed' } } }));
    await configure(
      'validating',
      '/tier',
      { objectSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['gold'] }] } },
      () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe', { tier: 'gold' })),
    );
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('o'), { tier: 'silver' }))).status).toBe(201);
    const gold = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('o'), { tier: 'gold' }));
    expect([gold.status, gold.body.message]).toEqual([400, expect.stringContaining('tier gold is closed')]);
  });
});

describe('a webhook that cannot be called', () => {
  const unreachable = { clientConfig: { url: 'https://127.0.0.1:1/unreachable', caBundle: '' } };

  test('under failurePolicy Fail: 500 naming the webhook and why; nothing stored. Under Ignore: the write goes through', async () => {
    hook.handle('/ok', allow);
    // Put the unreachable webhook beside a reachable one, so that the informer is known to have both.
    const name = uniq('fail');
    host.putAdmission('validatingwebhookconfigurations', {
      metadata: { name },
      webhooks: [
        {
          name: `${name}.hooks.example.com`,
          rules: [SECRET_RULE],
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          failurePolicy: 'Fail',
          ...unreachable,
        },
      ],
    } as KubeObj);
    configs.push(['validatingwebhookconfigurations', name]);
    const create = () => ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('u')));
    const res = await answerWhen('the unreachable webhook to be in force', create, (r) => r.status === 500);
    expect(res.body).toMatchObject({ code: 500, reason: 'InternalError' });
    expect(res.body.message).toMatch(
      new RegExp(
        `^Internal error occurred: failed calling webhook "${name}.hooks.example.com": failed to call webhook: Post "https://127.0.0.1:1/unreachable\\?timeout=10s": .*ECONNREFUSED`,
      ),
    );
    const failed = uniq('u');
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(failed))).status).toBe(500);
    expect((await ts.admin.get(sharedSecretPath(NS, failed))).status).toBe(404);

    host.putAdmission('validatingwebhookconfigurations', {
      metadata: { name },
      webhooks: [
        {
          name: `${name}.hooks.example.com`,
          rules: [SECRET_RULE],
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          failurePolicy: 'Ignore',
          ...unreachable,
        },
      ],
    } as KubeObj);
    expect((await answerWhen('Ignore to be in force', create, (r) => r.status === 201)).status).toBe(201);
  });

  test('a webhook slower than its timeoutSeconds, a serving certificate the caBundle does not sign, a wrong response uid: each a call failure', async () => {
    hook.handle('/slow', () => ({ response: { allowed: true }, delayMs: 1500 }));
    const slow = await configure('validating', '/slow', { timeoutSeconds: 1, failurePolicy: 'Fail' }, async () => {
      const r = await ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe'));
      return r;
    });
    let res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('t')));
    expect(res.status).toBe(500);
    expect(res.body.message).toContain(
      `failed calling webhook "${slow}": failed to call webhook: Post "${hook.url('/slow')}?timeout=1s"`,
    );
    host.removeAdmission('validatingwebhookconfigurations', configs.pop()![1]);

    hook.handle('/wrong-uid', () => ({
      raw: {
        status: 200,
        body: {
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: randomUUID(), allowed: true },
        },
      },
    }));
    const wrong = await configure('validating', '/wrong-uid');
    res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('t')));
    expect([res.status, res.body.message]).toEqual([
      500,
      expect.stringMatching(
        new RegExp(`failed calling webhook "${wrong}": expected response.uid="[0-9a-f-]+", got "[0-9a-f-]+"`),
      ),
    ]);
    host.removeAdmission('validatingwebhookconfigurations', configs.pop()![1]);

    hook.handle('/untrusted', allow);
    const name = uniq('untrusted');
    host.putAdmission('validatingwebhookconfigurations', {
      metadata: { name },
      webhooks: [
        {
          name: `${name}.hooks.example.com`,
          clientConfig: { url: hook.url('/untrusted') },
          rules: [SECRET_RULE],
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    } as KubeObj);
    configs.push(['validatingwebhookconfigurations', name]);
    res = await answerWhen(
      'the untrusted webhook to be in force',
      () => ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('t'))),
      (r) => r.status === 500,
    );
    expect(res.body.message).toMatch(
      new RegExp(`failed calling webhook "${name}.hooks.example.com": failed to call webhook: Post .*certificate`),
    );
    expect(hook.received.filter((r) => r.path === '/untrusted')).toEqual([]);
  });
});

describe('dry run', () => {
  test('a webhook with side effects refuses a dry run (400) without being called; one without is called with dryRun true', async () => {
    hook.handle('/some', allow);
    const some = await configure('validating', '/some', { sideEffects: 'Some' }, () =>
      ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('probe'))),
    );
    const res = await ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody(uniq('d')));
    expect(res.body).toMatchObject({
      code: 400,
      reason: 'BadRequest',
      message: `admission webhook "${some}" does not support dry run`,
    });
    expect(hook.received.filter((r) => r.review.request.dryRun)).toEqual([]);
    host.removeAdmission('validatingwebhookconfigurations', configs.pop()![1]);

    hook.handle('/none', allow);
    await configure('validating', '/none', { sideEffects: 'NoneOnDryRun' });
    const name = uniq('d');
    expect((await ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody(name))).status).toBe(201);
    expect(lastFromClient().review.request).toMatchObject({ dryRun: true, options: { dryRun: ['All'] } });
    expect((await ts.admin.get(sharedSecretPath(NS, name))).status).toBe(404);
  });
});

describe('MutatingAdmissionWebhook', () => {
  const patchOf = (ops: unknown[]) => Buffer.from(JSON.stringify(ops)).toString('base64');

  test("a JSON patch is applied and stored; the kind's validation judges the patched object; a patch moving the object to another namespace is refused", async () => {
    let ops: unknown[] = [];
    hook.handle('/mutate', () => ({ response: { allowed: true, patchType: 'JSONPatch', patch: patchOf(ops) } }));
    ops = [{ op: 'add', path: '/metadata/labels', value: { stamped: 'yes' } }];
    await configure('mutating', '/mutate');
    const name = uniq('m');
    const created = await ts.admin.post(sharedSecretsPath(NS), secretBody(name));
    expect(created.status).toBe(201);
    expect(created.body.metadata.labels).toEqual({ stamped: 'yes' });
    expect((await ts.admin.get(sharedSecretPath(NS, name))).body.metadata.labels).toEqual({ stamped: 'yes' });

    ops = [{ op: 'replace', path: '/spec/displayName', value: 42 }];
    const invalid = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('m')));
    expect(invalid.status).toBe(422);
    expect(invalid.body.message).toContain('spec.displayName');

    ops = [{ op: 'replace', path: '/metadata/namespace', value: PROD }];
    const moved = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('m')));
    expect(moved.status).toBe(400);
    expect(moved.body.message).toBe(
      'the namespace of the provided object does not match the namespace sent on the request',
    );

    ops = [{ op: 'remove', path: '/no/such/path' }];
    const broken = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('m')));
    expect([broken.status, broken.body.reason]).toEqual([500, 'InternalError']);
  });

  test('a response with a patch but no patchType is a call failure', async () => {
    hook.handle('/untyped', () => ({ response: { allowed: true, patch: patchOf([]) } }));
    const name = await configure('mutating', '/untyped', { failurePolicy: 'Fail' });
    const res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('p')));
    expect([res.status, res.body.message]).toEqual([
      500,
      `Internal error occurred: failed calling webhook "${name}": webhook returned response.patch but not response.patchType`,
    ]);
  });

  test('reinvocationPolicy IfNeeded: a webhook runs again when a later one changed the object, and sees the change', async () => {
    const seen: string[] = [];
    hook.handle('/first', (review) => {
      // The client's create only (the server's own later writes of the object reach it too).
      if (review.request.userInfo.username !== 'system:apiserver')
        seen.push(JSON.stringify(review.request.object.metadata.labels ?? {}));
      return allow();
    });
    hook.handle('/second', (review) =>
      review.request.object.metadata.labels?.second
        ? allow()
        : {
            response: {
              allowed: true,
              patchType: 'JSONPatch',
              patch: patchOf([{ op: 'add', path: '/metadata/labels', value: { second: 'ran' } }]),
            },
          },
    );
    // Configurations run in the order of their names.
    const [a, b] = ['a-first', 'b-second'].map((n) => `${n}-${randomUUID().slice(0, 8)}`);
    for (const [name, path, policy] of [
      [a, '/first', 'IfNeeded'],
      [b, '/second', 'Never'],
    ] as const) {
      host.putAdmission('mutatingwebhookconfigurations', {
        metadata: { name },
        webhooks: [
          {
            name: `${name}.hooks.example.com`,
            clientConfig: { url: hook.url(path), caBundle: hook.caBundle },
            rules: [SECRET_RULE],
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            reinvocationPolicy: policy,
          },
        ],
      } as KubeObj);
      configs.push(['mutatingwebhookconfigurations', name]);
    }
    await answerWhen(
      'both webhooks to be in force',
      () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe')),
      () => hook.received.some((r) => r.path === '/second'),
    );
    seen.splice(0);
    const res = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('r')));
    expect(res.status).toBe(201);
    expect(res.body.metadata.labels).toEqual({ second: 'ran' });
    expect(seen).toEqual(['{}', '{"second":"ran"}']);
  });

  test('a webhook that accepts only v1beta1 gets AdmissionReview v1beta1', async () => {
    hook.handle('/beta', allow);
    await configure('mutating', '/beta', { admissionReviewVersions: ['v1beta1'] });
    await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('b')));
    expect(lastFromClient().review.apiVersion).toBe('admission.k8s.io/v1beta1');
  });
});

describe('matchConditions (CEL)', () => {
  test('the webhook is called only when every condition holds; one false condition skips it whatever the others do', async () => {
    hook.handle('/gold', () => ({ response: { allowed: false, status: { message: 'gold only by request' } } }));
    await configure(
      'validating',
      '/gold',
      {
        matchConditions: [
          { name: 'not-the-server', expression: 'request.userInfo.username != "system:apiserver"' },
          {
            name: 'gold',
            expression:
              "has(object.metadata.labels) && 'tier' in object.metadata.labels && object.metadata.labels['tier'] == 'gold'",
          },
        ],
      },
      () => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody('probe', { tier: 'gold' })),
    );
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('g'), { tier: 'silver' }))).status).toBe(201);
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('g')))).status).toBe(201);
    const gold = await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('g'), { tier: 'gold' }));
    expect([gold.status, gold.body.message]).toEqual([400, expect.stringContaining('gold only by request')]);
  });

  test('a condition that fails to evaluate: 403 naming the expression and the error under Fail, the webhook skipped under Ignore, and a false one beside it still skips', async () => {
    hook.handle('/broken', () => ({ response: { allowed: false, status: { message: 'should not be asked' } } }));
    const broken = { name: 'broken', expression: "object.spec.nope == 'x'" };
    const name = uniq('cond');
    const put = (failurePolicy: string, conditions: unknown[]) =>
      host.putAdmission('validatingwebhookconfigurations', {
        metadata: { name },
        webhooks: [
          {
            name: `${name}.hooks.example.com`,
            clientConfig: { url: hook.url('/broken'), caBundle: hook.caBundle },
            rules: [SECRET_RULE],
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            failurePolicy,
            matchConditions: conditions,
          },
        ],
      } as KubeObj);
    put('Fail', [broken]);
    configs.push(['validatingwebhookconfigurations', name]);
    const secret = uniq('c');
    const res = await answerWhen(
      'the conditions to be evaluated',
      async () => {
        const r = await ts.admin.post(sharedSecretsPath(NS), secretBody(secret));
        if (r.status === 201) await ts.admin.delete(sharedSecretPath(NS, secret));
        return r;
      },
      (r) => r.status === 403,
    );
    expect(res.body).toMatchObject({
      code: 403,
      reason: 'Forbidden',
      message: `sharedsecrets.${GROUP} "${secret}" is forbidden: expression 'object.spec.nope == 'x'' resulted in error: no such key: nope`,
    });
    expect(hook.received.filter((r) => r.path === '/broken')).toEqual([]);

    put('Fail', [broken, { name: 'never', expression: 'false' }]);
    await waitForStatus(() => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody(uniq('c'))), 201);
    put('Ignore', [broken]);
    await waitForStatus(() => ts.admin.post(`${sharedSecretsPath(NS)}?dryRun=All`, secretBody(uniq('c'))), 201);
    expect((await ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('c')))).status).toBe(201);
    expect(hook.received.filter((r) => r.path === '/broken')).toEqual([]);
  });
});

describe("webhooks see what a reader sees: never a key, its hash or a connector's data", () => {
  const KEYS = `/apis/${GROUP}/v1/ownedaccesskeys`;
  const KEY_RULE = { operations: ['CREATE', 'UPDATE'], apiGroups: [GROUP], apiVersions: ['v1'], resources: ['*'] };
  const keyBody = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: `${GROUP}/v1`,
    kind: 'OwnedAccessKey',
    metadata: { name },
    spec,
  });
  const probe = () => ts.admin.post(`${KEYS}?dryRun=All`, keyBody(uniq('probe'), { user: 'alice' }));
  /** Every review any webhook received, as the text it was sent. */
  const sent = () => hook.received.map((r) => JSON.stringify(r.review));
  const patchOf = (ops: unknown[]) => Buffer.from(JSON.stringify(ops)).toString('base64');

  test('creates (answered 201 or 409), updates and deletes reach webhooks without the key, its hash or connectorData; a patching webhook leaves the key working', async () => {
    hook.handle('/keys-validate', allow);
    hook.handle('/keys-mutate', () => ({
      response: {
        allowed: true,
        patchType: 'JSONPatch',
        patch: patchOf([{ op: 'add', path: '/metadata/labels', value: { reviewed: 'yes' } }]),
      },
    }));
    const rule = { rules: [KEY_RULE] };
    await configure('validating', '/keys-validate', rule, probe);
    await configure('mutating', '/keys-mutate', rule, probe);

    const name = uniq('key');
    const given = `given-${randomUUID()}`;
    const created = await ts.admin.post(
      KEYS,
      keyBody(name, { user: 'alice', key: given, identity: { username: 'alice', connectorData: 'c0nnect0r' } }),
    );
    expect(created.status).toBe(201);
    expect(created.body.spec.key).toBe(given);
    expect(created.body.metadata.labels).toEqual({ reviewed: 'yes' });
    // The mutated key still authenticates: its hash was kept through the webhook's patch.
    expect((await ts.client(given).get(`${KEYS}/${name}`)).status).toBe(200);
    const generated = await ts.admin.post(KEYS, keyBody(uniq('key'), { user: 'alice' }));
    expect(generated.status).toBe(201);
    const taken = `taken-${randomUUID()}`;
    expect((await ts.admin.post(KEYS, keyBody(name, { user: 'alice', key: taken }))).status).toBe(409);
    expect(
      (await ts.admin.patch(`${KEYS}/${name}`, { metadata: { annotations: { a: 'b' } } }, MERGE_PATCH)).status,
    ).toBe(200);

    const reviews = sent();
    expect(reviews.some((r) => r.includes(name))).toBe(true);
    for (const secret of [given, generated.body.spec.key, taken, 'sha256:', 'c0nnect0r'])
      expect(reviews.filter((r) => r.includes(secret))).toEqual([]);
    // The identity itself is a reader's to see, and so the webhook's.
    expect(reviews.some((r) => r.includes('"identity":{"username":"alice"}'))).toBe(true);
  });
});

async function waitForStatus(send: () => Promise<HttpResponse>, status: number): Promise<void> {
  await answerWhen(`an answer ${status}`, send, (r) => r.status === status);
}
