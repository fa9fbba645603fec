/**
 * Resource definitions: each kind is described by a CRD manifest in crds/ (names, scope, schema, subresources,
 * printer columns). The server reads them at start; discovery, validation and pruning are built from them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
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
  const served = crd.spec.versions.find((v) => v.served && v.storage);
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
    printerColumns: served.additionalPrinterColumns ?? [],
    groupResource: { group, resource: names.plural },
    groupKind: { group, kind: names.kind },
  };
}
