/**
 * Where a connection comes from, for the share of the connection bounds one source may hold: an IPv4 address, or
 * the /64 of an IPv6 address (the smallest block a network hands out: whoever has one address of it may use them
 * all). An IPv4 client of a dual-stack listener (::ffff:a.b.c.d) is its IPv4 address.
 */
import { isIPv4 } from 'node:net';
import { peerIP } from '../observability/sourceips.js';

export function connectionSource(remoteAddress: string | undefined): string {
  const ip = peerIP(remoteAddress);
  if (!ip || isIPv4(ip)) return ip;
  // A zone (fe80::1%eth0) names the interface, not the address. peerIP writes no dotted IPv4 tail.
  const [head, tail] = ip.split('%')[0].split('::');
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const elided = tail === undefined ? 0 : 8 - groups(head).length - groups(tail).length;
  const all = [...groups(head), ...Array<string>(elided).fill('0'), ...groups(tail)];
  return `${all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
