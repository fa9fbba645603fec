/** Serving actions (src/actions): decode the request object, run the action, answer its object. */
import type { Request, Response } from 'express';
import { decodeRequest, type Action, type ActionVerb } from '../actions/action.js';
import type { Admission, AdmissionAttributes } from '../apimachinery/admission.js';
import { requestContext, requestUser } from '../apimachinery/request.js';
import * as errors from '../apimachinery/status.js';
import { requireTypeMeta } from '../registry/decoding.js';
import type { AuthorizeOther } from '../registry/strategy.js';
import { parseObjectBody, rawBody } from './body.js';
import { negotiateResponse, requestEncoding } from './negotiation.js';
import { writeOptions } from './options.js';
import { withWarnings, writeObject } from './responses.js';

/**
 * `authorize`: what else the caller may do, for the action's own checks. An action's create passes `admission` as
 * kube's subresource creates do (an Eviction, a TokenRequest): CREATE of the request object, before it is served.
 */
export async function handleAction(
  req: Request,
  res: Response,
  action: Action,
  authorize: AuthorizeOther,
  admission?: Admission,
): Promise<void> {
  const { info, query } = requestContext(req);
  const groupResource = {
    group: action.group,
    resource: action.subresource ? `${action.resource}/${action.subresource}` : action.resource,
  };
  const verb = info.verb as ActionVerb;
  // A kind of its own is only created, on its collection; everything else on it is 405 (as kube's create-only REST).
  const onItsPath = action.subresource !== '' || info.name === '';
  if (!onItsPath || !action.verbs.includes(verb))
    throw errors.methodNotSupported(groupResource, info.verb || req.method);
  if (info.extraParts.length) throw errors.notFoundPath();
  if (action.namespaced ? !info.namespace && !action.anyNamespace : info.namespace) throw errors.notFoundPath();

  // Tables and metadata-only forms are for stored objects; an action's answer comes only as itself.
  const encoding = negotiateResponse(req.headers.accept);
  const warnings: string[] = [];
  let object;
  if (verb === 'create') {
    const opts = writeOptions('CreateOptions', query, req.headers['user-agent']);
    // Nothing an action does is a stored write that a dry run could stop short of.
    if (opts.dryRun)
      throw errors.badRequest(
        `dryRun is not supported by ${groupResource.resource}: it creates nothing that is stored`,
      );
    const body = action.ignoresBody ? Buffer.alloc(0) : rawBody(req);
    const parsed = body.length ? parseObjectBody(body, requestEncoding(req.headers['content-type']), action.kind) : {};
    // An empty body asks with every default, where the action takes one (a rotation); otherwise it names its kind.
    if (body.length || !action.emptyBody) requireTypeMeta(parsed, { apiVersion: `${action.group}/${action.version}` });
    object = decodeRequest(action, parsed, opts.fieldValidation, warnings);
    action.validate?.(object);
    if (admission) {
      const context = requestContext(req);
      const attrs: AdmissionAttributes = {
        operation: 'CREATE',
        group: action.group,
        version: action.version,
        kind: action.kind,
        resource: action.resource,
        subresource: action.subresource,
        namespace: info.namespace,
        name: info.name || (typeof object.metadata?.name === 'string' ? object.metadata.name : ''),
        object,
        user: requestUser(req),
        dryRun: false,
        warnings,
        auditAnnotations: (context.auditAnnotations ??= {}),
      };
      await admission.admit(attrs);
      object = decodeRequest(action, attrs.object as Record<string, unknown>, opts.fieldValidation, warnings);
      action.validate?.(object);
      await admission.validate(attrs);
    }
    // For an audit at level Request or more; an action's answer (a credential) never is (auditbodies.ts).
    const sent = object;
    requestContext(req).auditBodies = { request: () => sent };
  }
  const answer = await action.serve({
    verb,
    namespace: info.namespace || undefined,
    name: info.name,
    object,
    query,
    user: requestUser(req),
    authorize,
    warnings,
  });
  // Answers may carry credentials (a client key, a token): no cache may keep them.
  res.setHeader('Cache-Control', 'no-store');
  writeObject(withWarnings(res, warnings), verb === 'create' ? 201 : 200, answer, encoding);
}
