/**
 * The transformer of each resource, built from an EncryptionConfiguration (kube's encryptionconfig
 * getTransformerOverrides and DynamicTransformers): a resource takes the first entry naming it, else its group's
 * `*.<group>`, else `*.*`, else identity. The set can be swapped at once (automatic reload); a transformer handed
 * out follows the swap, so storage never holds on to an old key.
 */
import { cbcTransformer, gcmTransformer } from './aes.js';
import { parseGroupResource, type EncryptionConfig, type ProviderConfig } from './config.js';
import { newKMSv2Transformer, type KMSv2Transformer } from './kmsv2.js';
import { secretboxTransformer } from './secretbox.js';
import { PrefixTransformers, identityTransformer, type PrefixTransformer, type Transformer } from './transformer.js';

/** The transformers of one configuration, and the KMS providers they hold open. */
export interface BuiltTransformers {
  /** By `group/resource` as written in the file (`*` wildcards kept). */
  byResource: Map<string, Transformer>;
  kms: { name: string; transformer: KMSv2Transformer }[];
  /** The longest a KMS call of this configuration may take, twice (kube's grace before closing replaced ones). */
  closeGraceMs: number;
}

export async function buildTransformers(config: Pick<EncryptionConfig, 'resources'>): Promise<BuiltTransformers> {
  const built: BuiltTransformers = { byResource: new Map(), kms: [], closeGraceMs: 0 };
  try {
    for (const entry of config.resources) {
      const providers: PrefixTransformer[] = [];
      for (const provider of entry.providers) providers.push(await providerTransformer(provider, built));
      const transformer = new PrefixTransformers(providers, 'no matching prefix found');
      for (const name of entry.resources) {
        const { group, resource } = parseGroupResource(name);
        if (!built.byResource.has(`${group}/${resource}`)) built.byResource.set(`${group}/${resource}`, transformer);
      }
    }
  } catch (err) {
    closeTransformers(built);
    throw err;
  }
  return built;
}

export function closeTransformers(built: BuiltTransformers): void {
  for (const { transformer } of built.kms) transformer.close();
}

async function providerTransformer(provider: ProviderConfig, built: BuiltTransformers): Promise<PrefixTransformer> {
  switch (provider.type) {
    case 'identity':
      return { prefix: '', transformer: identityTransformer };
    case 'kms': {
      const transformer = await newKMSv2Transformer({
        name: provider.name,
        endpoint: provider.endpoint,
        timeoutMs: provider.timeoutMs,
      });
      built.kms.push({ name: provider.name, transformer });
      built.closeGraceMs += 2 * provider.timeoutMs;
      return { prefix: `k8s:enc:kms:v2:${provider.name}:`, transformer };
    }
    default: {
      const make = { aescbc: cbcTransformer, aesgcm: gcmTransformer, secretbox: secretboxTransformer }[provider.type];
      const keys = provider.keys.map((key) => ({ prefix: `${key.name}:`, transformer: make(key.secret) }));
      const label = provider.type === 'secretbox' ? 'Secretbox' : 'AES';
      return {
        prefix: `k8s:enc:${provider.type}:v1:`,
        transformer: new PrefixTransformers(keys, `no matching key was found for the provided ${label} transformer`),
      };
    }
  }
}

/** The transformer for `group/resource` in `built`: exact, then `*.<group>`, then `*.*`, then identity. */
function lookup(built: BuiltTransformers, group: string, resource: string): Transformer {
  return (
    built.byResource.get(`${group}/${resource}`) ??
    built.byResource.get(`${group}/*`) ??
    built.byResource.get('*/*') ??
    identityTransformer
  );
}

/** The transformers in force; `set` swaps them for every resource at once. */
export class ResourceTransformers {
  private current: BuiltTransformers;

  constructor(
    initial: BuiltTransformers,
    private readonly etcdPrefix: string,
  ) {
    this.current = initial;
  }

  /** No encryption: every resource is stored plain (and an encrypted value cannot be read). */
  static identity(etcdPrefix: string): ResourceTransformers {
    return new ResourceTransformers({ byResource: new Map(), kms: [], closeGraceMs: 0 }, etcdPrefix);
  }

  forResource(group: string, resource: string): Transformer {
    return {
      transformToStorage: (plaintext, dataCtx) =>
        lookup(this.current, group, resource).transformToStorage(plaintext, dataCtx),
      transformFromStorage: (stored, dataCtx) =>
        lookup(this.current, group, resource).transformFromStorage(stored, dataCtx),
    };
  }

  /** The transformer of an object's key, `<etcd prefix>/<group>/<resource>/...`. */
  forKey(key: string): Transformer {
    const [group = '', resource = ''] = key.startsWith(`${this.etcdPrefix}/`)
      ? key.slice(this.etcdPrefix.length + 1).split('/')
      : [];
    return lookup(this.current, group, resource);
  }

  get kmsProviders(): BuiltTransformers['kms'] {
    return this.current.kms;
  }

  /** Puts `next` in force; the replaced KMS providers are closed once calls that began with them are over. */
  set(next: BuiltTransformers): void {
    const previous = this.current;
    this.current = next;
    if (previous.kms.length)
      setTimeout(() => closeTransformers(previous), Math.max(previous.closeGraceMs, 10_000)).unref();
  }

  close(): void {
    closeTransformers(this.current);
  }
}
