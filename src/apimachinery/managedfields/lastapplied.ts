/**
 * kubectl's client-side apply annotation and server-side apply (lastappliedmanager.go, lastappliedupdater.go,
 * lastapplied.go). Both only act for the field manager "kubectl":
 * - an apply that conflicts only on fields whose live values still equal the last-applied annotation is
 *   forced, so `kubectl apply --server-side` can take over objects made with client-side apply;
 * - when the object carries the annotation, an apply rewrites it to the applied config.
 */
import { checkNesting } from '../nesting.js';
import { isPlainObject, type KubeObject } from '../types.js';
import { goJSON } from '../golang/json.js';
import { FieldSet } from './set.js';
import { compare } from './merge.js';
import { toFieldSet } from './tofieldset.js';
import { validate } from './validate.js';
import type { TypeNode } from './typeinfo.js';

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
/** The manager name for which kube upgrades client-side apply. */
export const KUBECTL = 'kubectl';
/** apimachinery validation.TotalAnnotationSizeLimitB. */
const ANNOTATIONS_SIZE_LIMIT = 256 * 1024;

function lastApplied(obj: KubeObject): string | undefined {
  const v = obj.metadata?.annotations?.[LAST_APPLIED];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export function hasLastApplied(obj: KubeObject): boolean {
  return lastApplied(obj) !== undefined;
}

/**
 * allowedConflictsFromLastApplied: fields of the annotation whose live values still match it. Undefined when
 * the annotation is missing, unreadable, of another version or not valid for the schema.
 */
export function allowedConflictsFromLastApplied(
  type: TypeNode,
  apiVersion: string,
  live: KubeObject,
): FieldSet | undefined {
  const text = lastApplied(live);
  if (text === undefined) return undefined;
  let obj: unknown;
  try {
    obj = JSON.parse(text);
    checkNesting(obj);
  } catch {
    return undefined;
  }
  if (!isPlainObject(obj) || obj.apiVersion !== apiVersion) return undefined;
  if (validate(type, obj).length > 0) return undefined;
  const c = compare(type, obj, live);
  return toFieldSet(type, obj).difference(c.modified).difference(c.added).difference(c.removed);
}

/** buildLastApplied: the applied config without the annotation, as Go's json.Encoder writes it (with a newline). */
export function buildLastApplied(applied: KubeObject): string {
  const copy = structuredClone(applied) as KubeObject;
  const annotations = copy.metadata?.annotations;
  if (annotations && isPlainObject(annotations)) delete annotations[LAST_APPLIED];
  return `${goJSON(copy)}\n`;
}

/** SetLastApplied: sets the annotation unless that makes the annotations too large. */
export function setLastApplied(obj: KubeObject, value: string): void {
  obj.metadata ??= {};
  const annotations: Record<string, string> = { ...(obj.metadata.annotations ?? {}), [LAST_APPLIED]: value };
  let size = 0;
  for (const [k, v] of Object.entries(annotations)) size += Buffer.byteLength(k) + Buffer.byteLength(String(v));
  if (size > ANNOTATIONS_SIZE_LIMIT) delete annotations[LAST_APPLIED];
  obj.metadata.annotations = annotations;
}
