/**
 * The object-access authorizer: a request on one of this API's objects is allowed when the object itself grants it
 * (src/access/model.ts: its owner and access lists, an OwnedAccessKey's user or team), and lists and watches the
 * caller may not make in full are narrowed to the objects it may see.
 */
import type { Attributes, Authorizer, Decision } from '../apimachinery/authorizer.js';
import { GROUP_NAME } from '../apimachinery/group.js';
import type { KubeObject } from '../apimachinery/types.js';
import { objectGrants, OWNED_ACCESS_KEYS } from '../access/model.js';

/** Kinds anyone may create for themselves (what they create is checked to be their own). */
const SELF_SERVICE = [OWNED_ACCESS_KEYS, 'directclusterendpointtokens'];

/**
 * Reads the object a request names (consistently: a grant just written must count): undefined when there is none;
 * throws when it cannot be read, which fails the authorizer (a grant that cannot be read is not known to be absent).
 */
export type ObjectLookup = (attrs: Attributes) => Promise<KubeObject | undefined>;

export class ObjectAccessAuthorizer implements Authorizer {
  constructor(private readonly lookup: ObjectLookup) {}

  async authorize(attrs: Attributes): Promise<Decision> {
    if (!attrs.isResourceRequest || attrs.apiGroup !== GROUP_NAME) return { decision: 'noOpinion' };
    // Anyone may ask for a key or token of their own; the kind's rules refuse keys for someone else.
    if (SELF_SERVICE.includes(attrs.resource) && attrs.verb === 'create' && !attrs.name) return { decision: 'allow' };
    if (!attrs.name) return { decision: 'noOpinion' };
    // A watch outlives this check: one the object allows is served as a filtered watch (visibleTo), whose every
    // event is checked against the object's grants as they are then, so a revoked grant ends what it shows.
    if (attrs.verb === 'watch') return { decision: 'noOpinion' };
    const obj = await this.lookup(attrs);
    return obj && objectGrants(attrs.resource, obj, attrs.user, attrs.verb, attrs.subresource)
      ? { decision: 'allow', object: obj }
      : { decision: 'noOpinion' };
  }

  /**
   * For a list or watch the caller may not make in full: the objects it may see (those it may `get`). Lists
   * then show only those rather than answering 403 (unlike kube-apiserver: an access list is per object). A watch
   * of one object is such a watch too (narrowed to its name): an object that stops being visible is DELETED.
   */
  visibleTo(attrs: Attributes): ((obj: KubeObject) => boolean) | undefined {
    if (!attrs.isResourceRequest || attrs.apiGroup !== GROUP_NAME || (attrs.verb !== 'list' && attrs.verb !== 'watch'))
      return undefined;
    // A watch of one object was allowed by `watch` before it became a filtered one: that still counts for it.
    const verbs = attrs.name && attrs.verb === 'watch' ? ['get', 'watch'] : ['get'];
    return (obj) => verbs.some((verb) => objectGrants(attrs.resource, obj, attrs.user, verb));
  }
}
