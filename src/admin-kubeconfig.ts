/** Writes a kubeconfig for the admin of the embedded default, so kubectl works against it at once. */
import { writeFileSync } from 'node:fs';
import yaml from 'js-yaml';

export interface KubeconfigOptions {
  server: string;
  caPem: string;
  token: string;
}

export function writeKubeconfig(path: string, opts: KubeconfigOptions): void {
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'platform',
        cluster: { server: opts.server, 'certificate-authority-data': Buffer.from(opts.caPem).toString('base64') },
      },
    ],
    users: [{ name: 'platform-admin', user: { token: opts.token } }],
    contexts: [{ name: 'platform-admin', context: { cluster: 'platform', user: 'platform-admin' } }],
    'current-context': 'platform-admin',
    preferences: {},
  };
  writeFileSync(path, yaml.dump(doc), { mode: 0o600 });
}
