#!/usr/bin/env node
// The package's bin: the compiled CLI (built by `npm ci` through the `prepare` script).
import '../dist/src/cli/main.js';
