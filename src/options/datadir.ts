/** The data dir: the embedded etcd, the admin token and kubeconfig, generated certificates and keys. */
import type { Options } from './flag.js';

export interface DataDirConfig {
  dataDir: string;
}

export const dataDirOptions: Options<DataDirConfig> = {
  concern: 'datadir',
  flags: [
    {
      name: 'data-dir',
      arg: 'dir',
      default: '.data',
      help: 'Where the embedded etcd, the admin token and kubeconfig, and generated certificates are kept ({default}).',
      apply: (c, v) => (c.dataDir = v),
    },
  ],
};
