/**
 * --admission-control-config-file: kube's AdmissionConfiguration, whose WebhookAdmissionConfiguration names a
 * kubeconfig with the credentials this server presents to webhooks, chosen by host. A webhook that requires a token
 * is called with it; without the configuration it refuses the call. A file kube would refuse stops the start.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { credentialsByHost } from '../../src/admission/config.js';
import { GROUP, secretBody, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { startHostCluster, type HostClusterStandIn, type KubeObj } from '../support/hostcluster.js';
import type { HttpResponse } from '../support/http.js';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { answerWhen } from '../support/wait.js';
import { startWebhookServer, type WebhookServer } from '../support/webhookserver.js';

const NS = 'team-config';
const TOKEN = `hook-${uniq('t')}`;
let host: HostClusterStandIn;
let hook: WebhookServer;
let dir: string;
let etcd: TestEtcd;

beforeAll(async () => {
  etcd = await startTestEtcd();
  host = await startHostCluster();
  host.addNamespace(NS);
  hook = await startWebhookServer({ token: TOKEN });
  hook.handle('/check', () => ({ response: { allowed: true } }));
  dir = mkdtempSync(join(tmpdir(), 'admission-config-'));
  host.putAdmission('validatingwebhookconfigurations', {
    metadata: { name: 'authenticated' },
    webhooks: [
      {
        name: 'authenticated.hooks.example.com',
        clientConfig: { url: hook.url('/check'), caBundle: hook.caBundle },
        rules: [{ operations: ['CREATE'], apiGroups: [GROUP], apiVersions: ['v1'], resources: ['sharedsecrets'] }],
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        failurePolicy: 'Fail',
      },
    ],
  } as KubeObj);
}, 60_000);

afterAll(async () => {
  await hook?.stop();
  await host?.stop();
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, doc: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, yaml.dump(doc));
  return path;
}

function kubeconfigWithUser(userName: string, user: Record<string, unknown>): string {
  return file(`${uniq('kubeconfig')}.yaml`, { apiVersion: 'v1', kind: 'Config', users: [{ name: userName, user }] });
}

function admissionConfig(plugin: Record<string, unknown>): string {
  return file(`${uniq('admission')}.yaml`, {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AdmissionConfiguration',
    plugins: [{ name: 'ValidatingAdmissionWebhook', ...plugin }],
  });
}

/** A create once the webhook configuration is known: a 201 before that would say nothing. */
function createOnce(ts: TestServer): Promise<HttpResponse> {
  return answerWhen(
    'the webhook to be asked',
    () => ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('s'))),
    (res) => res.status !== 201 || hook.received.length > 0,
  );
}

describe('credentials for webhooks', () => {
  test('a webhook that requires a token refuses a server without the configuration: 500 failed calling webhook', async () => {
    const ts = await startTestServer({ kubeconfig: host.kubeconfigPath }, etcd);
    try {
      const res = await answerWhen(
        'the webhook to refuse the call',
        () => ts.admin.post(sharedSecretsPath(NS), secretBody(uniq('s'))),
        (r) => r.status === 500,
      );
      expect(res.body.message).toContain(
        'failed calling webhook "authenticated.hooks.example.com": failed to call webhook: Post',
      );
      expect(res.body.message).toContain('HTTP 401');
    } finally {
      await ts.stop();
    }
  });

  test.each([
    ['the host:port, inline', (port: string) => ({ configuration: webhookConfig(`127.0.0.1:${port}`) })],
    ['*, in a file of its own', () => ({ path: file(`${uniq('webhook')}.yaml`, webhookConfig('*')) })],
  ])('a user named by %s: the webhook gets its token and lets the write through', async (_what, plugin) => {
    hook.received.splice(0);
    const port = new URL(hook.url('/')).port;
    const ts = await startTestServer(
      {
        kubeconfig: host.kubeconfigPath,
        admissionControlConfigFile: admissionConfig(plugin(port)),
      },
      etcd,
    );
    try {
      expect((await createOnce(ts)).status).toBe(201);
      expect(hook.received.length).toBeGreaterThan(0);
    } finally {
      await ts.stop();
    }
  });

  function webhookConfig(userName: string) {
    return {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'WebhookAdmissionConfiguration',
      kubeConfigFile: kubeconfigWithUser(userName, { token: TOKEN }),
    };
  }
});

describe('a file kube would refuse stops the start, naming what is wrong', () => {
  test.each([
    [
      'a relative kubeConfigFile',
      () =>
        admissionConfig({
          configuration: {
            apiVersion: 'apiserver.config.k8s.io/v1',
            kind: 'WebhookAdmissionConfiguration',
            kubeConfigFile: 'rel/kubeconfig',
          },
        }),
      'kubeConfigFile: Invalid value: "rel/kubeconfig": must be an absolute file path',
    ],
    [
      'another kind',
      () => file('wrong.yaml', { apiVersion: 'apiserver.config.k8s.io/v1', kind: 'EncryptionConfiguration' }),
      'expected apiVersion apiserver.config.k8s.io/v1 and kind AdmissionConfiguration, got "apiserver.config.k8s.io/v1" "EncryptionConfiguration"',
    ],
    ['a file that is not there', () => join(dir, 'absent.yaml'), 'cannot read the file (ENOENT)'],
    [
      'a kubeconfig user with a credential plugin',
      () =>
        admissionConfig({
          configuration: {
            apiVersion: 'apiserver.config.k8s.io/v1',
            kind: 'WebhookAdmissionConfiguration',
            kubeConfigFile: kubeconfigWithUser('*', { exec: { command: 'evil' } }),
          },
        }),
      'users[0].user.exec: credential plugins are not run',
    ],
  ])('%s', async (_what, path, message) => {
    await expect(
      startTestServer({ kubeconfig: host.kubeconfigPath, admissionControlConfigFile: path() }, etcd),
    ).rejects.toThrow(message);
  });
});

test("credentials are chosen as kube's AuthenticationInfoResolver chooses them", () => {
  const users = new Map(
    ['hooks.example.com:8443', '*.example.com', 'gate.policy.svc', '*'].map((name) => [name, { token: name }]),
  );
  const pick = credentialsByHost(users);
  expect(pick(new URL('https://hooks.example.com:8443/x'))?.token).toBe('hooks.example.com:8443');
  // Wildcards keep the port (kube splits host:port at the dots); without a port only for 443.
  expect(pick(new URL('https://other.example.com:8443/x'))?.token).toBe('*');
  expect(pick(new URL('https://other.example.com/x'))?.token).toBe('*.example.com');
  expect(pick(new URL('https://gate.policy.svc/validate'))?.token).toBe('gate.policy.svc');
  expect(pick(new URL('https://gate.policy.svc:9443/validate'))?.token).toBe('*');
  expect(credentialsByHost(new Map())(new URL('https://x/'))).toBeUndefined();
});
