/**
 * --virtual-cluster-allowed-servers: how the flag is read, and which addresses the allow-list lets a connection
 * reach, checked on the addresses a name resolves to (here a resolver that answers as a test says, as a tenant's
 * DNS would).
 */
import { describe, expect, test } from '@jest/globals';
import type { LookupAddress } from 'node:dns';
import { FlagError, parseFlags } from '../../src/config.js';
import { RefusedServerError, ServerAllowList } from '../../src/host/serverallowlist.js';

const FLAG = '--virtual-cluster-allowed-servers';

/** A resolver that answers `addresses` for every name. */
const resolving =
  (...addresses: string[]) =>
  (_host: string, _opts: unknown, cb: (err: NodeJS.ErrnoException | null, all: LookupAddress[]) => void) =>
    cb(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );

/** What the allow-list's lookup gives a connection to `host`: the addresses, or the refusal's message. */
function lookup(list: ServerAllowList, host: string, all = true): Promise<string[] | string> {
  return new Promise((resolve) => {
    list.lookup(host, { all }, (err, address) => {
      if (err) {
        expect(err).toBeInstanceOf(RefusedServerError);
        return resolve(err.message);
      }
      resolve(Array.isArray(address) ? address.map((a) => a.address) : [address]);
    });
  });
}

describe(`${FLAG} as a flag`, () => {
  test('ranges, addresses and DNS names; empty by default', () => {
    expect(parseFlags([])!.virtualClusterAllowedServers).toEqual([]);
    expect(
      parseFlags([`${FLAG}=10.0.0.0/8, FD00::/8,10.1.2.3,::1,Svc.Cluster.Local.,vc-1.example.com`])!
        .virtualClusterAllowedServers,
    ).toEqual(['10.0.0.0/8', 'fd00::/8', '10.1.2.3', '::1', 'svc.cluster.local', 'vc-1.example.com']);
  });

  test.each([
    '10.0.0.0/33',
    '::/129',
    '10.0.0.0/x',
    '10.0.0.0/8/8',
    '*.example.com',
    '.example.com',
    'a_b.example',
    'https://vc.example.com',
  ])('%s is refused, naming what is taken', (entry) => {
    expect(() => parseFlags([`${FLAG}=${entry}`])).toThrow(FlagError);
    expect(() => parseFlags([`${FLAG}=${entry}`])).toThrow(
      `${FLAG} takes address ranges (10.0.0.0/8), addresses (10.1.2.3) and DNS names (svc.cluster.local, which allows every name under it), comma-separated (got ${JSON.stringify(entry)})`,
    );
  });
});

describe('the allow-list', () => {
  test('by default any address but link-local and cloud metadata ones', () => {
    const list = new ServerAllowList([], FLAG);
    for (const address of ['10.0.0.1', '127.0.0.1', '192.168.1.1', '8.8.8.8', 'fd00::1', '::1'])
      expect(list.refusal(address, address)).toBeUndefined();
    for (const [address, range] of [
      ['169.254.169.254', '169.254.0.0/16'],
      ['169.254.0.1', '169.254.0.0/16'],
      ['::ffff:169.254.169.254', '169.254.0.0/16'],
      ['fe80::1', 'fe80::/10'],
      ['febf::1', 'fe80::/10'],
      ['fd00:ec2::254', 'fd00:ec2::254/128'],
    ])
      expect(list.refusal(address, address)).toBe(
        `${address} is in ${range} (link-local, where cloud metadata services answer), which is never connected to unless ${FLAG} lists a range inside it`,
      );
  });

  test('a name is checked on the addresses it resolves to, as the connection is made', async () => {
    expect(await lookup(new ServerAllowList([], FLAG, resolving('10.0.0.7')), 'vc.example.com')).toEqual(['10.0.0.7']);
    // metadata.google.internal, or a tenant's own DNS name, at the metadata address.
    expect(await lookup(new ServerAllowList([], FLAG, resolving('169.254.169.254')), 'rebound.example')).toBe(
      `rebound.example (169.254.169.254) is in 169.254.0.0/16 (link-local, where cloud metadata services answer), which is never connected to unless ${FLAG} lists a range inside it`,
    );
    // Of several addresses only the allowed ones are tried.
    const mixed = new ServerAllowList([], FLAG, resolving('169.254.169.254', '10.0.0.7', 'fe80::1', 'fd00::7'));
    expect(await lookup(mixed, 'mixed.example')).toEqual(['10.0.0.7', 'fd00::7']);
    expect(await lookup(mixed, 'mixed.example', false)).toEqual(['10.0.0.7']);
  });

  test('with entries: only listed names (and names under them) and addresses in listed ranges', async () => {
    const list = new ServerAllowList(['10.0.0.0/8', 'fd00::/8', '192.168.1.1', 'svc.cluster.local'], FLAG);
    for (const [host, address] of [
      ['10.1.2.3', '10.1.2.3'],
      ['fd00::9', 'fd00::9'],
      ['192.168.1.1', '192.168.1.1'],
      ['vc.ns.svc.cluster.local', '203.0.113.9'],
      ['SVC.cluster.local.', '203.0.113.9'],
    ])
      expect(list.refusal(host, address)).toBeUndefined();
    for (const [host, address] of [
      ['11.0.0.1', '11.0.0.1'],
      ['192.168.1.2', '192.168.1.2'],
      ['127.0.0.1', '127.0.0.1'],
      ['evilsvc.cluster.local', '11.0.0.1'],
      ['svc.cluster.local.evil.example', '203.0.113.9'],
    ])
      expect(list.refusal(host, address)).toMatch(/is not in --virtual-cluster-allowed-servers$/);
    expect(list.refusal('vc.example', '203.0.113.9')).toBe(`vc.example (203.0.113.9) is not in ${FLAG}`);
    // A listed name at a link-local address is still refused: the name's DNS may be the tenant's.
    expect(list.refusal('vc.ns.svc.cluster.local', '169.254.169.254')).toContain('is in 169.254.0.0/16');
    expect(await lookup(new ServerAllowList(['10.0.0.0/8'], FLAG, resolving('11.0.0.1')), 'vc.example')).toBe(
      `vc.example (11.0.0.1) is not in ${FLAG}`,
    );
  });

  test('link-local addresses are let in only by a listed range inside them, not by a wider one', () => {
    const wide = new ServerAllowList(['0.0.0.0/0', '::/0'], FLAG);
    expect(wide.refusal('8.8.8.8', '8.8.8.8')).toBeUndefined();
    expect(wide.refusal('169.254.169.254', '169.254.169.254')).toContain('is in 169.254.0.0/16');
    expect(wide.refusal('fe80::1', 'fe80::1')).toContain('is in fe80::/10');
    const explicit = new ServerAllowList(['169.254.10.0/24', 'fe80::/10'], FLAG);
    expect(explicit.refusal('169.254.10.20', '169.254.10.20')).toBeUndefined();
    expect(explicit.refusal('fe80::1', 'fe80::1%eth0')).toBeUndefined();
    expect(explicit.refusal('169.254.169.254', '169.254.169.254')).toContain('is in 169.254.0.0/16');
  });
});
