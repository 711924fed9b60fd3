/** The side-by-side targets, shared by `npm run bench` (run.ts) and BENCH_MODE=production (production.ts). */

/** What is measured. `ratioGoal`: the goal for service req/s over the baseline's. */
export interface Target {
  name: string;
  describe: string;
  paths(ids: readonly string[]): string[];
  ratioGoal?: number;
  /** Sanity check of the captured real response. */
  check?(json: any, listings: number): string | undefined;
}

const listCheck = (perPage: number) => (json: any, listings: number) =>
  json?.items?.length === Math.min(perPage, listings) && json?.total === listings ? undefined : `expected ${Math.min(perPage, listings)} items of ${listings}, got ${json?.items?.length} of ${json?.total}`;

export const TARGETS: Target[] = [
  { name: 'detail', describe: 'GET /v1/listings/{id}, rotating over the id set', paths: (ids) => ids.map((id) => `/v1/listings/${id}`), ratioGoal: 0.6 },
  { name: 'list20', describe: 'GET /v1/listings?per_page=20', paths: () => ['/v1/listings?per_page=20'], ratioGoal: 0.5, check: listCheck(20) },
  { name: 'list100', describe: 'GET /v1/listings?per_page=100', paths: () => ['/v1/listings?per_page=100'], check: listCheck(100) },
];

