/** /version: this server's build, in the shape of k8s.io/apimachinery's version.Info. */
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
const [major, minor] = pkg.version.split('.');

export const versionInfo = {
  major,
  minor,
  gitVersion: `v${pkg.version}`,
  gitCommit: process.env.GIT_COMMIT ?? '',
  gitTreeState: process.env.GIT_COMMIT ? 'clean' : '',
  buildDate: process.env.BUILD_DATE ?? '',
  goVersion: `node${process.version}`,
  compiler: 'tsc',
  platform: `${process.platform}/${process.arch}`,
};
