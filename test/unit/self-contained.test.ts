/**
 * The repository stands alone: someone who cloned it has nothing beside it, so no tracked file may point outside it
 * (a sibling directory or a path on the machine it was written on), and the documentation's relative links must
 * lead to files that are in it.
 */
import { describe, expect, test } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter((f) => f !== '');
/** Text files only: a NUL byte marks a binary one. */
const texts = tracked
  .filter((f) => existsSync(join(root, f)))
  .map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }))
  .filter(({ text }) => !text.includes('\0'));

/** What would point outside the repository (written in two parts, so that this file does not match itself). */
const OUTSIDE = [new RegExp(['\\.\\./', 'shared\\b'].join('')), new RegExp(['/', 'work/'].join(''))];

describe('the repository stands alone', () => {
  test('no tracked file refers to a sibling directory or a path on the developers’ machine', () => {
    const hits = texts.flatMap(({ file, text }) =>
      text
        .split('\n')
        .flatMap((line, i) => (OUTSIDE.some((re) => re.test(line)) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(hits).toEqual([]);
  });

  test('relative links in the README and docs/ lead to files in the repository', () => {
    const docs = texts.filter(({ file }) => file === 'README.md' || (file.startsWith('docs/') && file.endsWith('.md')));
    expect(docs.map(({ file }) => file)).toContain('docs/api.md');
    const broken = docs.flatMap(({ file, text }) =>
      [...text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)]
        .map((m) => m[1])
        .filter((target) => !/^[a-z]+:/.test(target))
        .filter((target) => {
          const path = resolve(root, dirname(file), target);
          return !path.startsWith(root) || !existsSync(path);
        })
        .map((target) => `${file}: ${target}`),
    );
    expect(broken).toEqual([]);
  });

  test('the README sends readers to the API description', () => {
    const readme = texts.find(({ file }) => file === 'README.md')!.text;
    const firstParagraph = readme.split('\n\n')[1];
    expect(firstParagraph).toContain('(docs/api.md)');
  });
});
