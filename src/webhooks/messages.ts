import { UUID_PATTERN } from '../core/formats.js';

/**
 * The messages a webhook endpoint receives (D24), as JSON schemas: published in the OpenAPI
 * document's `webhooks` (and so typed in the SDK), and what tests check real messages against.
 * Each is a Standard Webhooks envelope: `type`, `timestamp`, `data`.
 */
const country = { type: 'string', pattern: '^[a-z]{2}$', description: 'The country of the endpoint (and of the listings).', examples: ['sg'] } as const;
const timestamp = { type: 'string', format: 'date-time', description: 'When the message was made (the same on every retry of it).', examples: ['2026-11-21T09:30:01.204Z'] } as const;
const ids = (what: string) => ({ type: 'array', maxItems: 1000, items: { type: 'string', pattern: UUID_PATTERN }, description: what }) as const;

const envelope = (type: string, description: string, data: Record<string, unknown>) => ({
  type: 'object',
  description,
  required: ['type', 'timestamp', 'data'],
  properties: { type: { type: 'string', const: type, examples: [type] }, timestamp, data },
});

export const WEBHOOK_MESSAGE_SCHEMAS = {
  ListingsChangedMessage: envelope(
    'listings.changed',
    'Listings of the account changed in this country: rebuild the pages that show these ids, or read the change feed. At most 1,000 ids; each id in one list, by its latest change.',
    {
      type: 'object',
      required: ['country', 'upserted', 'removed'],
      properties: {
        country,
        upserted: ids('Listings that are visible now, new or changed: read them (the feed, or GET /v1/listings/{id}).'),
        removed: ids('Listings that are no longer visible (another status, expired, removed): drop them.'),
      },
    },
  ),
  ListingsResyncMessage: envelope(
    'listings.resync',
    'The changes since the last delivered message can no longer be told one by one (the endpoint was disabled longer than the history kept): read every listing again.',
    { type: 'object', required: ['country'], properties: { country } },
  ),
  WebhookTestMessage: envelope('webhook.test', 'A test event, sent on request from the dashboard or the CLI.', { type: 'object', required: ['country'], properties: { country } }),
} as const;
