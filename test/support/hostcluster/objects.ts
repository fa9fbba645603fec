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
