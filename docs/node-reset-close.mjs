#!/usr/bin/env node
// Does every response of a node:https server get 'close' when its client resets the connection during a large
// answer? (docs/node-reset-close.md). Node only, no dependencies; `openssl` makes a throwaway certificate.
//
//   node docs/node-reset-close.mjs [--resets 10000] [--bytes 4194304] [--parallel 32]
//     [--cut read|stall|early] [--chunked] [--request-cert]
//
// A bare https server answers every GET with --bytes (one res.end, or with --chunked in 256 KiB writes, each after
// 'drain'); --parallel clients at a time connect, send a GET and reset the connection (TCP RST, as a client killed
// mid-read) while the answer is being written:
//   read   after reading a random part of the answer (the default);
//   stall  having read nothing, 0-50 ms after sending the request, while the server's writes back up;
//   early  0-20 ms after sending the request, reading meanwhile.
// Once every client's connection has closed and every server-side connection too (or 10 s have passed), and then
// 2 s more, it prints one JSON line: how many responses never emitted 'close', and of those how many emitted
// 'finish' or 'error' or whose connection closed; and how many server-side connections never emitted 'close'.
// Exit code 1 when any response or connection is left open.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    resets: { type: 'string', default: '10000' },
    bytes: { type: 'string', default: String(4 * 1024 * 1024) },
    parallel: { type: 'string', default: '32' },
    cut: { type: 'string', default: 'read' },
    chunked: { type: 'boolean', default: false },
    'request-cert': { type: 'boolean', default: false },
  },
});
const RESETS = Number(args.resets);
const BYTES = Number(args.bytes);
const PARALLEL = Number(args.parallel);
const CUT = args.cut;
if (!['read', 'stall', 'early'].includes(CUT)) throw new Error(`--cut: read, stall or early, not ${CUT}`);

const dir = mkdtempSync(join(tmpdir(), 'node-reset-close-'));
execFileSync(
  'openssl',
  [
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
    ['-subj', '/CN=localhost', '-days', '1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')],
  ].flat(),
  { stdio: 'ignore' },
);
const key = readFileSync(join(dir, 'key.pem'));
const cert = readFileSync(join(dir, 'cert.pem'));
rmSync(dir, { recursive: true, force: true });

const body = Buffer.alloc(BYTES, 'x');
/** Responses that have not emitted 'close' yet, with what they did emit. */
const open = new Map();
/** Server-side TLS connections that have not emitted 'close' yet. */
const connections = new Set();
let served = 0;

const server = https.createServer(
  { key, cert, ...(args['request-cert'] ? { requestCert: true, rejectUnauthorized: false } : {}) },
  (req, res) => {
    served++;
    const seen = { finish: false, error: undefined, socketClosed: false };
    open.set(res, seen);
    res.on('finish', () => (seen.finish = true));
    res.on('error', (err) => (seen.error = err.code ?? err.message));
    res.on('close', () => open.delete(res));
    req.socket.once('close', () => (seen.socketClosed = true));
    res.setHeader('Content-Type', 'application/json');
    if (!args.chunked) {
      res.setHeader('Content-Length', body.length);
      res.end(body);
      return;
    }
    let at = 0;
    const more = () => {
      while (at < body.length)
        if (!res.write(body.subarray(at, (at += 256 * 1024)))) return void res.once('drain', more);
      res.end();
    };
    more();
  },
);
server.on('secureConnection', (socket) => {
  connections.add(socket);
  socket.once('close', () => connections.delete(socket));
});
// What a server does with a client's error: the connection goes (Node's default answers a 400 first).
server.on('clientError', (_err, socket) => socket.destroy());
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();

function resetOnce() {
  return new Promise((resolve) => {
    const raw = net.connect(port, '127.0.0.1');
    const socket = tls.connect({ socket: raw, rejectUnauthorized: false, servername: 'localhost' });
    raw.on('error', () => {});
    socket.on('error', () => {});
    raw.once('close', resolve);
    socket.once('secureConnect', () => {
      socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
      if (CUT === 'stall') {
        socket.pause();
        setTimeout(() => raw.resetAndDestroy(), Math.random() * 50);
      } else if (CUT === 'early') {
        socket.resume();
        setTimeout(() => raw.resetAndDestroy(), Math.random() * 20);
      }
    });
    if (CUT !== 'read') return;
    const cut = 1 + Math.floor((Math.random() * BYTES) / 2);
    let got = 0;
    socket.on('data', (data) => {
      got += data.length;
      if (got < cut) return;
      socket.removeAllListeners('data');
      raw.resetAndDestroy();
    });
  });
}

let started = 0;
async function client() {
  while (started < RESETS) {
    started++;
    await resetOnce();
  }
}
await Promise.all(Array.from({ length: PARALLEL }, client));
const waitUntil = Date.now() + 10_000;
while (connections.size > 0 && Date.now() < waitUntil) await new Promise((resolve) => setTimeout(resolve, 100));
await new Promise((resolve) => setTimeout(resolve, 2000));

const left = [...open.values()];
console.log(
  JSON.stringify({
    node: process.version,
    resets: RESETS,
    bytes: BYTES,
    cut: CUT,
    chunked: args.chunked,
    requestCert: args['request-cert'],
    served,
    responsesWithoutClose: left.length,
    ofThoseFinished: left.filter((s) => s.finish).length,
    ofThoseErrored: left.filter((s) => s.error).length,
    ofThoseWhoseConnectionClosed: left.filter((s) => s.socketClosed).length,
    connectionsWithoutClose: connections.size,
  }),
);
server.closeAllConnections();
server.close();
process.exit(left.length || connections.size ? 1 : 0);
