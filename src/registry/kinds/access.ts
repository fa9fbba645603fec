/** Rules shared by kinds that carry `spec.owner` and `spec.access` (SharedSecret, Cluster). */
import { fieldError, type FieldError, type Path } from '../../apimachinery/field.js';

const VERB = /^[a-z]+$/;
const SUBRESOURCE = /^[a-z]+$/;

export interface AccessEntry {
  name?: string;
  verbs?: string[];
  subresources?: string[];
  users?: string[];
  teams?: string[];
}

export function validateOwner(owner: { user?: string; team?: string } | undefined, path: Path): FieldError[] {
  if (owner?.user && owner?.team) return [fieldError.forbidden(path.child('team'), 'may not be set together with user: an owner is either a user or a team')];
  return [];
}

/** Each entry grants one or more verbs to at least one user or team. */
export function validateAccess(entries: AccessEntry[] | undefined, path: Path): FieldError[] {
  const errs: FieldError[] = [];
  (entries ?? []).forEach((entry, i) => {
    const at = path.index(i);
    if (!entry.verbs?.length) errs.push(fieldError.required(at.child('verbs'), "at least one verb is required ('*' for all)"));
    errs.push(...validateWords(entry.verbs, at.child('verbs'), VERB, "must be '*' or a lowercase verb such as get, list, watch, create, update, patch or delete"));
    errs.push(...validateWords(entry.subresources, at.child('subresources'), SUBRESOURCE, "must be '*' or a lowercase subresource name such as status"));
    errs.push(...validateNames(entry.users, at.child('users')));
    errs.push(...validateNames(entry.teams, at.child('teams')));
    if (!entry.users?.length && !entry.teams?.length) errs.push(fieldError.required(at.child('users'), 'at least one user or team is required'));
  });
  return errs;
}

function validateWords(values: string[] | undefined, path: Path, pattern: RegExp, detail: string): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  (values ?? []).forEach((v, i) => {
    if (v !== '*' && !pattern.test(v)) errs.push(fieldError.invalid(path.index(i), v, detail));
    else if (seen.has(v)) errs.push(fieldError.duplicate(path.index(i), v));
    seen.add(v);
  });
  return errs;
}

function validateNames(values: string[] | undefined, path: Path): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  (values ?? []).forEach((v, i) => {
    if (v.trim() === '') errs.push(fieldError.invalid(path.index(i), v, 'must be a non-empty name'));
    else if (seen.has(v)) errs.push(fieldError.duplicate(path.index(i), v));
    seen.add(v);
  });
  return errs;
}
