/**
 * Calls one admission webhook: an HTTPS POST of the AdmissionReview to `clientConfig.url`, or to the service
 * `https://<name>.<namespace>.svc:<port><path>` as the cluster's DNS resolves it, the serving certificate verified
 * with `caBundle` (else the system roots), within `timeoutSeconds` (sent as `?timeout=`, as client-go does). Any
 * failure is a WebhookCallError; its message names the URL and why, never the request's content.
 */
import https from 'node:https';
import type { WebhookClientConfig } from './webhookconfig.js';

/** Answers larger than this are refused (an AdmissionReview holds one object and a patch). */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

export class WebhookCallError extends Error {}

export function webhookUrl(config: WebhookClientConfig): URL {
  if (config.url) return new URL(config.url);
  const service = config.service;
  if (!service) throw new WebhookCallError('the webhook has neither clientConfig.url nor clientConfig.service');
  const path = service.path ?? '';
  return new URL(`https://${service.name}.${service.namespace}.svc:${service.port ?? 443}${path}`);
}

/** POSTs `body` (JSON) and resolves with the decoded JSON answer of a 2xx. */
export function callWebhook(config: WebhookClientConfig, body: unknown, timeoutSeconds: number): Promise<unknown> {
  let url: URL;
  try {
    url = webhookUrl(config);
  } catch (err) {
    return Promise.reject(err instanceof WebhookCallError ? err : new WebhookCallError(`invalid URL: ${err}`));
  }
  url.searchParams.set('timeout', `${timeoutSeconds}s`);
  const shown = `Post "${url.href}"`;
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const fail = (why: string) => reject(new WebhookCallError(`failed to call webhook: ${why}`));
    if (url.protocol !== 'https:') return fail(`${shown}: the webhook URL must use https`);
    const req = https.request(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'Content-Length': payload.length },
      ca: config.caBundle ? Buffer.from(config.caBundle, 'base64').toString() : undefined,
      timeout: timeoutSeconds * 1000,
    });
    const timer = setTimeout(() => req.destroy(new Error('context deadline exceeded')), timeoutSeconds * 1000);
    req.on('timeout', () => req.destroy(new Error('context deadline exceeded')));
    req.on('error', (err) => {
      clearTimeout(timer);
      fail(`${shown}: ${err.message}`);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) req.destroy(new Error(`the answer is larger than ${MAX_RESPONSE_BYTES} bytes`));
        else chunks.push(chunk);
      });
      res.on('end', () => {
        clearTimeout(timer);
        const code = res.statusCode ?? 0;
        if (code < 200 || code > 299) return fail(`${shown}: the server answered HTTP ${code}`);
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString()));
        } catch {
          fail(`${shown}: the answer is not JSON`);
        }
      });
    });
    req.end(payload);
  });
}
