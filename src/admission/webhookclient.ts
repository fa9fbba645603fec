/**
 * Calls one admission webhook: an HTTPS POST of the AdmissionReview to `clientConfig.url`, or to the service
 * `https://<name>.<namespace>.svc:<port><path>` as the cluster's DNS resolves it, the serving certificate verified
 * with `caBundle` (else the system roots), within `timeoutSeconds` (sent as `?timeout=`, as client-go does). It is
 * sent as the requests to Kubernetes APIs are (host/boundedrequest.ts: the time bound, a bound on the answer's bytes,
 * kept-alive connections per TLS material). Any failure is a WebhookCallError; its message names the URL and why,
 * never the request's content.
 */
import { readFileSync } from 'node:fs';
import { awayFromThread } from '../apimachinery/away.js';
import { exchange, isTimeout } from '../host/boundedrequest.js';
import type { UserCredentials } from '../host/kubeconfigfile.js';
import { TlsAgents } from '../host/tlsagents.js';
import type { WebhookClientConfig } from './webhookconfig.js';
import { tracer } from '../tracing.js';

/** Answers larger than this are refused (an AdmissionReview holds one object and a patch). */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/**
 * The agents of all webhooks, one per TLS material (caBundle, the client certificate presented): webhooks that share
 * them share connections. A few webhooks are configured at a time; more materials than this are changing ones.
 */
const agents = new TlsAgents({ protocol: 'https:', capacity: 32 });

export class WebhookCallError extends Error {}

export function webhookUrl(config: WebhookClientConfig): URL {
  if (config.url) return new URL(config.url);
  const service = config.service;
  if (!service) throw new WebhookCallError('the webhook has neither clientConfig.url nor clientConfig.service');
  const path = service.path ?? '';
  return new URL(`https://${service.name}.${service.namespace}.svc:${service.port ?? 443}${path}`);
}

/**
 * POSTs `body` (JSON) and resolves with the decoded JSON answer of a 2xx. `credentials` picks what this server
 * presents to the webhook's host (--admission-control-config-file), if anything.
 */
export function callWebhook(
  config: WebhookClientConfig,
  body: unknown,
  timeoutSeconds: number,
  credentials?: (url: URL) => UserCredentials | undefined,
): Promise<unknown> {
  let url: URL;
  let auth: { headers: Record<string, string>; cert?: string; key?: string };
  try {
    url = webhookUrl(config);
    auth = presented(credentials?.(url));
  } catch (err) {
    return Promise.reject(err instanceof WebhookCallError ? err : new WebhookCallError(String((err as Error).message)));
  }
  url.searchParams.set('timeout', `${timeoutSeconds}s`);
  // Credentials in the URL (`user:password@`) are sent as Basic credentials, as node's https would, and never shown.
  const basic = url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined;
  const shownUrl = new URL(url);
  shownUrl.username = shownUrl.password = '';
  const shown = `Post "${shownUrl.href}"`;
  const payload = Buffer.from(JSON.stringify(body));
  const failure = (why: string) => new WebhookCallError(`failed to call webhook: ${shown}: ${why}`);
  const request = async () => ({
    url,
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json',
      'Content-Length': payload.length,
      // The request's traceparent: the webhook may continue its trace.
      ...tracer().outgoingHeaders(),
      ...auth.headers,
    },
    body: payload,
    auth: basic,
    agent: agents.for({
      ca: config.caBundle ? Buffer.from(config.caBundle, 'base64').toString() : undefined,
      cert: auth.cert,
      key: auth.key,
    }),
    timeoutMs: timeoutSeconds * 1000,
  });
  // Waiting on the webhook: the calling request's seats are not its flow's meanwhile (apimachinery/away.ts).
  return awayFromThread(async () => {
    if (url.protocol !== 'https:') throw failure('the webhook URL must use https');
    let answer: { statusCode: number; text: string };
    try {
      answer = await exchange(
        request,
        MAX_RESPONSE_BYTES,
        () => new Error(`the answer is larger than ${MAX_RESPONSE_BYTES} bytes`),
        { sendOnce: true },
      );
    } catch (err) {
      throw failure(isTimeout(err) ? 'context deadline exceeded' : (err as Error).message);
    }
    const code = answer.statusCode;
    if (code < 200 || code > 299) throw failure(`the server answered HTTP ${code}`);
    try {
      return JSON.parse(answer.text);
    } catch {
      throw failure('the answer is not JSON');
    }
  });
}

/** The headers and client certificate of a kubeconfig user; files are read at each call (tokens rotate). */
function presented(user: UserCredentials | undefined): {
  headers: Record<string, string>;
  cert?: string;
  key?: string;
} {
  if (!user) return { headers: {} };
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new WebhookCallError(`cannot read the ${what} ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  };
  const headers: Record<string, string> = {};
  const token = user.tokenFile ? read(user.tokenFile, 'token file').trim() : user.token;
  if (token) headers.Authorization = `Bearer ${token}`;
  else if (user.username !== undefined)
    headers.Authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
  if (user.impersonate?.user) headers['Impersonate-User'] = user.impersonate.user;
  const cert = user.certData
    ? Buffer.from(user.certData, 'base64').toString()
    : user.certFile && read(user.certFile, 'client certificate');
  const key = user.keyData
    ? Buffer.from(user.keyData, 'base64').toString()
    : user.keyFile && read(user.keyFile, 'client key');
  return { headers, cert: cert || undefined, key: key || undefined };
}
