/**
 * The scope and the deprecated rules shared by OwnedAccessKeys and DirectClusterEndpointTokens: what their schema
 * cannot say (names present, verbs and URLs well formed, resourceNames only with resources), for the rules in both
 * places they are given (spec.rules, and spec.scope.rules where upstream clients put them).
 */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { isPlainObject } from '../../apimachinery/types.js';

/** Each entry of the list at `at` names something in its `field` (e.g. a project in `project`). */
function validateEntries(entries: unknown, at: Path, field: string, errs: FieldError[]): void {
  if (!Array.isArray(entries)) return;
  entries.forEach((entry, i) => {
    const value = isPlainObject(entry) ? entry[field] : undefined;
    if (typeof value !== 'string' || value.trim() === '') errs.push(fieldError.required(at.index(i).child(field), ''));
  });
}

/** Each name in a role's limit (`projects`, `virtualClusters`) is a name: an empty one would match nothing. */
function validateRoleLimits(roles: unknown, at: Path, errs: FieldError[]): void {
  if (!Array.isArray(roles)) return;
  roles.forEach((role, i) => {
    if (!isPlainObject(role)) return;
    for (const field of ['projects', 'virtualClusters']) {
      const names = role[field];
      if (!Array.isArray(names)) continue;
      names.forEach((name, j) => {
        if (typeof name === 'string' && name.trim() === '')
          errs.push(fieldError.invalid(at.index(i).child(field).index(j), name, "must be a name, or '*' for all"));
      });
    }
  });
}

/** The rules at `at` (spec.rules, or spec.scope.rules as upstream clients place them). */
function validateRules(rules: unknown, at: Path, errs: FieldError[]): void {
  if (!Array.isArray(rules)) return;
  rules.forEach((rule: unknown, i: number) => {
    const ruleAt = at.index(i);
    if (!isPlainObject(rule)) return;
    if (Array.isArray(rule.verbs)) {
      rule.verbs.forEach((v: unknown, j: number) => {
        if (typeof v === 'string' && v !== '*' && !/^[a-z]+$/.test(v))
          errs.push(
            fieldError.invalid(
              ruleAt.child('verbs').index(j),
              v,
              "must be '*' or a lowercase verb such as get, list or create",
            ),
          );
      });
    }
    (Array.isArray(rule.resources) ? rule.resources : []).forEach((gr: unknown, j: number) => {
      if (
        isPlainObject(gr) &&
        Array.isArray(gr.resourceNames) &&
        gr.resourceNames.length &&
        !(Array.isArray(gr.resources) && gr.resources.length)
      ) {
        errs.push(
          fieldError.required(
            ruleAt.child('resources').index(j).child('resources'),
            'resourceNames requires resources',
          ),
        );
      }
    });
    (Array.isArray(rule.nonResourceURLs) ? rule.nonResourceURLs : []).forEach((u: unknown, j: number) => {
      if (typeof u === 'string' && u !== '*' && !u.startsWith('/'))
        errs.push(fieldError.invalid(ruleAt.child('nonResourceURLs').index(j), u, "must start with '/'"));
    });
  });
}

/** `s` is the key's spec, holding `scope` and `rules`; `spec` is its path, where errors are reported. */
export function validateScopeAndRules(s: Record<string, unknown>, spec: Path): FieldError[] {
  const errs: FieldError[] = [];
  const scope = isPlainObject(s.scope) ? s.scope : {};
  const sp = spec.child('scope');
  validateEntries(scope.roles, sp.child('roles'), 'role', errs);
  validateRoleLimits(scope.roles, sp.child('roles'), errs);
  validateEntries(scope.projects, sp.child('projects'), 'project', errs);
  validateEntries(scope.clusters, sp.child('clusters'), 'cluster', errs);
  validateRules(s.rules, spec.child('rules'), errs);
  validateRules(scope.rules, sp.child('rules'), errs);
  return errs;
}
