/** The flags of `snapshot save|restore`: what the chart's CronJob passes, and clear refusals of anything else. */
import { describe, expect, test } from '@jest/globals';
import { parseSnapshotArgs, runSnapshotCommand, SnapshotUsageError } from '../../src/snapshot-command.js';

describe('snapshot flags', () => {
  test('defaults: the embedded default of .data, 7 kept', () => {
    expect(parseSnapshotArgs(['backup.db'])).toEqual({
      dataDir: '.data',
      etcdServers: [],
      keep: 7,
      files: ['backup.db'],
    });
  });

  test('every flag', () => {
    expect(
      parseSnapshotArgs([
        '--dir=/backups/etcd-snapshots',
        '--keep=14',
        '--etcd-servers=https://a:2379,https://b:2379',
        '--etcd-cafile=/ca',
        '--etcd-certfile=/crt',
        '--etcd-keyfile=/key',
        '--data-dir=/d',
        '--encryption-provider-config=/e.yaml',
      ]),
    ).toEqual({
      dataDir: '/d',
      etcdServers: ['https://a:2379', 'https://b:2379'],
      etcdCafile: '/ca',
      etcdCertfile: '/crt',
      etcdKeyfile: '/key',
      dir: '/backups/etcd-snapshots',
      keep: 14,
      encryptionProviderConfig: '/e.yaml',
      files: [],
    });
  });

  test.each([
    [['--keep=0'], '--keep must be a whole number of at least 1 (got "0")'],
    [['--keep=seven'], '--keep must be a whole number of at least 1 (got "seven")'],
    [['--etcd-server=https://a:2379'], 'unknown flag --etcd-server'],
    [['--dir', '/backups'], 'unknown flag --dir (flags are --name=value)'],
  ])('%j is refused: %s', (args, message) => {
    expect(() => parseSnapshotArgs(args)).toThrow(new SnapshotUsageError(message));
  });

  test.each([
    [[], 'snapshot needs an action: save or restore'],
    [['take'], 'unknown snapshot action "take": save or restore'],
    [['save'], 'snapshot save takes one file, or --dir and no file'],
    [['save', 'a.db', '--dir=/backups'], 'snapshot save takes one file, or --dir and no file'],
    [['restore', 'a.db', 'b.db'], 'snapshot restore takes one snapshot file'],
  ])('snapshot %j is refused: %s', async (args, message) => {
    await expect(runSnapshotCommand(args)).rejects.toThrow(new SnapshotUsageError(message));
  });
});
