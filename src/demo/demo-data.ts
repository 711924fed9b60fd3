import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { auditedKey, issueKey } from '../auth/keys.js';
import { COUNTRY_CURRENCY, type Country } from '../core/countries.js';
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
 */
export async function ensureDemo(store: Store, now: Date): Promise<DemoResult> {
  const created = await ensureDemoDataSet(store, now);
  const addedOrigins = await ensureDemoOrigins(store, now);
  const { id, key } = await issueKey(store, { accountId: DEMO_ORG_ID, country: 'sg', label: DEMO_KEY_LABEL, now });
  await recordDemoChange(store, now, { action: 'key.created' }, (await store.keys.get(id))!);
  const revokedKeyIds = await revokeEarlierDemoKeys(store, id, now);
  return { created, accountId: DEMO_ORG_ID, keyId: id, key, revokedKeyIds, addedOrigins };
}

/** The accounts and listings of the demo, once; true when this call created them. */
async function ensureDemoDataSet(store: Store, now: Date): Promise<boolean> {
  if ((await store.accounts.get(DEMO_ORG_ID)) !== undefined) return false;
  const at = now.toISOString();
  await store.accounts.create({ id: DEMO_ORG_ID, name: 'Demo Realty Pte Ltd', kind: 'organisation', created_at: at });
  await store.accounts.create({ id: DEMO_LANDLORD_ID, name: 'Demo Landlord', kind: 'individual', created_at: at });
  await importListings(store, Readable.from(demoLines(now).join('\n')), now);
  return true;
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
