/**
 * etcd3's watch manager drops a response for a watch it does not track instead of throwing from its stream handler,
 * where the throw would end the process (src/storage/etcd3watchfix.ts); responses for tracked watches still arrive.
 */
import { expect, test } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { WatchManager } from '../../src/storage/etcd3watchfix.js';

function manager(watchers: Array<EventEmitter & { id: string | null }>) {
  return Object.assign(Object.create(WatchManager.prototype), {
    watchers,
    initialBackoff: { next: () => ({ duration: 0 }) },
  });
}

test('a response for a watch the manager no longer tracks is dropped, not thrown', () => {
  const m = manager([]);
  expect(() => m.handleResponse({ watch_id: '7', events: [], canceled: false })).not.toThrow();
  expect(() => m.handleResponse({ watch_id: '7', events: [], canceled: true })).not.toThrow();
});

test('a response for a tracked watch reaches it', () => {
  const watcher = Object.assign(new EventEmitter(), { id: '3' });
  const seen: unknown[] = [];
  watcher.on('data', (res) => seen.push(res));
  const res = { watch_id: '3', events: [{ type: 'Put' }], canceled: false };
  manager([watcher]).handleResponse(res);
  expect(seen).toEqual([res]);
});
