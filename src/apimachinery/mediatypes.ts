/**
 * The media types of object and patch bodies, as k8s.io/apimachinery names them (runtime.ContentTypeJSON and
 * ContentTypeYAML, types.PatchType): low in the layers because both HTTP negotiation and the OpenAPI documents,
 * which declare what each operation consumes and produces, name them.
 */
export const JSON_TYPE = 'application/json';
export const YAML_TYPE = 'application/yaml';
export const JSON_PATCH_TYPE = 'application/json-patch+json';
export const MERGE_PATCH_TYPE = 'application/merge-patch+json';
export const APPLY_PATCH_TYPE = 'application/apply-patch+yaml';
