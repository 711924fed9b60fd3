// The types of `#kysely` (package.json "imports"): Kysely's own; the code is its bundle (scripts/build-vendor.js).
export * from 'kysely';
