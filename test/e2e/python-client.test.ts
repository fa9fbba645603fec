/**
 * The official Python client (Debian's python3-kubernetes, run with Debian's /usr/bin/python3, installed by
 * `make test`) against the real server and etcd, as Python users write it: DynamicClient discovery, create, list,
 * patch and delete, its watch, and Watch().stream with allow_watch_bookmarks=True. The scripts in test/e2e/python
 * print what they saw as JSON.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import path from 'node:path';
import { GROUP_PATH } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { repoRoot, runToCompletion } from '../support/tools.js';

const PYTHON = '/usr/bin/python3';
const SCRIPTS = path.join(repoRoot, 'test', 'e2e', 'python');

let ts: TestServer;

beforeAll(async () => {
  ts = await startTestServer();
}, 120_000);

afterAll(async () => {
  await ts?.stop();
});

/** Runs a script with the admin kubeconfig and `args`; its printed JSON. */
async function python(script: string, ...args: string[]): Promise<any> {
  const env: NodeJS.ProcessEnv = { ...process.env, PYTHONDONTWRITEBYTECODE: '1' };
  delete env.KUBECONFIG; // the kubeconfig given alone decides
  const res = await runToCompletion(PYTHON, [path.join(SCRIPTS, script), ts.kubeconfig, ...args], {
    env,
    timeoutMs: 60_000,
    what: `python3 ${script}`,
  });
  if (res.code !== 0) throw new Error(`${script} exited with ${res.code}:\n${res.stderr}${res.stdout}`);
  return JSON.parse(res.stdout);
}

/** An ApiException as the scripts describe it: the client's class for the status, and summary() giving the message. */
function apiError(error: string, status: number, reason: string, message: string) {
  return { error, status, reason, message, summary: message };
}

describe('the Python client', () => {
  test('DynamicClient discovery finds every kind as discovery describes it, and /version', async () => {
    const doc = (await ts.admin.get(GROUP_PATH)).body;
    const top = doc.resources.filter((r: any) => !r.name.includes('/'));
    const seen = await python('discovery.py', ...top.map((r: any) => r.kind));
    for (const r of top) {
      expect({ kind: r.kind, ...seen.kinds[r.kind] }).toEqual({
        kind: r.kind,
        name: r.name,
        namespaced: r.namespaced,
        verbs: [...r.verbs].sort(),
        subresources: doc.resources
          .filter((s: any) => s.name.startsWith(`${r.name}/`))
          .map((s: any) => s.name.split('/')[1])
          .sort(),
        shortNames: r.shortNames ?? null,
      });
    }
    expect(seen.unknownKind).toBe('ResourceNotFoundError');
    expect(seen.version).toMatchObject({ major: '1', minor: '33', gitVersion: expect.stringMatching(/^v1\.33\.0\+/) });
  }, 90_000);

  test('create, list, get, merge and JSON patch, server-side apply, delete; errors as the right ApiException', async () => {
    const ns = 'python-crud';
    const out = await python('crud.py', ns);
    expect(out.create).toMatchObject({
      apiVersion: 'management.platform.sh/v1',
      kind: 'SharedSecret',
      metadata: { name: 'py-a', namespace: ns, generation: 1 },
      spec: { displayName: 'first', data: { token: 'c2VjcmV0' } },
    });
    // kube's default field manager: the product of the User-Agent ("OpenAPI-Generator/22.6.0/python").
    expect(out.create.metadata.managedFields[0].manager).toBe('OpenAPI-Generator');
    expect(out.createSecond).toBe('py-b');
    expect(out.createAgain).toEqual(
      apiError('ConflictError', 409, 'AlreadyExists', 'sharedsecrets.management.platform.sh "py-a" already exists'),
    );
    expect(out.createInvalid).toEqual(
      apiError(
        'UnprocessibleEntityError',
        422,
        'Invalid',
        // The CRD's CEL rules are not run on an object of wrong types, and kube says so.
        'SharedSecret.management.platform.sh "py-c" is invalid: [spec.displayName: Invalid value: "integer": ' +
          'spec.displayName in body must be of type string: "integer", <nil>: Invalid value: "null": some validation ' +
          'rules were not checked because the object was invalid; correct the existing errors to complete validation]',
      ),
    );

    expect(out.list).toEqual(['py-a', 'py-b']);
    expect(out.listKind).toBe('SharedSecretList');
    expect(out.listAllNamespaces).toEqual([
      [ns, 'py-a'],
      [ns, 'py-b'],
    ]);
    expect(out.listByLabel).toEqual([]);
    expect(out.listByName).toEqual(['py-b']);
    expect(out.listBySpec).toEqual(
      apiError(
        'BadRequestError',
        400,
        'BadRequest',
        '"spec.displayName" is not a known field selector: only "metadata.name", "metadata.namespace"',
      ),
    );
    expect(out.get).toBe('first');
    expect(out.getMissing).toEqual(
      apiError('NotFoundError', 404, 'NotFound', 'sharedsecrets.management.platform.sh "py-missing" not found'),
    );

    expect(out.mergePatch).toBe('merged');
    expect(out.jsonPatch).toBe('json-patched');
    // Strategic merge patches are for kube's built-in kinds only (as for CRDs).
    expect(out.strategicMergePatch).toEqual(
      apiError(
        'DynamicApiError',
        415,
        'UnsupportedMediaType',
        'the body of the request was in an unknown format - accepted media types include: ' +
          'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
      ),
    );
    expect(out.applyConflict).toEqual(
      apiError(
        'ConflictError',
        409,
        'Conflict',
        'Apply failed with 1 conflict: conflict with "OpenAPI-Generator" using management.platform.sh/v1: .spec.displayName',
      ),
    );
    // force_conflicts=True is sent as force=True.
    expect(out.applyForced).toBe('applied');

    expect(out.delete).toMatchObject({ kind: 'Status', status: 'Success', details: { name: 'py-b' } });
    expect(out.deleteMissing).toEqual(
      apiError('NotFoundError', 404, 'NotFound', 'sharedsecrets.management.platform.sh "py-b" not found'),
    );
    expect(out.afterwards).toEqual({ 'py-a': 'applied' });
    // orphan_dependents=True is sent as orphanDependents=True.
    expect(out.createToOrphan).toBe('py-d');
    expect(out.deleteOrphaning).toEqual(['orphan']);
  }, 90_000);

  test('watches: ADDED, MODIFIED and DELETED with their objects; a BOOKMARK when asked with allow_watch_bookmarks=True', async () => {
    const out = await python('watch.py', 'python-watch');
    // The dynamic client sends watch=True: a list here would fail in the client with KeyError: 'object'.
    expect(out.dynamic).toEqual([
      ['ADDED', 'watched', 'before'],
      ['MODIFIED', 'watched', 'after'],
      ['DELETED', 'watched', 'after'],
    ]);
    const { since, events } = out.bookmarks;
    expect(events).toHaveLength(2);
    expect(events[0]).toEqual(['ADDED', 'SharedSecret', 'bookmarked', expect.any(String)]);
    expect(Number(events[0][3])).toBeGreaterThan(Number(since));
    expect(events[1]).toEqual(['BOOKMARK', 'SharedSecret', null, expect.any(String)]);
    expect(Number(events[1][3])).toBeGreaterThanOrEqual(Number(events[0][3]));
    expect(out.badSelector).toEqual(
      apiError(
        'BadRequestError',
        400,
        'BadRequest',
        '"spec.displayName" is not a known field selector: only "metadata.name", "metadata.namespace"',
      ),
    );
  }, 90_000);
});
