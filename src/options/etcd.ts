/** etcd: where objects are kept (external servers, or the embedded one under --data-dir) and how it is reached. */
import type { Options } from './flag.js';
import { FlagError } from './flag.js';
import { duration, list } from './values.js';

export interface EtcdConfig {
  etcdServers: string[];
  /** CA bundle (PEM) that verifies etcd's serving certificate; unset: plain http, or the system roots for https. */
  etcdCafile?: string;
  /** Client certificate and key (PEM) presented to etcd. */
  etcdCertfile?: string;
  etcdKeyfile?: string;
  etcdPrefix: string;
  /** 0 disables compaction. */
  etcdCompactionIntervalMs: number;
}

export const etcdOptions: Options<EtcdConfig> = {
  concern: 'etcd',
  flags: [
    {
      name: 'etcd-servers',
      arg: 'urls',
      default: '',
      help: 'Comma-separated etcd client URLs. Without it a local etcd is started under --data-dir and stopped on exit.',
      apply: (c, v) => (c.etcdServers = list(v)),
    },
    {
      name: 'etcd-cafile',
      arg: 'file',
      help: "CA bundle (PEM) that verifies the etcd servers' certificates (with https:// --etcd-servers).",
      apply: (c, v) => (c.etcdCafile = v),
    },
    {
      name: 'etcd-certfile',
      arg: 'file',
      help: "Client certificate (PEM) presented to etcd, for etcd's --client-cert-auth; needs --etcd-keyfile.",
      apply: (c, v) => (c.etcdCertfile = v),
    },
    {
      name: 'etcd-keyfile',
      arg: 'file',
      help: 'Private key (PEM) of --etcd-certfile.',
      apply: (c, v) => (c.etcdKeyfile = v),
    },
    {
      name: 'etcd-prefix',
      arg: 'string',
      default: '/registry',
      help: 'Prefix of every etcd key ({default}).',
      apply: (c, v) => (c.etcdPrefix = v.replace(/\/+$/, '')),
    },
    {
      name: 'etcd-compaction-interval',
      arg: 'duration',
      default: '5m',
      help: 'How often etcd history is compacted, like kube-apiserver ({default}; 0 disables). Units: ms, s, m, h.',
      apply: (c, v) => (c.etcdCompactionIntervalMs = duration('etcd-compaction-interval', v)),
    },
  ],
  validate(config) {
    if (!!config.etcdCertfile !== !!config.etcdKeyfile)
      throw new FlagError('--etcd-certfile and --etcd-keyfile go together');
  },
};
