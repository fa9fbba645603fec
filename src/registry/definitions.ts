/**
 * Resource definitions: each kind is described by a CRD manifest in crds/ (names, scope, schema, subresources,
 * printer columns). The server reads them at start; discovery, validation and pruning are built from them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import { compileValidationRules, RuleCompileError, type RulesValidator } from '../apimachinery/cel/rules.js';
import type { StructuralSchema } from '../apimachinery/schema.js';
import type { GroupKind, GroupResource } from '../apimachinery/types.js';

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  format?: string;
  priority?: number;
}

export interface ResourceDefinition {
  group: string;
  version: string;
  /** "management.platform.sh/v1" */
  apiVersion: string;
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  hasStatus: boolean;
  schema: StructuralSchema;
  /** The schema's x-kubernetes-validations rules, compiled when the CRD was read. */
  validationRules: RulesValidator;
  printerColumns: PrinterColumn[];
  groupResource: GroupResource;
  groupKind: GroupKind;
}

/** crds/ at the repository root, from src/registry or dist/registry alike. */
export const defaultCrdDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../crds');

export function loadDefinitions(dir = defaultCrdDir): ResourceDefinition[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => fromCrd(yaml.load(readFileSync(join(dir, f), 'utf8')) as CrdDocument | undefined, f));
}

/** The parts of a CustomResourceDefinition manifest read here (the manifests are ours, under crds/). */
interface CrdDocument {
  kind?: string;
  spec: {
    group: string;
    scope: string;
    names: {
      kind: string;
      listKind?: string;
      plural: string;
      singular?: string;
      shortNames?: string[];
      categories?: string[];
    };
    versions: {
      name: string;
      served?: boolean;
      storage?: boolean;
      subresources?: { status?: unknown };
      schema: { openAPIV3Schema: ResourceDefinition['schema'] };
      additionalPrinterColumns?: ResourceDefinition['printerColumns'];
    }[];
  };
}

function fromCrd(crd: CrdDocument | undefined, file: string): ResourceDefinition {
  if (crd?.kind !== 'CustomResourceDefinition') throw new Error(`${file}: not a CustomResourceDefinition`);
  const { group, names, scope } = crd.spec;
  const index = crd.spec.versions.findIndex((v) => v.served && v.storage);
  const served = crd.spec.versions[index];
  if (!served) throw new Error(`${file}: no served storage version`);
  return {
    group,
    version: served.name,
    apiVersion: `${group}/${served.name}`,
    kind: names.kind,
    listKind: names.listKind ?? `${names.kind}List`,
    plural: names.plural,
    singular: names.singular ?? names.kind.toLowerCase(),
    namespaced: scope === 'Namespaced',
    shortNames: names.shortNames ?? [],
    categories: names.categories ?? [],
    hasStatus: served.subresources?.status !== undefined,
    schema: served.schema.openAPIV3Schema,
    validationRules: compileRules(
      served.schema.openAPIV3Schema,
      `spec.versions[${index}].schema.openAPIV3Schema`,
      file,
    ),
    printerColumns: served.additionalPrinterColumns ?? [],
    groupResource: { group, resource: names.plural },
    groupKind: { group, kind: names.kind },
  };
}

/** Our CRDs are our own files: a rule that does not compile stops the start, naming the file and where the rule is. */
function compileRules(schema: StructuralSchema, at: string, file: string): RulesValidator {
  try {
    return compileValidationRules(schema, at);
  } catch (err) {
    if (err instanceof RuleCompileError)
      throw new Error(`${file}: invalid x-kubernetes-validations rule: ${err.message}`, { cause: err });
    throw err;
  }
}
