/**
 * The Kubernetes version a cluster's /version names (its gitVersion), as the server records it in a status: only
 * when it reads as a version (`v1.33.1`, `v1.30.9+k3s1`, `v1.29.4-gke.1043002`). The answer may come from a server a
 * tenant runs, and the status is shown to everyone who may read the object (escape sequences, newlines, any text).
 */
const VERSION = /^v?\d{1,4}\.\d{1,4}(\.\d{1,6})?([-+][0-9A-Za-z.+-]{1,100})?$/;

/** The answer's gitVersion when it is a version; '' otherwise. */
export function kubernetesVersionOf(answer: unknown): string {
  const gitVersion =
    typeof answer === 'object' && answer !== null ? (answer as Record<string, unknown>).gitVersion : undefined;
  return typeof gitVersion === 'string' && VERSION.test(gitVersion) ? gitVersion : '';
}
