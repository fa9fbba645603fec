/**
 * What every part of the host-cluster stand-in shares: the loose object shape it stores (it keeps what it is sent),
 * copies, timestamps, the canonical JSON that tells a no-op write, and the one resourceVersion counter all kinds
 * draw from (as one etcd revision counter serves a whole cluster).
 */

/** Loose shapes: the stand-in stores what it is sent. */
export type KubeObj = { apiVersion?: string; kind?: string; metadata: Record<string, any>; [k: string]: any };

/** A timestamp as kube's metav1.Time prints it (RFC 3339, whole seconds). */
export const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
export const clone = <T>(v: T): T => structuredClone(v);

/** JSON with sorted keys, to tell a no-op write (which kube does not persist). */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * What encoding/json says of a []byte field's value (`goField` as Go names it) that is not padded standard base64
 * (newlines skipped); undefined when it reads. Go's offsets are approximated: the first bad character, or the end.
 */
export function bytesError(goField: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string')
    return `json: cannot unmarshal ${typeof value} into Go struct field ${goField} of type []uint8`;
  const text = value.replace(/[\r\n]/g, '');
  const at = text.search(/[^A-Za-z0-9+/=]|=(?!=*$)/);
  if (at >= 0 || text.length % 4 !== 0) return `illegal base64 data at input byte ${at >= 0 ? at : text.length}`;
  return undefined;
}

/** The cluster-wide resourceVersion counter: every write of any kind takes the next one. */
export class ResourceVersions {
  private rv = 1;

  /** Takes the next resourceVersion, as a string as kube sends it. */
  next(): string {
    return String(++this.rv);
  }

  /** The latest resourceVersion, for a list's metadata. */
  current(): string {
    return String(this.rv);
  }
}
