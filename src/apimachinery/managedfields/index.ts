/**
 * Server-side apply and managedFields tracking (kube's field manager over structured-merge-diff), as pure
 * functions of the stored object, the written object and the kind's schema.
 */
export { applyObject, BEFORE_FIRST_APPLY, updateManagedFields, type FieldManagerContext } from './fieldmanager.js';
export { LAST_APPLIED } from './lastapplied.js';
export { keepTimestampsOfNoopWrite } from './timestamps.js';
export { setToFieldsV1, fieldsV1ToSet, type FieldsV1 } from './fieldsv1.js';
export { FieldSet } from './set.js';
export { pathString, type Path, type PathElement } from './path.js';
export { objectType, type TypeNode } from './typeinfo.js';
export { toFieldSet } from './tofieldset.js';
