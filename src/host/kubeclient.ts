/**
 * @kubernetes/client-node, the server's Kubernetes client, loaded on first use: it weighs tens of MiB once loaded
 * (its generated API types), so a server without a host or connected cluster never loads it. Loaded with require
 * (Node loads an ES module synchronously that way) so that HostCluster.load stays synchronous and a kubeconfig that
 * does not load stops the start at once.
 */
import type * as KubeClient from '@kubernetes/client-node';
import { lazyRequire } from '../lazyrequire.js';

export type KubeConfig = KubeClient.KubeConfig;
export type { KubeClient };

export const kubeClient = lazyRequire<typeof KubeClient>('@kubernetes/client-node');
