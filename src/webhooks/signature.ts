import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signatures (standardwebhooks.com; D24), so that any receiver verifies a message
 * with an off-the-shelf library: `webhook-signature` is `v1,` and the base64 HMAC-SHA256 of
 * `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the secret's decoded bytes; several
 * signatures (during a rotation) are separated by spaces.
 */

const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and the base64 of 32 random bytes (D24). */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The HMAC key of a secret: the bytes its base64 part decodes to. */
function keyOf(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** One `v1,<base64>` signature of a message with one secret. */
export function signWith(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The three headers of an attempt: every secret in `secrets` signs (the new one first). */
export function signatureHeaders(secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => signWith(secret, messageId, timestampSeconds, body)).join(' '),
  };
}
