/**
 * The actions the API serves, found by group, version, resource and subresource, as the registry finds the stores
 * of the stored kinds. Filled before the server takes requests; read by routing, discovery, OpenAPI and metrics.
 */
import type { Action } from './action.js';

export class ServedActions {
  private readonly byKey = new Map<string, Action>();

  add(action: Action): void {
    this.byKey.set(actionKey(action), action);
  }

  find(group: string, version: string, resource: string, subresource: string): Action | undefined {
    return this.byKey.get(actionKey({ group, version, resource, subresource }));
  }

  get all(): Action[] {
    return [...this.byKey.values()];
  }
}

function actionKey(a: { group: string; version: string; resource: string; subresource: string }): string {
  return `${a.group}/${a.version}/${a.resource}/${a.subresource}`;
}
