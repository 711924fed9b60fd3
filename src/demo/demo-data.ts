import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { issueKey } from '../auth/keys.js';
import { COUNTRY_CURRENCY, type Country } from '../core/countries.js';
import { addMember, setMemberPassword } from '../dashboard/members.js';
import { generatePassword } from '../dashboard/passwords.js';
import { importListings } from '../listings/import.js';
import type { Store } from '../storage/index.js';

/** Fixed ids, so that `demo` can tell whether the demo data is there already. */
export const DEMO_ORG_ID = '0de30000-0000-4000-8000-000000000001';
export const DEMO_LANDLORD_ID = '0de30000-0000-4000-8000-000000000002';
export const DEMO_ORIGIN = 'http://localhost:5173';
/** The demo organisation's dashboard member (`serve --demo`). */
export const DEMO_MEMBER_EMAIL = 'admin@demo.example';
export const DEMO_MEMBER_ID = '0de30000-0000-4000-8000-0000000000a1';

/** A stable UUID-shaped id from a name, so demo listings keep their ids across runs. */
function demoId(name: string): string {
  const h = createHash('sha256').update(name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const BUILDINGS: Record<Country, Array<[string, string]>> = {
  sg: [['Marina Bay Link', '8 Marina Boulevard'], ['Orchard Gateway', '277 Orchard Road'], ['Tanjong Pagar Centre', '7 Wallich Street']],
  my: [['Menara Mercu', '1 Jalan Sultan Ismail, Kuala Lumpur'], ['Bangsar Village', '1 Jalan Telawi 1, Kuala Lumpur']],
  uk: [['Shoreditch Works', '32 Great Eastern Street, London']],
  in: [], us: [], ca: [], au: [], nz: [],
};

const USAGES: string[][] = [['Retail', 'Shop'], ['Office'], ['F&B', 'Cafe'], ['Office', 'Shared Office'], ['F&B', 'Restaurant'], ['Retail', 'Kiosk'], ['Clinic'], ['Industrial', 'Warehouse']];

/** NDJSON lines of the demo data set, through the same import path operators use. */
function demoLines(now: Date): string[] {
  const lines: string[] = [];
  const day = 86_400_000;
  const counts: Partial<Record<Country, number>> = { sg: 12, my: 5, uk: 3 };
  for (const [country, count] of Object.entries(counts) as Array<[Country, number]>) {
    const buildings = BUILDINGS[country];
    for (let i = 0; i < count; i++) {
      const [buildingName, street] = buildings[i % buildings.length]!;
      const id = demoId(`demo-${country}-${i}`);
      const usage = USAGES[i % USAGES.length]!;
      const images = Array.from({ length: i % 4 }, (_, n) => `https://images.example.com/listings/${id}/${n + 1}.jpg`);
      lines.push(JSON.stringify({
        id,
        owner_account_id: DEMO_ORG_ID,
        country,
        building_id: demoId(`building-${country}-${buildingName}`),
        title: `${usage.at(-1)} space at ${buildingName}`,
        size_sqft: 400 + 150 * i,
        usage_types: usage,
        price: i % 5 === 4 ? null : Math.round((5 + i * 0.75) * 100) / 100,
        currency: COUNTRY_CURRENCY[country],
        is_takeover: i % 6 === 5,
        is_featured: i % 5 === 0,
        // A leased and an expired listing show that only visible ones are returned (D10).
        status: i === count - 1 && country === 'sg' ? 'leased' : 'active',
        expiry_date: i === count - 2 && country === 'sg' ? new Date(now.getTime() - day).toISOString() : new Date(now.getTime() + 90 * day).toISOString(),
        available_from: new Date(now.getTime() + (i % 3) * 30 * day).toISOString(),
        min_lease_tenure: `${12 * (1 + (i % 3))} months`,
        view_count: 40 * i,
        inquiry_count: i,
        building_name: buildingName,
        street_address: street,
        images,
        cover_image_index: images.length > 1 ? 1 : 0,
        url: `https://www.example.com/listings/${id}`,
        created_at: new Date(now.getTime() - (i + 1) * day).toISOString(),
      }));
    }
  }
  // An individual landlord's listing: org_id is null (D1), and the demo organisation's key never sees it.
  lines.push(JSON.stringify({
    id: demoId('demo-landlord-sg-0'), owner_account_id: DEMO_LANDLORD_ID, country: 'sg', building_id: demoId('building-landlord'),
    title: 'Shophouse unit, Joo Chiat', size_sqft: 900, usage_types: ['F&B', 'Pub'], price: 9.5, currency: 'SGD', status: 'active',
    building_name: null, street_address: '120 Joo Chiat Road', url: `https://www.example.com/listings/${demoId('demo-landlord-sg-0')}`,
  }));
  return lines;
}

/**
 * Creates the demo data set if it is not there (OPERATIONS `demo`) and issues a fresh `sg` key:
 * keys are stored only as hashes, so an earlier demo key cannot be shown again.
 */
export async function ensureDemo(store: Store, now: Date): Promise<{ created: boolean; accountId: string; keyId: string; key: string }> {
  let created = false;
  if ((await store.accounts.get(DEMO_ORG_ID)) === undefined) {
    const at = now.toISOString();
    await store.accounts.create({ id: DEMO_ORG_ID, name: 'Demo Realty Pte Ltd', kind: 'organisation', created_at: at });
    await store.accounts.create({ id: DEMO_LANDLORD_ID, name: 'Demo Landlord', kind: 'individual', created_at: at });
    await importListings(store, Readable.from(demoLines(now).join('\n')), now);
    for (const country of ['sg', 'my'] as const) {
      await store.origins.add({ account_id: DEMO_ORG_ID, country, origin: DEMO_ORIGIN, created_at: at });
    }
    created = true;
  }
  const { id, key } = await issueKey(store, { accountId: DEMO_ORG_ID, country: 'sg', label: 'demo', now });
  return { created, accountId: DEMO_ORG_ID, keyId: id, key };
}

/**
 * Creates the demo organisation's dashboard member, or resets it: a fresh random password each
 * time (printed once by `serve --demo`; only its hash is stored) and every earlier session ended.
 * Needs the demo organisation (ensureDemo) first.
 */
export async function ensureDemoMember(store: Store, now: Date): Promise<{ email: string; password: string; created: boolean }> {
  const password = generatePassword();
  const existing = await store.users.findByEmail(DEMO_MEMBER_EMAIL);
  if (existing === undefined) {
    await addMember(store, { id: DEMO_MEMBER_ID, accountId: DEMO_ORG_ID, email: DEMO_MEMBER_EMAIL, password, now });
  } else {
    if (existing.account_id !== DEMO_ORG_ID) throw new Error(`${DEMO_MEMBER_EMAIL} is a member of another account; not resetting it`);
    await setMemberPassword(store, existing.id, password);
  }
  return { email: DEMO_MEMBER_EMAIL, password, created: existing === undefined };
}
