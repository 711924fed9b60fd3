#!/usr/bin/env node
// `npm run example`: the example website against the local API of `npm start`.
//   LISTINGS_API_KEY  the key (required): `npm start` prints a demo key on stderr
//   LISTINGS_API_URL  the API's base URL (default: the local host of the key's country,
//                     http://api.localhost:3000 for sg, http://api.<cc>.localhost:3000 otherwise)
//   PORT, HOST        where the site listens (default 4000 on 127.0.0.1)
//   SITE_URL          the site's public origin, for canonical URLs and JSON-LD (default: the request's host)
//   LISTINGS_WEBHOOK_SECRET  a webhook endpoint's secret: the site then takes messages at
//                     POST /webhooks/listings and shows changed listings at once
import { countryOfKey, ListingsApiError, ListingsClient } from '@listings-api/sdk';
import { createSite } from './site.js';

const key = process.env.LISTINGS_API_KEY?.trim();
if (!key) {
  console.error(`The example website needs an API key in LISTINGS_API_KEY.

  1. In one terminal, start the API with demo data:   npm start
     It prints "Demo API key (sg, shown once):  sg_live_..." on stderr.
  2. In another terminal, start the site with that key:
     LISTINGS_API_KEY=sg_live_... npm run example
  3. Open http://localhost:4000

Any key works (create one in the dashboard, or: npx listings-api key create --account <id> --country sg --label "Website");
set LISTINGS_API_URL for an API other than the local one (e.g. https://api.example.com).`);
  process.exit(1);
}

let client: ListingsClient;
try {
  client = process.env.LISTINGS_API_URL
    ? new ListingsClient({ apiKey: key, baseUrl: process.env.LISTINGS_API_URL })
    : new ListingsClient({ apiKey: key, apiDomain: 'localhost:3000' });
} catch (error) {
  console.error(`example website: ${(error as Error).message}`);
  process.exit(1);
}

const webhookSecret = process.env.LISTINGS_WEBHOOK_SECRET?.trim();
// The key's country: the "Near" select offers its places (the client has checked the key's form).
const site = createSite({
  client,
  country: countryOfKey(key),
  ...(process.env.SITE_URL ? { siteUrl: process.env.SITE_URL } : {}),
  ...(webhookSecret ? { webhookSecret } : {}),
});
const port = await site.listen(Number(process.env.PORT ?? 4000), process.env.HOST ?? '127.0.0.1');
console.error(`Example website at http://localhost:${port} (listings from ${client.baseUrl})`);

// Say at once whether the key works, rather than on the first page view.
try {
  const page = await client.listings.list({ perPage: 1 });
  console.error(`The key works: ${page.total} listings.`);
} catch (error) {
  if (error instanceof ListingsApiError && error.code === 'unauthorized') {
    console.error('The API refused the key (401). `npm start` issues a new demo key each time it starts and revokes the previous one: use the key it printed last.');
  } else if (error instanceof ListingsApiError && (error.code === 'network_error' || error.code === 'timeout')) {
    console.error(`The API at ${client.baseUrl} did not answer: is \`npm start\` running?`);
  } else {
    console.error(`The API answered: ${(error as Error).message}`);
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    site.close().then(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  });
}
