/**
 * Keeps a controller's view of one resource current: a watch from the registry (its initial events are the
 * current objects), started again with a backoff when it ends or fails. After each (re)start, `resynced` names
 * the objects that were seen, so the controller can forget the ones deleted while nobody watched, and a revision at
 * or after their deletion.
 */
import { Backoff } from '../apimachinery/backoff.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { RunningWatch } from '../storage/reader.js';
import type { Store } from '../registry/store.js';
import { sleep } from '../apimachinery/sleep.js';

/** What a controller does with the objects of one kind, `O` (the kind's type, as its store's). */
export interface StoreWatchHandlers<O extends KubeObject = KubeObject> {
  upsert(obj: O): void;
  remove(obj: O): void;
  /**
   * After the initial events of each (re)start: the uids of every object that exists now, and the revision the
   * watch has reached (an object not seen was deleted at or before it).
   */
  resynced(seen: Set<string>, revision: string): void;
  log(msg: string, fields?: Record<string, unknown>): void;
}

export function watchStore<O extends KubeObject>(
  store: Store<O>,
  signal: AbortSignal,
  handlers: StoreWatchHandlers<O>,
): { synced: Promise<void>; done: Promise<void> } {
  let markSynced!: () => void;
  const synced = new Promise<void>((resolve) => (markSynced = resolve));
  // One abort listener for the whole loop, however often the watch restarts: a controller watches many
  // resources on one signal, and a listener per restart (or per resource and restart) would pile up on it.
  let ended = () => {}; // ends the current watch's wait
  const onAbort = () => {
    markSynced();
    ended();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  const done = (async () => {
    const backoff = new Backoff({ initialMs: 200, maxMs: 5000 });
    while (!signal.aborted) {
      let running: RunningWatch | undefined;
      let endThis!: () => void;
      const endedP = new Promise<void>((resolve) => (endThis = resolve));
      ended = endThis;
      const seen = new Set<string>();
      let initial = true;
      try {
        running = await store.watch(
          undefined,
          {},
          {
            event: (type, object) => {
              // One of the store's kind, as its get answers (the schema checked each stored object).
              const obj = object as O;
              if (initial && obj.metadata.uid) seen.add(obj.metadata.uid);
              if (type === 'DELETED') handlers.remove(obj);
              else if (type === 'ADDED' || type === 'MODIFIED') handlers.upsert(obj);
            },
            initialEventsEnd: () => {},
            end: () => endThis(),
          },
        );
      } catch (err) {
        handlers.log('watch failed, retrying', { resource: store.def.plural, error: String(err) });
        await sleep(backoff.next(), signal);
        continue;
      }
      initial = false;
      backoff.reset();
      handlers.resynced(seen, String(running.revision()));
      markSynced();
      if (!signal.aborted) await endedP;
      running.stop();
    }
  })().finally(() => {
    signal.removeEventListener('abort', onAbort);
    // Also when the signal had aborted before the loop began (its listener then never runs).
    markSynced();
  });
  return { synced, done };
}
