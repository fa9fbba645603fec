/**
 * A watch of a prefix on etcd: its events decoded in etcd's order (values are decrypted asynchronously, so one queue
 * keeps them and the progress notices in order), each delivered once; a value that cannot be read ends the watch
 * (the watcher lists again, as kube's reflector does after a watch error).
 */
import { decode, encode } from '../codec.js';
import type { StoredObject, WatchEvent, WatchHandle, WatchHandlers } from '../interface.js';
import type { EtcdClient } from './client.js';
import type { StoredValues } from './values.js';

interface WatchedEvent {
  type: string;
  kv: { key: Buffer; value: Buffer; mod_revision: string };
  prev_kv?: { value: Buffer; mod_revision?: string } | null;
}

export async function watchPrefix<T extends StoredObject>(
  client: EtcdClient,
  values: StoredValues,
  prefix: string,
  afterRevision: string,
  handlers: WatchHandlers<T>,
  opts: { revisionsUnder?: string; onUnreadable?: (key: string, reason: string) => void } = {},
): Promise<WatchHandle> {
  const watched = opts.revisionsUnder && prefix.startsWith(opts.revisionsUnder) ? opts.revisionsUnder : prefix;
  const watcher = await client.call('watch', prefix, () =>
    client
      .watchBuilder()
      .prefix(watched)
      .startRevision(String(BigInt(afterRevision) + 1n))
      .withPreviousKV()
      .create(),
  );
  const toEvent = (e: WatchedEvent) => toWatchEvent<T>(values, e, opts.onUnreadable);
  let delivered = Promise.resolve();
  let unreadable = false;
  watcher.on('data', (res) => {
    delivered = delivered.then(async () => {
      if (unreadable) return;
      if (res.events.length === 0) {
        handlers.progress(res.header.revision);
        return;
      }
      const mine = res.events.filter((e) => e.kv.key.toString().startsWith(prefix));
      const events = await Promise.all(mine.map(toEvent));
      if (!events.every((e) => e !== undefined)) {
        // Skipping the event would leave the watcher behind without knowing it: it starts over (lists again),
        // as kube's reflector does after a watch error, and lists fail, naming the key, until the value reads.
        unreadable = true;
        handlers.lost();
        return;
      }
      if (events.length) handlers.events(events);
      // Events arrive in revision order: everything up to the last one, in `prefix` or not, has been delivered.
      if (mine.length < res.events.length) handlers.progress(res.events[res.events.length - 1].kv.mod_revision);
    });
    // A handler that throws must not stop the queue (and with it every later event).
    delivered = delivered.catch(() => undefined);
  });
  // Errors reach here only when etcd canceled the watch (its start revision was compacted, or worse);
  // network failures the client retries by itself, resuming after the last revision it delivered.
  let canceled = false;
  watcher.on('error', () => {
    canceled = true;
    handlers.lost();
  });
  // Canceling a watch etcd already dropped would wait forever for an end that never comes; so would canceling one
  // twice (etcd's answer to the second cancel names a watch the client no longer knows, and it throws).
  let closing: Promise<void> | undefined;
  return { close: () => (closing ??= canceled ? Promise.resolve() : watcher.cancel()) };
}

async function toWatchEvent<T extends StoredObject>(
  values: StoredValues,
  e: WatchedEvent,
  onUnreadable?: (key: string, reason: string) => void,
): Promise<WatchEvent<T> | undefined> {
  const revision = e.kv.mod_revision;
  const key = e.kv.key.toString();
  try {
    const previous = e.prev_kv
      ? (await values.fromStorage<T>(key, e.prev_kv.value, e.prev_kv.mod_revision ?? revision)).object
      : undefined;
    if (e.type === 'Delete')
      return { type: 'delete', key, revision, object: previous && decode<T>(encode(previous), revision), previous };
    return {
      type: 'put',
      key,
      revision,
      object: (await values.fromStorage<T>(key, e.kv.value, revision)).object,
      previous,
    };
  } catch (err) {
    // A value that is not JSON, or one this server has no key for.
    onUnreadable?.(key, (err as Error).message);
    return undefined;
  }
}
