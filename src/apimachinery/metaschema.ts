/**
 * The shape of metav1.ObjectMeta as a structural schema: custom resources keep only these metadata fields
 * (kube decodes metadata into ObjectMeta, dropping the rest) and a wrongly typed one is a field error.
 */
import type { StructuralSchema } from './schema.js';

const str: StructuralSchema = { type: 'string' };
const stringMap: StructuralSchema = { type: 'object', additionalProperties: str };
const int: StructuralSchema = { type: 'integer', format: 'int64' };

export const objectMetaSchema: StructuralSchema = {
  type: 'object',
  properties: {
    name: str,
    generateName: str,
    namespace: str,
    selfLink: str,
    uid: str,
    resourceVersion: str,
    generation: int,
    creationTimestamp: { type: 'string', format: 'date-time', nullable: true },
    deletionTimestamp: { type: 'string', format: 'date-time', nullable: true },
    deletionGracePeriodSeconds: int,
    labels: stringMap,
    annotations: stringMap,
    ownerReferences: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          apiVersion: str,
          kind: str,
          name: str,
          uid: str,
          controller: { type: 'boolean' },
          blockOwnerDeletion: { type: 'boolean' },
        },
      },
    },
    finalizers: { type: 'array', items: str },
    managedFields: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          manager: str,
          operation: str,
          apiVersion: str,
          time: { type: 'string', format: 'date-time' },
          fieldsType: str,
          fieldsV1: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
          subresource: str,
        },
      },
    },
  },
};
