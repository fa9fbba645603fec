/**
 * The chart's `helm test` Pod, its command run as rendered with the real kubectl against a real server: it succeeds
 * where the group's discovery is served (/apis/management.platform.sh/v1, the path kube-apiserver's aggregator
 * proxies to the server) and fails where nothing serves it, so `helm test` tells an admin whether the API is reached.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import yaml from 'js-yaml';
import { helm } from '../support/helm.js';
import { kubectl } from '../support/kubectl.js';
import { startTestServer, type TestServer } from '../support/server.js';
import type { K8sObject } from './models.js';

let ts: TestServer;
let command: string[];

beforeAll(async () => {
  const r = await helm(['template', 'pm', 'deploy/chart', '--namespace', 'platform']);
  expect(r.code).toBe(0);
  const docs = yaml.loadAll(r.stdout) as K8sObject[];
  const pod = docs.find((d) => d?.kind === 'Pod' && d.metadata.annotations?.['helm.sh/hook'] === 'test')!;
  const [container] = pod.spec.containers;
  command = [...container.command, ...container.args];
  ts = await startTestServer();
}, 60_000);

afterAll(async () => {
  await ts?.stop();
});

test('the test Pod’s kubectl command reads the group’s discovery where the server serves it', async () => {
  expect(command[0]).toBe('kubectl');
  const r = await kubectl(command.slice(1), { kubeconfig: ts.kubeconfig });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  const discovery = JSON.parse(r.stdout);
  expect(discovery).toMatchObject({ kind: 'APIResourceList', groupVersion: 'management.platform.sh/v1' });
  expect(discovery.resources.map((res: { name: string }) => res.name)).toContain('sharedsecrets');
});

test('and fails where the group is not served (no APIService, or none reachable)', async () => {
  const elsewhere = command.map((a) => (a === '/apis/management.platform.sh/v1' ? '/apis/nothing.example.com/v1' : a));
  const r = await kubectl(elsewhere.slice(1), { kubeconfig: ts.kubeconfig });
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(/NotFound|not found/i);
});
