/**
 * The Node.js this server supports: the LTS line it is built and tested on (package.json `engines`, the Dockerfile's
 * base image, the npm package `node` that `make run` and the tests use). An older one is refused at start, naming
 * how to run on the supported one: Node.js 20 and below no longer get security fixes, and this server holds
 * tenants' secrets and keys.
 */

/** The oldest Node.js this server runs on. */
export const SUPPORTED_NODE = { major: 24, minor: 11 };

/** Why `version` (as process.versions.node) is not supported, or undefined when it is. */
export function unsupportedRuntime(version: string): string | undefined {
  const [major, minor] = version.split('.').map(Number);
  const { major: m, minor: n } = SUPPORTED_NODE;
  if (major > m || (major === m && minor >= n)) return undefined;
  return `Node.js ${m}.${n} or later is needed; this is v${version}. \`make run\` runs the server on the project's own Node.js (node_modules/.bin/node, installed by npm ci), or use the container image`;
}
