/**
 * The image's build, as far as a machine without a Docker engine can go: the Dockerfile's build stage is run
 * command for command on a clean clone of the committed tree, the runtime stage's files (and only those) are
 * copied to a fresh directory, and the server started from there with its embedded etcd answers kubectl.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { HttpClient } from '../support/http.js';
import { kubectl } from '../support/kubectl.js';
import { waitFor } from '../support/wait.js';

const REPO = resolve('.');
let dir: string;
let server: ChildProcess | undefined;

/** The RUN commands and COPY sources of one stage of the Dockerfile (continuation lines joined). */
function stage(dockerfile: string, name: string): { run: string[]; copies: string[] } {
  const lines = dockerfile.replace(/\\\n/g, ' ').split('\n');
  const start = lines.findIndex((l) => new RegExp(`^FROM .* AS ${name}$`, 'i').test(l.trim()));
  if (start < 0) throw new Error(`no stage ${name} in the Dockerfile`);
  const end = lines.findIndex((l, i) => i > start && /^FROM /i.test(l));
  const body = lines.slice(start + 1, end < 0 ? undefined : end).map((l) => l.trim());
  return {
    run: body.filter((l) => /^RUN /i.test(l)).map((l) => l.slice(4).trim()),
    copies: body.filter((l) => /^COPY /i.test(l) && !l.includes('--from=')).flatMap((l) => l.split(/\s+/).slice(1, -1)),
  };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'production-build-'));
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

test('the Dockerfile build stage on a clean clone gives a runtime that serves with its embedded etcd', async () => {
  const clone = join(dir, 'clone');
  execFileSync('git', ['clone', '--quiet', '--no-local', REPO, clone]);
  const dockerfile = readFileSync(join(clone, 'Dockerfile'), 'utf8');
  // The image's Node.js is the one the project pins and is tested on.
  const pinned = JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')).devDependencies.node;
  expect(dockerfile).toMatch(new RegExp(`^FROM node:${pinned.replace(/\./g, '\\.')}-bookworm-slim AS build$`, 'm'));
  expect(dockerfile).toMatch(/^FROM gcr\.io\/distroless\/nodejs24-debian12:nonroot$/m);
  expect(dockerfile).toMatch(/^COPY --from=build \/usr\/local\/bin\/node \/nodejs\/bin\/node$/m);
  const build = stage(dockerfile, 'build');
  expect(build.run.length).toBeGreaterThan(0);
  for (const source of build.copies)
    expect({ source, exists: existsSync(join(clone, source)) }).toEqual({ source, exists: true });
  for (const command of build.run)
    execFileSync('sh', ['-c', command], { cwd: clone, stdio: 'ignore', timeout: 300_000 });

  // The runtime stage's files from the build (and crds/ and package.json from the clone), nothing else.
  const runtime = join(dir, 'app');
  for (const part of ['node_modules', 'dist', 'package.json', 'crds'])
    cpSync(join(clone, part), join(runtime, part), { recursive: true });
  expect(execFileSync('find', [join(runtime, 'node_modules'), '-name', '*.map'], { encoding: 'utf8' })).toBe('');
  // Development tools are gone.
  for (const devOnly of ['typescript', 'jest', '@aws-cdk/lambda-layer-kubectl-v33', 'node'])
    expect(existsSync(join(runtime, 'node_modules', devOnly))).toBe(false);

  const dataDir = join(dir, 'data');
  let log = '';
  server = spawn(
    process.execPath,
    ['dist/main.js', `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', '--secure-port=0'],
    { cwd: runtime, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NODE_ENV: 'production' } },
  );
  server.stderr!.setEncoding('utf8').on('data', (c: string) => (log += c));
  const serving = await waitFor(
    'the production build to serve',
    () => log.split('\n').find((l) => l.includes('"msg":"serving"')),
    60_000,
    100,
  );
  expect(JSON.parse(serving).url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);

  const kubeconfig = join(dataDir, 'admin.kubeconfig');
  const got = await kubectl(['get', 'sharedsecrets', '-A'], { kubeconfig });
  expect(got).toMatchObject({ code: 0 });
  expect(got.stderr).toContain('No resources found');
  const ready = await kubectl(['get', '--raw', '/readyz'], { kubeconfig });
  expect(ready.stdout).toBe('ok');
  // The .proto definitions the server reads at run time are shipped beside the compiled code: OpenAPI in protobuf
  // (what kubectl 1.20 and client-go read) is served by the production build.
  const admin = new HttpClient(
    JSON.parse(serving).url,
    readFileSync(join(dataDir, 'certs', 'ca.crt'), 'utf8'),
    readFileSync(join(dataDir, 'admin-token'), 'utf8').trim(),
  );
  for (const [path, type] of [
    ['/openapi/v2', 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf'],
    ['/openapi/v3/apis/management.platform.sh/v1', 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf'],
  ]) {
    const res = await admin.get(path, { headers: { Accept: type } });
    expect({ path, status: res.status, type: res.headers['content-type'] }).toEqual({
      path,
      status: 200,
      type: type.replace('@', '.'),
    });
  }
}, 600_000);
