import type { ListingsChangedMessage, ListingsResyncMessage, WebhookTestMessage } from './openapi.js';
import type { NodeRequestLike, NodeResponseLike } from './proxy.js';

/**
 * Webhooks of the Listings API (Standard Webhooks signatures): verify a message, or mount a handler
 * that verifies and calls you with the ids that changed. Web Crypto only, so the same code runs in
 * Node 20+, Deno, Bun and edge runtimes.
 */

/** Every message an endpoint receives. */
export type WebhookMessage = ListingsChangedMessage | ListingsResyncMessage | WebhookTestMessage;

/** Standard Webhooks' tolerance: a message signed further than this from the receiver's clock is refused. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

/** The largest body the receiver takes by default: the API's messages name at most 1,000 ids (under 80 KB). */
export const WEBHOOK_MAX_BODY_BYTES = 1024 * 1024;

/**
 * Why a message was refused: a header missing, no signature that matches (or none well-formed), a
 * timestamp out of tolerance, a signed body that is not JSON, a secret that is not `whsec_...`; or,
 * by the handler, a body over `maxBodyBytes` (413) or cut short by the sender (the connection closed
 * mid-body).
 */
export type WebhookErrorReason = 'missing_headers' | 'bad_signature' | 'stale_timestamp' | 'bad_body' | 'bad_secret' | 'body_too_large' | 'incomplete_body';

export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: WebhookErrorReason,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

type Headers = Headers_ | Record<string, string | string[] | undefined>;
type Headers_ = { get(name: string): string | null };

function header(headers: Headers, name: string): string | undefined {
  if (typeof (headers as Headers_).get === 'function') return (headers as Headers_).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? value[0] : value;
}

const encoder = new TextEncoder();

function base64ToBytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(new ArrayBuffer(binary.length));
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Compares without stopping at the first difference. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

async function signature(secret: string, content: string): Promise<string> {
  if (!secret.startsWith('whsec_')) throw new WebhookVerificationError('bad_secret', 'A webhook secret starts with whsec_: copy it whole from the dashboard or the CLI.');
  let key: Uint8Array<ArrayBuffer>;
  try {
    key = base64ToBytes(secret.slice('whsec_'.length));
  } catch {
    throw new WebhookVerificationError('bad_secret', 'The webhook secret is not whsec_ followed by base64: copy it whole.');
  }
  const hmac = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return bytesToBase64(new Uint8Array(await crypto.subtle.sign('HMAC', hmac, encoder.encode(content))));
}

export interface VerifyOptions {
  /** Seconds since the epoch now (tests); the receiver's clock by default. */
  now?: number | undefined;
}

/** The signature headers of a message, checked as far as they can be without the body. */
interface SignedHeaders {
  id: string;
  timestamp: string;
  /** The base64 HMACs of the `v1,` signatures. */
  signatures: string[];
}

/** A `v1,` signature: the base64 of a 32-byte HMAC-SHA256. */
const V1_SIGNATURE = /^v1,([A-Za-z0-9+/]{43}=)$/;

/**
 * The checks that need no body: the three headers present, the timestamp within tolerance, at
 * least one well-formed `v1,` signature. So a receiver refuses a message that cannot verify before
 * reading its body.
 */
function checkHeaders(headers: Headers, now: number): SignedHeaders {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatureHeader = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatureHeader === undefined) {
    throw new WebhookVerificationError('missing_headers', 'The webhook-id, webhook-timestamp and webhook-signature headers are required: is this a message of the Listings API?');
  }
  const seconds = Number(timestamp);
  if (!/^[0-9]+$/.test(timestamp) || Math.abs(now - seconds) > WEBHOOK_TOLERANCE_SECONDS) {
    throw new WebhookVerificationError('stale_timestamp', `The message was signed at ${timestamp.slice(0, 20)}, more than ${WEBHOOK_TOLERANCE_SECONDS} s from this clock (${now}): a replay, or a clock that is off.`);
  }
  const signatures = signatureHeader.split(' ').flatMap((s) => V1_SIGNATURE.exec(s)?.[1] ?? []);
  if (signatures.length === 0) throw new WebhookVerificationError('bad_signature', 'The webhook-signature header holds no v1 signature (v1,<base64 of an HMAC-SHA256>).');
  return { id, timestamp, signatures };
}

/** The body under the checked headers' signatures, parsed; throws WebhookVerificationError. */
async function verifyBody(body: string, signed: SignedHeaders, secret: string | readonly string[]): Promise<WebhookMessage> {
  for (const candidate of typeof secret === 'string' ? [secret] : secret) {
    const expected = await signature(candidate, `${signed.id}.${signed.timestamp}.${body}`);
    if (signed.signatures.some((s) => sameText(s, expected))) {
      try {
        return JSON.parse(body) as WebhookMessage;
      } catch {
        throw new WebhookVerificationError('bad_body', 'The signed body is not JSON.');
      }
    }
  }
  throw new WebhookVerificationError('bad_signature', 'No signature matches: check the secret (after a rotation, use the new one), and pass the body exactly as received.');
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Verifies a message: its signature under `secret` (or any of several, during a rotation on your
 * side), and that it was signed within 5 minutes of now. `rawBody` is the body exactly as received
 * (a parsed and re-serialised object would not verify). Returns the message; throws
 * WebhookVerificationError saying why not.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: Headers,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): Promise<WebhookMessage> {
  const signed = checkHeaders(headers, options.now ?? nowSeconds());
  return verifyBody(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody), signed, secret);
}

export interface WebhookHandlerOptions {
  /** The endpoint's `whsec_...` secret (several during a rotation on your side). */
  secret: string | readonly string[];
  /**
   * Listings changed: rebuild the pages of `upserted`, drop those of `removed`. Answered 204 once
   * what it returns resolves (whatever it resolves to); 500 if it throws or rejects.
   */
  onChange(change: { country: string; upserted: string[]; removed: string[] }, message: ListingsChangedMessage): unknown;
  /** Read everything again (the feed without a cursor). */
  onResync?: ((message: ListingsResyncMessage) => unknown) | undefined;
  /**
   * Every message refused (a WebhookVerificationError: 400, or 413 for a body over `maxBodyBytes`;
   * `incomplete_body` when the sender closed the connection mid-body) and every failure of your
   * callbacks (answered 500: the message comes again). What it throws is ignored.
   */
  onError?: ((error: unknown) => void) | undefined;
  /**
   * The largest body taken, in bytes (default 1 MiB, WEBHOOK_MAX_BODY_BYTES; the API's messages
   * stay under 80 KB). A larger one is answered 413: before reading it when its Content-Length says
   * so, else as soon as it streams past the cap.
   */
  maxBodyBytes?: number | undefined;
}

/** What the node adapter reads of a request: node:http's IncomingMessage (Express's request is one). */
export interface NodeWebhookRequest extends NodeRequestLike {
  /** The raw body, when a body parser read it first (`express.text({ type: 'application/json' })` or `express.raw`). */
  body?: unknown;
  /** True once the body has been read to its end (by a body parser that ran first, when the receiver finds it so). */
  readableEnded?: boolean;
  on(event: 'data', listener: (chunk: Uint8Array | string) => void): unknown;
  on(event: 'end' | 'close', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

export interface WebhookHandler {
  /** For fetch-style frameworks (Next.js route handlers, Hono, Bun, Deno): `POST` only. It never rejects. */
  (request: Request): Promise<Response>;
  /**
   * For node:http and Express (mount it before any body parser, or after `express.text({ type:
   * 'application/json' })`): `createServer(webhook.node)`, `app.post(path, webhook.node)`. It
   * answers every request itself, errors included, and returns nothing to await.
   */
  node(req: NodeWebhookRequest, res: NodeResponseLike): void;
}

/** What the receiver answers: a status, and for a refusal the JSON `{ error, message }`. */
interface Outcome {
  status: number;
  refusal?: { error: string; message: string };
  /** Answered without reading the body to its end: the connection is closed after the answer rather than reading the rest. */
  unread?: boolean;
}

function tooLarge(max: number): WebhookVerificationError {
  return new WebhookVerificationError('body_too_large', `The body is larger than ${max} bytes, the most this receiver takes (maxBodyBytes).`);
}
function incomplete(): WebhookVerificationError {
  return new WebhookVerificationError('incomplete_body', 'The body was cut short: the sender closed the connection before sending all of it.');
}
function refusalOf(error: WebhookVerificationError): Outcome {
  return { status: error.reason === 'body_too_large' ? 413 : 400, refusal: { error: error.reason, message: error.message } };
}

/** Bytes read in pieces, decoded once whole: a piece may end inside a character. */
function decodeAll(chunks: readonly Uint8Array[], size: number): string {
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(all);
}

/**
 * A node:http request's body, up to `max` bytes. Past `max` it rejects at once and drops the rest
 * as it comes (the stream keeps flowing, so the answer can still be sent); a connection closed
 * mid-body rejects with `incomplete_body`. Every event is listened to, so none is left to throw.
 */
function readNodeBody(req: NodeWebhookRequest, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let settled = false;
    const settle = (error?: WebhookVerificationError) => {
      if (settled) return;
      settled = true;
      if (error === undefined) resolve(decodeAll(chunks, size));
      else reject(error);
    };
    req.on('data', (chunk) => {
      if (settled) return;
      const bytes = typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
      size += bytes.byteLength;
      if (size > max) return settle(tooLarge(max));
      chunks.push(bytes);
    });
    req.on('end', () => settle());
    req.on('error', () => settle(incomplete()));
    req.on('close', () => settle(incomplete()));
  });
}

/** A Fetch API request's body, up to `max` bytes (then the stream is cancelled); a body that fails mid-way is `incomplete_body`. */
async function readFetchBody(request: Request, max: number): Promise<string> {
  if (request.body === null) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let next: ReadableStreamReadResult<Uint8Array>;
    try {
      next = await reader.read();
    } catch {
      throw incomplete();
    }
    if (next.done) return decodeAll(chunks, size);
    size += next.value.byteLength;
    if (size > max) {
      reader.cancel().catch(() => {});
      throw tooLarge(max);
    }
    chunks.push(next.value);
  }
}

/** A receiver that verifies each message and calls `onChange` (or `onResync`); a test event is just answered. */
export function createWebhookHandler(options: WebhookHandlerOptions): WebhookHandler {
  const maxBodyBytes = options.maxBodyBytes ?? WEBHOOK_MAX_BODY_BYTES;
  if (!(Number.isSafeInteger(maxBodyBytes) && maxBodyBytes >= 1)) throw new TypeError('maxBodyBytes must be a whole number of bytes, 1 or more.');
  const report = (error: unknown) => {
    try {
      options.onError?.(error);
    } catch {
      // A logger that throws must not change the answer.
    }
  };

  /** Everything that needs no body: the method, the signature headers, the announced length. A refusal, or the headers to verify the body with. */
  function admit(method: string, headers: Headers): Outcome | SignedHeaders {
    if (method !== 'POST') return { status: 405, refusal: { error: 'method_not_allowed', message: 'Webhook messages are POSTed.' }, unread: true };
    try {
      const signed = checkHeaders(headers, nowSeconds());
      const length = header(headers, 'content-length');
      if (length !== undefined && Number(length) > maxBodyBytes) throw tooLarge(maxBodyBytes);
      return signed;
    } catch (error) {
      report(error);
      return { ...refusalOf(error as WebhookVerificationError), unread: true };
    }
  }

  /** Verifies the body and calls you: 204, 400 for a body that does not verify, 500 when a callback fails. */
  async function apply(body: string, signed: SignedHeaders): Promise<Outcome> {
    let message: WebhookMessage;
    try {
      message = await verifyBody(body, signed, options.secret);
    } catch (error) {
      report(error);
      return error instanceof WebhookVerificationError ? refusalOf(error) : { status: 400 };
    }
    try {
      if (message.type === 'listings.changed') await options.onChange(message.data, message);
      else if (message.type === 'listings.resync') await options.onResync?.(message);
      return { status: 204 };
    } catch (error) {
      report(error);
      return { status: 500, refusal: { error: 'internal_error', message: 'The receiver could not apply the message; send it again.' } };
    }
  }

  /** One request, from its parts: never rejects. */
  async function receive(method: string, headers: Headers, read: () => string | Promise<string>): Promise<Outcome> {
    const admitted = admit(method, headers);
    if ('status' in admitted) return admitted;
    let body: string;
    try {
      body = await read();
    } catch (error) {
      report(error);
      if (error instanceof WebhookVerificationError) return { ...refusalOf(error), unread: true };
      // The receiver's own set-up (a body parser ran first): 500, so that the message comes again once it is fixed.
      return { status: 500, refusal: { error: 'internal_error', message: 'The receiver could not read the message.' } };
    }
    return apply(body, admitted).catch((error: unknown) => {
      report(error);
      return { status: 500 };
    });
  }

  const handler = (async (request: Request) => {
    const outcome = await receive(request.method, request.headers, () => readFetchBody(request, maxBodyBytes));
    const headers: Record<string, string> = outcome.refusal === undefined ? {} : { 'content-type': 'application/json; charset=utf-8' };
    if (outcome.status === 405) headers.allow = 'POST';
    return new Response(outcome.refusal === undefined ? null : JSON.stringify(outcome.refusal), { status: outcome.status, headers });
  }) as WebhookHandler;

  handler.node = (req, res) => {
    const given = req.body;
    const read = () => {
      // A body parser that ran first left the raw body; anything else (or nothing) means the stream is still to be read.
      const body = typeof given === 'string' ? encoder.encode(given) : given instanceof Uint8Array ? given : undefined;
      if (body === undefined && req.readableEnded === true) throw new TypeError(BODY_ALREADY_READ);
      if (body === undefined) return readNodeBody(req, maxBodyBytes);
      if (body.byteLength > maxBodyBytes) throw tooLarge(maxBodyBytes);
      return new TextDecoder().decode(body);
    };
    receive(req.method ?? 'GET', req.headers, read)
      .then((outcome) => answerNode(res, outcome))
      .catch(() => answerNode(res, { status: 500 }));
  };
  return handler;
}

const BODY_ALREADY_READ = 'The webhook handler found the request body already read, and parsed (a body parser such as express.json() ran first), ' +
  'so it cannot check the signature: mount it before any body parser, or after express.text({ type: \'application/json\' }).';

/** Sends an outcome on a node:http response; never throws (the connection may be gone). */
function answerNode(res: NodeResponseLike, outcome: Outcome): void {
  try {
    res.statusCode = outcome.status;
    if (outcome.status === 405) res.setHeader('allow', 'POST');
    if (outcome.unread) res.setHeader('connection', 'close');
    if (outcome.refusal === undefined) return void res.end();
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(outcome.refusal));
  } catch {
    // The answer could not be sent: the client is gone, or the answer had started.
  }
}
