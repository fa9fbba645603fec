/**
 * The real kubectl 1.33 discovers the API from the aggregated document alone: one request to /api and one to /apis,
 * none per group-version, and it then prints what kubectl 1.20 (Debian's, which knows only the legacy documents)
 * prints from one request per group-version: resources, short names, categories, verbs and scope agree.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GROUP_PATH } from '../support/http.js';
import { kubectlOn, kubectlPath, lines } from '../support/kubectl.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { repoRoot, runToCompletion, type ToolResult } from '../support/tools.js';

let ts: TestServer;
const { k } = kubectlOn(() => ts.kubeconfig);

/** A kubectl binary run with `home` as its HOME and cache dir. */
function kubectlIn(bin: string, home: string, args: string[]): Promise<ToolResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TMPDIR: home };
  delete env.KUBECONFIG;
  const argv = ['--kubeconfig', ts.kubeconfig, '--cache-dir', path.join(home, 'cache'), ...args];
  return runToCompletion(bin, argv, { env, timeoutMs: 30_000, what: `${bin} ${args.join(' ')}` });
}

/** Debian's kubectl 1.20 (scripts/ensure-test-clients.sh unpacks it), with a home and cache of its own. */
async function oldKubectl(...args: string[]): Promise<ToolResult> {
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'kubectl-1.20-home-'));
  try {
    return await kubectlIn(path.join(repoRoot, '.tools/kubectl-1.20/usr/bin/kubectl'), home, args);
  } finally {
    await fs.rm(home, { recursive: true, force: true });
  }
}

/** The paths (without the query) of the GET requests in a -v=6 log. */
function requestedPaths(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => /verb="GET"|GET https:/.test(l))
    .map((l) => new URL(/https:\/\/[^"\s]+/.exec(l)![0]).pathname);
}

/** How many requests the server has answered 304 (apiserver_request_total). */
async function notModifiedAnswers(): Promise<number> {
  const metrics = (await ts.admin.get('/metrics')).text.split('\n');
  return metrics
    .filter((l) => l.startsWith('apiserver_request_total{') && l.includes('code="304"'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

beforeAll(async () => {
  ts = await startTestServer();
  const cluster = {
    apiVersion: 'management.platform.sh/v1',
    kind: 'Cluster',
    metadata: { name: 'prod-eu' },
    spec: { displayName: 'Production EU', networkPeer: true },
  };
  expect((await ts.admin.post(`${GROUP_PATH}/clusters`, cluster)).status).toBe(201);
});

afterAll(async () => ts?.stop());

describe('kubectl 1.33 with aggregated discovery', () => {
  test('api-resources asks /api and /apis only, and lists what the legacy documents give kubectl 1.20', async () => {
    const res = await k('api-resources', '-v=8');
    expect(res.code).toBe(0);
    expect(requestedPaths(res.stderr)).toEqual(['/api', '/apis']);
    // The aggregated document was the answer (-v=8 prints the response headers).
    expect(res.stderr).toContain('Content-Type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');

    const old = await oldKubectl('api-resources', '-v=6');
    expect(old.code).toBe(0);
    expect(requestedPaths(old.stderr)).toContain(`${GROUP_PATH}`);
    expect(res.stdout).toBe(old.stdout);
    expect(res.stdout).toMatch(/^clusters\s+pcl\s+management\.platform\.sh\/v1\s+false\s+Cluster$/m);
  });

  test('verbs and categories agree: api-resources --verbs and -o wide', async () => {
    for (const verbs of ['create', 'list', 'watch']) {
      const res = await k('api-resources', `--verbs=${verbs}`, '-o', 'name');
      const old = await oldKubectl('api-resources', `--verbs=${verbs}`, '-o', 'name');
      expect(res.code).toBe(0);
      expect(res.stdout).toBe(old.stdout);
    }
    // -o wide (columns only 1.33 has): each resource's verbs and categories are those of the legacy APIResourceList.
    const wide = lines((await k('api-resources', '-o', 'wide')).stdout);
    const [verbsAt, categoriesAt] = ['VERBS', 'CATEGORIES'].map((column) => wide[0].indexOf(column));
    const printed = wide.slice(1).map((row) => ({
      name: row.slice(0, row.indexOf(' ')),
      verbs: row.slice(verbsAt, categoriesAt).trim().split(','),
      categories: row.slice(categoriesAt).trim(),
    }));
    const legacy = (await ts.admin.get(GROUP_PATH, { headers: { Accept: 'application/json' } })).body.resources;
    const expected = legacy
      .filter((r: any) => !r.name.includes('/'))
      .map((r: any) => ({ name: r.name, verbs: r.verbs, categories: (r.categories ?? []).join(',') }));
    expect(printed).toEqual(expected);
  });

  test('get by plural, short name and category resolves from the aggregated document, as 1.20 does from the legacy ones', async () => {
    for (const args of [['clusters'], ['pcl'], ['clusters.management.platform.sh', 'prod-eu'], ['platform']]) {
      // -o name: the table's AGE column would differ between the two runs.
      const res = await k('get', ...args, '-o', 'name', '-v=6');
      expect({ args, code: res.code }).toEqual({ args, code: 0 });
      const discovery = requestedPaths(res.stderr).filter((p) => p === '/api' || p === '/apis' || p === GROUP_PATH);
      expect({ args, discovery }).toEqual({ args, discovery: ['/api', '/apis'] });
      expect(res.stdout).toContain('prod-eu');

      const old = await oldKubectl('get', ...args, '-o', 'name');
      expect({ args, stdout: res.stdout }).toEqual({ args, stdout: old.stdout });
    }
  });

  test('a second run with the same cache revalidates /api and /apis by their ETags: the server answers 304', async () => {
    const home = await fs.mkdtemp(path.join(os.tmpdir(), 'kubectl-home-'));
    try {
      const first = await kubectlIn(kubectlPath(), home, ['api-resources']);
      expect(first.code).toBe(0);
      const before = await notModifiedAnswers();
      // api-resources always asks the server again; kubectl's HTTP cache sends the ETags it kept.
      const second = await kubectlIn(kubectlPath(), home, ['api-resources', '-v=8']);
      expect(second.code).toBe(0);
      expect(second.stderr).toContain('X-From-Cache: 1');
      expect((await notModifiedAnswers()) - before).toBe(2);
      expect(second.stdout).toBe(first.stdout);
    } finally {
      await fs.rm(home, { recursive: true, force: true });
    }
  });
});
