/**
 * The parts the two authorization matrices (auth-matrix.test.ts: static tokens, certificates, front proxy;
 * auth-delegated.test.ts: the host's TokenReview and SubjectAccessReview) share: the objects they aim at, real
 * requests for each verb, the answer an allowed verb gets, and clients that remember every response.
 */
import { expect } from '@jest/globals';
import { clusterBody, MERGE_PATCH, secretBody, uniq } from './fixtures.js';
import { GROUP_PATH, HttpClient, type HttpResponse, type RequestOptions } from './http.js';

export type Kind = 'sharedsecrets' | 'clusters';
export const KINDS: Kind[] = ['sharedsecrets', 'clusters'];

export interface Target {
  kind: Kind;
  /** '' for clusters. */
  ns: string;
  name: string;
}

export interface Grants {
  owner?: { user?: string; team?: string };
  access?: Array<{ verbs: string[]; subresources?: string[]; users?: string[]; teams?: string[] }>;
}

export interface Caller {
  request(method: string, path: string, opts?: RequestOptions): Promise<HttpResponse>;
}

export type Verb =
  | 'get'
  | 'list'
  | 'watch'
  | 'create'
  | 'update'
  | 'patch'
  | 'delete'
  | 'deletecollection'
  | 'get status'
  | 'update status'
  | 'patch status';

/** Every response a RecordingClient saw in this test file: headers and body text (for the final leak scan). */
export const seen: string[] = [];

/** A client that remembers every response in `seen`. */
export class RecordingClient extends HttpClient implements Caller {
  override async request(method: string, path: string, opts: RequestOptions = {}): Promise<HttpResponse> {
    const res = await super.request(method, path, opts);
    seen.push(JSON.stringify(res.headers), res.text);
    return res;
  }
}

/** The names of a list's items, sorted. */
export const listedNames = (res: HttpResponse): string[] =>
  (res.body?.items ?? []).map((o: any) => o.metadata.name).sort();

/** The status code each verb answers when allowed. */
export const OK: Record<Verb, number> = {
  get: 200,
  list: 200,
  watch: 200,
  create: 201,
  update: 200,
  patch: 200,
  delete: 200,
  deletecollection: 200,
  'get status': 200,
  'update status': 200,
  'patch status': 200,
};

export function collectionPath(kind: Kind, ns: string, prefix = ''): string {
  return kind === 'clusters'
    ? `${prefix}${GROUP_PATH}/clusters`
    : `${prefix}${GROUP_PATH}/namespaces/${ns}/sharedsecrets`;
}

export function objectPath(t: Target, prefix = '', sub = ''): string {
  return `${collectionPath(t.kind, t.ns, prefix)}/${t.name}${sub ? `/${sub}` : ''}`;
}

export function bodyOf(
  kind: Kind,
  name: string,
  grants: Grants = {},
  labels?: Record<string, string>,
): Record<string, any> {
  const body = kind === 'clusters' ? clusterBody(name, labels) : secretBody(name, labels);
  body.spec = { ...body.spec, ...grants };
  return body;
}

export function expectAllowed(res: HttpResponse, verb: Verb, what = ''): void {
  expect({ what, verb, status: res.status, body: res.status === OK[verb] ? undefined : res.body }).toEqual({
    what,
    verb,
    status: OK[verb],
    body: undefined,
  });
}

export interface Matrix {
  /** Creates an object as the admin (with the grants) and returns where it is. */
  make(kind: Kind, grants?: Grants, opts?: { ns?: string; labels?: Record<string, string> }): Promise<Target>;
  /** The object as stored, read by the admin. */
  current(t: Target): Promise<any>;
  /**
   * Does `verb` on `t` as `who`: a real, valid request (updates send the current object with a change, so an
   * allowed one succeeds). create makes a new object next to `t`; list, watch and deletecollection address t's
   * collection.
   */
  act(who: Caller, verb: Verb, t: Target, prefix?: string): Promise<HttpResponse>;
}

/** `admin` creates and reads the objects; new objects go to `defaultNs`; creates by `act` carry `createGrants`. */
export function authMatrix(admin: () => Caller, defaultNs: string, createGrants: Grants = {}): Matrix {
  const make: Matrix['make'] = async (kind, grants = {}, opts = {}) => {
    const t: Target = {
      kind,
      ns: kind === 'clusters' ? '' : (opts.ns ?? defaultNs),
      name: uniq(kind === 'clusters' ? 'c' : 's'),
    };
    const res = await admin().request('POST', collectionPath(kind, t.ns), {
      body: bodyOf(kind, t.name, grants, opts.labels),
    });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
    return t;
  };
  const current: Matrix['current'] = async (t) => {
    const res = await admin().request('GET', objectPath(t));
    expect(res.status).toBe(200);
    return res.body;
  };
  const act: Matrix['act'] = async (who, verb, t, prefix = '') => {
    const coll = collectionPath(t.kind, t.ns, prefix);
    switch (verb) {
      case 'get':
        return who.request('GET', objectPath(t, prefix));
      case 'list':
        return who.request('GET', coll);
      case 'watch':
        return who.request('GET', `${coll}?watch=true&timeoutSeconds=1`);
      case 'create':
        return who.request('POST', coll, { body: bodyOf(t.kind, uniq('new'), createGrants) });
      case 'update': {
        const obj = await current(t);
        return who.request('PUT', objectPath(t, prefix), {
          body: { ...obj, spec: { ...obj.spec, description: `updated ${uniq('u')}` } },
        });
      }
      case 'patch':
        return who.request('PATCH', objectPath(t, prefix), {
          body: { spec: { description: `patched ${uniq('p')}` } },
          contentType: MERGE_PATCH,
        });
      case 'delete':
        return who.request('DELETE', objectPath(t, prefix));
      case 'deletecollection':
        return who.request('DELETE', `${coll}?labelSelector=never-matches%3D${uniq('x')}`);
      case 'get status':
        return who.request('GET', objectPath(t, prefix, 'status'));
      case 'update status': {
        const obj = await current(t);
        return who.request('PUT', objectPath(t, prefix, 'status'), {
          body: {
            ...obj,
            status: { conditions: [{ type: 'Ready', status: 'True', reason: uniq('R').replace(/-/g, '') }] },
          },
        });
      }
      case 'patch status':
        return who.request('PATCH', objectPath(t, prefix, 'status'), {
          body: { status: { conditions: [{ type: 'Ready', status: 'False' }] } },
          contentType: MERGE_PATCH,
        });
    }
  };
  return { make, current, act };
}
