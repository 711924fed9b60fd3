// The README's Next.js recipe, as a site would write it: the proxy handler as the route's GET.
import { createListingsHandler, ListingsClient } from '@listings-api/sdk';

const client = new ListingsClient({ apiKey: process.env.LISTINGS_API_KEY, baseUrl: process.env.LISTINGS_API_URL });
const handler = createListingsHandler({ client, basePath: '/api/listings' });

export const GET = handler;
