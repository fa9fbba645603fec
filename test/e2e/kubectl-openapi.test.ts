/**
 * The real kubectl (v1.33) with the server's OpenAPI documents: explain prints the CRD descriptions, and apply and
 * create work with default validation. kubectl then leaves field validation to the server (every write operation
 * declares `fieldValidation`, so it sends fieldValidation=Strict and validates nothing itself) and, as no PATCH
 * advertises strategic merge patch, updates with JSON merge patches.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAPIV2Document } from '../../src/apimachinery/openapi/protobuf.js';
import { GROUP_PATH } from '../support/http.js';
import { flat, kubectlOn } from '../support/kubectl.js';
import { manifestWriter } from '../support/manifests.js';
import { startTestServer, type TestServer } from '../support/server.js';

let ts: TestServer;
let dir: string;
const { k } = kubectlOn(() => ts.kubeconfig);
const manifest = manifestWriter(() => dir);

/** The -v=6 log line of a request kubectl made. */
function requestLine(stderr: string, method: string, pathPart: string): string | undefined {
  return stderr.split('\n').find((l) => l.includes(`verb="${method}"`) && l.includes(pathPart));
}

/** A GET whose body is kept as bytes (the protobuf forms). */
function rawGet(path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    const req = ts.admin.open('GET', path, headers);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  ts = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'kubectl-openapi-'));
});

afterAll(async () => {
  await ts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the OpenAPI endpoints', () => {
  test('/openapi/v3 points at the group-version document by hash; ETags give 304', async () => {
    const root = await ts.admin.get('/openapi/v3');
    expect(root.status).toBe(200);
    expect(root.headers['content-type']).toBe('application/json');
    const url: string = root.body.paths['apis/management.platform.sh/v1'].serverRelativeURL;
    expect(url).toMatch(/^\/openapi\/v3\/apis\/management\.platform\.sh\/v1\?hash=[0-9A-F]{128}$/);
    expect(Object.keys(root.body.paths)).toEqual(['apis/management.platform.sh/v1']);

    const doc = await ts.admin.get(url);
    expect(doc.status).toBe(200);
    expect(doc.headers.etag).toBe(`"${url.split('hash=')[1]}"`);
    expect(
      doc.body.components.schemas['sh.platform.management.v1.SharedSecret']['x-kubernetes-group-version-kind'],
    ).toEqual([{ group: 'management.platform.sh', kind: 'SharedSecret', version: 'v1' }]);
    const cached = await ts.admin.get(url, { headers: { 'If-None-Match': doc.headers.etag as string } });
    expect(cached.status).toBe(304);
    expect(cached.text).toBe('');

    const v2 = await ts.admin.get('/openapi/v2', { headers: { Accept: 'application/json' } });
    expect(v2.status).toBe(200);
    expect(v2.body.swagger).toBe('2.0');
    expect(v2.body.definitions['sh.platform.management.v1.Cluster']['x-kubernetes-group-version-kind']).toEqual([
      { group: 'management.platform.sh', kind: 'Cluster', version: 'v1' },
    ]);
    expect(
      (await ts.admin.get('/openapi/v2', { headers: { 'If-None-Match': v2.headers.etag as string } })).status,
    ).toBe(304);
    expect((await ts.admin.get('/openapi/v3/apis/nothing.example.com/v1')).status).toBe(404);
  });

  test('/openapi/v2 in protobuf, as client-go asks for it: the JSON ETag, 304, a gnostic Document', async () => {
    const json = await ts.admin.get('/openapi/v2', { headers: { Accept: 'application/json' } });
    const asked = { Accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' };
    const proto = await rawGet('/openapi/v2', asked);
    expect(proto.status).toBe(200);
    expect(proto.headers['content-type']).toBe('application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
    expect(proto.headers.vary).toBe('Accept');
    expect(proto.headers.etag).toBe(json.headers.etag);
    const doc = openAPIV2Document().toObject(openAPIV2Document().decode(proto.body)) as Record<string, any>;
    expect(doc.swagger).toBe('2.0');
    expect(doc.definitions.additional_properties.map((p: any) => p.name)).toEqual(Object.keys(json.body.definitions));
    const cached = await rawGet('/openapi/v2', { ...asked, 'If-None-Match': json.headers.etag as string });
    expect(cached.status).toBe(304);
    expect(cached.body).toHaveLength(0);
  });

  test('need credentials, like the rest of discovery', async () => {
    for (const path of ['/openapi/v2', '/openapi/v3', '/openapi/v3/apis/management.platform.sh/v1']) {
      expect((await ts.anonymous.get(path)).status).toBe(401);
    }
  });
});

describe('kubectl explain', () => {
  test('sharedsecret.spec.access prints the descriptions of the CRD schema', async () => {
    const res = await k('explain', 'sharedsecret.spec.access');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const out = flat(res.stdout);
    expect(out).toContain('GROUP: management.platform.sh KIND: SharedSecret VERSION: v1');
    expect(out).toContain('FIELD: access <[]Object>');
    expect(out).toContain(
      'DESCRIPTION: Access rights for users and teams. They are transformed into Roles and RoleBindings.',
    );
    expect(out).toContain(
      "verbs <[]string> Verbs that apply to all resource kinds and restrictions of the rule. '*' stands for all verbs.",
    );
    expect(out).toContain('users <[]string> Users that are granted the verbs.');
    expect(out).toContain('name <string> Optional name for the rule.');
  });

  test('clusters.spec.config (plural name, cluster-scoped kind)', async () => {
    const res = await k('explain', 'clusters.spec.config');
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const out = flat(res.stdout);
    expect(out).toContain('KIND: Cluster');
    expect(out).toContain('FIELD: config <Object>');
    expect(out).toContain('DESCRIPTION: Reference to a secret that holds the connection configuration of the cluster.');
    // kubectl explain prints no x-kubernetes-validations: the description says the rule.
    expect(out).toContain('secretName is required unless local or networkPeer is true.');
    expect(out).toContain('secretName <string> Name of the secret.');
    expect(out).toContain('secretNamespace <string> Namespace of the secret in the host cluster.');
    expect(out).toContain('key <string> The key of the secret that holds the kubeconfig. Default config.');
  });

  test('the kind itself, with ObjectMeta behind metadata; an unknown field is an error', async () => {
    const top = await k('explain', 'gsec');
    expect(top.code).toBe(0);
    expect(flat(top.stdout)).toContain(
      'DESCRIPTION: SharedSecret holds sensitive key/value data shared across users, teams and connected clusters.',
    );
    expect(flat(top.stdout)).toContain('metadata <ObjectMeta>');
    const meta = await k('explain', 'sharedsecret.metadata.ownerReferences');
    expect(meta.code).toBe(0);
    expect(flat(meta.stdout)).toContain('FIELD: ownerReferences <[]OwnerReference>');
    const missing = await k('explain', 'sharedsecret.spec.nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('field "nope" does not exist');
  });
});

describe('kubectl with default validation', () => {
  test('apply creates, updates (JSON merge patch, fieldValidation=Strict), then reports unchanged', async () => {
    const doc = {
      apiVersion: 'management.platform.sh/v1',
      kind: 'Cluster',
      metadata: { name: 'prod-eu' },
      spec: { displayName: 'Production EU', config: { secretName: 'prod-eu-kubeconfig', secretNamespace: 'platform' } },
    };
    const file = manifest('cluster', doc);

    const created = await k('apply', '-f', file, '-v=6');
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('cluster.management.platform.sh/prod-eu created');
    expect(requestLine(created.stderr, 'GET', '/openapi/v3/apis/management.platform.sh/v1?hash=')).toContain('200 OK');
    const post = requestLine(created.stderr, 'POST', '/apis/management.platform.sh/v1/clusters?');
    expect(post).toContain('fieldManager=kubectl-client-side-apply&fieldValidation=Strict');
    expect(post).toContain('201 Created');

    expect((await k('apply', '-f', file)).stdout).toContain('cluster.management.platform.sh/prod-eu unchanged');

    manifest('cluster', { ...doc, spec: { ...doc.spec, displayName: 'Prod EU', unusable: true } });
    // -v=9 shows the request headers (as curl commands).
    const updated = await k('apply', '-f', file, '-v=9');
    expect(updated.code).toBe(0);
    expect(updated.stdout).toContain('cluster.management.platform.sh/prod-eu configured');
    const patch = updated.stderr.split('\n').find((l) => l.includes('curl -v -XPATCH'));
    expect(patch).toContain('-H "Content-Type: application/merge-patch+json"');
    expect(patch).toContain(
      '/apis/management.platform.sh/v1/clusters/prod-eu?fieldManager=kubectl-client-side-apply&fieldValidation=Strict',
    );

    expect((await k('apply', '-f', file)).stdout).toContain('cluster.management.platform.sh/prod-eu unchanged');
    const obj = JSON.parse((await k('get', 'cluster', 'prod-eu', '-o', 'json')).stdout);
    expect(obj.spec).toMatchObject({ displayName: 'Prod EU', unusable: true });
    expect(obj.metadata.generation).toBe(2);
    expect((await k('delete', '-f', file)).code).toBe(0);
  });

  test('create -f works', async () => {
    const file = manifest('s1', {
      apiVersion: 'management.platform.sh/v1',
      kind: 'SharedSecret',
      metadata: { name: 's1', namespace: 'default' },
      spec: { displayName: 'Deploy keys', access: [{ verbs: ['get'], users: ['alice'] }] },
    });
    const res = await k('create', '-f', file, '-v=6');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('sharedsecret.management.platform.sh/s1 created');
    expect(requestLine(res.stderr, 'POST', '/namespaces/default/sharedsecrets?')).toContain('fieldValidation=Strict');
    expect((await k('get', 'gsec', 's1', '-n', 'default')).code).toBe(0);
  });

  test('an unknown field: kubectl does not validate it itself, the server decides with fieldValidation=Strict', async () => {
    const doc = {
      apiVersion: 'management.platform.sh/v1',
      kind: 'SharedSecret',
      metadata: { name: 'typo', namespace: 'default' },
      spec: { displayName: 'Typo', bogus: true },
    };
    // What the server itself answers to the request kubectl is about to make (as a dry run).
    const direct = await ts.admin.post(
      `${GROUP_PATH}/namespaces/default/sharedsecrets?fieldValidation=Strict&dryRun=All`,
      doc,
    );

    const res = await k('apply', '-f', manifest('typo', doc), '-v=6');
    // No client-side schema validation happened (it would fail before any write with "error validating data").
    expect(res.stderr).not.toContain('error validating');
    expect(requestLine(res.stderr, 'POST', '/namespaces/default/sharedsecrets?')).toContain('fieldValidation=Strict');

    if (direct.status === 400) {
      // A server that enforces Strict refuses the manifest, and kubectl shows the server's message.
      expect(direct.body.message).toContain('strict decoding error: unknown field "spec.bogus"');
      expect(res.code).toBe(1);
      expect(res.stderr).toContain('Error from server (BadRequest)');
      expect(res.stderr).toContain('strict decoding error: unknown field "spec.bogus"');
      expect((await k('get', 'gsec', 'typo', '-n', 'default')).code).toBe(1);
    } else {
      // A server that does not enforce it yet drops the field (kube's Ignore) and kubectl reports success.
      expect(direct.status).toBe(201);
      expect(res.code).toBe(0);
      expect(res.stdout).toContain('sharedsecret.management.platform.sh/typo created');
      const obj = JSON.parse((await k('get', 'gsec', 'typo', '-n', 'default', '-o', 'json')).stdout);
      expect(obj.spec).toEqual({ displayName: 'Typo' });
    }
  });
});
