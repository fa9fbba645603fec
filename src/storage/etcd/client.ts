/**
 * The server's only door to etcd: the etcd3 client, with how calls find a live member, and every call through
 * `call()`: the health guard, the onCall metrics, kube's etcd3 spans, and failures as StorageError. Every write is
 * one transaction (`swap`) comparing the keys it depends on with what was read (kube's pkg/storage/etcd3/store.go),
 * so concurrent writers never lose each other's updates.
 */
import { ConsecutiveBreaker, ExponentialBackoff, circuitBreaker, handleWhen, retry, type IBackoff } from 'cockatiel';
import { Etcd3, GRPCUnavailableError, Range, type IOptions } from 'etcd3';
import { EtcdHealth } from '../etcdhealth.js';
import '../etcd3watchfix.js';
import { StorageError, type PageOptions } from '../interface.js';
import { inSpan, tracer } from '../../tracing.js';

export interface EtcdClientOptions {
  endpoints: string[];
  /** TLS to etcd (https:// endpoints): the CA that verifies etcd, and a client certificate for --client-cert-auth. */
  tls?: { caPem?: Buffer; certPem?: Buffer; keyPem?: Buffer };
  /** Deadline of one etcd call; a call that takes longer fails as Unreachable. */
  callTimeoutMs?: number;
  /** Told when etcd stops answering (and why) or answers again. */
  onHealthChange?: (healthy: boolean, reason?: string) => void;
  /** Told of every etcd call when it ends (for metrics): what it was, the key or prefix, how long, and whether it failed. */
  onCall?: (operation: string, key: string, seconds: number, failed: boolean) => void;
}

/** A key's value and mod revision, as read. */
export interface RawKv {
  value: Buffer;
  modRevision: string;
}

/** What one transaction writes if its comparisons hold. */
export type SwapOp = { put: string; value: Buffer | string } | { delete: string };

/** What one transaction compares: a key's mod revision (0: absent) or its version (writes since it was created). */
export interface SwapCompare {
  key: string;
  mod?: string | number;
  version?: number;
}

/** A transaction's outcome: written at `revision`, or not, with the keys it read back instead (undefined: absent). */
export type SwapResult =
  | { succeeded: true; revision: string }
  | { succeeded: false; revision: string; current: (RawKv | undefined)[]; versions: number[] };

export class EtcdClient {
  /** Private: every etcd call goes through call(). */
  private readonly client: Etcd3;
  /** Whether etcd answers; while it does not, calls fail at once. */
  readonly health: EtcdHealth;
  private readonly onCall?: EtcdClientOptions['onCall'];

  constructor(opts: EtcdClientOptions) {
    const timeout = opts.callTimeoutMs ?? 10_000;
    const options: IOptions = {
      hosts: opts.endpoints,
      dialTimeout: timeout,
      // Streams (watches) live long; only unary calls get a deadline.
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeout }),
      // Watches reconnect quickly after etcd comes back (the library's default waits up to 30 s).
      // (etcd3 types the option as a backoff but uses it as the factory its own default is.)
      faultHandling: {
        watchBackoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 2000 }) as unknown as IBackoff<unknown>,
        ...memberFaultHandling(opts.endpoints.length),
      },
      // A page of objects (each up to etcd's 1.5 MiB) easily passes gRPC's default 4 MiB answer limit; kube-apiserver
      // lifts it too (MaxCallRecvMsgSize = MaxInt32). Requests stay within etcd's own --max-request-bytes.
      grpcOptions: { 'grpc.max_receive_message_length': -1 },
    };
    if (opts.tls) {
      options.credentials = {
        rootCertificate: opts.tls.caPem ?? (null as unknown as Buffer),
        privateKey: opts.tls.keyPem,
        certChain: opts.tls.certPem,
      };
    }
    this.client = new Etcd3(options);
    this.health = new EtcdHealth({ probe: () => this.client.get('health').exec(), onChange: opts.onHealthChange });
    this.health.start();
    this.onCall = opts.onCall;
  }

  /**
   * One transaction: the `then` operations if every comparison holds, else the values of `readBack` as they are
   * (in its order). `operation` names it for the metrics and spans.
   */
  async swap(
    operation: string,
    key: string,
    compares: SwapCompare[],
    then: SwapOp[],
    readBack: string[] = [key],
  ): Promise<SwapResult> {
    const txn = await this.call(operation, key, () => {
      const [first, ...rest] = compares;
      const compare = this.compare(this.client.if(...comparison(first)), rest);
      return compare
        .then(
          ...then.map((op) =>
            'put' in op ? this.client.put(op.put).value(op.value) : this.client.delete().key(op.delete),
          ),
        )
        .else(...readBack.map((k) => this.client.get(k)))
        .commit();
    });
    if (txn.succeeded) return { succeeded: true, revision: txn.header.revision };
    const kvs = readBack.map((_, i) => txn.responses[i]?.response_range?.kvs[0]);
    return {
      succeeded: false,
      revision: txn.header.revision,
      current: kvs.map((kv) => (kv ? { value: kv.value, modRevision: kv.mod_revision } : undefined)),
      versions: kvs.map((kv) => Number(kv?.version ?? 0)),
    };
  }

  async readRaw(key: string): Promise<RawKv | undefined> {
    const res = await this.call('get', key, () => this.client.get(key).exec());
    const kv = res.kvs[0];
    return kv ? { value: kv.value, modRevision: kv.mod_revision } : undefined;
  }

  /** One range request under `prefix`, from `start`, at `revision`. */
  range(prefix: string, opts: PageOptions, keysOnly: boolean) {
    if (!prefix.endsWith('/')) throw new Error(`prefix must end with '/': ${prefix}`);
    return this.call(keysOnly ? 'listKeys' : 'list', prefix, () =>
      this.client.kv.range({
        key: Buffer.from(opts.start ?? prefix),
        range_end: Range.prefix(prefix).end,
        limit: opts.limit ?? 0,
        revision: opts.revision ?? 0,
        keys_only: keysOnly,
      }),
    );
  }

  async createRevision(key: string): Promise<string | undefined> {
    const res = await this.call('get', key, () => this.client.kv.range({ key: Buffer.from(key), keys_only: true }));
    return res.kvs[0]?.create_revision;
  }

  async currentRevision(): Promise<string> {
    const res = await this.call('currentRevision', '', () =>
      this.client.kv.range({ key: Buffer.from([0]), limit: 1, keys_only: true }),
    );
    return res.header.revision;
  }

  async compact(revision: string): Promise<void> {
    await this.call('compact', '', () => this.client.kv.compact({ revision }));
  }

  /** A watch builder of the etcd3 client (the watch's creation still goes through call()). */
  watchBuilder() {
    return this.client.watch();
  }

  /** The etcd3 client, for the leader's lease (leaselock.ts), which calls it only through `call`. */
  get leaseClient(): Etcd3 {
    return this.client;
  }

  async check(): Promise<void> {
    await this.call('health', 'health', () => this.client.get('health').exec());
  }

  close(): void {
    this.health.stop();
    this.client.close();
  }

  /** Runs one etcd call (`operation` names it for onCall); failures to reach etcd become StorageError Unreachable. */
  call<R>(operation: string, key: string, fn: () => Promise<R>): Promise<R> {
    // kube's etcd3 store spans ("Create etcd3", ...): the key, never the value.
    if (WRITES.has(operation)) tracer().noteWrite(key);
    return inSpan(ETCD_SPANS[operation] ?? `${operation} etcd3`, { key }, () => this.callOnce(operation, key, fn));
  }

  private compare(builder: ReturnType<Etcd3['if']>, rest: SwapCompare[]) {
    for (const c of rest) builder.and(...comparison(c));
    return builder;
  }

  private async callOnce<R>(operation: string, key: string, fn: () => Promise<R>): Promise<R> {
    const start = performance.now();
    try {
      const result = await this.health.guard(fn);
      this.onCall?.(operation, key, (performance.now() - start) / 1000, false);
      return result;
    } catch (err) {
      this.onCall?.(operation, key, (performance.now() - start) / 1000, true);
      if (err instanceof StorageError) throw err;
      const message = (err as Error).message;
      if (/required revision has been compacted/.test(message)) throw new StorageError('Compacted', key, message);
      if (/required revision is a future revision/.test(message))
        throw new StorageError('FutureRevision', key, message);
      // etcd's own limit (--max-request-bytes), or its gRPC server's a little above it.
      if (/request is too large|received message larger than max/i.test(message))
        throw new StorageError('TooLarge', key, message);
      throw new StorageError('Unreachable', key, `etcd: ${message}`);
    }
  }
}

function comparison(c: SwapCompare): [string, 'Mod' | 'Version', '==', string | number] {
  return c.version !== undefined ? [c.key, 'Version', '==', c.version] : [c.key, 'Mod', '==', c.mod ?? 0];
}

/**
 * How calls find a live etcd member. The library's default breaker counts every "recoverable" gRPC error (a refused
 * oversized request, etcd's own "request timed out" during a leader change) and then shuts the member out for 5 s,
 * so one bad request or an election failed every call for seconds; and it retried calls that etcd may already have
 * carried out. Here, as etcd's own Go client does for writes, only a call that never left (no connection to the
 * member) moves on to another member, and only such failures shut a member out, for a second at a time. Whether
 * etcd as a whole answers is EtcdHealth's to judge.
 */
function memberFaultHandling(members: number): Pick<NonNullable<IOptions['faultHandling']>, 'host' | 'global'> {
  const notSent = handleWhen(
    (err) =>
      err instanceof GRPCUnavailableError &&
      !/etcdserver:/.test(err.message) &&
      /No connection established|ECONNREFUSED|failed to connect/i.test(err.message),
  );
  return {
    host: () => circuitBreaker(notSent, { halfOpenAfter: 1000, breaker: new ConsecutiveBreaker(3) }),
    global: retry(notSent, { maxAttempts: members }),
  };
}

/** The operations a controller's work may follow from (tracer().writeLinks). */
const WRITES = new Set(['create', 'update', 'delete']);

/** The names of kube's etcd3 store spans, by this store's operation names. */
const ETCD_SPANS: Record<string, string> = {
  create: 'Create etcd3',
  get: 'Get etcd3',
  update: 'GuaranteedUpdate etcd3',
  delete: 'Delete etcd3',
  list: 'List(recursive=true) etcd3',
  listKeys: 'List(recursive=true) etcd3',
};
