/**
 * The OpenAPI documents of the API, built from the kinds and actions alone (no HTTP here): the Swagger 2.0 document
 * of everything served (/openapi/v2, what kube-aggregator fetches and merges into kube-apiserver's), one OpenAPI 3.0
 * document per group-version (what `kubectl explain` reads). Each kind's schema is built in kinds.ts, the paths in
 * operations.ts; the meta/v1 definitions they refer to are the data of metav1.ts.
 */
import { type Json } from './common.js';
import { metaSchemas, kindSchema, listSchema, schemaName, type StoredKind } from './kinds.js';
import { paths, type ServedAction } from './operations.js';

function definitionsFor(defs: StoredKind[], actions: ServedAction[], v2: boolean): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const def of defs) {
    out[schemaName(def.group, def.version, def.kind)] = kindSchema(def, v2);
    out[schemaName(def.group, def.version, def.listKind)] = listSchema(def, v2);
  }
  for (const action of actions) out[schemaName(action.group, action.version, action.kind)] = kindSchema(action, v2);
  Object.assign(out, metaSchemas(v2));
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const SECURITY_SCHEME = {
  type: 'apiKey',
  description: 'Bearer Token authentication',
  name: 'authorization',
  in: 'header',
};

/** The OpenAPI 3.0 document of one group-version (what /openapi/v3/apis/<group>/<version> serves). */
export function buildOpenAPIV3(defs: StoredKind[], group: string, version: string, actions: ServedAction[] = []): Json {
  const mine = defs.filter((d) => d.group === group && d.version === version);
  const myActions = actions.filter((a) => a.group === group && a.version === version);
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes CRD Swagger', version: 'v0.1.0' },
    paths: paths(mine, myActions, false),
    components: { schemas: definitionsFor(mine, myActions, false), securitySchemes: { BearerToken: SECURITY_SCHEME } },
  };
}

/** The Swagger 2.0 document of everything served (what /openapi/v2 serves, and kube-aggregator merges). */
export function buildOpenAPIV2(defs: StoredKind[], actions: ServedAction[] = []): Json {
  return {
    swagger: '2.0',
    info: { title: 'Kubernetes CRD Swagger', version: 'v0.1.0' },
    paths: paths(defs, actions, true),
    definitions: definitionsFor(defs, actions, true),
    securityDefinitions: { BearerToken: SECURITY_SCHEME },
    security: [{ BearerToken: [] }],
  };
}
