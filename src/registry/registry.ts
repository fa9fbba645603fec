/** All served resources, each with its generic store, found by group, version and plural name. */
import type { Storage } from '../storage/interface.js';
import type { ResourceDefinition } from './definitions.js';
import { strategies } from './kinds/index.js';
import { Store } from './store.js';

export class Registry {
  private readonly stores = new Map<string, Store>();

  constructor(readonly definitions: ResourceDefinition[], storage: Storage, etcdPrefix: string) {
    for (const def of definitions) {
      this.stores.set(`${def.group}/${def.version}/${def.plural}`, new Store(def, strategies[def.kind] ?? {}, storage, etcdPrefix));
    }
  }

  lookup(group: string, version: string, resource: string): Store | undefined {
    return this.stores.get(`${group}/${version}/${resource}`);
  }

  /** The served groups and, for each, its versions (one today). */
  groups(): { name: string; versions: string[] }[] {
    const byGroup = new Map<string, Set<string>>();
    for (const def of this.definitions) {
      if (!byGroup.has(def.group)) byGroup.set(def.group, new Set());
      byGroup.get(def.group)!.add(def.version);
    }
    return [...byGroup].map(([name, versions]) => ({ name, versions: [...versions] }));
  }
}
