/**
 * Checks rendered objects against the Kubernetes 1.33 schemas of `kubernetes-models` (4.5.1, pinned) and
 * cert-manager's of `@kubernetes-models/cert-manager` (4.4.4, the last release for Node < 22, on the same base
 * packages).
 *
 * A model's validate() checks types, formats, enums and required fields but, like kube's OpenAPI schemas, lets
 * unknown fields through; kube-apiserver drops those (or refuses them with fieldValidation=Strict), so a misspelt
 * field would silently do nothing. unknownFields() finds them with the same generated validator: run on a proxy of
 * the object, it reads every property the schema knows, so a property it never read is one the schema does not
 * know. Objects whose keys it enumerates (maps) or never looks into (free-form) are skipped.
 */

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: any;
}

type ModelClass = {
  new (data: unknown): { validate(): void };
  apiVersion: string;
  kind: string;
  prototype: { validate(): void };
};

const CERT_MANAGER_GROUPS = new Set(['cert-manager.io', 'acme.cert-manager.io']);

const modules = new Map<string, Promise<Record<string, unknown> | undefined>>();
let importing: Promise<unknown> = Promise.resolve();

/**
 * A package's module for an apiVersion, imported once and one import at a time: Jest's ESM loader fails
 * ("request for './model.mjs' is not in cache") when two imports share a dependency that is still loading.
 */
function importModels(specifier: string): Promise<Record<string, unknown> | undefined> {
  let mod = modules.get(specifier);
  if (!mod) {
    mod = importing
      .then(() => import(specifier))
      .then(
        (m: Record<string, unknown>) => m,
        (err: { code?: string }) => {
          if (err?.code === 'ERR_MODULE_NOT_FOUND' || /Cannot find module/.test(String(err))) return undefined;
          throw err;
        },
      );
    modules.set(specifier, mod);
    importing = mod.catch(() => undefined);
  }
  return mod;
}

/** The model class for an apiVersion and kind, or undefined when the packages have none. */
export async function modelFor(apiVersion: string, kind: string): Promise<ModelClass | undefined> {
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
  const mod = await importModels(
    CERT_MANAGER_GROUPS.has(group)
      ? `@kubernetes-models/cert-manager/${apiVersion}`
      : `kubernetes-models/${apiVersion}`,
  );
  if (!mod) return undefined;
  const cls = mod[kind] as ModelClass | undefined;
  // Only a top-level kind (with its own apiVersion and kind) counts, not a type such as ObjectMeta.
  return cls && cls.apiVersion === apiVersion && cls.kind === kind ? cls : undefined;
}

/** Paths of the fields in `obj` that the schema behind `validate` does not know. */
export function unknownFields(validate: (this: unknown) => void, obj: unknown): string[] {
  const seen = new Map<object, { path: string; read: Set<PropertyKey>; enumerated: boolean }>();
  const wrap = (value: unknown, at: string): unknown => {
    if (value === null || typeof value !== 'object') return value;
    const rec = { path: at, read: new Set<PropertyKey>(), enumerated: false };
    seen.set(value, rec);
    const children = new Map<PropertyKey, unknown>();
    return new Proxy(value, {
      get(target, key, receiver) {
        rec.read.add(key);
        const v: unknown = Reflect.get(target, key, receiver);
        if (typeof key !== 'string' || v === null || typeof v !== 'object') return v;
        if (!children.has(key)) children.set(key, wrap(v, Array.isArray(target) ? `${at}[${key}]` : `${at}.${key}`));
        return children.get(key);
      },
      has(target, key) {
        rec.read.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        rec.enumerated = true;
        return Reflect.ownKeys(target);
      },
    });
  };
  try {
    validate.call(wrap(obj, ''));
  } catch {
    // Schema errors are reported by validate() on the model itself.
  }
  const unknown: string[] = [];
  for (const [target, rec] of seen) {
    if (Array.isArray(target) || rec.enumerated || rec.read.size === 0) continue;
    for (const key of Object.keys(target)) if (!rec.read.has(key)) unknown.push(`${rec.path}.${key}`);
  }
  return unknown;
}

/** What is wrong with an object by its model: no model, schema errors, unknown fields. Empty when all is well. */
export async function modelProblems(obj: K8sObject): Promise<string[]> {
  const where = `${obj.kind} ${obj.metadata?.name}`;
  const cls = await modelFor(obj.apiVersion, obj.kind);
  if (!cls) return [`${where}: no model for ${obj.apiVersion} ${obj.kind}`];
  const problems: string[] = [];
  try {
    new cls(obj).validate();
  } catch (err) {
    problems.push(`${where}: ${(err as Error).message}`);
  }
  for (const field of unknownFields(cls.prototype.validate, obj)) problems.push(`${where}: unknown field ${field}`);
  return problems;
}
