/** The HTTP plumbing the stand-in's REST handlers share: JSON answers and JSON request bodies. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as errors from '../../../src/apimachinery/status.js';

export function reply(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export async function readBody(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw errors.badRequest('the request body is not JSON');
  }
}
