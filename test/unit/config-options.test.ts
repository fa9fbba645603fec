import { describe, expect, test } from '@jest/globals';
import { CONCERNS, FLAGS, helpText, parseFlags, type Config } from '../../src/config.js';
import { flagsByName, shownDefault, type Options } from '../../src/options/flag.js';

/** The lines --help prints for one flag: its name and argument, then its help. */
function helpOf(name: string): string {
  const text = helpText();
  const start = text.indexOf(`\n  --${name} `);
  expect(start).toBeGreaterThan(-1);
  return text.slice(start + 1, text.indexOf('\n  -', start + 1));
}

describe('the options of each concern', () => {
  test('every flag is in --help, with the default it has when not given', () => {
    expect(FLAGS.length).toBeGreaterThan(70);
    for (const flag of FLAGS) {
      const lines = helpOf(flag.name);
      expect(lines.startsWith(`  --${flag.name} ${flag.arg}\n      `)).toBe(true);
      expect(lines).not.toContain('{default}');
      if (!flag.default) continue;
      expect({ flag: flag.name, help: lines }).toEqual({
        flag: flag.name,
        help: expect.stringContaining(shownDefault(flag)),
      });
      // The default shown is the one in force: giving it changes nothing.
      expect({ flag: flag.name, config: parseFlags([`--${flag.name}=${flag.default}`]) }).toEqual({
        flag: flag.name,
        config: parseFlags([]),
      });
    }
  });

  test('the defaults --help shows, as Go flags show them', () => {
    expect(helpOf('etcd-prefix')).toContain('(default "/registry")');
    expect(helpOf('etcd-compaction-interval')).toContain('(default 5m; 0 disables)');
    expect(helpOf('authorization-always-allow-paths')).toContain('(default "/healthz,/readyz,/livez";');
    expect(helpOf('enable-priority-and-fairness')).toContain('(default true)');
    expect(helpOf('audit-webhook-batch-throttle-qps')).toContain('(default 10)');
  });

  test("a concern that declares another's flag stops the start, naming both", () => {
    const extra: Options<Config> = {
      concern: 'extra',
      flags: [{ name: 'etcd-servers', arg: 'urls', help: 'Elsewhere.', apply: () => {} }],
    };
    expect(() => flagsByName([...CONCERNS, extra])).toThrow(
      '--etcd-servers is declared by the etcd options and again by the extra options',
    );
    const twice: Options<Config> = {
      concern: 'twice',
      flags: [
        { name: 'new-flag', arg: 'int', help: 'Once.', apply: () => {} },
        { name: 'new-flag', arg: 'int', help: 'Twice.', apply: () => {} },
      ],
    };
    expect(() => flagsByName([...CONCERNS, twice])).toThrow(
      '--new-flag is declared by the twice options and again by the twice options',
    );
    const fresh: Options<Config> = {
      concern: 'fresh',
      flags: [{ name: 'new-flag', arg: 'int', help: 'Once.', apply: () => {} }],
    };
    expect([...flagsByName([...CONCERNS, fresh]).keys()]).toEqual([...FLAGS.map((f) => f.name), 'new-flag']);
  });

  test('--access-key-max-ttl: a duration of at least a second, kept in whole seconds; 0s is no limit', () => {
    expect(parseFlags([])?.accessKeyMaxTtlSeconds).toBe(0);
    expect(parseFlags(['--access-key-max-ttl=720h'])?.accessKeyMaxTtlSeconds).toBe(2_592_000);
    expect(parseFlags(['--access-key-max-ttl=90.5s'])?.accessKeyMaxTtlSeconds).toBe(90);
    expect(parseFlags(['--access-key-max-ttl=0s'])?.accessKeyMaxTtlSeconds).toBe(0);
    expect(() => parseFlags(['--access-key-max-ttl=500ms'])).toThrow(/access-key-max-ttl/);
    expect(() => parseFlags(['--access-key-max-ttl=-1h'])).toThrow(/access-key-max-ttl/);
    expect(() => parseFlags(['--access-key-max-ttl=week'])).toThrow(/access-key-max-ttl/);
  });

  test('--kubeconfig-max-certificate-ttl: 7 days by default, at least 10 minutes, 0s for no limit', () => {
    expect(parseFlags([])?.kubeConfigMaxCertificateTtlSeconds).toBe(604_800);
    expect(parseFlags(['--kubeconfig-max-certificate-ttl=1h'])?.kubeConfigMaxCertificateTtlSeconds).toBe(3600);
    expect(parseFlags(['--kubeconfig-max-certificate-ttl=0s'])?.kubeConfigMaxCertificateTtlSeconds).toBe(0);
    expect(() => parseFlags(['--kubeconfig-max-certificate-ttl=5m'])).toThrow(/kubeconfig-max-certificate-ttl/);
  });
});
