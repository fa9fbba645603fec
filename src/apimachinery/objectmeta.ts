/**
 * ObjectMeta validation as kube-apiserver 1.33 does it: apimachinery v0.33's
 * pkg/api/validation/objectmeta.go (ValidateObjectMetaAccessor, ValidateObjectMetaAccessorUpdate and
 * their helpers) and pkg/apis/meta/v1/validation/validation.go (ValidateLabels, ValidateManagedFields,
 * ValidateFieldManager).
 *
 * Field paths, error order, error types and detail strings follow Go. Values are given so that
 * field.ts's errorBody prints them the way 1.33's field.Error.ErrorBody does: strings and numbers
 * plainly, and a GoLiteral where 1.33 prints Go syntax or a Stringer (metav1.Time).
 * A nil pointer is given as the string "null": 1.33's ErrorBody turns nil into "null" and then quotes it.
 *
 * Not here: the resourceVersion-required check of ValidateObjectMetaAccessorUpdate (the registry does it).
 */
import { jsonEqual } from './equality.js';
import { formatTime, parseRFC3339, sameGoTime, type GoTime } from './golang/time.js';
import { compareStrings } from './golang/strings.js';
import { fieldError, GoLiteral, Path, type FieldError } from './field.js';
import type { ManagedFieldsEntry, ObjectMeta, OwnerReference } from './types.js';
import { goRunes, goStringSlice, isGoPrint } from './golang/strconv.js';
import {
  byteLength,
  isQualifiedName,
  isValidLabelValue,
  validateNamespaceName,
  type ValidateNameFunc,
} from './validation.js';

/** objectmeta.FieldImmutableErrorMsg */
export const FIELD_IMMUTABLE_ERROR_MSG = 'field is immutable';
/** objectmeta.TotalAnnotationSizeLimitB (256 KiB) */
export const TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10);
/** generic.IsNegativeErrorMsg */
export const IS_NEGATIVE_ERROR_MSG = 'must be greater than or equal to 0';
/** v1validation.FieldManagerMaxLength */
export const FIELD_MANAGER_MAX_LENGTH = 128;
/** v1validation.MaxSubresourceNameLength */
export const MAX_SUBRESOURCE_NAME_LENGTH = 256;
/** metav1.FinalizerOrphanDependents / FinalizerDeleteDependents */
export const FINALIZER_ORPHAN_DEPENDENTS = 'orphan';
export const FINALIZER_DELETE_DEPENDENTS = 'foregroundDeletion';

export interface ObjectMetaValidationOptions {
  /** requiresNamespace in Go: true for namespaced resources. */
  namespaced: boolean;
  /** Checks metadata.name (prefix=false) and metadata.generateName (prefix=true). */
  nameFn: ValidateNameFunc;
}

// ---------------------------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------------------------

/**
 * Leaves out empty labels, annotations, finalizers and ownerReferences, as kube-apiserver does with a custom
 * resource's metadata (it goes through Go's ObjectMeta, whose `omitempty` drops an empty map or list): a client that
 * sends `annotations: {}` gets no `annotations` back, so `kubectl diff` has nothing to show for it.
 */
export function dropEmptyMetadataFields(meta: ObjectMeta): void {
  for (const field of ['labels', 'annotations', 'finalizers', 'ownerReferences'] as const) {
    const value = meta[field];
    if (value !== null && typeof value === 'object' && Object.keys(value).length === 0) delete meta[field];
  }
}

/** ValidateObjectMetaAccessor: metadata on create. Name generation is expected to have happened already. */
export function validateObjectMeta(
  meta: ObjectMeta,
  opts: ObjectMetaValidationOptions,
  path: Path = Path.root('metadata'),
): FieldError[] {
  const errs: FieldError[] = [];
  const generateName = meta.generateName ?? '';
  const name = meta.name ?? '';
  const namespace = meta.namespace ?? '';

  if (generateName.length !== 0) {
    for (const msg of opts.nameFn(generateName, true))
      errs.push(fieldError.invalid(path.child('generateName'), generateName, msg));
  }
  if (name.length === 0) {
    errs.push(fieldError.required(path.child('name'), 'name or generateName is required'));
  } else {
    for (const msg of opts.nameFn(name, false)) errs.push(fieldError.invalid(path.child('name'), name, msg));
  }
  if (opts.namespaced) {
    if (namespace.length === 0) {
      errs.push(fieldError.required(path.child('namespace'), ''));
    } else {
      for (const msg of validateNamespaceName(namespace, false))
        errs.push(fieldError.invalid(path.child('namespace'), namespace, msg));
    }
  } else if (namespace.length !== 0) {
    errs.push(fieldError.forbidden(path.child('namespace'), 'not allowed on this type'));
  }

  errs.push(...validateNonnegativeField(meta.generation ?? 0, path.child('generation')));
  errs.push(...validateLabels(meta.labels, path.child('labels')));
  errs.push(...validateAnnotations(meta.annotations, path.child('annotations')));
  errs.push(...validateOwnerReferences(meta.ownerReferences, path.child('ownerReferences')));
  errs.push(...validateFinalizers(meta.finalizers, path.child('finalizers')));
  errs.push(...validateManagedFields(meta.managedFields, path.child('managedFields')));
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Update
// ---------------------------------------------------------------------------------------------

/**
 * ValidateObjectMetaAccessorUpdate without the resourceVersion check: no new finalizers while being
 * deleted, generation not decremented, name/namespace/uid/creationTimestamp/deletionTimestamp/
 * deletionGracePeriodSeconds immutable, then (as Go does on update too) labels, annotations,
 * ownerReferences and managedFields of the new object. Finalizer names are not re-checked on update (Go doesn't).
 */
export function validateObjectMetaUpdate(
  newMeta: ObjectMeta,
  oldMeta: ObjectMeta,
  path: Path = Path.root('metadata'),
): FieldError[] {
  const errs: FieldError[] = [];

  if (oldMeta.deletionTimestamp != null) {
    errs.push(...validateNoNewFinalizers(newMeta.finalizers, oldMeta.finalizers, path.child('finalizers')));
  }

  const newGeneration = newMeta.generation ?? 0;
  if (newGeneration < (oldMeta.generation ?? 0)) {
    errs.push(fieldError.invalid(path.child('generation'), newGeneration, 'must not be decremented'));
  }

  errs.push(...immutableString(newMeta.name, oldMeta.name, path.child('name')));
  errs.push(...immutableString(newMeta.namespace, oldMeta.namespace, path.child('namespace')));
  errs.push(...immutableString(newMeta.uid, oldMeta.uid, path.child('uid')));

  // creationTimestamp is a metav1.Time value: missing/null is the zero time, printed by its String().
  const newCreated = parseTime(newMeta.creationTimestamp);
  if (!sameTime(newCreated, parseTime(oldMeta.creationTimestamp))) {
    errs.push(
      fieldError.invalid(path.child('creationTimestamp'), new GoLiteral(goTime(newCreated)), FIELD_IMMUTABLE_ERROR_MSG),
    );
  }

  // deletionTimestamp is a *metav1.Time: nil prints as "null", otherwise the time's String().
  const newDeleted = newMeta.deletionTimestamp == null ? null : parseTime(newMeta.deletionTimestamp);
  const oldDeleted = oldMeta.deletionTimestamp == null ? null : parseTime(oldMeta.deletionTimestamp);
  if (newDeleted === null ? oldDeleted !== null : oldDeleted === null || !sameTime(newDeleted, oldDeleted)) {
    const value = newDeleted === null ? 'null' : new GoLiteral(goTime(newDeleted));
    errs.push(fieldError.invalid(path.child('deletionTimestamp'), value, FIELD_IMMUTABLE_ERROR_MSG));
  }

  // deletionGracePeriodSeconds is a *int64.
  const newGrace = newMeta.deletionGracePeriodSeconds ?? null;
  const oldGrace = oldMeta.deletionGracePeriodSeconds ?? null;
  if (newGrace !== oldGrace) {
    errs.push(
      fieldError.invalid(
        path.child('deletionGracePeriodSeconds'),
        newGrace === null ? 'null' : newGrace,
        FIELD_IMMUTABLE_ERROR_MSG,
      ),
    );
  }

  errs.push(...validateLabels(newMeta.labels, path.child('labels')));
  errs.push(...validateAnnotations(newMeta.annotations, path.child('annotations')));
  errs.push(...validateOwnerReferences(newMeta.ownerReferences, path.child('ownerReferences')));
  errs.push(...validateManagedFields(newMeta.managedFields, path.child('managedFields')));
  return errs;
}

/** validation.ValidateImmutableField: any change of the value (set, changed or removed) is refused. */
export function validateImmutableField(newVal: unknown, oldVal: unknown, at: Path): FieldError[] {
  return jsonEqual(newVal, oldVal) ? [] : [fieldError.invalid(at, newVal, FIELD_IMMUTABLE_ERROR_MSG)];
}

function immutableString(newVal: string | undefined, oldVal: string | undefined, at: Path): FieldError[] {
  const n = newVal ?? '';
  return n === (oldVal ?? '') ? [] : [fieldError.invalid(at, n, FIELD_IMMUTABLE_ERROR_MSG)];
}

/** objectmeta.ValidateNoNewFinalizers: Go's detail prints the sorted new finalizers with %#v. */
export function validateNoNewFinalizers(
  newFinalizers: readonly string[] | undefined,
  oldFinalizers: readonly string[] | undefined,
  at: Path,
): FieldError[] {
  const old = new Set(oldFinalizers ?? []);
  const extra = [...new Set(newFinalizers ?? [])].filter((f) => !old.has(f)).sort(compareStrings);
  if (extra.length === 0) return [];
  return [
    fieldError.forbidden(
      at,
      `no new finalizers can be added if the object is being deleted, found new finalizers ${goStringSlice(extra)}`,
    ),
  ];
}

// ---------------------------------------------------------------------------------------------
// Pieces
// ---------------------------------------------------------------------------------------------

/** generic.ValidateNonnegativeField */
export function validateNonnegativeField(value: number, at: Path): FieldError[] {
  return value < 0 ? [fieldError.invalid(at, value, IS_NEGATIVE_ERROR_MSG)] : [];
}

/** v1validation.ValidateLabelName: one Invalid per message, at the labels path itself (no key). */
export function validateLabelName(labelName: string, at: Path): FieldError[] {
  return isQualifiedName(labelName).map((msg) => fieldError.invalid(at, labelName, msg));
}

/** v1validation.ValidateLabels: for each label, the key's errors then the value's, all at `at`. */
export function validateLabels(labels: Record<string, string> | undefined, at: Path): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, raw] of Object.entries(labels ?? {})) {
    const v = typeof raw === 'string' ? raw : String(raw);
    errs.push(...validateLabelName(k, at));
    for (const msg of isValidLabelValue(v)) errs.push(fieldError.invalid(at, v, msg));
  }
  return errs;
}

/** objectmeta.ValidateAnnotationsSize: the sum of key and value byte lengths exceeds 256 KiB. */
export function annotationsTooLarge(annotations: Record<string, string> | undefined): boolean {
  let total = 0;
  for (const [k, v] of Object.entries(annotations ?? {}))
    total += byteLength(k) + byteLength(typeof v === 'string' ? v : String(v));
  return total > TOTAL_ANNOTATION_SIZE_LIMIT_B;
}

/**
 * objectmeta.ValidateAnnotations: each key, lowercased, must be a qualified name (one Invalid per
 * message, showing the original key); then a single TooLong when the total size is over the limit.
 */
export function validateAnnotations(annotations: Record<string, string> | undefined, at: Path): FieldError[] {
  const errs: FieldError[] = [];
  for (const k of Object.keys(annotations ?? {})) {
    for (const msg of isQualifiedName(goToLower(k))) errs.push(fieldError.invalid(at, k, msg));
  }
  if (annotationsTooLarge(annotations)) errs.push(fieldError.tooLong(at, TOTAL_ANNOTATION_SIZE_LIMIT_B));
  return errs;
}

/** strings.ToLower: simple (1:1) case mapping per code point, so 'İ' (U+0130) becomes 'i' as in Go. */
function goToLower(value: string): string {
  // eslint-disable-next-line no-control-regex -- ASCII, control characters included, lowers the same in Go and JS
  if (/^[\x00-\x7f]*$/.test(value)) return value.toLowerCase();
  let out = '';
  for (const ch of value) {
    const lower = ch === '\u0130' ? 'i' : ch.toLowerCase();
    out += [...lower].length === 1 ? lower : ch;
  }
  return out;
}

/** schema.FromAPIVersionAndKind (via ParseGroupVersion): an apiVersion with two or more '/' gives an empty group and version. */
function parseGroupVersion(apiVersion: string): { group: string; version: string } {
  if (apiVersion === '' || apiVersion === '/') return { group: '', version: '' };
  const slashes = apiVersion.split('/').length - 1;
  if (slashes === 0) return { group: '', version: apiVersion };
  if (slashes === 1) {
    const i = apiVersion.indexOf('/');
    return { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
  }
  return { group: '', version: '' };
}

/** objectmeta.BannedOwners */
const BANNED_OWNERS = [{ group: '', version: 'v1', kind: 'Event' }];

/** objectmeta.validateOwnerReference: note the paths carry no index (metadata.ownerReferences.uid). */
function validateOwnerReference(ref: OwnerReference, at: Path): FieldError[] {
  const errs: FieldError[] = [];
  const apiVersion = ref.apiVersion ?? '';
  const kind = ref.kind ?? '';
  const name = ref.name ?? '';
  const uid = ref.uid ?? '';
  const gv = parseGroupVersion(apiVersion);
  if (gv.version.length === 0)
    errs.push(fieldError.invalid(at.child('apiVersion'), apiVersion, 'version must not be empty'));
  if (kind.length === 0) errs.push(fieldError.invalid(at.child('kind'), kind, 'kind must not be empty'));
  if (name.length === 0) errs.push(fieldError.invalid(at.child('name'), name, 'name must not be empty'));
  if (uid.length === 0) errs.push(fieldError.invalid(at.child('uid'), uid, 'uid must not be empty'));
  if (BANNED_OWNERS.some((b) => b.group === gv.group && b.version === gv.version && b.kind === kind)) {
    const gvk = `${gv.group}/${gv.version}, Kind=${kind}`;
    errs.push(fieldError.invalid(at, ref, `${gvk} is disallowed from being an owner`));
  }
  return errs;
}

/**
 * objectmeta.ValidateOwnerReferences: every reference checked at the list's path, and one error for
 * each controller reference after the first, naming the first and the current one as Kind/name. The
 * value is the whole list (printed as JSON: Go's %#v of it would show heap addresses).
 */
export function validateOwnerReferences(
  ownerReferences: readonly OwnerReference[] | undefined,
  at: Path,
): FieldError[] {
  const errs: FieldError[] = [];
  const refs = ownerReferences ?? [];
  let firstControllerName = '';
  for (const ref of refs) {
    errs.push(...validateOwnerReference(ref, at));
    if (ref.controller === true) {
      const current = `${ref.kind ?? ''}/${ref.name ?? ''}`;
      if (firstControllerName !== '') {
        errs.push(
          fieldError.invalid(
            at,
            refs,
            `Only one reference can have Controller set to true. Found "true" in references for ${firstControllerName} and ${current}`,
          ),
        );
      } else {
        firstControllerName = current;
      }
    }
  }
  return errs;
}

/** objectmeta.ValidateFinalizerName: a qualified name, errors at the finalizers path (no index). */
export function validateFinalizerName(finalizer: string, at: Path): FieldError[] {
  return isQualifiedName(finalizer).map((msg) => fieldError.invalid(at, finalizer, msg));
}

/** objectmeta.ValidateFinalizers: names, then "orphan" and "foregroundDeletion" together are refused. */
export function validateFinalizers(finalizers: readonly string[] | undefined, at: Path): FieldError[] {
  const errs: FieldError[] = [];
  const list = finalizers ?? [];
  let orphan = false;
  let foreground = false;
  for (const finalizer of list) {
    errs.push(...validateFinalizerName(finalizer, at));
    if (finalizer === FINALIZER_ORPHAN_DEPENDENTS) orphan = true;
    if (finalizer === FINALIZER_DELETE_DEPENDENTS) foreground = true;
  }
  if (foreground && orphan) {
    errs.push(
      fieldError.invalid(
        at,
        new GoLiteral(goStringSlice(list)),
        `finalizer ${FINALIZER_ORPHAN_DEPENDENTS} and ${FINALIZER_DELETE_DEPENDENTS} cannot be both set`,
      ),
    );
  }
  return errs;
}

/** v1validation.ValidateFieldManager: at most 128 bytes, and every character printable. */
export function validateFieldManager(fieldManager: string, at: Path): FieldError[] {
  const errs: FieldError[] = [];
  if (byteLength(fieldManager) > FIELD_MANAGER_MAX_LENGTH) errs.push(fieldError.tooLong(at, FIELD_MANAGER_MAX_LENGTH));
  for (const { rune, byteIndex } of goRunes(fieldManager)) {
    if (!isGoPrint(rune)) {
      errs.push(
        fieldError.invalid(at, fieldManager, `invalid character ${goUnicode(rune)} (at position ${byteIndex})`),
      );
    }
  }
  return errs;
}

/** fmt's %#U for a non-printable rune: U+ and at least four upper-case hex digits (no quoted char). */
function goUnicode(rune: number): string {
  return `U+${rune.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** v1validation.ValidateManagedFields: paths carry the entry's index. */
export function validateManagedFields(entries: readonly ManagedFieldsEntry[] | undefined, at: Path): FieldError[] {
  const errs: FieldError[] = [];
  (entries ?? []).forEach((entry, i) => {
    const p = at.index(i);
    const operation = entry.operation ?? '';
    if (operation !== 'Apply' && operation !== 'Update') {
      errs.push(fieldError.invalid(p.child('operation'), operation, 'must be `Apply` or `Update`'));
    }
    const fieldsType = entry.fieldsType ?? '';
    if (fieldsType.length > 0 && fieldsType !== 'FieldsV1') {
      errs.push(fieldError.invalid(p.child('fieldsType'), fieldsType, 'must be `FieldsV1`'));
    }
    errs.push(...validateFieldManager(entry.manager ?? '', p.child('manager')));
    if (byteLength(entry.subresource ?? '') > MAX_SUBRESOURCE_NAME_LENGTH) {
      errs.push(fieldError.tooLong(p.child('subresource'), MAX_SUBRESOURCE_NAME_LENGTH));
    }
  });
  return errs;
}

// ---------------------------------------------------------------------------------------------
// metav1.Time as Go prints it
// ---------------------------------------------------------------------------------------------

/** A metav1.Time as decoded, or its text when Go would not parse it. */
type MetaTime = GoTime | { raw: string };

/** The zero time.Time (January 1, year 1, UTC), which a null or missing metav1.Time decodes to. */
const ZERO_TIME: GoTime = parseRFC3339('0001-01-01T00:00:00Z')!;

/** metav1.Time's UnmarshalJSON: null (or missing) is the zero time; otherwise time.Parse(RFC3339, …). */
function parseTime(value: string | null | undefined): MetaTime {
  if (value == null || value === '') return ZERO_TIME;
  return parseRFC3339(value) ?? { raw: value };
}

/** apiequality.Semantic for metav1.Time: the same instant (a.UTC() == b.UTC()). */
function sameTime(a: MetaTime, b: MetaTime): boolean {
  if ('raw' in a || 'raw' in b) return 'raw' in a && 'raw' in b && a.raw === b.raw;
  return sameGoTime(a, b);
}

/**
 * time.Time's String() ("2006-01-02 15:04:05.999999999 -0700 MST"), which is what 1.33 prints for a
 * metav1.Time bad value (it is a fmt.Stringer). The apiserver decodes times into time.Local; this
 * assumes the server runs in UTC, as kube-apiserver images do.
 */
export function goTimeString(value: string | null | undefined): string {
  return goTime(parseTime(value));
}

function goTime(t: MetaTime): string {
  return 'raw' in t ? t.raw : formatTime(t);
}
