/**
 * Kept-alive agents, one per TLS material (CA, client certificate and key, server name, whether to verify): a
 * connection is reused only by requests that would have made it the same way, and when the material changes (a
 * rotated certificate, a new caBundle) the next request gets a new agent. At most `capacity` agents are kept; the one
 * used longest ago is retired past it (its idle connections closed now, those in use when they end).
 */
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import type { LookupFunction } from 'node:net';

/**
 * How long a kept-alive connection may sit unused before it is closed (an agent's socket timeout closes idle
 * connections only; one in use, a watch say, is left alone): client-go's IdleConnTimeout, longer than the health
 * checks' default interval (30 s), so a cluster checked every interval keeps its connection, and a one-off client
 * (a kube config's) leaves none open for long.
 */
const IDLE_CONNECTION_MS = 90_000;

/** The TLS options an agent is made with, as the caller has them (PEM text or Buffers, as https options take). */
export interface TlsOptions {
  ca?: unknown;
  cert?: unknown;
  key?: unknown;
  servername?: string;
  rejectUnauthorized?: boolean;
}

/** CA, client certificate and key, server name and whether to verify, as bytes to compare. */
type TlsMaterial = [
  Buffer | undefined,
  Buffer | undefined,
  Buffer | undefined,
  string | undefined,
  boolean | undefined,
];

export class TlsAgents {
  /** The most recently used last. */
  private readonly agents: Array<{ material: TlsMaterial; agent: http.Agent }> = [];

  constructor(
    private readonly opts: {
      /** http: for servers without TLS (the TLS options are then unused). */
      protocol: 'http:' | 'https:';
      /** How connections look names up (an allow-list's, serverallowlist.ts); undefined: the system's. */
      lookup?: LookupFunction;
      capacity: number;
    },
  ) {}

  /** The agent for this material: the one kept for it, else a new one. */
  for(tls: TlsOptions): http.Agent {
    const material: TlsMaterial = [
      buffer(tls.ca),
      buffer(tls.cert),
      buffer(tls.key),
      tls.servername,
      tls.rejectUnauthorized,
    ];
    const i = this.agents.findIndex((kept) => sameMaterial(kept.material, material));
    const found = i >= 0 ? this.agents.splice(i, 1)[0] : { material, agent: this.agentFor(material) };
    this.agents.push(found);
    while (this.agents.length > this.opts.capacity) retire(this.agents.shift()!.agent);
    return found.agent;
  }

  private agentFor([ca, cert, key, servername, rejectUnauthorized]: TlsMaterial): http.Agent {
    const { protocol, lookup } = this.opts;
    return protocol === 'http:'
      ? new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS, lookup })
      : new https.Agent({
          keepAlive: true,
          timeout: IDLE_CONNECTION_MS,
          lookup,
          // One TLS context for the agent's connections: made per connection (Node's default with `ca`), it parses
          // the CA and certificate again each time and each connection holds a copy (about 28 KiB).
          secureContext: tls.createSecureContext({ ca, cert, key }),
          servername,
          rejectUnauthorized: rejectUnauthorized !== false,
        });
  }
}

/** An agent no longer used: its idle connections are closed now, those in use (a watch, say) when they end. */
function retire(agent: http.Agent): void {
  agent.maxFreeSockets = 0;
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

const sameMaterial = (a: TlsMaterial, b: TlsMaterial) =>
  a.every((x, i) => (Buffer.isBuffer(x) ? Buffer.isBuffer(b[i]) && x.equals(b[i] as Buffer) : x === b[i]));

/** One PEM value of https options (the client gives Buffers, or a credential plugin's PEM text) as bytes. */
function buffer(value: unknown): Buffer | undefined {
  if (value === undefined || value === null) return undefined;
  if (Buffer.isBuffer(value)) return value;
  if (Array.isArray(value)) return Buffer.concat(value.map((v) => buffer(v) ?? Buffer.alloc(0)));
  return Buffer.from(String(value));
}
