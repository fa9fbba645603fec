/**
 * A virtual cluster run by a hostile tenant, for tests: an HTTPS server of its own (its own CA, on 127.0.0.1) in
 * front of a real stand-in (hostcluster.ts). It forwards every request to the stand-in and passes its answer on,
 * unless the test's `answer` says otherwise for a request: change the stand-in's JSON answer, refuse it (401),
 * stream a body of many megabytes as fast as the client reads it, or announce a huge Content-Length and then send
 * nothing more. It keeps every request it received (with its JSON body), and for each streamed or announced answer
 * how it ended: how much was written before the client closed the connection.
 */
import { createServer, request, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import yaml from 'js-yaml';
import { makeCert } from './certs.js';
import type { HostClusterStandIn } from './hostcluster.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  /** The query string, with its '?' ('' for none). */
  query: string;
  /** The JSON body, undefined for none. */
  body: any;
}

export type HostileAnswer =
  /** The stand-in's answer (its status), its JSON body changed. */
  | { change: (answer: any) => any }
  /** HTTP `refuse` (401: the credential is not accepted) with a Status (its message `message`), as kube-apiserver refuses. */
  | { refuse: number; message?: string }
  /** A chunked body of `stream` bytes (a JSON object with one endless string, no newline), HTTP `status` (200). */
  | { stream: number; status?: number }
  /** 200 with `Content-Length: bytes`, a few bytes of it, then nothing until the client closes. */
  | { announce: number };

export interface AnswerOutcome {
  /** Bytes of the body written before it ended or the client closed the connection. */
  written: number;
  /** The bytes the answer had or announced. */
  total: number;
  /** The client closed the connection before the whole body was written. */
  cutShort: boolean;
}

export interface HostileVirtualCluster {
  url: string;
  /** What a `vc-<name>` Secret holds to reach it: its URL (or `server`) and CA, the stand-in's token. */
  kubeconfigText(server?: string): string;
  readonly received: ReceivedRequest[];
  /** How to answer a request; undefined (or answering undefined): forward it. */
  answer?: (req: ReceivedRequest) => HostileAnswer | undefined;
  /** How each streamed or announced answer ended, in the order they were started. */
  readonly outcomes: Promise<AnswerOutcome>[];
  stop(): Promise<void>;
}

const CHUNK = Buffer.alloc(64 * 1024, 'a');
const HEAD =
  '{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"huge"},"p":"';

export async function startHostileVirtualCluster(real: HostClusterStandIn): Promise<HostileVirtualCluster> {
  const ca = makeCert({ commonName: 'hostile-ca', isCa: true });
  const serving = makeCert({ commonName: 'hostile', issuer: ca, usage: 'serverAuth', ips: ['127.0.0.1'] });
  const received: ReceivedRequest[] = [];
  const outcomes: Promise<AnswerOutcome>[] = [];

  const server: Server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'https://hostile');
      const text = Buffer.concat(chunks).toString('utf8');
      const record: ReceivedRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.search,
        body: text ? JSON.parse(text) : undefined,
      };
      received.push(record);
      const how = api.answer?.(record);
      if (how && 'refuse' in how) refuse(res, how.refuse, how.message);
      else if (how && 'stream' in how) outcomes.push(stream(res, how.stream, how.status ?? 200));
      else if (how && 'announce' in how) outcomes.push(announce(res, how.announce));
      else forward(real, req, text, res, how?.change);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const api: HostileVirtualCluster = {
    url,
    received,
    outcomes,
    kubeconfigText(server = url) {
      const config = yaml.load(real.kubeconfigText()) as any;
      config.clusters[0].cluster = {
        server,
        'certificate-authority-data': Buffer.from(ca.certPem).toString('base64'),
      };
      return yaml.dump(config);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return api;
}

/** Sends the request on to the stand-in and its answer back, the JSON body changed by `change` when given. */
function forward(
  real: HostClusterStandIn,
  req: IncomingMessage,
  body: string,
  res: ServerResponse,
  change?: (answer: any) => any,
): void {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (req.headers.authorization) headers.authorization = req.headers.authorization;
  if (body) headers['content-type'] = 'application/json';
  const out = request(
    `${real.url}${req.url}`,
    { method: req.method, headers, ca: real.caPem, agent: false },
    (answer) => {
      const parts: Buffer[] = [];
      answer.on('data', (c: Buffer) => parts.push(c));
      answer.on('end', () => {
        let text = Buffer.concat(parts).toString('utf8');
        if (change) text = JSON.stringify(change(JSON.parse(text)));
        res.writeHead(answer.statusCode ?? 500, {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(text),
        });
        res.end(text);
      });
    },
  );
  out.on('error', () => res.destroy());
  out.end(body || undefined);
}

/** A Status of HTTP `code`. */
function refuse(res: ServerResponse, code: number, message = 'refused'): void {
  const text = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, message });
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** Writes `total` bytes as fast as the client takes them (never more than a chunk ahead of it). */
function stream(res: ServerResponse, total: number, status: number): Promise<AnswerOutcome> {
  return new Promise((resolve) => {
    let written = 0;
    const write = (data: Buffer | string) => {
      written += Buffer.byteLength(data);
      return res.write(data);
    };
    res.once('close', () => resolve({ written, total, cutShort: written < total || !res.writableFinished }));
    res.writeHead(status, { 'Content-Type': 'application/json' });
    write(HEAD);
    const pump = () => {
      while (!res.destroyed) {
        const left = total - written - 2;
        if (left <= 0) {
          written += 2;
          return void res.end('"}');
        }
        if (!write(left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left))) return void res.once('drain', pump);
      }
    };
    pump();
  });
}

/** Announces `total` bytes and writes the first few only. */
function announce(res: ServerResponse, total: number): Promise<AnswerOutcome> {
  return new Promise((resolve) => {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': total });
    res.write(HEAD);
    const written = Buffer.byteLength(HEAD);
    res.once('close', () => resolve({ written, total, cutShort: true }));
  });
}
