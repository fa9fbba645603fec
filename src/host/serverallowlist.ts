/**
 * Which servers a connection named by stored data (a virtual cluster's `vc-<name>` Secret, which a tenant may write)
 * may reach, checked on the address each new connection goes to: the addresses a name resolves to are checked as
 * they are resolved (the agent's `lookup`), so a name that resolves to one address when looked at and another when
 * connected to (DNS rebinding) gains nothing.
 *
 * Link-local addresses (169.254.0.0/16, fe80::/10: cloud metadata services answer there, with the node's
 * credentials) and AWS's IPv6 metadata address are never reached unless a listed range lies inside them. Otherwise,
 * with no entries any address may be reached; with entries, only servers whose DNS name is listed (the name or one
 * under it) or whose address lies in a listed range.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** Never reached unless a listed range lies inside one of these. */
export const ALWAYS_REFUSED = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128'];

/** The connection was not made: its server is not one that may be reached. */
export class RefusedServerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RefusedServerError';
  }
}

interface Range {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

type Resolve = (hostname: string, options: LookupOptions & { all: true }, cb: LookupAllCallback) => void;
type LookupAllCallback = (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void;

export class ServerAllowList {
  private readonly refused: Array<{ range: string; list: BlockList }>;
  private readonly listed = new BlockList();
  /** Listed ranges that lie inside an always-refused one: those let its addresses in. */
  private readonly explicit = new BlockList();
  private readonly names: string[] = [];
  private readonly restricted: boolean;

  /**
   * `entries` as --virtual-cluster-allowed-servers takes them (config.ts checks them): `10.0.0.0/8`, `10.1.2.3`,
   * `svc.cluster.local`. `source` names them in messages; `resolve` is how names are looked up.
   */
  constructor(
    entries: readonly string[],
    private readonly source: string,
    private readonly resolve: Resolve = dnsLookup,
  ) {
    this.restricted = entries.length > 0;
    this.refused = ALWAYS_REFUSED.map((text) => {
      const range = parseRange(text)!;
      const list = new BlockList();
      list.addSubnet(range.address, range.prefix, range.family);
      return { range: text, list };
    });
    for (const entry of entries) {
      const range = parseRange(entry);
      if (!range) {
        this.names.push(entry.toLowerCase().replace(/\.$/, ''));
        continue;
      }
      this.listed.addSubnet(range.address, range.prefix, range.family);
      const inside = this.refused.some(
        ({ range: text, list }) => list.check(range.address, range.family) && range.prefix >= parseRange(text)!.prefix,
      );
      if (inside) this.explicit.addSubnet(range.address, range.prefix, range.family);
    }
  }

  /** Why `host`, at `address`, may not be reached; undefined when it may. */
  refusal(host: string, address: string): string | undefined {
    const ip = address.replace(/%.*$/, '');
    const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    const shown = host === address ? address : `${host} (${address})`;
    const refused = this.refused.find(({ list }) => list.check(ip, family));
    if (refused && !this.explicit.check(ip, family))
      return `${shown} is in ${refused.range} (link-local, where cloud metadata services answer), which is never connected to unless ${this.source} lists a range inside it`;
    if (!this.restricted || this.listed.check(ip, family) || this.nameListed(host)) return undefined;
    return `${shown} is not in ${this.source}`;
  }

  /** An agent's `lookup`: the allowed addresses of a name; none is a RefusedServerError saying why. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const allowed = addresses.filter((a) => !this.refusal(hostname, a.address));
      if (!allowed.length) {
        const why = addresses.length ? this.refusal(hostname, addresses[0].address)! : `${hostname} has no address`;
        return callback(new RefusedServerError(why), '', 0);
      }
      if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, allowed);
      callback(null, allowed[0].address, allowed[0].family);
    });
  };

  private nameListed(host: string): boolean {
    if (isIP(host)) return false;
    const name = host.toLowerCase().replace(/\.$/, '');
    return this.names.some((n) => name === n || name.endsWith(`.${n}`));
  }
}

/** `address/prefix` or a lone address as a range; undefined for anything else (a DNS name). */
function parseRange(text: string): Range | undefined {
  const [address, prefixText, ...rest] = text.split('/');
  const version = isIP(address);
  if (!version || rest.length) return undefined;
  const max = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!/^\d+$/.test(prefixText ?? String(max)) || prefix > max) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}
