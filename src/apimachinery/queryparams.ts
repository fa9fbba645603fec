/**
 * Boolean query parameters (`watch`, `allowWatchBookmarks`, `sendInitialEvents`, `force`, `orphanDependents`) read
 * the one way kube reads them (runtime.Convert_Slice_string_To_bool and Convert_Slice_string_To_Pointer_bool in
 * k8s.io/apimachinery): only the first value counts; `0`, and `false` in any case, are false; anything else is
 * true, `True` (what the Python client sends) and an empty value (`?watch`) included. No value is refused.
 */

/** The parameter as kube reads it, or undefined when the query does not have it (a nil *bool in kube). */
export function queryBool(query: URLSearchParams, name: string): boolean | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  return !(value === '0' || foldsToFalse(value));
}

/** Go's strings.EqualFold(value, "false"): besides case, the long s (ſ) folds to s. */
function foldsToFalse(value: string): boolean {
  return value.toLowerCase().replace(/ſ/g, 's') === 'false';
}
