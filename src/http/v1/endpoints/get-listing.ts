import { Type } from '#typebox';
import { canonicalUuid } from '../../../core/formats.js';
import { defineEndpoint } from '../endpoint.js';
import { ERROR_EXAMPLES as x, FEATURED_ID, featuredListing, sparseListing } from '../examples.js';
import { CHECKS } from './checks.js';

const ID_TEXT = 'A UUID in its 8-4-4-4-12 hexadecimal text form, in either case. The version and variant digits are not checked: do not validate ids as strict RFC 9562 UUIDs.';

/** The path parameter: the service accepts either case (and answers 404 for anything else, D11). */
export const ID_PARAMETER_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

const detailParams = Type.Object({
  id: Type.String({
    pattern: ID_PARAMETER_PATTERN,
    description: `The \`id\` of a listing from the list endpoint. ${ID_TEXT} Any other id gets 404, like an id the key cannot see.`,
    examples: [FEATURED_ID],
  }),
});

export const getListing = defineEndpoint({
  url: '/v1/listings/:id',
  operationId: 'getListing',
  summary: 'Get one active listing',
  description: [
    'One active listing of the key\'s account in the key\'s country, by id: the bare listing object (no envelope), with every field present, exactly as in the list\'s `items`.',
    '',
    `${CHECKS}, the look-up (404).`,
  ],
  params: detailParams,
  ok: {
    description: 'The listing.',
    schema: 'Listing',
    examples: { featured: { summary: 'A featured listing', value: featuredListing }, sparse: { summary: 'A listing with nothing optional set', value: sparseListing } },
  },
  notFound: {
    description:
      'no active listing with this id is visible to this key: it does not exist, is not active or has expired, belongs to another account or another country, or the id is not a UUID. The cases are deliberately not told apart.',
    message: 'No active listing with this id is visible to this key.',
    examples: { noListing: x.noListing },
  },
  read(reads, tenant, _query, { id }) {
    // D11: an id that is not a UUID is just another id the key cannot see.
    const canonical = canonicalUuid(id);
    return canonical === undefined ? undefined : reads.detail(tenant, canonical);
  },
});
