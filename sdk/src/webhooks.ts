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

export type WebhookErrorReason = 'missing_headers' | 'bad_signature' | 'stale_timestamp' | 'bad_body' | 'bad_secret';

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
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError('missing_headers', 'The webhook-id, webhook-timestamp and webhook-signature headers are required: is this a message of the Listings API?');
  }
  const seconds = Number(timestamp);
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (!/^[0-9]+$/.test(timestamp) || Math.abs(now - seconds) > WEBHOOK_TOLERANCE_SECONDS) {
    throw new WebhookVerificationError('stale_timestamp', `The message was signed at ${timestamp}, more than ${WEBHOOK_TOLERANCE_SECONDS} s from this clock (${now}): a replay, or a clock that is off.`);
  }
  const given = signatures.split(' ').filter((s) => s.startsWith('v1,')).map((s) => s.slice(3));
  for (const candidate of typeof secret === 'string' ? [secret] : secret) {
    const expected = await signature(candidate, `${id}.${timestamp}.${body}`);
    if (given.some((s) => sameText(s, expected))) {
      try {
        return JSON.parse(body) as WebhookMessage;
      } catch {
        throw new WebhookVerificationError('bad_body', 'The signed body is not JSON.');
      }
    }
  }
  throw new WebhookVerificationError('bad_signature', 'No signature matches: check the secret (after a rotation, use the new one), and pass the body exactly as received.');
}

export interface WebhookHandlerOptions {
  /** The endpoint's `whsec_...` secret (several during a rotation on your side). */
  secret: string | readonly string[];
  /** Listings changed: rebuild the pages of `upserted`, drop those of `removed`. Answered 204 once it resolves. */
  onChange(change: { country: string; upserted: string[]; removed: string[] }, message: ListingsChangedMessage): void | Promise<void>;
  /** Read everything again (the feed without a cursor). */
  onResync?: ((message: ListingsResyncMessage) => void | Promise<void>) | undefined;
  /** Errors of verification (answered 400) and of your callbacks (answered 500: the message comes again). */
  onError?: ((error: unknown) => void) | undefined;
}

export interface WebhookHandler {
  /** For fetch-style frameworks (Next.js route handlers, Hono, Bun, Deno): `POST` only. */
  (request: Request): Promise<Response>;
  /** For node:http and Express (mount it before any body parser, or with `express.text({ type: 'application/json' })`). */
  node(req: NodeRequestLike & AsyncIterable<Uint8Array | string> & { body?: unknown }, res: NodeResponseLike): Promise<void>;
}

/** A receiver that verifies each message and calls `onChange` (or `onResync`); a test event is just answered. */
export function createWebhookHandler(options: WebhookHandlerOptions): WebhookHandler {
  async function handle(method: string, body: string, headers: Headers): Promise<number> {
    if (method !== 'POST') return 405;
    let message: WebhookMessage;
    try {
      message = await verifyWebhook(body, headers, options.secret);
    } catch (error) {
      options.onError?.(error);
      return 400;
    }
    try {
      if (message.type === 'listings.changed') await options.onChange(message.data, message);
      else if (message.type === 'listings.resync') await options.onResync?.(message);
      return 204;
    } catch (error) {
      options.onError?.(error);
      return 500;
    }
  }
  const handler = (async (request: Request) => {
    const status = await handle(request.method, await request.text(), request.headers);
    return new Response(null, { status });
  }) as WebhookHandler;
  handler.node = async (req, res) => {
    let body: string;
    if (typeof req.body === 'string') body = req.body;
    else if (req.body instanceof Uint8Array) body = new TextDecoder().decode(req.body);
    else {
      body = '';
      for await (const chunk of req) body += typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk);
    }
    res.statusCode = await handle(req.method ?? 'GET', body, req.headers);
    res.end();
  };
  return handler;
}
