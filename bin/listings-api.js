#!/usr/bin/env node
// The listings-api command: the compiled CLI (built by `npm ci` through the root's `prepare`
// script). bin/ is a workspace of its own so that `npm ci` links it into node_modules/.bin and
// `npx listings-api` runs it at once; npm would install a root package with this bin into its
// npx cache first.
import '../dist/src/cli/main.js';
