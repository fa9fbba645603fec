// Reset storm (issue 39): a tenant's clients reset their TLS connections while the server writes them a large answer,
// over and over; then the same tenant's GET. What it measures: whether every request so ended gave back its APF seat
// and in-flight count (apiserver_flowcontrol_current_executing_seats of its level back to 0), and whether the tenant
// is served afterwards (with one seat per flow, a seat lost for good is a 429 for everything it sends).
//
// For bench/fairness.mjs (--reset-storm), which calls it against a running server with the tenant's token.
import net from 'node:net';
import tls from 'node:tls';
import { expectStatus, f1, httpsRequest, log, now, sleep } from './lib.mjs';

/** One GET of `path` on a new connection, reset (TCP RST) once a random part of its answer has come. */
function resetOnce(server, path, token, from) {
  const url = new URL(server.url);
  return new Promise((resolve) => {
    const raw = net.connect({ host: url.hostname, port: Number(url.port), localAddress: from });
    const socket = tls.connect({ socket: raw, ca: server.caPem, servername: url.hostname });
    raw.on('error', () => {});
    socket.on('error', () => {});
    raw.once('close', resolve);
    socket.once('secureConnect', () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\n\r\n`),
    );
    // Somewhere in the first 64 KiB of the answer (its headers included): the server is still writing the rest.
    const cut = 1 + Math.floor(Math.random() * 65536);
    let got = 0;
    socket.on('data', (data) => {
      got += data.length;
      if (got < cut) return;
      socket.removeAllListeners('data');
      raw.resetAndDestroy();
    });
  });
}

/** The sum of a gauge's samples for the level, from the admin's scrape of /metrics. */
async function gauge(name, level) {
  const res = await httpsRequest('GET', '/metrics');
  expectStatus(res, 200, 'metrics');
  const re = new RegExp(`^${name}\\{[^}]*priority_level="${level}"[^}]*\\} (\\S+)$`, 'gm');
  return [...res.body.toString().matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
}

/**
 * `resets` resets of `path` by the tenant (`token`, from `from`), `parallel` at a time; then, once the level's seats
 * are back to 0 or `settleMs` has passed, the tenant's GET of `getPath`.
 */
export async function resetStorm(
  server,
  { token, from, path, getPath, resets = 1000, parallel = 16, settleMs = 15_000 },
) {
  const t0 = now();
  let started = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (started < resets) {
        started++;
        await resetOnce(server, path, token, from);
      }
    }),
  );
  const stormSeconds = (now() - t0) / 1000;
  const level = 'global-default';
  const until = now() + settleMs;
  let seats = await gauge('apiserver_flowcontrol_current_executing_seats', level);
  while (seats > 0 && now() < until) {
    await sleep(200);
    seats = await gauge('apiserver_flowcontrol_current_executing_seats', level);
  }
  const get = await httpsRequest('GET', getPath, { token });
  const result = { resets, parallel, path, stormSeconds, seatsAfter: seats, getStatus: get.status };
  log(
    `  reset storm: ${resets} resets in ${f1(stormSeconds)} s; seats held after ${seats}; the tenant's GET ${get.status}`,
  );
  return result;
}

export function resetStormLines(r) {
  const met = r.seatsAfter === 0 && r.getStatus === 200;
  return [
    `Reset storm: ${r.resets} GETs of \`${r.path}\` by one tenant, ${r.parallel} at a time, each reset (TCP RST) after a random part of its first 64 KiB (${f1(r.stormSeconds)} s); then the same tenant's GET.`,
    '',
    `- executing seats of global-default afterwards: ${r.seatsAfter}; the tenant's GET: ${r.getStatus}. Goal (0 seats held, GET 200) ${met ? 'met' : 'not met'}.`,
    '',
  ];
}
