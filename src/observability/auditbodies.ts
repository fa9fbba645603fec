/**
 * The bodies of an audit event at level Request (requestObject) and RequestResponse (responseObject), as a reader
 * sees them: a kind's hidden fields (Strategy.hiddenFields: an access key or its hash, a connector's data) never
 * leave the server, so they are taken out of what was sent and of what was answered (the answer to a key's create
 * carries the key), whatever the level. Secret data a reader may see (a SharedSecret's spec.data) is in them: a
 * policy that asks for bodies of such resources gets them, as in kube.
 *
 * - An object, a list (its items) and a Table (its rows' objects) are shown without the hidden fields.
 * - A merge patch or an apply configuration has the object's shape: the same. A JSON patch is a list of operations:
 *   an operation on a hidden field, or under one, loses its value; one on a parent of a hidden field loses the
 *   field from its value.
 * - The answers of actions (src/actions) are never shown: they are credentials (tokens, client keys) made for the
 *   caller alone.
 */
import { decoded, type ListItem } from '../apimachinery/encoded.js';
import { isPlainObject, type KubeObject } from '../apimachinery/types.js';
import { withoutFields, type FieldPath } from '../registry/hiddenfields.js';

/** An object, list or Table without the hidden fields (items still encoded are decoded first). */
export function auditedObject(body: unknown, hidden: readonly FieldPath[] = []): unknown {
  if (!isPlainObject(body)) return body;
  if (body.kind === 'Table' && Array.isArray(body.rows))
    return {
      ...body,
      rows: body.rows.map((r) => (isPlainObject(r) ? { ...r, object: auditedObject(r.object, hidden) } : r)),
    };
  if (Array.isArray(body.items))
    return { ...body, items: body.items.map((i) => withoutFields(decoded(i as ListItem), hidden)) };
  return hidden.length ? withoutFields(body as KubeObject, hidden) : body;
}

/** A JSON patch's operations without the hidden fields' values. */
export function auditedJsonPatch(ops: unknown, hidden: readonly FieldPath[] = []): unknown {
  if (!hidden.length || !Array.isArray(ops)) return ops;
  return ops.map((op) => {
    if (!isPlainObject(op) || typeof op.path !== 'string' || !('value' in op)) return op;
    const at = pointerKeys(op.path);
    let value = op.value;
    for (const field of hidden) {
      const under = field.length <= at.length && field.every((k, i) => k === at[i]);
      if (under) {
        const { value: _dropped, ...rest } = op;
        return rest;
      }
      const above = at.every((k, i) => k === field[i]);
      if (above && isPlainObject(value)) value = withoutFields(value as KubeObject, [field.slice(at.length)]);
    }
    return { ...op, value };
  });
}

/** RFC 6901: "/spec/identity/connectorData" → ['spec', 'identity', 'connectorData']. */
function pointerKeys(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .split('/')
    .slice(1)
    .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The body without metadata.managedFields (omitManagedFields), for an object or a list's items. */
export function withoutManagedFields(body: unknown): unknown {
  if (!isPlainObject(body)) return body;
  if (Array.isArray(body.items)) return { ...body, items: body.items.map(withoutManagedFields) };
  if (!isPlainObject(body.metadata) || !('managedFields' in body.metadata)) return body;
  const { managedFields: _dropped, ...metadata } = body.metadata;
  return { ...body, metadata };
}
