/**
 * An audit event's sourceIPs, in the order of kube's utilnet.SourceIPs: the X-Forwarded-For addresses, then X-Real-Ip
 * when it is not among them, then the connection's own address, which is always there and always last.
 *
 * kube-apiserver takes the forwarding headers from any client. Here they count only on a request that the front proxy
 * forwarded (authenticated by its requestheader client certificate): kube-apiserver's proxy adds the address it was
 * called from to X-Forwarded-For, so that chain means something. Any other client could write any address there, and
 * readers that take the first address (kube's own legacy log line does) would name an address the client chose. So
 * from other clients only the connection's address is recorded. Entries that are not IP addresses are dropped, as
 * kube drops them.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';

export function sourceIPs(headers: IncomingHttpHeaders, peer: string, fromFrontProxy: boolean): string[] {
  const ips: string[] = [];
  if (fromFrontProxy) {
    for (const part of headerValue(headers['x-forwarded-for']).split(',')) {
      const ip = canonicalIP(part);
      if (ip) ips.push(ip);
    }
    const real = canonicalIP(headerValue(headers['x-real-ip']));
    if (real && !ips.includes(real)) ips.push(real);
  }
  const own = canonicalIP(peer);
  if (own && ips[ips.length - 1] !== own) ips.push(own);
  return ips;
}

/** The connection's address as an IP (an IPv4 client of a dual-stack listener without its ::ffff: prefix). */
export function peerIP(address: string | undefined): string {
  return canonicalIP(address ?? '') ?? '';
}

function headerValue(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(',') : (value ?? '');
}

/** The address in the form Go's net.IP.String() gives it, or undefined when it is no IP address. */
function canonicalIP(text: string): string | undefined {
  const value = text.trim();
  const version = isIP(value);
  if (version === 4) return value;
  if (version !== 6) return undefined;
  // A zone (fe80::1%eth0) is no part of a URL's host: such an address is kept as written.
  if (value.includes('%')) return value.toLowerCase();
  const ip = new URL(`http://[${value}]`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(ip);
  if (!mapped) return ip;
  const [hi, lo] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}
