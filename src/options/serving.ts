/** Secure serving (kube's SecureServingOptions): the address, the port and the serving certificate. */
import { join } from 'node:path';
import type { DataDirConfig } from './datadir.js';
import { FlagError, type Options } from './flag.js';
import { count, list } from './values.js';

export interface ServingConfig {
  bindAddress: string;
  securePort: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDir: string;
  tlsSans: string[];
  /**
   * How often the serving certificate, the client CA files and the extension-apiserver-authentication ConfigMap are
   * read again, besides watching the files' directories (kube: 1m).
   */
  tlsReloadIntervalMs: number;
  /** The streams one HTTP/2 connection may have open at once (kube's --http2-max-streams-per-connection; 0: 100). */
  http2MaxStreamsPerConnection: number;
}

export const servingOptions: Options<ServingConfig & DataDirConfig> = {
  concern: 'serving',
  flags: [
    {
      name: 'bind-address',
      arg: 'ip',
      default: '0.0.0.0',
      help: 'Address to listen on for HTTPS ({default}).',
      apply: (c, v) => (c.bindAddress = v),
    },
    {
      name: 'secure-port',
      arg: 'port',
      default: '8443',
      help: 'Port to serve HTTPS on ({default}; 0 picks a free port).',
      apply: (c, v) => (c.securePort = port(v)),
    },
    {
      name: 'tls-cert-file',
      arg: 'file',
      help: 'Serving certificate (PEM, may hold the chain). Without it a self-signed one is made in --cert-dir.',
      apply: (c, v) => (c.tlsCertFile = v),
    },
    {
      name: 'tls-private-key-file',
      arg: 'file',
      help: 'Private key of --tls-cert-file (PEM).',
      apply: (c, v) => (c.tlsPrivateKeyFile = v),
    },
    {
      name: 'cert-dir',
      arg: 'dir',
      help: 'Where the self-signed CA and serving certificate are kept and reused (default "<data-dir>/certs").',
      apply: (c, v) => (c.certDir = v),
    },
    {
      name: 'tls-sans',
      arg: 'names',
      default: '',
      help: 'Extra DNS names and IPs for the self-signed serving certificate, comma-separated (localhost and 127.0.0.1 are always in).',
      apply: (c, v) => (c.tlsSans = list(v)),
    },
    {
      name: 'http2-max-streams-per-connection',
      arg: 'int',
      // kube's RecommendedOptions, which every aggregated API server starts from: its client is kube-apiserver's
      // proxy, multiplexing many clients' requests and watches into one HTTP/2 connection. 0 is kube-apiserver's
      // own default, Go's 100 made explicit.
      default: '1000',
      help: 'The limit that the server gives to clients for the maximum number of streams (requests and watches) in an HTTP/2 connection; streams beyond it are refused and the client waits for one to end ({default}; 0: 100, as kube-apiserver).',
      apply: (c, v) => (c.http2MaxStreamsPerConnection = streams(v)),
    },
  ],
  settings: {
    certDir: '',
    tlsReloadIntervalMs: 60_000,
  },
  complete(config) {
    if (!config.certDir) config.certDir = join(config.dataDir, 'certs');
  },
  validate(config) {
    if (!!config.tlsCertFile !== !!config.tlsPrivateKeyFile)
      throw new FlagError('--tls-cert-file and --tls-private-key-file go together');
  },
};

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new FlagError(`--secure-port must be a port number from 0 to 65535, not ${JSON.stringify(value)}`);
  return n;
}

/** An HTTP/2 SETTINGS value is 32 bits. */
function streams(value: string): number {
  const n = count('http2-max-streams-per-connection', value);
  if (n > 0xffffffff)
    throw new FlagError(
      `--http2-max-streams-per-connection must be at most ${0xffffffff} (got ${JSON.stringify(value)})`,
    );
  return n;
}
