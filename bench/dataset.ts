import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { issueKey } from '../src/auth/keys.js';
import { importListings } from '../src/import/import.js';
import { USAGE_TAXONOMY } from '../src/listings/taxonomy.js';
import { openStore, type Store } from '../src/storage/index.js';
import { prng } from '../test/support/random.js';

/**
 * The benchmark's data set: many listings for one organisation in `sg`, with realistic field
 * sizes, written through the real code (openStore, migrations, importListings, issueKey). Field
 * values come from a seeded generator so every run has the same shape; ids are random so a shared
 * database (a later postgres mode) never sees a collision.
 */
export interface SeedResult {
  ownerAccountId: string;
  /** The full API key (sg), with a rate limit so high the limiter never refuses. */
  key: string;
  /** Ids of the imported listings (all visible to the key), in import order. */
  listingIds: string[];
}


const STREETS = ['Robinson Road', 'Cecil Street', 'Orchard Road', 'Beach Road', 'North Bridge Road', 'Tanjong Pagar Road', 'Ubi Avenue 1', 'Kaki Bukit Road 3', 'Jurong West Street 61', 'Tampines Central 1', 'Shenton Way', 'Raffles Place', 'Woodlands Industrial Park E1', 'Serangoon North Avenue 5', 'Joo Chiat Road'];
const BUILDING_WORDS = ['Centre', 'Tower', 'Plaza', 'Point', 'House', 'Building', 'Hub', 'Industrial Park', 'Square', 'Exchange'];
const BUILDING_NAMES = ['Marina', 'Asia', 'Ocean', 'Capital', 'Guoco', 'Suntec', 'Tanglin', 'Paya Lebar', 'Novena', 'Keppel', 'Harbour', 'Mapletree', 'Alexandra', 'Bukit Merah', 'Changi'];
const ADJECTIVES = ['Bright', 'Spacious', 'Fitted', 'Corner', 'Ground-floor', 'High-floor', 'Renovated', 'Move-in ready', 'Prime', 'Quiet', 'Sea-view', 'Bare'];
const DAY = 86_400_000;

const pick = <T>(rand: () => number, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const round6 = (degrees: number) => Math.round(degrees * 1e6) / 1e6;

/** The NDJSON lines of `count` listings of one owner (OPERATIONS "Import format"). */
export function listingLines(ownerAccountId: string, count: number, now: Date, seed = 20261122): { lines: string[]; ids: string[] } {
  const ids: string[] = [];
  const lines: string[] = [];
  for (const { id, line } of generateListings(ownerAccountId, count, now, seed)) {
    ids.push(id);
    lines.push(line);
  }
  return { lines, ids };
}

/**
 * The same listings one at a time (id and NDJSON line, no newline), so that a file of any size can
 * be written without holding it in memory (bench/scale.ts). `listingLines` collects these.
 */
export function* generateListings(
  ownerAccountId: string,
  count: number,
  now: Date,
  seed = 20261122,
  options: { located?: boolean } = {},
): Generator<{ id: string; line: string }> {
  const rand = prng(seed);
  // D28's locations come from a generator of their own, so that every other field is the same
  // with them or without them (the reference release of `--against` knows no location field).
  const place = prng(seed ^ 0x5eed);
  const mains = Object.keys(USAGE_TAXONOMY);
  // About one building per 20 listings, each with a name and a street address.
  const buildings = Array.from({ length: Math.max(1, Math.ceil(count / 20)) }, (_, i) => ({
    id: randomUUID(),
    name: `${pick(rand, BUILDING_NAMES)} ${pick(rand, BUILDING_WORDS)}${i % 7 === 0 ? ` ${1 + (i % 5)}` : ''}`,
    address: `${1 + Math.floor(rand() * 300)} ${pick(rand, STREETS)}, #${String(1 + Math.floor(rand() * 40)).padStart(2, '0')}-${String(1 + Math.floor(rand() * 30)).padStart(2, '0')}, Singapore ${String(Math.floor(rand() * 830000) + 10000).padStart(6, '0')}`,
    // Somewhere on the island (lat 1.24-1.45, lng 103.62-103.99).
    lat: 1.24 + place() * 0.21,
    lng: 103.62 + place() * 0.37,
  }));
  for (let i = 0; i < count; i++) {
    const id = randomUUID();
    const building = pick(rand, buildings);
    const main = pick(rand, mains);
    const subs = USAGE_TAXONOMY[main]!;
    const usage = subs.length > 0 && rand() < 0.6 ? [main, pick(rand, subs)] : [main];
    const imageCount = Math.floor(rand() * 7); // 0 to 6
    const images = Array.from({ length: imageCount }, (_, n) => `https://cdn.listings.example.com/images/listings/${id}/${n + 1}-${Math.floor(rand() * 1e9).toString(36)}.jpg`);
    const size = Math.round(150 + rand() * 12_000);
    // Units of a building a few metres apart; one listing in twenty without a place.
    const location = !options.located || place() < 0.05 ? undefined
      : { lat: round6(building.lat + (place() - 0.5) * 0.0006), lng: round6(building.lng + (place() - 0.5) * 0.0006) };
    const line = JSON.stringify({
      id,
      owner_account_id: ownerAccountId,
      country: 'sg',
      building_id: building.id,
      title: `${pick(rand, ADJECTIVES)} ${usage.at(-1)!.toLowerCase()} unit of ${size.toLocaleString('en-US')} sq ft at ${building.name}`,
      size_sqft: size,
      usage_types: usage,
      price: rand() < 0.1 ? null : Math.round((2 + rand() * 18) * 100) / 100,
      currency: 'SGD',
      is_takeover: rand() < 0.08,
      is_featured: rand() < 0.1,
      status: 'active',
      // Expiries well after the run (or none), so nothing changes visibility while it runs.
      expiry_date: rand() < 0.3 ? null : new Date(now.getTime() + (30 + Math.floor(rand() * 300)) * DAY).toISOString(),
      available_from: rand() < 0.2 ? null : new Date(now.getTime() + Math.floor(rand() * 180) * DAY).toISOString(),
      min_lease_tenure: rand() < 0.15 ? null : `${pick(rand, [6, 12, 24, 36])} months`,
      view_count: Math.floor(rand() * 5000),
      inquiry_count: Math.floor(rand() * 80),
      building_name: building.name,
      street_address: building.address,
      location,
      images,
      cover_image_index: imageCount === 0 ? 0 : Math.floor(rand() * imageCount),
      url: `https://www.listings.example.com/sg/listings/${id}`,
      created_at: new Date(now.getTime() - Math.floor(rand() * 730 * DAY)).toISOString(),
    });
    yield { id, line };
  }
}

/** One data set, imported alike into every database of a run (BENCH_MODE=production seeds three). */
export interface BenchDataset {
  ownerAccountId: string;
  now: Date;
  lines: string[];
  ids: string[];
}

export function benchDataset(count: number, now = new Date()): BenchDataset {
  const ownerAccountId = randomUUID();
  return { ownerAccountId, now, ...listingLines(ownerAccountId, count, now) };
}

/** An organisation of the benchmarks, with its `sg` key. */
export interface BenchAccount {
  accountId: string;
  keyId: string;
  /** The full key, whose per-key limit is so high that the limiter (which still runs) never refuses. */
  key: string;
}

/** Creates an organisation and issues it an `sg` key through the real code, its limit raised out of the way. */
export async function createBenchAccount(
  store: Store,
  options: { name: string; label: string; now: Date; accountId?: string },
): Promise<BenchAccount> {
  const { name, label, now, accountId = randomUUID() } = options;
  await store.accounts.create({ id: accountId, name, kind: 'organisation', created_at: now.toISOString() });
  const { id: keyId, key } = await issueKey(store, { accountId, country: 'sg', label, now });
  await store.keys.setRateLimit(keyId, 1_000_000_000);
  return { accountId, keyId, key };
}

/**
 * Creates the owner, imports the listings in one all-or-nothing import, and issues an `sg` key
 * whose per-key limit is raised so far that the limiter always allows (the limiter still runs).
 */
export async function seed(databaseUrl: string, data: BenchDataset): Promise<SeedResult> {
  // An import, as the CLI's: no statement timeout of its own (IMPORT_STATEMENT_TIMEOUT_MS's default).
  const store = openStore(databaseUrl, { poolSize: 2, statementTimeoutMs: 0 });
  try {
    await store.migrate();
    const { ownerAccountId, now } = data;
    const { key } = await createBenchAccount(store, { name: 'Benchmark Realty Pte Ltd', label: 'benchmark', now, accountId: ownerAccountId });
    await importListings(store, Readable.from(data.lines.join('\n')), now);
    return { ownerAccountId, key, listingIds: data.ids };
  } finally {
    await store.close();
  }
}
