/**
 * The import layering of src/ (.dependency-cruiser.cjs, run by `npm run lint`): on a fixture tree laid out as src/
 * is, an import from a folder to one above it fails, naming the rule and the file; imports downward and within a
 * layer pass; a folder that no layer lists fails too.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';

const REPO = resolve(import.meta.dirname, '../..');
const DEPCRUISE = join(REPO, 'node_modules/.bin/depcruise');

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'layers-'));
  copyFileSync(join(REPO, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes the fixture's files (path -> the paths it imports) and runs the lint's depcruise over its src/. */
async function cruise(files: Record<string, string[]>): Promise<{ rule: string; from: string; to: string }[]> {
  rmSync(join(dir, 'src'), { recursive: true, force: true });
  for (const [path, imports] of Object.entries(files)) {
    mkdirSync(join(dir, dirname(path)), { recursive: true });
    const lines = imports.map((to, i) => {
      const specifier = relative(dirname(path), to).replace(/\.ts$/, '.js');
      return `import { x as x${i} } from '${specifier.startsWith('.') ? specifier : `./${specifier}`}';`;
    });
    writeFileSync(join(dir, path), `${lines.join('\n')}\nexport const x = 1;\n`);
  }
  const output = await promisify(execFile)(DEPCRUISE, ['src', '--output-type', 'json'], { cwd: dir }).then(
    (r) => r.stdout,
    (err: { stdout?: string }) => err.stdout ?? '',
  );
  const result = JSON.parse(output) as {
    summary: { violations: { rule: { name: string }; from: string; to: string }[] };
  };
  return result.summary.violations.map((v) => ({ rule: v.rule.name, from: v.from, to: v.to }));
}

test('imports downward and within a layer pass', async () => {
  expect(
    await cruise({
      'src/apimachinery/types.ts': [],
      'src/storage/etcd.ts': ['src/apimachinery/types.ts'],
      'src/registry/store.ts': ['src/storage/etcd.ts', 'src/kinds/index.ts'],
      'src/kinds/index.ts': ['src/registry/strategy.ts'],
      'src/registry/strategy.ts': [],
      'src/http/app.ts': ['src/registry/store.ts'],
    }),
  ).toEqual([]);
});

test('an import from a folder to one above it fails, naming the rule and both files', async () => {
  const violations = await cruise({
    'src/storage/etcd.ts': ['src/access/model.ts'],
    'src/access/model.ts': [],
    'src/host/kubeclient.ts': ['src/http/app.ts'],
    'src/http/app.ts': [],
  });
  expect(violations).toEqual(
    expect.arrayContaining([
      {
        rule: expect.stringMatching(/^layer-\d+-imports-upward$/),
        from: 'src/storage/etcd.ts',
        to: 'src/access/model.ts',
      },
      {
        rule: expect.stringMatching(/^layer-\d+-imports-upward$/),
        from: 'src/host/kubeclient.ts',
        to: 'src/http/app.ts',
      },
    ]),
  );
  expect(violations).toHaveLength(2);
});

test('a folder no layer lists fails, importing or imported', async () => {
  const violations = await cruise({
    'src/apimachinery/types.ts': [],
    'src/newthing/a.ts': ['src/apimachinery/types.ts'],
    'src/http/app.ts': ['src/newthing/a.ts'],
  });
  expect(violations).toEqual(
    expect.arrayContaining([
      { rule: 'unlayered', from: 'src/newthing/a.ts', to: 'src/apimachinery/types.ts' },
      { rule: 'import-of-unlayered', from: 'src/http/app.ts', to: 'src/newthing/a.ts' },
    ]),
  );
});
