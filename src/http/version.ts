/**
 * /version, in the shape of k8s.io/apimachinery's version.Info as kube-apiserver 1.33 answers it. The version is the
 * Kubernetes release whose API behaviour this server follows (1.33: its validation, messages, watch and list
 * semantics), since that is what clients compare with their own (kubectl's version skew warning) and decide on;
 * this server's own version is gitVersion's semver build metadata (as k3s says `v1.33.1+k3s1`), and gitCommit and
 * buildDate are this build's. Behind kube-apiserver, clients never see it: kube-apiserver answers /version itself.
 */
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  name: string;
  version: string;
};

/** The Kubernetes release this server follows. */
const KUBE_MAJOR = '1';
const KUBE_MINOR = '33';

export const versionInfo = {
  major: KUBE_MAJOR,
  minor: KUBE_MINOR,
  emulationMajor: KUBE_MAJOR,
  emulationMinor: KUBE_MINOR,
  // kube-apiserver's default: one minor release back.
  minCompatibilityMajor: KUBE_MAJOR,
  minCompatibilityMinor: String(Number(KUBE_MINOR) - 1),
  gitVersion: `v${KUBE_MAJOR}.${KUBE_MINOR}.0+${pkg.name}.${pkg.version}`,
  gitCommit: process.env.GIT_COMMIT ?? '',
  gitTreeState: process.env.GIT_COMMIT ? 'clean' : '',
  buildDate: process.env.BUILD_DATE ?? '',
  goVersion: `node${process.version}`,
  compiler: 'tsc',
  platform: `${process.platform}/${process.arch}`,
};

/** This server's own name and version (package.json), for what names it elsewhere (its traces' resource). */
export const serverBuild = { name: pkg.name, version: pkg.version };
