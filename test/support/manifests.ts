/** Manifest files for `kubectl -f`: objects written as YAML into a test's temporary folder. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';

/**
 * A writer of `<dir>/<file>.yaml` holding the documents (a multi-document stream if more than one), returning its
 * path; `dir` is read at each call, as the folder is made in beforeAll.
 */
export function manifestWriter(dir: () => string): (file: string, ...docs: object[]) => string {
  return (file, ...docs) => {
    const path = join(dir(), `${file}.yaml`);
    writeFileSync(path, docs.map((d) => yaml.dump(d)).join('---\n'));
    return path;
  };
}
