/** Writing answers: objects in the negotiated encoding, and every error as a metav1.Status in one place. */
import type { Response } from 'express';
import yaml from 'js-yaml';
import { decoded, type ListItem } from '../apimachinery/encoded.js';
import { findRequestContext } from '../apimachinery/request.js';
import { requestEnded, whenRequestEnds } from '../apimachinery/requestend.js';
import { internalError, StatusError, type Status } from '../apimachinery/status.js';
import { goQuote } from '../apimachinery/golang/strconv.js';
import { whileClientTakes } from '../apimachinery/away.js';
import type { Logger } from '../log.js';
import { sliceClock, type BulkJob } from '../storage/bulkturns.js';
import { listJson, toJson } from './json.js';
import { wholeList, type ListAnswer } from './listanswer.js';
import { JSON_TYPE, YAML_TYPE, type Encoding } from './negotiation.js';

/** How answers are written as YAML (sigs.k8s.io/yaml writes no anchors, and folds no long lines). */
const YAML_OPTIONS: yaml.DumpOptions = { noRefs: true, lineWidth: -1 };

/** An answer already sent (a 504 once the deadline passed) is never followed by another. */
export function writeObject(res: Response, code: number, obj: unknown, encoding: Encoding = 'json'): void {
  if (res.headersSent) return;
  if (encoding === 'yaml') {
    sendText(res.status(code), YAML_TYPE, yaml.dump(withItemsDecoded(obj), YAML_OPTIONS));
    return;
  }
  const items = (obj as { items?: unknown }).items;
  sendText(
    res.status(code),
    JSON_TYPE,
    `${Array.isArray(items) ? listJson(obj as { items: unknown[] }) : toJson(obj)}\n`,
  );
}

/** Lists of more items than this are written in turns (writeList). */
const ITEMS_AT_ONCE = 256;
/** About the most one turn of a list's writing sends (the TLS layer encrypts what it is given at once). */
const PIECE_BYTES = 256 * 1024;

/**
 * A list answer. A large one goes out in pieces, its elements made and encoded a slice per bulk turn of `job`
 * (storage/bulkturns.ts), waiting for the client to take each: encoding and encrypting 10,000 objects at once held
 * the thread for tens of milliseconds in JSON, a Table's rows for hundreds, YAML for more than half a second, and
 * every other request with it. Its headers then carry no Content-Length (chunked, as kube's streamed lists).
 */
export async function writeList(
  res: Response,
  code: number,
  answer: ListAnswer,
  encoding: Encoding,
  job: BulkJob,
): Promise<void> {
  const sources = answer.sources;
  if (sources.length <= ITEMS_AT_ONCE || needsExpressSend(res)) {
    writeObject(res, code, wholeList(answer), encoding);
    return;
  }
  if (res.headersSent) return;
  const text = encoding === 'yaml' ? yamlPieces(answer) : jsonPieces(answer);
  res.status(code).setHeader('Content-Type', encoding === 'yaml' ? YAML_TYPE : JSON_TYPE);
  let piece = text.head;
  let i = 0;
  while (i < sources.length) {
    await job.turn();
    if (requestEnded(res)) return;
    const slice = sliceClock();
    do {
      piece += text.element(sources[i], i);
      i++;
    } while (i < sources.length && piece.length < PIECE_BYTES && !slice.over());
    // Waiting for the client to take it, the request holds no seats (apimachinery/away.ts); when it cannot have them
    // again in time, the rest of its answer is not written: it is cut.
    if (
      !res.write(piece) &&
      !(await whileClientTakes(() => drained(res)).then(
        () => true,
        () => false,
      ))
    )
      return void res.destroy();
    piece = '';
  }
  res.end(text.tail);
}

/** A list answer's text in parts: what comes before its elements, each element's, and what comes after. */
interface ListText {
  head: string;
  element(source: unknown, index: number): string;
  tail: string;
}

/** JSON, the elements last (as listJson writes a list): each item's JSON reused where it has one. */
function jsonPieces(answer: ListAnswer): ListText {
  const { [answer.key]: _, ...rest } = answer.frame;
  return {
    // Without the `]}` of the empty elements.
    head: JSON.stringify({ ...rest, [answer.key]: [] }).slice(0, -2),
    element: (source, i) => (i ? ',' : '') + toJson(answer.element(source)),
    tail: ']}\n',
  };
}

/**
 * YAML, the fields in the frame's order: the text of each part is the text the whole answer has for it (a block
 * mapping's fields, and a block sequence's elements, are written each on its own lines, and noRefs writes no
 * anchors that would tie one to another).
 */
function yamlPieces(answer: ListAnswer): ListText {
  const keys = Object.keys(answer.frame);
  const at = keys.indexOf(answer.key);
  const fields = (names: string[]) =>
    names.length ? yaml.dump(Object.fromEntries(names.map((k) => [k, answer.frame[k]])), YAML_OPTIONS) : '';
  const keyLine = yaml.dump({ [answer.key]: [null] }, YAML_OPTIONS).split('\n')[0] + '\n';
  return {
    head: fields(keys.slice(0, at)) + keyLine,
    element: (source) =>
      yaml.dump({ [answer.key]: [decoded(answer.element(source) as ListItem)] }, YAML_OPTIONS).slice(keyLine.length),
    tail: fields(keys.slice(at + 1)),
  };
}

/** Resolves when the client has taken what was written, or the request has ended (its client or connection gone). */
function drained(res: Response): Promise<void> {
  return new Promise((resolve) => {
    let forget = () => {};
    const done = () => {
      res.off('drain', done);
      forget();
      resolve();
    };
    res.on('drain', done);
    forget = whenRequestEnds(res, done);
  });
}

/** YAML is written from objects: a list's items still in their JSON form are decoded for it. */
function withItemsDecoded(obj: unknown): unknown {
  const items = (obj as { items?: unknown }).items;
  return Array.isArray(items) ? { ...(obj as object), items: items.map((i) => decoded(i as ListItem)) } : obj;
}

/**
 * The Content-Type exactly as kube-apiserver sends it (`application/json`, no `; charset=utf-8`, which Express adds
 * to a string body): the Python client's DynamicApiError.summary() reads an error's message only when the type is
 * exactly `application/json`.
 */
function sendText(res: Response, type: string, text: string): void {
  res.setHeader('Content-Type', type);
  if (needsExpressSend(res)) {
    res.send(Buffer.from(text));
    return;
  }
  // What express's send does for such an answer, without its header lookups: the string and its headers go out
  // in one write.
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** An answer express's send treats specially: HEAD (no body), a conditional request (maybe 304), no-body codes. */
function needsExpressSend(res: Response): boolean {
  const { method, headers } = res.req;
  return (
    method === 'HEAD' ||
    headers['if-none-match'] !== undefined ||
    headers['if-modified-since'] !== undefined ||
    res.statusCode === 204 ||
    res.statusCode === 205 ||
    res.statusCode === 304
  );
}

/** Warnings go back as `Warning: 299 - "<text>"` headers, one per distinct warning (a retried write repeats them). */
export function withWarnings(res: Response, warnings: string[]): Response {
  for (const w of new Set(warnings)) res.append('Warning', `299 - ${goQuote(w)}`);
  return res;
}

/** Errors are always JSON (as kube-apiserver sends them); a Retry-After goes with retryAfterSeconds. */
export function writeStatus(res: Response, status: Status): void {
  if (res.headersSent) return;
  // For the request log and the audit event (a URL refused before the request had a context has none of those).
  const context = findRequestContext(res.req);
  if (context) context.status = status;
  const retry = status.details?.retryAfterSeconds;
  if (retry && retry > 0) res.setHeader('Retry-After', String(retry));
  sendText(res.status(status.code), JSON_TYPE, `${JSON.stringify(status)}\n`);
}

export function writeError(res: Response, err: unknown, log: Logger): void {
  if (err instanceof StatusError) {
    writeStatus(res, err.status);
    return;
  }
  log.error('internal error', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  writeStatus(res, internalError(err).status);
}
