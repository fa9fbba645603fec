/**
 * Status fields only the server writes, because they say for whom or on what it acts with its own credential: who
 * set a reference (a ProjectSecret's status.referencedBy), who imported a virtual cluster (status.importedBy), which
 * physical cluster a Cluster or an instance is (status.clusterUID). A status write keeps them as stored,
 * whoever writes (system:masters too), so that nothing a client writes moves them; a main-resource write keeps the
 * whole status already (store.ts mainUpdate). A value of the wrong type is left as written, for validation to refuse
 * (422) like any other, so the write fails instead of passing with the field quietly put back; a null, which
 * validation lets pass and pruning then drops, is put back as an absent value is.
 */
import { isPlainObject, type KubeObject } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';
import type { StatusStrategy } from './strategy.js';

export interface ServerStatusField {
  name: string;
  /** Whether a written value has the field's type and format (one that has not is validation's to refuse). */
  wellTyped(value: unknown): boolean;
  /**
   * What the server's own status writes may do with it: nothing (`never`: it is set elsewhere, e.g. at create), set
   * it while none is stored (`once`), or set and change it (`always`).
   */
  serverWrites: 'never' | 'once' | 'always';
}

export const isString = (v: unknown): boolean => typeof v === 'string';

/** Whether an optional property is absent or passes `ok`. */
export const absentOr = (v: unknown, ok: (v: unknown) => boolean): boolean => v === undefined || ok(v);

/** A prepareForStatusUpdate keeping `fields` as described above. */
export function keepServerStatus(
  fields: readonly ServerStatusField[],
): NonNullable<StatusStrategy['prepareForStatusUpdate']> {
  return (
    obj: KubeObject<unknown, Record<string, unknown>>,
    old: KubeObject<unknown, Record<string, unknown>>,
    user: UserInfo | undefined,
  ) => {
    // A status of null is none written (kube's JSON keeps it, and validation lets it pass): the fields stay as stored.
    if (obj.status !== undefined && obj.status !== null && !isPlainObject(obj.status)) return;
    for (const field of fields) {
      const written: unknown = obj.status?.[field.name];
      // A null is no value of any type, and no error either: pruning drops it (schema.ts), so left here it would
      // remove the field. It is put back as an absent one is.
      if (written !== undefined && written !== null && !field.wellTyped(written)) continue;
      const stored: unknown = old.status?.[field.name];
      const byServer =
        !user && (field.serverWrites === 'always' || (field.serverWrites === 'once' && stored === undefined));
      if (byServer) continue;
      if (stored !== undefined) obj.status = { ...(obj.status ?? {}), [field.name]: stored };
      else if (obj.status) delete obj.status[field.name];
    }
  };
}
