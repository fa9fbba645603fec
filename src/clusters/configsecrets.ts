/**
 * Where the Clusters' config Secrets are read (spec.config, in the host cluster): the Secrets of one namespace, the
 * server's --cluster-secret-namespace where Clusters keep them, are a copy kept current by list and watch (an
 * informer: a health check reads memory, and a Secret is parsed again only when its resourceVersion moves); any
 * other Secret is read by name (GET) each time it is asked for.
 *
 * The server may be allowed to `get` those Secrets by name only (the Helm chart's rbac.clusterSecrets; list and
 * watch in that namespace only with rbac.watchClusterSecrets): so before watching it asks whether it may list them,
 * and while the host says 403 it reads by name, as before, asking again every RELIST_FORBIDDEN_MS (said in the log
 * the first time only: it is how the chart runs by default). A Secret the
 * copy does not have (created just now, or the copy not synced yet) is read by name too, so a new Cluster's Secret
 * counts at once; that read's 404 is the answer.
 */
import type { HostCluster } from '../host/cluster.js';
import { HostClusterError } from '../host/cluster.js';
import { HostInformer, type HostObject } from '../host/informer.js';

/** How long the server reads by name after the host refused a list (403), before it asks again. */
const RELIST_FORBIDDEN_MS = 5 * 60_000;

export interface ConfigSecretsOptions {
  /** The namespace whose Secrets are watched (--cluster-secret-namespace); undefined: every Secret is read by name. */
  watchedNamespace?: string;
  /** Each request's bound (ms). */
  timeoutMs: number;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
}

export class ConfigSecrets {
  private informer?: HostInformer<HostObject>;
  private starting?: Promise<void>;
  /** Until when the host's 403 to a list is believed. */
  private forbiddenUntil = 0;
  private toldForbidden = false;
  private readonly running = new AbortController();
  private readonly log: NonNullable<ConfigSecretsOptions['log']>;
  private readonly now: () => number;

  constructor(
    private readonly host: HostCluster,
    private readonly opts: ConfigSecretsOptions,
  ) {
    this.log = opts.log ?? (() => {});
    this.now = opts.now ?? Date.now;
  }

  /**
   * The Secret `namespace`/`name` as the host has it (from the copy when watched), described as `what` in errors;
   * a HostClusterError as a GET would throw one (404: there is none).
   */
  async get(namespace: string, name: string, what: string): Promise<unknown> {
    if (namespace === this.opts.watchedNamespace) {
      await this.watch();
      const copy = this.informer?.hasSynced() ? this.informer.get(`${namespace}/${name}`) : undefined;
      if (copy) return copy;
    }
    return this.host.request<unknown>(
      what,
      'GET',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
      { timeoutMs: this.opts.timeoutMs },
    );
  }

  /** Stops the watch. */
  stop(): void {
    this.running.abort();
  }

  /** Starts the informer once the host lets the server list the namespace's Secrets (see the top). */
  private async watch(): Promise<void> {
    if (this.informer || this.running.signal.aborted || this.now() < this.forbiddenUntil) return;
    this.starting ??= this.tryToWatch().finally(() => (this.starting = undefined));
    await this.starting;
  }

  private async tryToWatch(): Promise<void> {
    const namespace = this.opts.watchedNamespace!;
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
    try {
      await this.host.request<unknown>(`listing the Secrets of ${namespace}`, 'GET', path, {
        query: { limit: '1' },
        timeoutMs: this.opts.timeoutMs,
      });
    } catch (err) {
      if (!(err instanceof HostClusterError && err.code === 403)) return; // asked again at the next read
      this.forbiddenUntil = this.now() + RELIST_FORBIDDEN_MS;
      if (this.toldForbidden) return;
      this.toldForbidden = true;
      this.log('cluster config Secrets: the server may not list them, so each is read by name at every check', {
        namespace,
        retryInMs: RELIST_FORBIDDEN_MS,
      });
      return;
    }
    const informer = new HostInformer<HostObject>(this.host, {
      what: `Secrets of ${namespace}`,
      path,
      log: this.log,
    });
    this.informer = informer;
    void informer.run(this.running.signal);
  }
}
