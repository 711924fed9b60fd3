// The types of `#typebox` (package.json "imports"): TypeBox's own; the code is its bundle (scripts/build-vendor.js).
export * from 'typebox';
