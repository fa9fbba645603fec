/**
 * An object's claims (interface.ts ClaimHolder): keys that name the object holding them (its key and uid), written
 * in the transaction that creates it and deleted in the one that deletes it. A claim whose holder is gone (or that
 * names nothing) is stale and may be taken over.
 */
import { ClaimTakenError, type ClaimHolder, type StoredObject } from '../interface.js';
import type { EtcdClient } from './client.js';
import type { StoredValues } from './values.js';

/** A claim read back to be deleted with its holder: its key and mod revision. */
export interface HeldClaim {
  key: string;
  modRevision: string;
}

export class Claims {
  constructor(
    private readonly client: EtcdClient,
    private readonly values: StoredValues,
  ) {}

  /** Those of `claims` that name the object stored at `key` (its uid too), as read: the ones to delete with it. */
  async held(claims: string[], key: string, object: StoredObject): Promise<HeldClaim[]> {
    const uid = uidOf(object);
    const read = await Promise.all(claims.map(async (claim) => ({ claim, kv: await this.client.readRaw(claim) })));
    return read.flatMap(({ claim, kv }) => {
      const holder = kv && parseClaimValue(kv.value);
      return holder?.key === key && holder.uid === uid ? [{ key: claim, modRevision: kv!.modRevision }] : [];
    });
  }

  /**
   * ClaimTakenError when the claim's value names an object that exists (the same key and uid); otherwise the claim is
   * stale and may be taken over.
   */
  async checkHolderExists(claim: string, value: Buffer): Promise<void> {
    const holder = parseClaimValue(value);
    if (!holder) return;
    const kv = await this.client.readRaw(holder.key);
    if (!kv) return;
    const { object } = await this.values.fromStorage<StoredObject>(holder.key, kv.value, kv.modRevision);
    if (uidOf(object) === holder.uid) throw new ClaimTakenError(claim, holder);
  }
}

/** What a claim holds: its holder's key and uid. */
export function claimValue(holder: ClaimHolder): string {
  return JSON.stringify({ key: holder.key, uid: holder.uid });
}

/** An object's metadata.uid (StoredObject does not declare it: not every stored value has one). */
export function uidOf(obj: StoredObject): string {
  const uid = (obj.metadata as { uid?: unknown }).uid;
  return typeof uid === 'string' ? uid : '';
}

/** The holder a claim's value names; undefined when it names none (not the JSON a claim is): stale. */
function parseClaimValue(value: Buffer): ClaimHolder | undefined {
  try {
    const holder = JSON.parse(value.toString()) as Partial<ClaimHolder>;
    if (typeof holder?.key === 'string' && typeof holder.uid === 'string' && holder.uid)
      return { key: holder.key, uid: holder.uid };
  } catch {
    // Not JSON: names nothing.
  }
  return undefined;
}
