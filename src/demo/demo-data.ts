import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { auditedKey, issueKey } from '../auth/keys.js';
import { COUNTRY_CURRENCY, type Country } from '../core/countries.js';
import type { PriceBasis } from '../listings/fields.js';
import { demoImageName } from '../http/demo-images.js';
import { addMember, setMemberPassword } from '../dashboard/members.js';
import { generatePassword } from '../dashboard/passwords.js';
import { importListings } from '../import/import.js';
import type { ApiKeyRecord, AuditEntry, Store } from '../storage/index.js';

/** Fixed ids, so that `demo` can tell whether the demo data is there already. */
export const DEMO_ORG_ID = '0de30000-0000-4000-8000-000000000001';
export const DEMO_LANDLORD_ID = '0de30000-0000-4000-8000-000000000002';
/**
 * Browser origins registered for the demo: a local dev server, under both of the names such
 * servers print (Vite says `localhost`, many static servers `127.0.0.1`; D17 compares hosts exactly).
 */
export const DEMO_ORIGINS = ['http://localhost:5173', 'http://127.0.0.1:5173'] as const;
export const DEMO_ORIGIN = DEMO_ORIGINS[0];
const DEMO_ORIGIN_COUNTRIES = ['sg', 'my'] as const;
/** The label of the keys the demo issues; earlier ones are revoked when a new one is issued. */
export const DEMO_KEY_LABEL = 'demo';
/** The actor of the demo's own changes in the activity log. */
export const DEMO_ACTOR = 'operator (CLI)';
/** The demo organisation's dashboard member (`serve --demo`). */
export const DEMO_MEMBER_EMAIL = 'admin@demo.example';
export const DEMO_MEMBER_ID = '0de30000-0000-4000-8000-0000000000a1';

/** A stable UUID-shaped id from a name, so demo listings keep their ids across runs. */
function demoId(name: string): string {
  const h = createHash('sha256').update(name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Buildings per country: name, street address, and where it is (D28: latitude, longitude). */
const BUILDINGS: Partial<Record<Country, Array<[string, string, number, number]>>> = {
  sg: [
    ['Marina Bay Link', '8 Marina Boulevard', 1.2801, 103.8545], ['Orchard Gateway', '277 Orchard Road', 1.3005, 103.8395],
    ['Tanjong Pagar Centre', '7 Wallich Street', 1.2763, 103.8454], ['Telok Ayer Point', '18 Telok Ayer Street', 1.2812, 103.8486],
    ['Jurong Logistics Hub', '21 Pioneer Road', 1.3180, 103.6830], ['Novena Medical Centre', '10 Sinaran Drive', 1.3200, 103.8437],
  ],
  my: [
    ['Menara Mercu', '1 Jalan Sultan Ismail, Kuala Lumpur', 3.1535, 101.7090], ['Bangsar Village', '1 Jalan Telawi 1, Kuala Lumpur', 3.1310, 101.6710],
    ['Shah Alam Industrial Park', '5 Jalan Utas, Shah Alam', 3.0738, 101.5183],
  ],
  uk: [['Shoreditch Works', '32 Great Eastern Street, London', 51.5246, -0.0786], ['Borough Yards', '13 Dirty Lane, London', 51.5054, -0.0907]],
  au: [['Barangaroo House', '35 Barangaroo Avenue, Sydney', -33.8617, 151.2017]],
  us: [['Pike Place Lofts', '1501 Pike Place, Seattle', 47.6097, -122.3422]],
  in: [['BKC Trade Centre', 'G Block, Bandra Kurla Complex, Mumbai', 19.066, 72.8654]],
  ca: [['King West Exchange', '620 King Street West, Toronto', 43.6445, -79.4004]],
  nz: [['Britomart Quarter', '1 Galway Street, Auckland', -36.8442, 174.768]],
};

/** Listings per country: most in sg (the demo key's), some in every other country. */
const COUNTS: Partial<Record<Country, number>> = { sg: 34, my: 9, uk: 6, au: 3, us: 3, in: 2, ca: 2, nz: 2 };

/**
 * Every row of the taxonomy (spec 2.2), with a headline and how such space is usually priced
 * (D25): per square foot per month for most, the whole unit per month for kiosks, cloud kitchens,
 * shared offices and warehouses. `rent`: a typical asking rent in SGD on that basis.
 */
const KINDS: Array<{ usage: string[]; title: string; basis: PriceBasis; rent: number; size: number }> = [
  { usage: ['Office'], title: 'Grade A office floor with harbour views', basis: 'per_sqft_per_month', rent: 11.5, size: 2400 },
  { usage: ['Office', 'Shared Office'], title: 'Private room for 8 in a coworking space', basis: 'per_month', rent: 6800, size: 320 },
  { usage: ['F&B'], title: 'Corner F&B unit with grease trap', basis: 'per_sqft_per_month', rent: 9.8, size: 1100 },
  { usage: ['F&B', 'Pub'], title: 'Fitted pub with a late-night licence', basis: 'per_sqft_per_month', rent: 8.5, size: 1800 },
  { usage: ['F&B', 'Cafe'], title: 'Ground-floor cafe with outdoor seating', basis: 'per_sqft_per_month', rent: 12.5, size: 850 },
  { usage: ['F&B', 'Restaurant'], title: 'Restaurant space with a full kitchen', basis: 'per_sqft_per_month', rent: 10.2, size: 2600 },
  { usage: ['F&B', 'Cloud Kitchen'], title: 'Cloud kitchen station, delivery-ready', basis: 'per_month', rent: 4200, size: 250 },
  { usage: ['Industrial'], title: 'Light industrial unit with loading bay', basis: 'per_sqft_per_month', rent: 2.4, size: 5200 },
  { usage: ['Industrial', 'Food Factory'], title: 'Food factory with cold room', basis: 'per_sqft_per_month', rent: 3.1, size: 3800 },
  { usage: ['Industrial', 'Warehouse'], title: 'Ramp-up warehouse, 12 m ceilings', basis: 'per_month', rent: 30000, size: 12000 },
  { usage: ['Retail'], title: 'Street-front retail unit', basis: 'per_sqft_per_month', rent: 14.0, size: 900 },
  { usage: ['Retail', 'Kiosk'], title: 'Atrium kiosk near the MRT exit', basis: 'per_month', rent: 3500, size: 80 },
  { usage: ['Retail', 'Shop'], title: 'Mall shop on the main concourse', basis: 'per_sqft_per_month', rent: 16.8, size: 650 },
  { usage: ['Retail', 'Anchor'], title: 'Anchor space over two floors', basis: 'per_sqft_per_month', rent: 7.2, size: 18000 },
  { usage: ['Clinic'], title: 'Clinic suite with a treatment room', basis: 'per_sqft_per_month', rent: 9.0, size: 1000 },
];

/** Rents in each country's currency, relative to SGD: the demo's prices look like that market's. */
const RENT_SCALE: Record<Country, number> = { sg: 1, my: 1.6, uk: 0.45, in: 30, us: 0.55, ca: 0.75, au: 0.8, nz: 0.85 };

const round6 = (degrees: number) => Math.round(degrees * 1e6) / 1e6;

/** The base URL of the demo's photos when no server address is given (the default `npm start`). */
export const DEFAULT_DEMO_IMAGE_BASE = 'http://api.localhost:3000';

/**
 * NDJSON lines of the demo data set, through the same import path operators use: about 60
 * listings over every usage type and country, featured and takeover listings, some without a
 * price, a basis, a size or photos, one leased and one expired (D10), and an individual
 * landlord's (D1). Photos are served by this program (http/demo-images.ts) at `imageBase`.
 */
export function demoLines(now: Date, imageBase = DEFAULT_DEMO_IMAGE_BASE): string[] {
  const lines: string[] = [];
  const day = 86_400_000;
  let n = 0;
  for (const [country, count] of Object.entries(COUNTS) as Array<[Country, number]>) {
    const buildings = BUILDINGS[country]!;
    for (let i = 0; i < count; i++, n++) {
      const [buildingName, street, lat, lng] = buildings[i % buildings.length]!;
      const id = demoId(`demo-${country}-${i}`);
      const kind = KINDS[n % KINDS.length]!;
      const photos = n % 5 === 3 ? 0 : 1 + (n % 3);
      const images = Array.from({ length: photos }, (_, p) => `${imageBase}/demo/images/${demoImageName(kind.usage.at(-1)!, p + 1)}`);
      // Every seventh without a price ("price on request"), and one priced listing without a basis.
      const rent = n % 7 === 6 ? null : kind.rent * RENT_SCALE[country] * (0.85 + ((n * 7) % 9) * 0.04);
      const price = rent === null ? null : kind.basis === 'per_month' ? Math.round(rent / 100) * 100 : Math.round(rent * 100) / 100;
      lines.push(JSON.stringify({
        id,
        owner_account_id: DEMO_ORG_ID,
        country,
        building_id: demoId(`building-${country}-${buildingName}`),
        title: `${kind.title}, ${buildingName}`,
        size_sqft: n % 11 === 10 ? null : Math.round(kind.size * (0.8 + (n % 4) * 0.15)),
        usage_types: kind.usage,
        price,
        price_basis: price === null || n === 22 ? null : kind.basis,
        currency: COUNTRY_CURRENCY[country],
        is_takeover: n % 8 === 5,
        is_featured: n % 6 === 0,
        // A leased and an expired listing show that only visible ones are returned (D10).
        status: country === 'sg' && i === count - 1 ? 'leased' : 'active',
        expiry_date: country === 'sg' && i === count - 2 ? new Date(now.getTime() - day).toISOString() : new Date(now.getTime() + (60 + n) * day).toISOString(),
        available_from: new Date(now.getTime() + (n % 4) * 30 * day).toISOString(),
        min_lease_tenure: n % 9 === 8 ? null : `${12 * (1 + (n % 3))} months`,
        view_count: (n * 137) % 2000,
        inquiry_count: (n * 7) % 41,
        building_name: buildingName,
        street_address: street,
        // Units of a building a few metres apart, so that a map shows them side by side; every
        // thirteenth listing has no location (D28: it matches no place).
        location: n % 13 === 12 ? null : { lat: round6(lat + ((n % 5) - 2) * 0.0003), lng: round6(lng + ((n % 3) - 1) * 0.0003) },
        images,
        cover_image_index: images.length > 1 ? 1 : 0,
        url: `https://www.example.com/listings/${id}`,
        created_at: new Date(now.getTime() - (n + 1) * day).toISOString(),
      }));
    }
  }
  // An individual landlord's listing: org_id is null (D1), and the demo organisation's key never sees it.
  lines.push(JSON.stringify({
    id: demoId('demo-landlord-sg-0'), owner_account_id: DEMO_LANDLORD_ID, country: 'sg', building_id: demoId('building-landlord'),
    title: 'Shophouse unit, Joo Chiat', size_sqft: 900, usage_types: ['F&B', 'Pub'], price: 9.5, price_basis: 'per_sqft_per_month', currency: 'SGD', status: 'active',
    building_name: null, street_address: '120 Joo Chiat Road', url: `https://www.example.com/listings/${demoId('demo-landlord-sg-0')}`,
  }));
  return lines;
}

/** What `ensureDemo` did. */
export interface DemoResult {
  /** True when this call created the data set. */
  created: boolean;
  /** The demo organisation's account id (for the banners). */
  accountId: string;
  /** The new `sg` key: shown once, only its hash is stored (D2). */
  keyId: string;
  key: string;
  /** Earlier demo keys this call revoked (each audit-logged). */
  revokedKeyIds: string[];
  /** Demo origins this call registered, e.g. 127.0.0.1 on a data set made before it was a demo origin. */
  addedOrigins: Array<{ country: Country; origin: string }>;
}

/**
 * Creates the demo data set if it is not there (OPERATIONS `demo`) and issues a fresh `sg` key:
 * keys are stored only as hashes (D2), so an earlier demo key cannot be shown again. That earlier
 * key is revoked, so that restarts do not pile up active keys nobody can tell apart.
 * `imageBase`: where this server answers (its photos are under /demo/images there).
 */
export async function ensureDemo(store: Store, now: Date, imageBase = DEFAULT_DEMO_IMAGE_BASE): Promise<DemoResult> {
  const created = await ensureDemoDataSet(store, now, imageBase);
  const addedOrigins = await ensureDemoOrigins(store, now);
  const { id, key } = await issueKey(store, { accountId: DEMO_ORG_ID, country: 'sg', label: DEMO_KEY_LABEL, now });
  await recordDemoChange(store, now, { action: 'key.created' }, (await store.keys.get(id))!);
  const revokedKeyIds = await revokeEarlierDemoKeys(store, id, now);
  return { created, accountId: DEMO_ORG_ID, keyId: id, key, revokedKeyIds, addedOrigins };
}

/** A demo listing with photos: where they point tells whether the data set is this release's, for this address. */
const PHOTO_PROBE_ID = demoId('demo-sg-0');

/**
 * The accounts and listings of the demo, once; true when this call created them. A data set made
 * by an earlier release, or for another address (`PORT=3001 npm start` after `npm start`), has its
 * listings imported again, so that every photo loads from the server that runs now.
 */
async function ensureDemoDataSet(store: Store, now: Date, imageBase: string): Promise<boolean> {
  const exists = (await store.accounts.get(DEMO_ORG_ID)) !== undefined;
  if (exists) {
    const [probe] = await store.listings.rows([PHOTO_PROBE_ID]);
    const photo = probe === undefined ? undefined : (JSON.parse(probe.body) as { images?: string[] }).images?.[0];
    if (photo?.startsWith(`${imageBase}/demo/images/`)) return false;
  } else {
    const at = now.toISOString();
    await store.accounts.create({ id: DEMO_ORG_ID, name: 'Demo Realty Pte Ltd', kind: 'organisation', created_at: at });
    await store.accounts.create({ id: DEMO_LANDLORD_ID, name: 'Demo Landlord', kind: 'individual', created_at: at });
  }
  await importListings(store, Readable.from(demoLines(now, imageBase).join('\n')), now);
  return !exists;
}

/**
 * Registers each demo origin in each demo country where it is missing: on a new data set all of
 * them, on an older one the origins added to the demo since (127.0.0.1, an upgrade). An origin a
 * member removed in the dashboard stays removed: the demo does not overrule them at every start.
 */
async function ensureDemoOrigins(store: Store, now: Date): Promise<DemoResult['addedOrigins']> {
  const added: DemoResult['addedOrigins'] = [];
  for (const country of DEMO_ORIGIN_COUNTRIES) {
    for (const origin of DEMO_ORIGINS) {
      if (await store.origins.isAllowed(DEMO_ORG_ID, country, origin)) continue;
      if (await store.audit.originRemovedByMember(DEMO_ORG_ID, country, origin)) continue;
      if (!(await store.origins.add({ account_id: DEMO_ORG_ID, country, origin, created_at: now.toISOString() }))) continue;
      await recordDemoChange(store, now, { action: 'origin.added', country, origin });
      added.push({ country, origin });
    }
  }
  return added;
}

/**
 * Revokes the demo's earlier keys: active keys of the demo organisation labelled "demo", except
 * `keepId` and any a member created in the dashboard (its audit entry names them). A key with any
 * other label is never touched. Returns the ids revoked.
 */
async function revokeEarlierDemoKeys(store: Store, keepId: string, now: Date): Promise<string[]> {
  const candidates = (await store.keys.listForAccount(DEMO_ORG_ID))
    .filter((k) => k.id !== keepId && k.label === DEMO_KEY_LABEL && k.revoked_at === null);
  const byMembers = await store.audit.keysCreatedByMembers(DEMO_ORG_ID, candidates.map((k) => k.id));
  const revoked: string[] = [];
  for (const key of candidates.filter((k) => !byMembers.has(k.id))) {
    await store.keys.revoke(key.id, now.toISOString());
    await recordDemoChange(store, now, { action: 'key.revoked' }, key);
    revoked.push(key.id);
  }
  return revoked;
}

/**
 * An entry in the demo organisation's dashboard activity log, by the operator who ran the demo
 * (no member: actor_user_id null), so its members can see where keys and origins came from and went.
 */
async function recordDemoChange(
  store: Store,
  now: Date,
  entry: Pick<AuditEntry, 'action'> & Partial<Pick<AuditEntry, 'country' | 'origin'>>,
  key?: ApiKeyRecord,
): Promise<void> {
  await store.audit.record({
    account_id: DEMO_ORG_ID,
    at: now.toISOString(),
    actor_user_id: null,
    actor_email: DEMO_ACTOR,
    ...auditedKey(key),
    ...entry,
  });
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

/**
 * The demo member's password hash once a plain `serve` ended its sign-in: not a hash of any
 * password (passwords.ts never matches a malformed stored value), so no password signs it in
 * until `serve --demo` sets a new one.
 */
const DEMO_SIGN_IN_ENDED = 'ended: sign-in of the demo member, until serve --demo';

/** What a plain `serve` found of the demo's credentials on its database (demoLeftovers). */
export interface DemoLeftovers {
  /** True when this call ended the demo member's sign-in (its password from `serve --demo` worked until now). */
  endedSignIn: boolean;
  /** The demo keys that still work (issued by `serve --demo` or `listings-api demo`): id and display prefix (D20). */
  workingKeys: Array<{ id: string; prefix: string }>;
}

/**
 * A plain `serve` (no --demo) on a database where `serve --demo` once ran (issue 40 item 11): the
 * demo member's password, printed on a terminal for local use, stops working and its sessions
 * end; the demo keys are named, not revoked, because `listings-api demo` promises a key that works
 * with `serve` (the operator contract), and an operator revokes them with `key revoke`.
 */
export async function demoLeftovers(store: Store): Promise<DemoLeftovers> {
  const member = await store.users.get(DEMO_MEMBER_ID);
  let endedSignIn = false;
  if (member !== undefined && member.account_id === DEMO_ORG_ID && member.password_hash !== DEMO_SIGN_IN_ENDED) {
    await store.users.setPasswordHash(member.id, DEMO_SIGN_IN_ENDED);
    await store.sessions.deleteForUser(member.id);
    endedSignIn = true;
  }
  const active = (await store.keys.listForAccount(DEMO_ORG_ID)).filter((k) => k.label === DEMO_KEY_LABEL && k.revoked_at === null);
  const byMembers = await store.audit.keysCreatedByMembers(DEMO_ORG_ID, active.map((k) => k.id));
  const workingKeys = active.filter((k) => !byMembers.has(k.id)).map((k) => ({ id: k.id, prefix: k.prefix }));
  return { endedSignIn, workingKeys };
}
