/**
 * The malformed requests of fuzz.test.ts, generated deterministically from a seed. Every case is wrong in at
 * least one way that kube-apiserver refuses with a 4xx; a case that would be valid is a bug of this generator
 * (it filters its random mutations: a broken document must fail to parse, a bad selector must fail the
 * server's parser, and so on). The categories and what each is answered with:
 *
 *   wrong-type    a wrongly typed value at every property path of every kind (CRD schemas and ObjectMeta),
 *                 in creates, updates, merge patches, JSON patches, apply patches and status writes (400/422)
 *   bad-format    values of the right type but not of their format: byte, date-time (422)
 *   broken-json   valid bodies, patches and DeleteOptions mutated until JSON.parse refuses them (400)
 *   broken-yaml   the same in YAML, as application/yaml and apply patches (400)
 *   huge          bodies over 3 MiB (413)
 *   too-large     objects under 3 MiB but over etcd's 1.5 MiB request limit (413)
 *   deep          documents nested 1,001 to 100,000 levels, JSON and YAML (400)
 *   alias-bomb    YAML "billion laughs" (400)
 *   json-patch    JSON patches that are not lists of valid operations, or that fail (400/409/422, 413 past 10,000 ops)
 *   merge-patch   merge patches that are not objects or change what may not change (400/409/422)
 *   apply-patch   apply patches without a field manager, of another kind, name or version (400/422)
 *   bad-object    bodies of the wrong kind, version, name or namespace, or not objects (400/422)
 *   delete-options  malformed DeleteOptions bodies and preconditions that do not hold (400/409/422)
 *   label-selector, field-selector  selectors the parsers refuse, on lists, watches and deletecollection (400)
 *   query         bad limit, resourceVersion, timeoutSeconds, fieldValidation, dryRun, propagationPolicy, ... (400/422)
 *   path          unknown groups, versions, resources and subresources, bad names and namespaces (404/405/4xx)
 *   method        verbs a path does not support (405)
 *   media-type    Content-Type and Accept the server does not speak (406/415)
 *   auth          missing and wrong credentials (401)
 *   action        wrong types and broken bodies for the action kinds (400/422)
 */
import { readdirSync, readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { parseSupportedFieldSelector } from '../../src/apimachinery/fields.js';
import { parseLabelSelector } from '../../src/apimachinery/labels.js';
import { objectMetaSchema } from '../../src/apimachinery/metaschema.js';
import { GROUP_PATH } from '../support/http.js';

export const GROUP = 'management.platform.sh';
export const API_VERSION = `${GROUP}/v1`;
export const NS = 'fuzz';
export const TARGET = 'target';
const JSON_PATCH = 'application/json-patch+json';
const MERGE_PATCH = 'application/merge-patch+json';
const APPLY = 'application/apply-patch+yaml';
const YAML = 'application/yaml';
const MAX_BODY = 3 * 1024 * 1024;

export interface FuzzCase {
  category: string;
  /** What the case is, for failure messages. */
  what: string;
  method: string;
  path: string;
  body?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  /** Authorization header: the root token (default), none, or this exact value. */
  auth?: 'root' | 'none' | { header: string };
  /** The 4xx codes this case may be answered with. */
  expect: number[];
}

interface Schema {
  type?: string;
  format?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
}

export interface KindInfo {
  kind: string;
  plural: string;
  namespaced: boolean;
  namespace?: string;
  schema: Schema;
  valid(name: string): Record<string, any>;
}

/** The kinds, their schemas from crds/, and a valid object of each. */
export function kinds(): KindInfo[] {
  const valid: Record<string, (name: string) => Record<string, any>> = {
    SharedSecret: (name) => ({ spec: { displayName: `Secret ${name}`, data: { token: 'c2VjcmV0' } } }),
    Cluster: () => ({
      spec: {
        displayName: 'Cluster',
        config: { secretName: 'kubeconfig', secretNamespace: 'platform' },
        managementNamespace: 'platform-system',
      },
    }),
    Project: () => ({ spec: { displayName: 'Project', allowedClusters: [{ name: 'eu-1' }] } }),
    VirtualClusterInstance: (name) => ({
      spec: { displayName: 'VC', clusterRef: { cluster: 'eu-1', namespace: `vcluster-${name}`, virtualCluster: name } },
    }),
    OwnedAccessKey: () => ({ spec: { user: 'alice', displayName: 'key' } }),
    ProjectSecret: (name) => ({ spec: { displayName: `Project secret ${name}`, data: { token: 'c2VjcmV0' } } }),
  };
  return readdirSync('crds')
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => {
      const crd = yaml.load(readFileSync(`crds/${f}`, 'utf8')) as any;
      const kind: string = crd.spec.names.kind;
      const namespaced = crd.spec.scope === 'Namespaced';
      // The kinds that live in a project's namespace: that of the Project made first (crds/ sorts projects first).
      const inProject = kind === 'VirtualClusterInstance' || kind === 'ProjectSecret';
      const namespace = namespaced ? (inProject ? `p-${TARGET}` : NS) : undefined;
      return {
        kind,
        plural: crd.spec.names.plural,
        namespaced,
        namespace,
        schema: crd.spec.versions[0].schema.openAPIV3Schema,
        valid: (name: string) => ({
          apiVersion: API_VERSION,
          kind,
          metadata: namespace ? { name, namespace } : { name },
          ...valid[kind](name),
        }),
      };
    });
}

export function collectionPath(k: KindInfo, namespace = k.namespace): string {
  return `${GROUP_PATH}${k.namespaced ? `/namespaces/${namespace}` : ''}/${k.plural}`;
}

export function objectPath(k: KindInfo, name = TARGET): string {
  return `${collectionPath(k)}/${name}`;
}

/** mulberry32: a small seeded PRNG, so the same seed gives the same cases. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
  };
}
type Rng = ReturnType<typeof prng>;

type Path = (string | number)[];

/** Every typed property path of a schema (array items at index 0, map values under the key `fuzzkey`). */
function propertyPaths(s: Schema, at: Path = []): { path: Path; schema: Schema }[] {
  const out: { path: Path; schema: Schema }[] = [];
  if (at.length && s.type) out.push({ path: at, schema: s });
  for (const [k, c] of Object.entries(s.properties ?? {})) out.push(...propertyPaths(c, [...at, k]));
  if (s.additionalProperties && typeof s.additionalProperties === 'object')
    out.push(...propertyPaths(s.additionalProperties, [...at, 'fuzzkey']));
  if (s.items) out.push(...propertyPaths(s.items, [...at, 0]));
  return out;
}

const WRONG: Record<string, unknown[]> = {
  string: [42, true, { a: 'b' }, ['x']],
  integer: ['7', 1.5, true, { a: 1 }, [1]],
  number: ['7', true, { a: 1 }, [1]],
  boolean: ['true', 0, { a: true }, [true]],
  object: ['x', 7, [{ a: 1 }], true],
  array: ['x', { a: 1 }, 7, false],
};

const BAD_FORMAT: Record<string, unknown[]> = {
  byte: ['not base64!', 'abc', '****'],
  'date-time': ['yesterday', '2024-13-45T99:99:99Z', '12:00'],
};

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v));
}

/** `obj` with `value` at `path`, making the containers on the way (an array where the next step is an index). */
function setAt(obj: Record<string, any>, path: Path, value: unknown): Record<string, any> {
  const root = clone(obj);
  let cur: any = root;
  for (let i = 0; i < path.length - 1; i++) {
    const wantArray = typeof path[i + 1] === 'number';
    const have = cur[path[i]];
    if (wantArray ? !Array.isArray(have) : have === null || typeof have !== 'object' || Array.isArray(have))
      cur[path[i]] = wantArray ? [] : {};
    cur = cur[path[i]];
  }
  cur[path[path.length - 1]] = value;
  return root;
}

const pathText = (p: Path) =>
  p
    .map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`))
    .join('')
    .slice(1);

const json = (v: unknown) => JSON.stringify(v);

/** What the generator needs of the objects the test made before it: each kind's TARGET as the server shows it. */
export type Fixtures = Record<string, Record<string, any>>;

export function generateCases(seed: number, fixtures: Fixtures): FuzzCase[] {
  const rng = prng(seed);
  const all = kinds();
  const cases: FuzzCase[] = [];
  const add = (c: FuzzCase) => cases.push(c);

  for (const k of all) {
    const fixture = fixtures[k.kind];
    const fresh = k.valid('fuzz-new');
    const applyBase = {
      apiVersion: API_VERSION,
      kind: k.kind,
      metadata: k.namespace ? { name: TARGET, namespace: k.namespace } : { name: TARGET },
    };
    const paths = [
      ...propertyPaths({ properties: { metadata: objectMetaSchema as Schema } }),
      ...propertyPaths(k.schema).filter((p) => p.path[0] !== 'metadata'),
    ];

    // wrong-type and bad-format: each path, each wrong value, through every way of writing it.
    for (const { path, schema } of paths) {
      const values = [
        ...(WRONG[schema.type!] ?? []).map((v) => ['wrong-type', v] as const),
        ...(BAD_FORMAT[schema.format ?? ''] ?? []).map((v) => ['bad-format', v] as const),
      ];
      for (const [category, value] of values) {
        const what = `${k.kind} ${pathText(path)} = ${json(value)}`;
        const codes = [400, 422];
        if (path[0] === 'status') {
          // Only the status subresource writes status; elsewhere status is dropped, as kube does.
          add({
            category,
            what: `${what} (PUT status)`,
            method: 'PUT',
            path: `${objectPath(k)}/status`,
            body: json(setAt(fixture, path, value)),
            expect: codes,
          });
          add({
            category,
            what: `${what} (merge patch status)`,
            method: 'PATCH',
            path: `${objectPath(k)}/status`,
            contentType: MERGE_PATCH,
            body: json(setAt({}, path, value)),
            expect: codes,
          });
          add({
            category,
            what: `${what} (apply status)`,
            method: 'PATCH',
            path: `${objectPath(k)}/status?fieldManager=fuzz&force=true`,
            contentType: APPLY,
            body: yaml.dump(setAt(applyBase, path, value)),
            expect: codes,
          });
          continue;
        }
        add({
          category,
          what: `${what} (create)`,
          method: 'POST',
          path: collectionPath(k),
          body: json(setAt(fresh, path, value)),
          expect: codes,
        });
        add({
          category,
          what: `${what} (update)`,
          method: 'PUT',
          path: objectPath(k),
          body: json(setAt(fixture, path, value)),
          expect: codes,
        });
        add({
          category,
          what: `${what} (merge patch)`,
          method: 'PATCH',
          path: objectPath(k),
          contentType: MERGE_PATCH,
          body: json(setAt({}, path, value)),
          expect: codes,
        });
        const top = String(path[0]);
        const replaced = setAt(fixture, path, value)[top];
        add({
          category,
          what: `${what} (json patch)`,
          method: 'PATCH',
          path: objectPath(k),
          contentType: JSON_PATCH,
          body: json([{ op: 'add', path: `/${top}`, value: replaced }]),
          expect: codes,
        });
        add({
          category,
          what: `${what} (apply)`,
          method: 'PATCH',
          path: `${objectPath(k)}?fieldManager=fuzz&force=true`,
          contentType: APPLY,
          body: yaml.dump(setAt(applyBase, path, value)),
          expect: codes,
        });
      }
    }
    // The top level too: apiVersion, kind, metadata, spec and status of the wrong type.
    for (const [field, values] of Object.entries({
      apiVersion: [1, true, {}, []],
      kind: [1, false, {}, ['SharedSecret']],
      metadata: ['x', 1, [], true],
      spec: ['x', 1, [1], true],
    })) {
      for (const value of values) {
        const what = `${k.kind} ${field} = ${json(value)}`;
        add({
          category: 'wrong-type',
          what: `${what} (create)`,
          method: 'POST',
          path: collectionPath(k),
          body: json({ ...fresh, [field]: value }),
          expect: [400, 422],
        });
        add({
          category: 'wrong-type',
          what: `${what} (update)`,
          method: 'PUT',
          path: objectPath(k),
          body: json({ ...fixture, [field]: value }),
          expect: [400, 422],
        });
      }
    }

    // broken-json: valid documents of every sort, mutated until they do not parse.
    const jsonDocs: [string, string, string, string | undefined][] = [
      ['create', 'POST', collectionPath(k), json(fresh)],
      ['update', 'PUT', objectPath(k), json(fixture)],
      [
        'merge patch',
        'PATCH',
        objectPath(k),
        json({ spec: { description: 'changed' }, metadata: { labels: { a: 'b' } } }),
      ],
      [
        'json patch',
        'PATCH',
        objectPath(k),
        json([
          { op: 'replace', path: '/spec/description', value: 'changed' },
          { op: 'add', path: '/metadata/labels', value: { a: 'b' } },
        ]),
      ],
      ['status update', 'PUT', `${objectPath(k)}/status`, json(fixture)],
      [
        'delete options',
        'DELETE',
        objectPath(k),
        json({
          kind: 'DeleteOptions',
          apiVersion: 'v1',
          propagationPolicy: 'Background',
          preconditions: { uid: fixture.metadata.uid },
        }),
      ],
    ];
    for (const [what, method, path, doc] of jsonDocs) {
      const contentType =
        what === 'merge patch' ? MERGE_PATCH : what === 'json patch' ? JSON_PATCH : 'application/json';
      for (const body of brokenVariants(rng, doc!, 50, (b) => parses(() => JSON.parse(b.toString('utf8'))))) {
        add({
          category: 'broken-json',
          what: `${k.kind} ${what}: ${preview(body)}`,
          method,
          path,
          contentType,
          body,
          expect: [400],
        });
      }
    }

    // broken-yaml: the same in YAML, and as apply patches.
    const yamlDocs: [string, string, string, string, string][] = [
      ['create', 'POST', collectionPath(k), YAML, yaml.dump(fresh)],
      ['update', 'PUT', objectPath(k), YAML, yaml.dump(fixture)],
      ['apply', 'PATCH', `${objectPath(k)}?fieldManager=fuzz`, APPLY, yaml.dump({ ...applyBase, spec: fresh.spec })],
    ];
    for (const [what, method, path, contentType, doc] of yamlDocs) {
      for (const body of brokenVariants(
        rng,
        doc,
        60,
        (b) => parses(() => yaml.load(b.toString('utf8'), { schema: yaml.CORE_SCHEMA })),
        yamlMutations,
      )) {
        add({
          category: 'broken-yaml',
          what: `${k.kind} ${what}: ${preview(body)}`,
          method,
          path,
          contentType,
          body,
          expect: [400],
        });
      }
    }

    // huge: just over the limit, and well over it.
    for (const [size, method, path, contentType] of [
      [MAX_BODY + 1, 'POST', collectionPath(k), 'application/json'],
      [MAX_BODY + 1024 * 1024, 'PUT', objectPath(k), 'application/json'],
      [MAX_BODY + 1, 'PATCH', objectPath(k), MERGE_PATCH],
      [MAX_BODY + 1, 'PATCH', `${objectPath(k)}?fieldManager=fuzz`, APPLY],
      [MAX_BODY + 10, 'DELETE', objectPath(k), 'application/json'],
    ] as const) {
      const body = json({ ...fresh, spec: { ...fresh.spec, description: '' } });
      const padded = body.replace('"description":""', `"description":"${'x'.repeat(size - body.length)}"`);
      add({
        category: 'huge',
        what: `${k.kind} ${method} ${contentType} of ${padded.length} bytes`,
        method,
        path,
        contentType,
        body: padded,
        expect: [413],
      });
    }

    // too-large: under the body limit, over what etcd takes in one request (1.5 MiB): kube answers 413
    // (kubernetes/kubernetes#74600); a 5xx "try again" would have clients retry what can never succeed.
    for (const [size, method, path, contentType] of [
      [1.6, 'POST', collectionPath(k), 'application/json'],
      [2.9, 'POST', collectionPath(k), 'application/json'],
      [2, 'PUT', objectPath(k), 'application/json'],
      [2, 'PATCH', objectPath(k), MERGE_PATCH],
    ] as const) {
      const description = 'x'.repeat(Math.floor(size * 1024 * 1024));
      const body =
        method === 'POST'
          ? { ...fresh, spec: { ...fresh.spec, description } }
          : method === 'PUT'
            ? { ...fixture, spec: { ...fixture.spec, description } }
            : { spec: { description } };
      add({
        category: 'too-large',
        what: `${k.kind} ${method} of a ${size} MiB object`,
        method,
        path,
        contentType,
        body: json(body),
        expect: [413],
      });
    }

    // deep: past the nesting limit in bodies, patches and YAML.
    for (const levels of [1_001, 10_000, 100_000]) {
      const arrays = `${'['.repeat(levels)}${']'.repeat(levels)}`;
      const objects = `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
      const inSpec = (v: string) => json({ ...fresh, spec: { ...fresh.spec, description: '@' } }).replace('"@"', v);
      add({
        category: 'deep',
        what: `${k.kind} create with ${levels} nested arrays`,
        method: 'POST',
        path: collectionPath(k),
        body: inSpec(arrays),
        expect: [400],
      });
      add({
        category: 'deep',
        what: `${k.kind} create with ${levels} nested objects`,
        method: 'POST',
        path: collectionPath(k),
        body: inSpec(objects),
        expect: [400],
      });
      add({
        category: 'deep',
        what: `${k.kind} merge patch with ${levels} nested objects`,
        method: 'PATCH',
        path: objectPath(k),
        contentType: MERGE_PATCH,
        body: `{"spec":{"description":${objects}}}`,
        expect: [400],
      });
      add({
        category: 'deep',
        what: `${k.kind} json patch with ${levels} nested arrays`,
        method: 'PATCH',
        path: objectPath(k),
        contentType: JSON_PATCH,
        body: `[{"op":"add","path":"/spec/description","value":${arrays}}]`,
        expect: [400],
      });
      add({
        category: 'deep',
        what: `${k.kind} YAML create with ${levels} nested flow sequences`,
        method: 'POST',
        path: collectionPath(k),
        contentType: YAML,
        body: `${yaml.dump({ ...fresh, spec: undefined })}spec:\n  description: ${arrays}\n`,
        expect: [400],
      });
      add({
        category: 'deep',
        what: `${k.kind} apply with ${levels} nested flow mappings`,
        method: 'PATCH',
        path: `${objectPath(k)}?fieldManager=fuzz`,
        contentType: APPLY,
        body: `${yaml.dump(applyBase)}spec:\n  description: ${'{a: '.repeat(levels)}1${'}'.repeat(levels)}\n`,
        expect: [400],
      });
      add({
        category: 'deep',
        what: `${k.kind} delete options with ${levels} nested arrays`,
        method: 'DELETE',
        path: objectPath(k),
        body: `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":${arrays}}`,
        expect: [400],
      });
    }

    // alias-bomb: a few sizes of "billion laughs", wherever YAML is read.
    for (const [width, depth] of [
      [10, 9],
      [9, 8],
      [2, 30],
      [50, 5],
    ]) {
      const bomb = aliasBomb(width, depth);
      const withBomb = (doc: Record<string, unknown>, at: 'spec' | 'status') => `${yaml.dump(doc)}${at}:\n${bomb}`;
      add({
        category: 'alias-bomb',
        what: `${k.kind} create with ${width}^${depth} aliases`,
        method: 'POST',
        path: collectionPath(k),
        contentType: YAML,
        body: withBomb({ ...fresh, spec: undefined }, 'spec'),
        expect: [400],
      });
      add({
        category: 'alias-bomb',
        what: `${k.kind} update with ${width}^${depth} aliases`,
        method: 'PUT',
        path: objectPath(k),
        contentType: YAML,
        body: withBomb({ ...fixture, spec: undefined }, 'spec'),
        expect: [400],
      });
      add({
        category: 'alias-bomb',
        what: `${k.kind} apply with ${width}^${depth} aliases`,
        method: 'PATCH',
        path: `${objectPath(k)}?fieldManager=fuzz`,
        contentType: APPLY,
        body: withBomb(applyBase, 'spec'),
        expect: [400],
      });
      add({
        category: 'alias-bomb',
        what: `${k.kind} status apply with ${width}^${depth} aliases`,
        method: 'PATCH',
        path: `${objectPath(k)}/status?fieldManager=fuzz`,
        contentType: APPLY,
        body: withBomb(applyBase, 'status'),
        expect: [400],
      });
      add({
        category: 'alias-bomb',
        what: `${k.kind} delete options with ${width}^${depth} aliases`,
        method: 'DELETE',
        path: objectPath(k),
        contentType: YAML,
        body: `kind: DeleteOptions\napiVersion: v1\npreconditions:\n${bomb}`,
        expect: [400],
      });
    }

    // json-patch: documents that are not patches, and operations that cannot apply.
    const ops: [string, unknown, number[]][] = [
      ['an object', { op: 'add', path: '/spec/description', value: 'x' }, [400]],
      ['a string', 'add', [400]],
      ['a number', 5, [400]],
      ['null', null, [400]],
      ['a list of numbers', [1, 2], [400, 422]],
      ['a list of strings', ['add'], [400, 422]],
      ['an operation without op', [{ path: '/spec/description', value: 'x' }], [400, 422]],
      ['an unknown op', [{ op: 'frobnicate', path: '/spec/description', value: 'x' }], [400, 422]],
      ['an op that is a number', [{ op: 1, path: '/spec/description', value: 'x' }], [400, 422]],
      ['an add without path', [{ op: 'add', value: 'x' }], [400, 422]],
      ['an add without value', [{ op: 'add', path: '/spec/description' }], [400, 422]],
      ['a path that is not a pointer', [{ op: 'add', path: 'spec/description', value: 'x' }], [400, 422]],
      ['a path that is a number', [{ op: 'add', path: 7, value: 'x' }], [400, 422]],
      ['an add under a missing parent', [{ op: 'add', path: '/nope/deeper/x', value: 'x' }], [400, 422]],
      ['a remove of a missing field', [{ op: 'remove', path: '/spec/nonexistent' }], [400, 422]],
      ['a replace of a missing field', [{ op: 'replace', path: '/spec/nonexistent/x', value: 1 }], [400, 422]],
      [
        'a move from a missing field',
        [{ op: 'move', from: '/spec/nonexistent', path: '/spec/description' }],
        [400, 422],
      ],
      [
        'a copy from a missing field',
        [{ op: 'copy', from: '/spec/nonexistent', path: '/spec/description' }],
        [400, 422],
      ],
      ['a move without from', [{ op: 'move', path: '/spec/description' }], [400, 422]],
      ['a failing test', [{ op: 'test', path: '/metadata/name', value: 'not-the-name' }], [400, 409, 422]],
      ['a test of a missing field', [{ op: 'test', path: '/spec/nonexistent', value: 'x' }], [400, 409, 422]],
      ['an index past the end', [{ op: 'add', path: '/metadata/finalizers/99', value: 'x' }], [400, 422]],
      ['an index with a leading zero', [{ op: 'replace', path: '/metadata/finalizers/00', value: 'x' }], [400, 422]],
      ['a negative index', [{ op: 'add', path: '/metadata/finalizers/-1', value: 'x' }], [400, 422]],
      ['a remove of the end marker', [{ op: 'remove', path: '/metadata/finalizers/-' }], [400, 422]],
      ['a remove of the root', [{ op: 'remove', path: '' }], [400, 422]],
      ['a replace of the root by a string', [{ op: 'replace', path: '', value: 'x' }], [400, 422]],
      ['a change of the name', [{ op: 'replace', path: '/metadata/name', value: 'renamed' }], [400, 422]],
      [
        'a change of the uid',
        [{ op: 'replace', path: '/metadata/uid', value: '00000000-0000-0000-0000-000000000000' }],
        [400, 409, 422],
      ],
      ['a change of the kind', [{ op: 'replace', path: '/kind', value: 'Other' }], [400, 422]],
      ['a change of the apiVersion', [{ op: 'replace', path: '/apiVersion', value: `${GROUP}/v2` }], [400, 422]],
      ['a stale resourceVersion', [{ op: 'replace', path: '/metadata/resourceVersion', value: '1' }], [409]],
      ['a bad resourceVersion', [{ op: 'replace', path: '/metadata/resourceVersion', value: 'abc' }], [400, 409, 422]],
      ['a finalizer list that is a string', [{ op: 'add', path: '/metadata/finalizers', value: 'x' }], [400, 422]],
      [
        '10,001 passing tests',
        Array.from({ length: 10_001 }, () => ({ op: 'test', path: '/metadata/name', value: TARGET })),
        [413],
      ],
    ];
    for (const [what, patch, codes] of ops) {
      add({
        category: 'json-patch',
        what: `${k.kind}: ${what}`,
        method: 'PATCH',
        path: objectPath(k),
        contentType: JSON_PATCH,
        body: json(patch),
        expect: codes,
      });
      // /status takes only status from the patched object (kube too): a new uid there changes nothing.
      if (what === 'a change of the uid') continue;
      add({
        category: 'json-patch',
        what: `${k.kind} status: ${what}`,
        method: 'PATCH',
        path: `${objectPath(k)}/status`,
        contentType: JSON_PATCH,
        body: json(patch),
        expect: codes,
      });
    }

    // merge-patch: not an object, or a change that may not be made.
    const merges: [string, string, number[]][] = [
      ['a list', '[{"spec":{}}]', [400, 422]],
      ['a string', '"spec"', [400, 422]],
      ['a number', '5', [400, 422]],
      ['null', 'null', [400, 422]],
      ['true', 'true', [400, 422]],
      ['a new name', json({ metadata: { name: 'renamed' } }), [400, 422]],
      ['a new uid', json({ metadata: { uid: '00000000-0000-0000-0000-000000000000' } }), [400, 409, 422]],
      ['another kind', json({ kind: 'Other' }), [400, 422]],
      ['another version', json({ apiVersion: `${GROUP}/v2` }), [400, 422]],
      ['no metadata', json({ metadata: null }), [400, 422]],
      ['a stale resourceVersion', json({ metadata: { resourceVersion: '1' }, spec: { description: 'x' } }), [409]],
      [
        'a resourceVersion that is not a number',
        json({ metadata: { resourceVersion: 'abc' }, spec: { description: 'x' } }),
        [400, 409, 422],
      ],
      ['a bad label', json({ metadata: { labels: { 'bad key!': 'v' } } }), [422]],
      ['a bad label value', json({ metadata: { labels: { ok: 'bad value!' } } }), [422]],
      ['a bad finalizer', json({ metadata: { finalizers: ['bad finalizer'] } }), [422]],
      [
        'an owner reference without uid',
        json({ metadata: { ownerReferences: [{ apiVersion: API_VERSION, kind: 'Cluster', name: 'x' }] } }),
        [422],
      ],
      [
        'a managedFields entry of an unknown operation',
        json({
          metadata: { managedFields: [{ manager: 'm', operation: 'Frob', fieldsType: 'FieldsV1', fieldsV1: {} }] },
        }),
        [400, 422],
      ],
    ];
    // (A cluster-scoped object's namespace is cleared, as kube does: only a namespaced one can be moved.)
    if (k.namespaced) merges.push(['a new namespace', json({ metadata: { namespace: 'elsewhere' } }), [400, 404, 422]]);
    for (const [what, body, codes] of merges) {
      add({
        category: 'merge-patch',
        what: `${k.kind}: ${what}`,
        method: 'PATCH',
        path: objectPath(k),
        contentType: MERGE_PATCH,
        body,
        expect: codes,
      });
    }

    // apply-patch: a configuration that cannot be applied.
    const applies: [string, string, string, number[]][] = [
      ['no fieldManager', objectPath(k), yaml.dump({ ...applyBase, spec: fresh.spec }), [400, 422]],
      [
        'an empty fieldManager',
        `${objectPath(k)}?fieldManager=`,
        yaml.dump({ ...applyBase, spec: fresh.spec }),
        [400, 422],
      ],
      [
        'a fieldManager of 129 characters',
        `${objectPath(k)}?fieldManager=${'m'.repeat(129)}`,
        yaml.dump({ ...applyBase, spec: fresh.spec }),
        [400, 422],
      ],
      [
        'another name',
        `${objectPath(k)}?fieldManager=fuzz`,
        yaml.dump({ ...applyBase, metadata: { ...applyBase.metadata, name: 'other' }, spec: fresh.spec }),
        [400, 422],
      ],
      [
        'another kind',
        `${objectPath(k)}?fieldManager=fuzz`,
        yaml.dump({ ...applyBase, kind: 'Other', spec: fresh.spec }),
        [400, 422],
      ],
      [
        'another version',
        `${objectPath(k)}?fieldManager=fuzz`,
        yaml.dump({ ...applyBase, apiVersion: `${GROUP}/v2`, spec: fresh.spec }),
        [400, 422],
      ],
      ['a list', `${objectPath(k)}?fieldManager=fuzz`, '- a\n- b\n', [400, 422]],
      ['a string', `${objectPath(k)}?fieldManager=fuzz`, 'just a string\n', [400, 422]],
      ['an empty document', `${objectPath(k)}?fieldManager=fuzz`, '', [400, 422]],
      [
        'managedFields',
        `${objectPath(k)}?fieldManager=fuzz`,
        yaml.dump({
          ...applyBase,
          metadata: { ...applyBase.metadata, managedFields: [{ manager: 'x', operation: 'Apply' }] },
          spec: fresh.spec,
        }),
        [400, 422],
      ],
      [
        'a stale resourceVersion',
        `${objectPath(k)}?fieldManager=fuzz`,
        yaml.dump({ ...applyBase, metadata: { ...applyBase.metadata, resourceVersion: '1' }, spec: fresh.spec }),
        [409],
      ],
      [
        'an invalid name that would be created',
        `${collectionPath(k)}/Not_A_Name?fieldManager=fuzz`,
        yaml.dump({ ...applyBase, metadata: { ...applyBase.metadata, name: 'Not_A_Name' }, spec: fresh.spec }),
        [400, 422],
      ],
      [
        'dryRun=maybe',
        `${objectPath(k)}?fieldManager=fuzz&dryRun=maybe`,
        yaml.dump({ ...applyBase, spec: fresh.spec }),
        [400, 422],
      ],
    ];
    for (const [what, path, body, codes] of applies) {
      add({
        category: 'apply-patch',
        what: `${k.kind}: ${what}`,
        method: 'PATCH',
        path,
        contentType: APPLY,
        body,
        expect: codes,
      });
    }

    // bad-object: the wrong kind, version, name or namespace, or no object at all.
    const other = all.find((o) => o.kind !== k.kind)!;
    const objects: [string, string, string, unknown, number[]][] = [
      ['create of another kind', 'POST', collectionPath(k), other.valid('fuzz-new'), [400, 422]],
      ['create with another version', 'POST', collectionPath(k), { ...fresh, apiVersion: `${GROUP}/v2` }, [400, 422]],
      ['create with the core version', 'POST', collectionPath(k), { ...fresh, apiVersion: 'v1' }, [400, 422]],
      ['create without metadata', 'POST', collectionPath(k), { ...fresh, metadata: undefined }, [400, 422]],
      [
        'create without a name',
        'POST',
        collectionPath(k),
        { ...fresh, metadata: { ...fresh.metadata, name: undefined } },
        [400, 422],
      ],
      [
        'create with an invalid name',
        'POST',
        collectionPath(k),
        { ...fresh, metadata: { ...fresh.metadata, name: 'Not A Name' } },
        [400, 422],
      ],
      [
        'create with a name of 254 characters',
        'POST',
        collectionPath(k),
        { ...fresh, metadata: { ...fresh.metadata, name: 'a'.repeat(254) } },
        [400, 422],
      ],
      [
        'create with an invalid generateName',
        'POST',
        collectionPath(k),
        { ...fresh, metadata: { ...fresh.metadata, name: undefined, generateName: 'Bad_' } },
        [400, 422],
      ],
      [
        'create with a resourceVersion',
        'POST',
        collectionPath(k),
        { ...fresh, metadata: { ...fresh.metadata, resourceVersion: '5' } },
        [400, 422],
      ],
      [
        'create with a bad label',
        'POST',
        collectionPath(k),
        { ...fresh, metadata: { ...fresh.metadata, labels: { '-bad': 'x' } } },
        [422],
      ],
      [
        'create with an annotation too big',
        'POST',
        collectionPath(k),
        { ...fresh, metadata: { ...fresh.metadata, annotations: { big: 'x'.repeat(262_145) } } },
        [422],
      ],
      [
        'update with another name',
        'PUT',
        objectPath(k),
        { ...fixture, metadata: { ...fixture.metadata, name: 'renamed' } },
        [400, 422],
      ],
      [
        'update without resourceVersion',
        'PUT',
        objectPath(k),
        { ...fixture, metadata: { ...fixture.metadata, resourceVersion: undefined } },
        [400, 409, 422],
      ],
      [
        'update with a stale resourceVersion',
        'PUT',
        objectPath(k),
        { ...fixture, metadata: { ...fixture.metadata, resourceVersion: '1' } },
        [409],
      ],
      [
        'update with another uid',
        'PUT',
        objectPath(k),
        { ...fixture, metadata: { ...fixture.metadata, uid: '00000000-0000-0000-0000-000000000000' } },
        [400, 409, 422],
      ],
      ['update of another kind', 'PUT', objectPath(k), { ...fixture, kind: other.kind }, [400, 422]],
      [
        'update of a missing object',
        'PUT',
        objectPath(k, 'missing'),
        { ...fixture, metadata: { ...fixture.metadata, name: 'missing' } },
        [404, 409, 422],
      ],
      ['a list as body', 'POST', collectionPath(k), [fresh], [400]],
      ['a string as body', 'POST', collectionPath(k), 'just a string', [400]],
      ['a number as body', 'POST', collectionPath(k), 42, [400]],
      ['null as body', 'POST', collectionPath(k), null, [400]],
      ['an empty object', 'POST', collectionPath(k), {}, [400, 422]],
      ['a list as update', 'PUT', objectPath(k), [fixture], [400]],
    ];
    if (k.namespaced) {
      objects.push([
        'create with another namespace in the body',
        'POST',
        collectionPath(k),
        { ...fresh, metadata: { ...fresh.metadata, namespace: 'elsewhere' } },
        [400, 422],
      ]);
      objects.push([
        'create in an invalid namespace',
        'POST',
        collectionPath(k, 'Not_A_Namespace'),
        { ...fresh, metadata: { name: 'fuzz-new', namespace: 'Not_A_Namespace' } },
        [400, 404, 422],
      ]);
      objects.push([
        'create in a namespace of 64 characters',
        'POST',
        collectionPath(k, 'n'.repeat(64)),
        { ...fresh, metadata: { name: 'fuzz-new' } },
        [400, 404, 422],
      ]);
    }
    for (const [what, method, path, body, codes] of objects) {
      add({
        category: 'bad-object',
        what: `${k.kind}: ${what}`,
        method,
        path,
        body: typeof body === 'string' ? json(body) : json(body),
        expect: codes,
      });
    }

    // delete-options: malformed, or preconditions that do not hold (nothing may be deleted).
    const deletes: [string, unknown, number[]][] = [
      ['another kind', { kind: 'CreateOptions', apiVersion: 'v1' }, [400]],
      ['a list', [{ kind: 'DeleteOptions' }], [400]],
      ['a string', 'Background', [400]],
      ['propagationPolicy 5', { propagationPolicy: 5 }, [400, 422]],
      ['propagationPolicy Sometimes', { propagationPolicy: 'Sometimes' }, [400, 422]],
      ['gracePeriodSeconds "x"', { gracePeriodSeconds: 'x' }, [400, 422]],
      ['gracePeriodSeconds 1.5', { gracePeriodSeconds: 1.5 }, [400, 422]],
      ['orphanDependents "yes"', { orphanDependents: 'yes' }, [400, 422]],
      ['orphanDependents with propagationPolicy', { orphanDependents: true, propagationPolicy: 'Orphan' }, [400, 422]],
      ['dryRun ["bad"]', { dryRun: ['bad'] }, [400, 422]],
      ['dryRun 5', { dryRun: 5 }, [400, 422]],
      ['preconditions "x"', { preconditions: 'x' }, [400, 422]],
      [
        'a uid precondition that does not hold',
        { preconditions: { uid: '00000000-0000-0000-0000-000000000000' } },
        [409],
      ],
      ['a resourceVersion precondition that does not hold', { preconditions: { resourceVersion: '1' } }, [409]],
    ];
    for (const [what, body, codes] of deletes) {
      add({
        category: 'delete-options',
        what: `${k.kind}: ${what}`,
        method: 'DELETE',
        path: objectPath(k),
        body: json(body),
        expect: codes,
      });
      add({
        category: 'delete-options',
        what: `${k.kind} collection: ${what}`,
        method: 'DELETE',
        path: collectionPath(k),
        body: json(body),
        expect: codes.includes(409) ? [400, 409, 422] : codes,
      });
    }
  }

  const secrets = all.find((k) => k.kind === 'SharedSecret')!;
  const clusters = all.find((k) => k.kind === 'Cluster')!;
  const listPaths = [collectionPath(secrets), `${GROUP_PATH}/${secrets.plural}`, collectionPath(clusters)];

  // label-selector and field-selector: hand-picked, then random ones the server's parsers refuse.
  const labelSelectors = [
    'a in (',
    'a in',
    '(',
    ')',
    'a=b c',
    'a=(b)',
    '!',
    'a!',
    'a!!b',
    '=b',
    '==b',
    '!=b',
    'a=b,',
    ',a=b',
    'a=b,,c=d',
    '-a=b',
    'a-=b',
    'a/b/c=d',
    '/a=b',
    'a/=b',
    `${'k'.repeat(64)}=v`,
    `a=${'v'.repeat(64)}`,
    `${'p'.repeat(254)}/a=b`,
    'a=b!',
    'a=-b',
    'a=b-',
    'a=.b',
    'a>b',
    'a<b',
    'a>1.5',
    'a<-',
    'a>',
    'a<',
    'a gt 1',
    'a in (b c)',
    'a in (b,c',
    'a in b,c)',
    'a notin b',
    'a exists',
    'a=é',
    'é=a',
    'a=b c=d',
    'a =b =c',
    'A_B-=x',
    'a=${x}',
    'a in ((b))',
    'a=%',
    'a%=b',
    '*',
    'a=*',
    '!a=b',
    '!a,!',
    'a=b=c',
    'a==b==c',
  ];
  const fieldSelectors = [
    'spec.displayName=x',
    'status.phase=Running',
    'metadata.uid=x',
    'metadata.labels=x',
    'metadata.name>x',
    'metadata.name<x',
    'metadata.name in (a)',
    '=x',
    '==x',
    '!=x',
    'metadata.name',
    'metadata.name!',
    'metadata.name=x=y',
    'nope',
    'metadata.name=a,spec.x=b',
    'metadata.namespace=a,status.y=z',
    'x.y.z=1',
    'metadata.name=\\',
    'metadata.name=a\\b',
    'metadata.name=a\\',
  ];
  const labelVocabulary = [
    'a',
    'b',
    'k8s.io/a',
    'x/y/z',
    '=',
    '==',
    '!=',
    ' in ',
    ' notin ',
    '(',
    ')',
    ',',
    '!',
    '>',
    '<',
    '1',
    '-1',
    '1.5',
    '-',
    '_',
    '.',
    ' ',
    'é',
    '%',
    '*',
    '"',
    'A',
    `${'k'.repeat(64)}`,
    '/',
    '\\',
    '\t',
    '\n',
  ];
  const fieldVocabulary = [
    'metadata.name',
    'metadata.namespace',
    'spec.x',
    'status.phase',
    'metadata.uid',
    '=',
    '==',
    '!=',
    ',',
    'x',
    '\\',
    '(',
    ')',
    '!',
    ' ',
    'in',
    '>',
    '<',
    '=\\',
    '\\,',
    'é',
  ];
  const refuses = (parse: (s: string) => unknown) => (s: string) => !parses(() => parse(s));
  labelSelectors.push(...randomStrings(rng, labelVocabulary, 300, refuses(parseLabelSelector)));
  fieldSelectors.push(...randomStrings(rng, fieldVocabulary, 200, refuses(parseSupportedFieldSelector)));
  for (const s of labelSelectors)
    if (!refuses(parseLabelSelector)(s)) throw new Error(`generator: label selector ${JSON.stringify(s)} is valid`);
  for (const s of fieldSelectors)
    if (!refuses(parseSupportedFieldSelector)(s))
      throw new Error(`generator: field selector ${JSON.stringify(s)} is valid`);
  const selectorCases = (category: string, param: string, selectors: string[]) => {
    for (const s of selectors) {
      const q = `${param}=${encodeURIComponent(s)}`;
      add({
        category,
        what: `list ${JSON.stringify(s)}`,
        method: 'GET',
        path: `${rng.pick(listPaths)}?${q}`,
        expect: [400],
      });
      add({
        category,
        what: `watch ${JSON.stringify(s)}`,
        method: 'GET',
        path: `${rng.pick(listPaths)}?watch=true&${q}`,
        expect: [400],
      });
      add({
        category,
        what: `deletecollection ${JSON.stringify(s)}`,
        method: 'DELETE',
        path: `${rng.pick([collectionPath(secrets), collectionPath(clusters)])}?${q}`,
        expect: [400],
      });
    }
  };
  selectorCases('label-selector', 'labelSelector', labelSelectors);
  selectorCases('field-selector', 'fieldSelector', fieldSelectors);

  // query: values the server must refuse before doing anything.
  for (const k of all) {
    const coll = collectionPath(k);
    const obj = objectPath(k);
    const fresh = json(k.valid('fuzz-new'));
    const merge = json({ spec: { description: 'changed' } });
    const queries: [string, string, string, string | undefined, string | undefined, number[]][] = [
      ['list limit=abc', 'GET', `${coll}?limit=abc`, undefined, undefined, [400]],
      ['list limit=1.5', 'GET', `${coll}?limit=1.5`, undefined, undefined, [400]],
      ['list limit=1e3', 'GET', `${coll}?limit=1e3`, undefined, undefined, [400]],
      ['list limit=0x10', 'GET', `${coll}?limit=0x10`, undefined, undefined, [400]],
      ['list limit=--1', 'GET', `${coll}?limit=--1`, undefined, undefined, [400]],
      ['get resourceVersion=abc', 'GET', `${obj}?resourceVersion=abc`, undefined, undefined, [400]],
      ['get resourceVersion=-1', 'GET', `${obj}?resourceVersion=-1`, undefined, undefined, [400]],
      ['get resourceVersion=1.5', 'GET', `${obj}?resourceVersion=1.5`, undefined, undefined, [400]],
      ['list resourceVersion=abc', 'GET', `${coll}?resourceVersion=abc`, undefined, undefined, [400]],
      ['list resourceVersion= 1', 'GET', `${coll}?resourceVersion=%201`, undefined, undefined, [400]],
      [
        'list resourceVersionMatch=Bogus',
        'GET',
        `${coll}?resourceVersion=1&resourceVersionMatch=Bogus`,
        undefined,
        undefined,
        [400, 422],
      ],
      [
        'list resourceVersionMatch without resourceVersion',
        'GET',
        `${coll}?resourceVersionMatch=NotOlderThan`,
        undefined,
        undefined,
        [400, 422],
      ],
      [
        'list resourceVersionMatch=Exact with 0',
        'GET',
        `${coll}?resourceVersion=0&resourceVersionMatch=Exact`,
        undefined,
        undefined,
        [400, 422],
      ],
      ['list continue=garbage', 'GET', `${coll}?limit=1&continue=garbage`, undefined, undefined, [400, 410]],
      [
        'list continue of base64 garbage',
        'GET',
        `${coll}?limit=1&continue=${Buffer.from('{"v":"x"}').toString('base64')}`,
        undefined,
        undefined,
        [400, 410],
      ],
      [
        'list continue with resourceVersion',
        'GET',
        `${coll}?continue=abc&resourceVersion=1`,
        undefined,
        undefined,
        [400, 422],
      ],
      ['list sendInitialEvents', 'GET', `${coll}?sendInitialEvents=true`, undefined, undefined, [400, 422]],
      ['watch timeoutSeconds=x', 'GET', `${coll}?watch=true&timeoutSeconds=x`, undefined, undefined, [400]],
      ['watch timeoutSeconds=1.5', 'GET', `${coll}?watch=true&timeoutSeconds=1.5`, undefined, undefined, [400]],
      ['watch resourceVersion=abc', 'GET', `${coll}?watch=true&resourceVersion=abc`, undefined, undefined, [400]],
      [
        'watch sendInitialEvents without resourceVersionMatch',
        'GET',
        `${coll}?watch=true&sendInitialEvents=true`,
        undefined,
        undefined,
        [400, 422],
      ],
      [
        'watch resourceVersionMatch=Exact',
        'GET',
        `${coll}?watch=true&sendInitialEvents=true&resourceVersionMatch=Exact`,
        undefined,
        undefined,
        [400, 422],
      ],
      ['create fieldValidation=Bogus', 'POST', `${coll}?fieldValidation=Bogus`, fresh, undefined, [400, 422]],
      ['create fieldValidation=strict', 'POST', `${coll}?fieldValidation=strict`, fresh, undefined, [400, 422]],
      ['create dryRun=bad', 'POST', `${coll}?dryRun=bad`, fresh, undefined, [400, 422]],
      ['create dryRun=true', 'POST', `${coll}?dryRun=true`, fresh, undefined, [400, 422]],
      ['create dryRun=All&dryRun=x', 'POST', `${coll}?dryRun=All&dryRun=x`, fresh, undefined, [400, 422]],
      [
        'create fieldManager of 129 characters',
        'POST',
        `${coll}?fieldManager=${'m'.repeat(129)}`,
        fresh,
        undefined,
        [400, 422],
      ],
      [
        'create fieldManager with a control character',
        'POST',
        `${coll}?fieldManager=a%07b`,
        fresh,
        undefined,
        [400, 422],
      ],
      [
        'update fieldValidation=Bogus',
        'PUT',
        `${obj}?fieldValidation=Bogus`,
        json(fixtures[k.kind]),
        undefined,
        [400, 422],
      ],
      ['update dryRun=bad', 'PUT', `${obj}?dryRun=bad`, json(fixtures[k.kind]), undefined, [400, 422]],
      ['merge patch force=true', 'PATCH', `${obj}?force=true`, merge, MERGE_PATCH, [400, 422]],
      ['merge patch fieldValidation=Bogus', 'PATCH', `${obj}?fieldValidation=Bogus`, merge, MERGE_PATCH, [400, 422]],
      ['merge patch dryRun=bad', 'PATCH', `${obj}?dryRun=bad`, merge, MERGE_PATCH, [400, 422]],
      ['delete dryRun=bad', 'DELETE', `${obj}?dryRun=bad`, undefined, undefined, [400, 422]],
      ['delete propagationPolicy=Bogus', 'DELETE', `${obj}?propagationPolicy=Bogus`, undefined, undefined, [400, 422]],
      [
        'delete propagationPolicy=foreground',
        'DELETE',
        `${obj}?propagationPolicy=foreground`,
        undefined,
        undefined,
        [400, 422],
      ],
      ['delete gracePeriodSeconds=abc', 'DELETE', `${obj}?gracePeriodSeconds=abc`, undefined, undefined, [400, 422]],
      ['delete gracePeriodSeconds=1.5', 'DELETE', `${obj}?gracePeriodSeconds=1.5`, undefined, undefined, [400, 422]],
      [
        'delete orphanDependents with propagationPolicy',
        'DELETE',
        `${obj}?orphanDependents=true&propagationPolicy=Orphan`,
        undefined,
        undefined,
        [400, 422],
      ],
      ['deletecollection dryRun=bad', 'DELETE', `${coll}?dryRun=bad`, undefined, undefined, [400, 422]],
      [
        'deletecollection propagationPolicy=Bogus',
        'DELETE',
        `${coll}?propagationPolicy=Bogus`,
        undefined,
        undefined,
        [400, 422],
      ],
      ['deletecollection limit=abc', 'DELETE', `${coll}?limit=abc&dryRun=x`, undefined, undefined, [400, 422]],
      ['get timeout=abc', 'GET', `${obj}?timeout=abc`, undefined, undefined, [400]],
      ['create timeout=-5s', 'POST', `${coll}?timeout=-5s&dryRun=bad`, fresh, undefined, [400, 422]],
    ];
    for (const [what, method, path, body, contentType, codes] of queries)
      add({ category: 'query', what: `${k.kind}: ${what}`, method, path, body, contentType, expect: codes });
  }

  // path and method: what is not there, and verbs a path does not have.
  const s = collectionPath(secrets);
  const paths: [string, string, number[]][] = [
    ['GET', `${GROUP_PATH}/foos`, [404]],
    ['POST', `${GROUP_PATH}/foos`, [404, 405]],
    ['DELETE', `${GROUP_PATH}/namespaces/${NS}/foos/x`, [404, 405]],
    ['GET', `/apis/example.com/v1/bars`, [404]],
    ['GET', `/apis/${GROUP}/v2/sharedsecrets`, [404]],
    ['GET', `/apis/${GROUP}/v2`, [404]],
    ['GET', `/apis/example.com`, [404]],
    ['GET', `/api/v1/pods`, [404]],
    ['GET', `/api/v1/namespaces/Not_Valid`, [404]],
    ['GET', `/api/v2`, [404]],
    ['GET', `/nonexistent`, [404]],
    ['GET', `/apis/${GROUP}/v1/sharedsecrets/x`, [404]],
    ['GET', `${GROUP_PATH}/namespaces/${NS}/clusters`, [404]],
    ['GET', `${GROUP_PATH}/namespaces/${NS}/clusters/${TARGET}`, [404]],
    ['GET', `${s}/${TARGET}/unknownsub`, [404]],
    ['GET', `${s}/${TARGET}/status/extra`, [404]],
    ['GET', `${s}/${TARGET}/status/extra/more`, [404]],
    ['PUT', `${s}/${TARGET}/status/extra`, [404, 405]],
    ['GET', `${s}/missing`, [404]],
    ['GET', `${s}/%2F`, [400, 404]],
    ['GET', `${s}/a%2Fb`, [400, 404]],
    ['GET', `${s}/${TARGET}%2Fstatus`, [400, 404]],
    ['GET', `${s}/%00`, [404]],
    ['GET', `${s}/a%00b`, [404]],
    ['GET', `${s}/%ZZ`, [400, 404]],
    ['GET', `${s}/%`, [400, 404]],
    ['GET', `${s}/${'a'.repeat(300)}`, [404]],
    ['GET', `${s}/UPPER`, [404]],
    ['GET', `${s}/%C3%A9`, [404]],
    ['GET', `${s}/%FF%FE`, [400, 404]],
    ['GET', `${s}/a%20b`, [404]],
    ['DELETE', `${s}/missing`, [404]],
    ['DELETE', `${s}/a%2Fb`, [400, 404]],
    ['DELETE', `${s}/%ZZ`, [400, 404]],
    ['PATCH', `${s}/UPPER`, [404, 415]],
    ['GET', `${GROUP_PATH}/namespaces/%2F/sharedsecrets/x`, [400, 404]],
    ['GET', `${GROUP_PATH}/namespaces/Not_Valid/sharedsecrets/x`, [404]],
    ['GET', `${GROUP_PATH}/namespaces//sharedsecrets/x`, [404]],
    ['GET', `${GROUP_PATH}/projects/missing/importvirtualcluster`, [404, 405]],
    ['GET', `${GROUP_PATH}/directclusterendpointtokens/x`, [404, 405]],
    // No PUT or PATCH route on a collection: 405 MethodNotAllowed, and nothing is written.
    ['PUT', `${s}`, [405]],
    ['PATCH', `${s}`, [405]],
    ['POST', `${s}/${TARGET}`, [405]],
    ['POST', `${s}/${TARGET}/status`, [405]],
    ['DELETE', `${s}/${TARGET}/status`, [405]],
    ['PUT', `${GROUP_PATH}/sharedsecrets`, [405]],
    ['POST', `${GROUP_PATH}/sharedsecrets`, [405]],
    ['DELETE', `${GROUP_PATH}/sharedsecrets`, [405]],
    ['PUT', `${collectionPath(clusters)}`, [405]],
    ['POST', `${objectPath(clusters)}`, [405]],
    ['PUT', `${GROUP_PATH}/directclusterendpointtokens`, [405]],
    ['DELETE', `${GROUP_PATH}/directclusterendpointtokens`, [405]],
    ['GET', `${GROUP_PATH}/directclusterendpointtokens`, [405]],
  ];
  for (const p of [
    '/apis',
    '/api',
    `/apis/${GROUP}`,
    GROUP_PATH,
    '/version',
    '/openapi/v2',
    '/openapi/v3',
    `/openapi/v3/apis/${GROUP}/v1`,
    '/healthz',
    '/livez',
    '/readyz',
    '/api/v1/namespaces/fuzz',
    '/.well-known/openid-configuration',
    '/openid/v1/jwks',
  ]) {
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) paths.push([m, p, [405]]);
  }
  for (const m of ['OPTIONS', 'TRACE', 'PROPFIND', 'MKCOL', 'LOCK', 'PURGE']) {
    paths.push([m, s, [405]], [m, `${s}/${TARGET}`, [405]], [m, '/apis', [405]]);
  }
  for (const [method, path, codes] of paths) {
    const body = ['PUT', 'POST', 'PATCH'].includes(method) ? json(secrets.valid('fuzz-new')) : undefined;
    add({
      category:
        ['OPTIONS', 'TRACE', 'PROPFIND', 'MKCOL', 'LOCK', 'PURGE'].includes(method) || codes.includes(405)
          ? 'method'
          : 'path',
      what: `${method} ${path.slice(0, 120)}`,
      method,
      path,
      body,
      contentType: method === 'PATCH' ? MERGE_PATCH : undefined,
      expect: codes,
    });
  }

  // media-type: bodies and answers in types the server does not speak.
  const target = objectPath(secrets);
  const fresh = json(secrets.valid('fuzz-new'));
  const media: [string, string, string, string | undefined, Record<string, string>, number[]][] = [
    ['text/plain create', 'POST', s, fresh, { 'Content-Type': 'text/plain' }, [415]],
    ['application/xml create', 'POST', s, '<a/>', { 'Content-Type': 'application/xml' }, [415]],
    ['protobuf create', 'POST', s, fresh, { 'Content-Type': 'application/vnd.kubernetes.protobuf' }, [415]],
    ['form create', 'POST', s, 'a=b', { 'Content-Type': 'application/x-www-form-urlencoded' }, [415]],
    [
      'gzip encoded create',
      'POST',
      s,
      'not gzip',
      { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      [400, 415],
    ],
    [
      'brotli encoded create',
      'POST',
      s,
      fresh,
      { 'Content-Type': 'application/json', 'Content-Encoding': 'br' },
      [400, 415],
    ],
    [
      'unknown encoding create',
      'POST',
      s,
      fresh,
      { 'Content-Type': 'application/json', 'Content-Encoding': 'x-fuzz' },
      [400, 415],
    ],
    ['text/plain update', 'PUT', target, fresh, { 'Content-Type': 'text/plain' }, [415]],
    ['application/json patch', 'PATCH', target, '{}', { 'Content-Type': 'application/json' }, [415]],
    [
      'strategic merge patch',
      'PATCH',
      target,
      '{}',
      { 'Content-Type': 'application/strategic-merge-patch+json' },
      [415],
    ],
    ['text/plain patch', 'PATCH', target, '{}', { 'Content-Type': 'text/plain' }, [415]],
    ['patch without a content type', 'PATCH', target, '{}', {}, [415]],
    ['Accept image/png', 'GET', target, undefined, { Accept: 'image/png' }, [406]],
    ['Accept protobuf', 'GET', target, undefined, { Accept: 'application/vnd.kubernetes.protobuf' }, [406]],
    ['Accept text/html list', 'GET', s, undefined, { Accept: 'text/html' }, [406]],
    [
      'Accept a Table of another group',
      'GET',
      s,
      undefined,
      { Accept: 'application/json;as=Table;v=v1;g=example.com' },
      [406],
    ],
    [
      'Accept a Table of another version',
      'GET',
      s,
      undefined,
      { Accept: 'application/json;as=Table;v=v9;g=meta.k8s.io' },
      [406],
    ],
    [
      'Accept something else',
      'GET',
      s,
      undefined,
      { Accept: 'application/json;as=Something;v=v1;g=meta.k8s.io' },
      [406],
    ],
    ['Accept image/png create', 'POST', s, fresh, { Accept: 'image/png', 'Content-Type': 'application/json' }, [406]],
  ];
  for (const [what, method, path, body, headers, codes] of media) {
    add({
      category: 'media-type',
      what,
      method,
      path,
      body,
      headers,
      contentType: headers['Content-Type'],
      expect: codes,
    });
  }

  // auth: no or wrong credentials, on reads and writes alike.
  const authHeaders = [
    'Bearer wrong-token',
    'Bearer ',
    'Bearer',
    'Basic dXNlcjpwYXNz',
    'bearer',
    'Token abc',
    'Bearer a b',
    `Bearer ${'x'.repeat(4096)}`,
    'Bearer \u00e9',
    'Negotiate abc',
  ];
  const authTargets: [string, string][] = [
    ['GET', s],
    ['GET', target],
    ['POST', s],
    ['PUT', target],
    ['DELETE', target],
    ['DELETE', s],
    ['GET', `${s}?watch=true`],
    ['GET', '/apis'],
    ['GET', '/openapi/v2'],
  ];
  for (const [method, path] of authTargets) {
    const body = ['PUT', 'POST'].includes(method) ? fresh : undefined;
    add({
      category: 'auth',
      what: `${method} ${path} without credentials`,
      method,
      path,
      body,
      auth: 'none',
      expect: [401],
    });
    for (const h of authHeaders)
      add({
        category: 'auth',
        what: `${method} ${path} with ${JSON.stringify(h.slice(0, 30))}`,
        method,
        path,
        body,
        auth: { header: h },
        expect: [401],
      });
  }

  // action: the action kinds with wrongly typed and broken bodies.
  const keyKind = all.find((k) => k.kind === 'OwnedAccessKey')!;
  const keySpec = keyKind.schema.properties!.spec.properties!;
  const tokenSchema: Schema = {
    properties: {
      spec: {
        type: 'object',
        properties: {
          ttl: { type: 'integer' },
          scope: keySpec.scope,
          rules: keySpec.rules,
          allowPlatformCli: keySpec.allowPlatformCli,
        },
      },
    },
  };
  const placed: Record<string, Schema> = {
    owner: { type: 'object', properties: { user: { type: 'string' }, team: { type: 'string' } } },
    importName: { type: 'string' },
    upgradeToPro: { type: 'boolean' },
    skipHelmDeploy: { type: 'boolean' },
  };
  const importSchema: Schema = {
    properties: {
      sourceVirtualCluster: {
        type: 'object',
        properties: { name: { type: 'string' }, namespace: { type: 'string' }, cluster: { type: 'string' }, ...placed },
      },
      ...placed,
    },
  };
  const actions: [string, string, Schema, Record<string, any>][] = [
    [
      'DirectClusterEndpointToken',
      `${GROUP_PATH}/directclusterendpointtokens`,
      tokenSchema,
      { apiVersion: API_VERSION, kind: 'DirectClusterEndpointToken', spec: { ttl: 60 } },
    ],
    [
      'ProjectImportVirtualCluster',
      `${GROUP_PATH}/projects/${TARGET}/importvirtualcluster`,
      importSchema,
      {
        apiVersion: API_VERSION,
        kind: 'ProjectImportVirtualCluster',
        sourceVirtualCluster: { name: 'vc', namespace: 'vc-ns', cluster: 'eu-1' },
      },
    ],
  ];
  for (const [kind, path, schema, base] of actions) {
    for (const { path: p, schema: ps } of propertyPaths(schema)) {
      for (const value of WRONG[ps.type!] ?? []) {
        add({
          category: 'action',
          what: `${kind} ${pathText(p)} = ${json(value)}`,
          method: 'POST',
          path,
          body: json(setAt(base, p, value)),
          expect: [400, 422],
        });
      }
    }
    for (const body of brokenVariants(rng, json(base), 40, (b) => parses(() => JSON.parse(b.toString('utf8'))))) {
      add({
        category: 'action',
        what: `${kind} broken JSON: ${preview(body)}`,
        method: 'POST',
        path,
        body,
        expect: [400],
      });
    }
    add({
      category: 'action',
      what: `${kind} of another kind`,
      method: 'POST',
      path,
      body: json({ ...base, kind: 'Other' }),
      expect: [400, 422],
    });
    add({
      category: 'action',
      what: `${kind} dryRun=All`,
      method: 'POST',
      path: `${path}?dryRun=All`,
      body: json(base),
      expect: [400],
    });
    add({ category: 'action', what: `${kind} as a list`, method: 'POST', path, body: json([base]), expect: [400] });
  }
  return cases;
}

function parses(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch {
    return false;
  }
}

function preview(body: string | Buffer): string {
  const text = body.toString();
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}...` : text);
}

type Mutation = (rng: Rng, text: string) => string;

/** One byte replaced by one that is not valid UTF-8 on its own, or a control byte. */
function badByte(r: Rng, t: string): Buffer {
  const buf = Buffer.from(t);
  buf[r.int(buf.length)] = r.pick([0xff, 0xc0, 0x80, 0xfe, 0x00, 0x1b]);
  return buf;
}

const junk = [
  '{',
  '}',
  '[',
  ']',
  ':',
  ',',
  '"',
  '\\',
  "'",
  '\u0000',
  '\u0007',
  '\n',
  'NaN',
  'undefined',
  'Infinity',
  '//',
  '/*',
  '\t',
  '\ud800',
  'é',
  '\\x41',
  '\\u12',
  'tru',
  'nul',
  '0x1',
  '+1',
  '.5',
  '01',
];

const jsonMutations: Mutation[] = [
  (r, t) => t.slice(0, 1 + r.int(t.length - 1)),
  (r, t) => {
    const i = r.int(t.length);
    return t.slice(0, i) + t.slice(i + 1);
  },
  (r, t) => {
    const i = r.int(t.length);
    return t.slice(0, i) + r.pick(junk) + t.slice(i);
  },
  (r, t) => {
    const i = r.int(t.length);
    return t.slice(0, i) + r.pick(junk) + t.slice(i + 1);
  },
  (r, t) => r.pick(['garbage', ')]}', '\ufeff', 'x', ',', '[', '{"a":']) + t,
  (r, t) => t + r.pick(['garbage', '}', ']', ',', '{', '"', 'x', '\u0000']),
  (r, t) => {
    const quotes = [...t.matchAll(/"/g)].map((m) => m.index!);
    const i = quotes.length ? r.pick(quotes) : 0;
    return `${t.slice(0, i)}'${t.slice(i + 1)}`;
  },
  (r, t) => t.replace(/:/g, (m) => (r.next() < 0.3 ? '=' : m)),
  (r, t) => t.replace(/,/g, (m) => (r.next() < 0.3 ? ',,' : m)),
  (_r, t) => t.replace(/"([a-zA-Z]+)":/, '$1:'),
  (_r, t) => t.replace(/}$/, ',}'),
  (r, t) => {
    const strings = [...t.matchAll(/"[^"]*"/g)];
    if (!strings.length) return t;
    const m = r.pick(strings);
    const at = m.index! + 1 + r.int(Math.max(1, m[0].length - 2));
    return t.slice(0, at) + r.pick(['\n', '\t', '\u0001', '\\q', '\\u00g1', '\\']) + t.slice(at);
  },
];

const yamlMutations: Mutation[] = [
  ...jsonMutations.slice(0, 4),
  (r, t) => {
    const lines = t.split('\n');
    const i = 1 + r.int(Math.max(1, lines.length - 2));
    lines[i] = `\t${lines[i]}`;
    return lines.join('\n');
  },
  (r, t) => {
    const lines = t.split('\n');
    const i = 1 + r.int(Math.max(1, lines.length - 2));
    lines[i] = ` ${lines[i]}`;
    return lines.join('\n');
  },
  (r, t) => {
    const lines = t.split('\n');
    lines.splice(
      1 + r.int(Math.max(1, lines.length - 2)),
      0,
      r.pick([
        '  - item',
        'key: [a, b',
        'key: {a: b',
        'key: "open',
        "key: 'open",
        '? complex',
        'a: b: c',
        '*nosuchalias',
        '&a &b x',
        '!!binary xyz',
        '!unknown x',
        '%YAML 9.9',
        '@at',
        '`tick',
        'key: |\n bad',
        '- - -\nx:',
      ]),
    );
    return lines.join('\n');
  },
  (r, t) => t.replace(/: /g, (m) => (r.next() < 0.2 ? ':: ' : m)),
  (r, t) => `${r.pick(['%YAML 1.1\n%YAML 1.1\n', '--- !!seq\n', '\t', ']', '}', '- x\n'])}${t}`,
];

/** Up to `count` distinct variants of `text` that `ok` refuses (ok returns true when a variant parses). */
function brokenVariants(
  rng: Rng,
  text: string,
  count: number,
  ok: (b: Buffer) => boolean,
  mutations: Mutation[] = jsonMutations,
): (string | Buffer)[] {
  const out: (string | Buffer)[] = [];
  const seen = new Set<string>();
  for (let tries = 0; out.length < count && tries < count * 20; tries++) {
    let mutated = text;
    const rounds = 1 + rng.int(3);
    for (let i = 0; i < rounds; i++) mutated = rng.pick(mutations)(rng, mutated);
    const v: string | Buffer = rng.next() < 0.1 ? badByte(rng, mutated) : mutated;
    const buf = Buffer.isBuffer(v) ? v : Buffer.from(v);
    const key = buf.toString('hex');
    if (seen.has(key) || ok(buf)) continue;
    seen.add(key);
    out.push(v);
  }
  return out;
}

/** Up to `count` distinct strings of 1 to 6 words of `vocabulary` that `keep` accepts. */
function randomStrings(rng: Rng, vocabulary: string[], count: number, keep: (s: string) => boolean): string[] {
  const out = new Set<string>();
  for (let tries = 0; out.size < count && tries < count * 50; tries++) {
    const s = Array.from({ length: 1 + rng.int(6) }, () => rng.pick(vocabulary)).join('');
    if (keep(s)) out.add(s);
  }
  return [...out];
}

/** YAML: `depth` anchors, each a list of `width` aliases of the one before, indented under a key. */
function aliasBomb(width: number, depth: number): string {
  const lines = [`  a0: &a0 [${Array(width).fill('x').join(', ')}]`];
  for (let i = 1; i < depth; i++)
    lines.push(
      `  a${i}: &a${i} [${Array(width)
        .fill(`*a${i - 1}`)
        .join(', ')}]`,
    );
  return `${lines.join('\n')}\n`;
}
