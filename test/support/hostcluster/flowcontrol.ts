/**
 * flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations in the stand-in. It starts with
 * kube's built-in ones, as a kube-apiserver creates them in every cluster; a test puts and removes objects (each
 * write a new resourceVersion and a watch event), and the server lists, gets and watches them.
 */
import {
  MANDATORY_FLOW_SCHEMAS,
  MANDATORY_PRIORITY_LEVELS,
  SUGGESTED_FLOW_SCHEMAS,
  SUGGESTED_PRIORITY_LEVELS,
} from '../../../src/flowcontrol/bootstrap.js';
import { ClusterScopedObjects } from './clusterscoped.js';
import { clone, type KubeObj, type ResourceVersions } from './objects.js';
import type { WatchHub } from './watch.js';

export const FLOWCONTROL_RESOURCES = ['flowschemas', 'prioritylevelconfigurations'] as const;
export type FlowControlResource = (typeof FLOWCONTROL_RESOURCES)[number];

export class FlowControlObjects extends ClusterScopedObjects<FlowControlResource> {
  constructor(rv: ResourceVersions, watches: WatchHub) {
    super(rv, watches, 'flowcontrol.apiserver.k8s.io', {
      flowschemas: 'FlowSchema',
      prioritylevelconfigurations: 'PriorityLevelConfiguration',
    });
    for (const pl of [...MANDATORY_PRIORITY_LEVELS, ...SUGGESTED_PRIORITY_LEVELS])
      this.put('prioritylevelconfigurations', clone(pl) as KubeObj);
    for (const fs of [...MANDATORY_FLOW_SCHEMAS, ...SUGGESTED_FLOW_SCHEMAS])
      this.put('flowschemas', clone(fs) as KubeObj);
  }
}
