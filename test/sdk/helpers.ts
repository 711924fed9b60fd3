import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Listing } from '@listings-api/sdk';

/** openapi.json, for validating what the SDK returns against the schemas its types are generated from. */
const doc = JSON.parse(readFileSync(new URL('../../../openapi.json', import.meta.url), 'utf8')) as Record<string, unknown>;
const DOC_ID = 'https://listings.invalid/openapi.json';
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
addFormats.default(ajv);
ajv.addFormat('decimal', /^[-+]?[0-9]+(\.[0-9]+)?$/);
for (const keyword of ['openapi', 'info', 'servers', 'paths', 'webhooks', 'components', 'security', 'tags', 'example', 'discriminator']) ajv.addKeyword(keyword);
ajv.addSchema({ ...doc, $id: DOC_ID });

/** Asserts that a value the SDK returned is valid against a schema of openapi.json. */
export function assertSchema(schema: 'Listing' | 'ListingPage' | 'ChangePage' | 'ErrorBody', value: unknown): void {
  const validate = ajv.getSchema(`${DOC_ID}#/components/schemas/${schema}`)!;
  assert.ok(validate(value), `${schema}: ${ajv.errorsText(validate.errors)}`);
}

/**
 * Every field of the SDK's Listing type, exactly (the compiler refuses a missing or an extra one), to
 * compare with the fields of real answers.
 */
export const LISTING_TYPE_FIELDS: Record<keyof Listing, true> = {
  id: true, building_id: true, org_id: true, title: true, size_sqft: true, usage_types: true, price: true, price_basis: true, currency: true,
  is_takeover: true, is_featured: true, status: true, expiry_date: true, available_from: true, min_lease_tenure: true,
  view_count: true, inquiry_count: true, building_name: true, street_address: true, location: true, images: true, cover_image_index: true,
  url: true, created_at: true,
};

/** What came back on a connection whose request the client did not finish: the status line's code, if any. */
export interface PartialAnswer {
  status: number | undefined;
  /** The answer as received (head and body), for messages. */
  text: string;
  /** Milliseconds from sending the head to the first byte of the answer (undefined without one). */
  answeredAfterMs: number | undefined;
}

/**
 * A request whose body the client does not finish: the head (with the Content-Length it claims) and
 * `sent` of the body, then up to `waitMs` for an answer, then the connection is closed, as
 * `curl -m 1 -H 'Content-Length: 1000' --data-binary '{}'` does. A server that answers without
 * waiting for the rest is seen to do so; one that waits sees the body cut short.
 */
export function unfinishedRequest(port: number, head: string, sent: string, waitMs: number): Promise<PartialAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const started = Date.now();
    let firstByteAt: number | undefined;
    socket.on('data', (chunk: Buffer) => {
      firstByteAt ??= Date.now();
      chunks.push(chunk);
    });
    // A server that answers and closes may reset the connection under the client: what came is the answer.
    socket.on('error', () => {});
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('utf8');
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1];
      const answeredAfterMs = firstByteAt === undefined ? undefined : firstByteAt - started;
      resolve({ status: status === undefined ? undefined : Number(status), text, answeredAfterMs });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('close', finish);
    socket.write(`${head.replace(/\r?\n/g, '\r\n').replace(/(\r\n)*$/, '')}\r\n\r\n${sent}`);
  });
}

/**
 * A chunked POST of `bodyBytes` that is never ended: the status of the answer given to the
 * unfinished body, or undefined when none came within `waitMs`. The body is handed over in one
 * write and the client then only reads: a server that answers and closes with body left unread
 * resets the connection, and a write racing that reset would destroy the socket before the answer
 * already received was read.
 */
export function unendedPost(port: number, path: string, headers: Record<string, string>, bodyBytes: number, waitMs: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    let answered: number | undefined;
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers: { host: 'www.example.test', ...headers }, agent: false }, (res) => {
      answered = res.statusCode;
      res.resume();
      res.on('end', finish);
      res.on('error', finish);
    });
    const timer = setTimeout(finish, waitMs);
    function finish() {
      clearTimeout(timer);
      req.destroy();
      resolve(answered);
    }
    // The reset after the answer: what was answered is what counts.
    req.on('error', finish);
    req.write(Buffer.alloc(bodyBytes, 0x20));
  });
}
