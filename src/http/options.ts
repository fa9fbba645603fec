/** Query and body options of writes (CreateOptions, UpdateOptions, PatchOptions, DeleteOptions), validated as kube does. */
import { fieldError, type FieldError } from '../apimachinery/field.js';
import { queryBool } from '../apimachinery/queryparams.js';
import * as errors from '../apimachinery/status.js';
import { isPlainObject } from '../apimachinery/types.js';
import type { PropagationPolicy } from '../registry/propagation.js';
import type { DeleteOptions } from '../registry/store.js';

export type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

const META_GROUP = 'meta.k8s.io';
const PROPAGATION_POLICIES: readonly string[] = ['Foreground', 'Background', 'Orphan'] satisfies PropagationPolicy[];

function invalidOptions(kind: OptionsKind, errs: FieldError[]): errors.StatusError {
  return errors.invalid({ group: META_GROUP, kind }, '', errs);
}

/** `dryRun` may only be `All`; returns whether the write is a dry run. */
export function dryRun(kind: OptionsKind, values: string[]): boolean {
  if (values.length === 0) return false;
  if (values.some((v) => v !== 'All')) throw invalidOptions(kind, [fieldError.notSupported('dryRun', values, ['All'])]);
  return true;
}

const FIELD_VALIDATION = ['Ignore', 'Strict', 'Warn'] as const;
/** kube's limit on fieldManager names. */
const MAX_FIELD_MANAGER_LENGTH = 128;

export interface ParsedWriteOptions {
  dryRun: boolean;
  fieldValidation: (typeof FIELD_VALIDATION)[number];
  fieldManager?: string;
  /** Filled by the write; sent back as `Warning: 299` headers. */
  warnings: string[];
}

/** kube's default field manager: the product part of the User-Agent ("kubectl" for "kubectl/v1.33.9 (...)"). */
function managerFromUserAgent(userAgent: string | undefined): string | undefined {
  const product = userAgent?.split('/')[0].trim();
  return product ? product.slice(0, MAX_FIELD_MANAGER_LENGTH) : undefined;
}

/** dryRun, fieldValidation (default Warn, as kube since 1.23) and fieldManager of a create, update or patch. */
export function writeOptions(kind: OptionsKind, query: URLSearchParams, userAgent?: string): ParsedWriteOptions {
  const errs: FieldError[] = [];
  const validation = query.get('fieldValidation') ?? '';
  if (validation && !(FIELD_VALIDATION as readonly string[]).includes(validation)) {
    errs.push(fieldError.notSupported('fieldValidation', validation, ['', ...FIELD_VALIDATION]));
  }
  const manager = query.get('fieldManager') ?? undefined;
  if (manager !== undefined && Buffer.byteLength(manager) > MAX_FIELD_MANAGER_LENGTH)
    errs.push(fieldError.tooLong('fieldManager', MAX_FIELD_MANAGER_LENGTH));
  if (manager !== undefined && /[^\x20-\x7e]/.test(manager))
    errs.push(fieldError.invalid('fieldManager', manager, 'must consist of printable characters'));
  if (errs.length) throw invalidOptions(kind, errs);
  return {
    dryRun: dryRun(kind, query.getAll('dryRun')),
    fieldValidation: (validation || 'Warn') as ParsedWriteOptions['fieldValidation'],
    fieldManager: manager ?? managerFromUserAgent(userAgent),
    warnings: [],
  };
}

/** An apply names its manager explicitly (no User-Agent default) and may force conflicts. */
export function applyOptions(query: URLSearchParams): ParsedWriteOptions & { fieldManager: string; force: boolean } {
  const opts = writeOptions('PatchOptions', query);
  const manager = query.get('fieldManager');
  if (!manager)
    throw invalidOptions('PatchOptions', [fieldError.required('fieldManager', 'is required for apply patch')]);
  return { ...opts, fieldManager: manager, force: queryBool(query, 'force') ?? false };
}

export function rejectForceOnNonApplyPatch(query: URLSearchParams): void {
  if (query.has('force'))
    throw invalidOptions('PatchOptions', [fieldError.forbidden('force', 'may not be specified for non-apply patch')]);
}

export interface ParsedDeleteOptions extends DeleteOptions {
  dryRun: boolean;
  gracePeriodSeconds?: number;
}

/** DeleteOptions from a JSON/YAML body and from query parameters (the query wins where both say something). */
export function deleteOptions(body: Record<string, unknown> | undefined, query: URLSearchParams): ParsedDeleteOptions {
  const opts = { ...(body ?? {}) } as Record<string, unknown>;
  if (opts.kind !== undefined && opts.kind !== 'DeleteOptions')
    throw errors.badRequest(`the body of a delete must be a DeleteOptions, not ${String(opts.kind)}`);
  if (query.has('gracePeriodSeconds')) opts.gracePeriodSeconds = Number(query.get('gracePeriodSeconds'));
  if (query.has('propagationPolicy')) opts.propagationPolicy = query.get('propagationPolicy');
  if (query.has('orphanDependents')) opts.orphanDependents = queryBool(query, 'orphanDependents');
  if (query.has('dryRun')) opts.dryRun = query.getAll('dryRun');

  const errs: FieldError[] = [];
  if (opts.gracePeriodSeconds !== undefined && !Number.isInteger(opts.gracePeriodSeconds)) {
    errs.push(fieldError.invalid('gracePeriodSeconds', opts.gracePeriodSeconds, 'must be a whole number of seconds'));
  }
  if (
    opts.propagationPolicy !== undefined &&
    !PROPAGATION_POLICIES.includes(opts.propagationPolicy as PropagationPolicy)
  ) {
    errs.push(fieldError.notSupported('propagationPolicy', opts.propagationPolicy, [...PROPAGATION_POLICIES, 'nil']));
  }
  if (opts.orphanDependents !== undefined && opts.propagationPolicy !== undefined) {
    errs.push(
      fieldError.invalid(
        'propagationPolicy',
        opts.propagationPolicy,
        'orphanDependents and deletionPropagation cannot be both set',
      ),
    );
  }
  if (opts.orphanDependents !== undefined && typeof opts.orphanDependents !== 'boolean') {
    errs.push(fieldError.typeInvalid('orphanDependents', opts.orphanDependents, 'must be true or false'));
  }
  if (opts.preconditions !== undefined && !isPlainObject(opts.preconditions)) {
    errs.push(
      fieldError.typeInvalid('preconditions', opts.preconditions, 'must be an object with uid and/or resourceVersion'),
    );
  }
  if (errs.length) throw invalidOptions('DeleteOptions', errs);
  const dry = dryRun('DeleteOptions', [opts.dryRun ?? []].flat().map(String));
  return {
    dryRun: dry,
    // Each was checked above.
    propagationPolicy: opts.propagationPolicy as PropagationPolicy | undefined,
    orphanDependents: opts.orphanDependents as boolean | undefined,
    gracePeriodSeconds: opts.gracePeriodSeconds as number | undefined,
    preconditions: opts.preconditions as ParsedDeleteOptions['preconditions'],
  };
}
