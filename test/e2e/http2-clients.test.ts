/**
 * Which protocol real clients negotiate with the server, as its request log names it (`protocol`, at --v=3):
 * kubectl 1.33 and Debian's kubectl 1.20 (client-go, Go's net/http) offer h2 by ALPN and take HTTP/2, and so does
 * the JavaScript client (@kubernetes/client-node 2, whose requests go through undici, h2 on by default). Each gets
 * its list, and kubectl its watch, over it. A client that offers only http/1.1 or no ALPN (node:https; the Python
 * client's urllib3 offers http/1.1 alone) keeps HTTP/1.1: test/integration/http2.test.ts.
 */
import { afterAll, afterEach, beforeAll, expect, test } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { createLogger } from '../../src/log.js';
import { API_VERSION, GROUP, createSecretAs, uniq } from '../support/fixtures.js';
import { kubectlOn, oldKubectlPath, stopBackgroundKubectls } from '../support/kubectl.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

let ts: TestServer;
const logged: string[] = [];
const kubectl133 = kubectlOn(() => ts.kubeconfig);
const kubectl120 = kubectlOn(() => ts.kubeconfig, oldKubectlPath);

beforeAll(async () => {
  const log = createLogger((line) => logged.push(line), { verbosity: 3 });
  ts = await startTestServer({ verbosity: 3 }, undefined, log);
}, 120_000);

afterEach(stopBackgroundKubectls);
afterAll(() => ts?.stop(), 60_000);

interface RequestLine {
  msg: string;
  verb?: string;
  namespace?: string;
  userAgent?: string;
  protocol?: string;
}

/** The protocols of the requests of `verb` in `namespace`, once one is logged. */
function protocolsOf(verb: string, namespace: string): Promise<Array<{ userAgent?: string; protocol?: string }>> {
  return waitFor(`a ${verb} in ${namespace} logged`, () => {
    const found = logged
      .join('')
      .split('\n')
      .filter((l) => l.includes(namespace))
      .map((l) => JSON.parse(l) as RequestLine)
      .filter((l) => l.msg === 'HTTP' && l.verb === verb && l.namespace === namespace)
      .map(({ userAgent, protocol }) => ({ userAgent, protocol }));
    return found.length ? found : undefined;
  });
}

test('kubectl 1.33 takes HTTP/2', async () => {
  const ns = uniq('h2-kubectl');
  await createSecretAs(ts.admin, ns, 'one');
  const names = await kubectl133.names('sharedsecrets', '-n', ns);
  expect(names).toEqual(['one']);
  const [line] = await protocolsOf('list', ns);
  expect(line).toEqual({ userAgent: expect.stringMatching(/^kubectl\/v1\.33\./), protocol: 'HTTP/2.0' });

  // A watch is a stream of its connection as well: kubectl sees the new object over it, and its line says so.
  const watch = kubectl133.background(['get', 'sharedsecrets', '-n', ns, '--watch-only', '-o', 'name']);
  // Its list (the second in the namespace) is done: what is created from now on, the watch gets.
  await waitFor("the watch's list", async () => (await protocolsOf('list', ns)).length === 2);
  await createSecretAs(ts.admin, ns, 'two');
  await watch.until('stdout', /sharedsecret\S*\/two/);
  const stopped = await watch.stop();
  expect(stopped.stderr).toBe('');
  expect((await protocolsOf('watch', ns)).map((l) => l.protocol)).toEqual(['HTTP/2.0']);
});

test('kubectl 1.20 keeps working, and takes HTTP/2 too', async () => {
  const ns = uniq('h2-kubectl-old');
  await createSecretAs(ts.admin, ns, 'one');
  const names = await kubectl120.names('sharedsecrets', '-n', ns);
  expect(names).toEqual(['one']);
  const [line] = await protocolsOf('list', ns);
  expect(line).toEqual({ userAgent: expect.stringMatching(/^kubectl\/v1\.20\./), protocol: 'HTTP/2.0' });
});

test('the JavaScript client takes HTTP/2', async () => {
  const ns = uniq('h2-js');
  await createSecretAs(ts.admin, ns, 'one');
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(ts.kubeconfig);
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const list = (await api.listNamespacedCustomObject({
    group: GROUP,
    version: API_VERSION.split('/')[1],
    namespace: ns,
    plural: 'sharedsecrets',
  })) as { items: Array<{ metadata: { name: string } }> };
  expect(list.items.map((i) => i.metadata.name)).toEqual(['one']);
  const [line] = await protocolsOf('list', ns);
  expect(line).toEqual({ userAgent: expect.stringMatching(/^kubernetes-client-javascript\//), protocol: 'HTTP/2.0' });
});
