// The fairness benchmark's second tenant (bench/fairness.mjs), in a process of its own, as a client on another
// machine would be: in the flooding client's process, its GETs' callbacks waited behind that client's own work (64
// TLS handshakes at each phase's start, decrypting lists of 10,000 objects), which the server is not to blame for.
//
// Forked with an IPC channel. Messages in: { start: { url, caPem, token, path, from, rate, phase } }, then
// { phase } whenever the phase changes, then { stop: true }; out: { ready: true } once started, and { phases } when
// stopped: per phase, the latencies (ms) of the GETs sent in it and their answers by status.
import https from 'node:https';
import { fileURLToPath } from 'node:url';

const now = () => performance.now();
const WARM_CONNECTIONS = 4;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One request whose body is read and thrown away (a flood's lists would fill the client's memory otherwise); the
 * answer's status (or the socket error's code) and, for an error, the Status's message.
 */
export function drained(server, method, path, { agent, token, body, from, contentType = 'application/json' }) {
  const url = new URL(path, server.url);
  const headers = { Authorization: `Bearer ${token}` };
  if (body !== undefined) {
    headers['Content-Type'] = contentType;
    headers['Content-Length'] = Buffer.byteLength(body);
  }
  return new Promise((resolve) => {
    const req = https.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        headers,
        ca: server.caPem,
        agent,
        localAddress: from,
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => {
          if (res.statusCode >= 400 && text.length < 4096) text += chunk;
        });
        res.on('end', () => {
          let message;
          try {
            message = text ? JSON.parse(text).message : undefined;
          } catch {
            message = text.slice(0, 200);
          }
          resolve({ status: String(res.statusCode), message });
        });
        res.on('error', (err) => resolve({ status: err.code ?? 'error', message: err.message }));
      },
    );
    req.on('error', (err) => resolve({ status: err.code ?? 'error', message: err.message }));
    req.end(body);
  });
}

/** Counts an answer by status, and keeps the first message of each error status. */
export function count(counts, { status, message }) {
  counts[status] = (counts[status] ?? 0) + 1;
  if (message && !counts.messages?.[status]) (counts.messages ??= {})[status] = message;
}

/**
 * `rate` GETs a second of `path` until stop(), open loop: each is sent on time whatever happened to earlier ones.
 * `phase()` names the phase each GET is counted in (the one it was sent in); `slow(ms, sentAtS)` hears of each GET
 * slower than `slowMs`. Resolves once its connections are open.
 */
export async function steadyGets({ server, token, path, from, rate, phase, slowMs = Infinity, slow = () => {} }) {
  // A client's few connections (client-go's HTTP/2 would use one): GETs beyond them wait in the client, counted.
  const agent = new https.Agent({ keepAlive: true, maxSockets: 16 });
  // A steady client's connections are open before it is measured, as in the baseline: WARM_CONNECTIONS of them.
  await Promise.all(
    Array.from({ length: WARM_CONNECTIONS }, () => drained(server, 'GET', path, { agent, token, from })),
  );
  const phases = {};
  const pending = new Set();
  let stopped = false;
  const loop = (async () => {
    const t0 = now();
    for (let i = 0; !stopped; i++) {
      const wait = t0 + (i * 1000) / rate - now();
      if (wait > 1) await sleep(wait);
      if (stopped) break;
      const p = (phases[phase()] ??= { latencies: [], statuses: {} });
      const sent = now();
      const get = drained(server, 'GET', path, { agent, token, from }).then((status) => {
        const took = now() - sent;
        p.latencies.push(took);
        if (took > slowMs) slow(took, (sent - t0) / 1000, phase());
        count(p.statuses, status);
        pending.delete(get);
      });
      pending.add(get);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      await Promise.all(pending);
      agent.destroy();
      return phases;
    },
  };
}

// As a child: one steadyGets run, driven by the parent's messages.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) {
  let gets;
  let phase;
  // The parent gone (a failed arm): nothing more to measure.
  process.on('disconnect', () => process.exit(0));
  process.on('message', async (msg) => {
    if (msg.start) {
      // Infinity does not survive the channel's JSON: no slowMs means none is slow.
      const { url, caPem, slowMs = Infinity, ...options } = msg.start;
      phase = msg.start.phase;
      gets = await steadyGets({
        ...options,
        server: { url, caPem },
        phase: () => phase,
        slowMs,
        slow: (took, sentAt, inPhase) => process.send({ slow: { took, sentAt, phase: inPhase } }),
      });
      process.send({ ready: true });
    } else if (msg.phase) {
      phase = msg.phase;
    } else if (msg.stop) {
      process.send({ phases: await gets.stop() });
    }
  });
}
