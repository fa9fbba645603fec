/**
 * kubectl 1.33 `create -f` of every kind with validation on (its default, strict). For kinds with a PATCH kubectl
 * leaves validation to the server (fieldValidation=Strict, learnt from /openapi/v3); for a create-only kind
 * (DirectClusterEndpointToken) and for a group-version it does not find in v3 it falls back to /openapi/v2 in
 * protobuf, and validates the manifest itself from that.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION } from '../support/fixtures.js';
import { kubectlOn, lines } from '../support/kubectl.js';
import { manifestWriter } from '../support/manifests.js';
import { startTestServer, type TestServer } from '../support/server.js';

let ts: TestServer;
let dir: string;
const { k, getJson } = kubectlOn(() => ts.kubeconfig);
const manifest = manifestWriter(() => dir);

/** The -v=6 log line of a response kubectl got. */
function responseLine(stderr: string, method: string, pathPart: string): string | undefined {
  return stderr.split('\n').find((l) => l.includes(`verb="${method}"`) && l.includes(pathPart));
}

beforeAll(async () => {
  ts = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'kubectl-create-'));
});

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('kubectl create -f with validation on', () => {
  test('every kind in one file is created', async () => {
    const file = manifest(
      'all',
      {
        apiVersion: API_VERSION,
        kind: 'Project',
        metadata: { name: 'web' },
        spec: { displayName: 'Web', allowedClusters: [{ name: 'eu-1' }] },
      },
      { apiVersion: API_VERSION, kind: 'Cluster', metadata: { name: 'eu-1' }, spec: { networkPeer: true } },
      {
        apiVersion: API_VERSION,
        kind: 'SharedSecret',
        metadata: { name: 'deploy-keys', namespace: 'default' },
        spec: { displayName: 'Deploy keys', data: { id: 'c2VjcmV0' }, access: [{ verbs: ['get'], users: ['alice'] }] },
      },
      {
        apiVersion: API_VERSION,
        kind: 'OwnedAccessKey',
        metadata: { name: 'ci' },
        spec: { user: 'alice', displayName: 'CI', ttl: 3600 },
      },
      {
        apiVersion: API_VERSION,
        kind: 'VirtualClusterInstance',
        metadata: { name: 'shop', namespace: 'p-web' },
        spec: {
          clusterRef: { cluster: 'eu-1', namespace: 'vcluster-shop' },
          ingressEndpoint: 'https://shop.example.com',
        },
      },
      {
        apiVersion: API_VERSION,
        kind: 'ProjectSecret',
        metadata: { name: 'registry', namespace: 'p-web' },
        spec: { owner: { user: 'alice' }, sharedSecretRef: { namespace: 'default', name: 'deploy-keys' } },
      },
      { apiVersion: API_VERSION, kind: 'DirectClusterEndpointToken', spec: { ttl: 600 } },
    );
    const res = await k('create', '-f', file, '-o', 'name', '-v=6');
    expect(res.code).toBe(0);
    expect(lines(res.stdout)).toEqual([
      'project.management.platform.sh/web',
      'cluster.management.platform.sh/eu-1',
      'sharedsecret.management.platform.sh/deploy-keys',
      'ownedaccesskey.management.platform.sh/ci',
      'virtualclusterinstance.management.platform.sh/shop',
      'projectsecret.management.platform.sh/registry',
      // An action's answer has no name.
      'directclusterendpointtoken.management.platform.sh/<unknown>',
    ]);
    // The token's kind has no PATCH, so kubectl read /openapi/v2 (in protobuf) to validate it itself.
    expect(responseLine(res.stderr, 'GET', '/openapi/v2?')).toContain('status="200 OK"');
    expect(responseLine(res.stderr, 'POST', '/sharedsecrets?')).toContain('fieldValidation=Strict');
    expect((await getJson('vci', 'shop', '-n', 'p-web')).spec.clusterRef.cluster).toBe('eu-1');
    expect((await getJson('psec', 'registry', '-n', 'p-web')).spec.sharedSecretRef.name).toBe('deploy-keys');
  });

  test('a create-only kind is validated by kubectl from /openapi/v2: an unknown field is refused before any write', async () => {
    const file = manifest('badtoken', {
      apiVersion: API_VERSION,
      kind: 'DirectClusterEndpointToken',
      spec: { ttl: 600, bogus: 1 },
    });
    const res = await k('create', '-f', file, '-v=6');
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(
      'error validating data: ValidationError(DirectClusterEndpointToken.spec): unknown field "bogus" in sh.platform.management.v1.DirectClusterEndpointToken.spec',
    );
    expect(responseLine(res.stderr, 'POST', '/directclusterendpointtokens')).toBeUndefined();
  });

  test('a typo in apiVersion says the kind is not served in that version', async () => {
    const file = manifest('typo', {
      apiVersion: 'management.platform.sh/v2',
      kind: 'Cluster',
      metadata: { name: 'typo' },
    });
    const res = await k('create', '-f', file);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('no matches for kind "Cluster" in version "management.platform.sh/v2"');
    expect(res.stderr).not.toContain('unable to respond with a content type');
    expect((await k('get', 'cluster', 'typo')).stderr).toContain('NotFound');
  });
});
