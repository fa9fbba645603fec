/**
 * etcd3 1.1.2 throws from its watch stream's `data` handler when etcd answers for a watch it no longer tracks
 * (WatchManager.handleResponse: "Failed to find watcher for IWatchResponse"): an answer still in flight on a stream
 * it replaced after its last watcher was canceled, or etcd's answer to a second cancel. Thrown there, nothing can
 * catch it, and it ends the process: a server would go down on a race between watches, which the tests saw under
 * load. etcd's own Go client drops a response for a watch it does not know; this makes etcd3 do the same, once,
 * when the storage module loads. Responses for watches it tracks are handled as before.
 */
import { createRequire } from 'node:module';

interface WatchResponse {
  watch_id: string;
}

interface WatchManagerLike {
  watchers: { id: string | null }[];
  handleResponse(res: WatchResponse): void;
}

const require = createRequire(import.meta.url);
const { WatchManager } = require('etcd3/lib/watch.js') as { WatchManager: { prototype: WatchManagerLike } };

const handleResponse = WatchManager.prototype.handleResponse;

/** Whether the manager tracks the watch a response is for. */
export function tracksWatch(manager: WatchManagerLike, res: WatchResponse): boolean {
  return manager.watchers.some((w) => w.id === res.watch_id);
}

WatchManager.prototype.handleResponse = function (this: WatchManagerLike, res: WatchResponse): void {
  if (tracksWatch(this, res)) handleResponse.call(this, res);
};

export { WatchManager };
