#!/usr/bin/env node
// Lists the test files that share a world (issue 42 item 4): a `before()` or `beforeEach()` hook at
// file or describe level that starts a server (in process or as a process) or opens a store on a
// database, which the file's tests then share. A hook that calls a function of its own file is
// read through it. Usage: node scripts/shared-worlds.js [--list]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/** What starts a world: a server in this process or another one, a service, a store on a database, the CLI suites' database. */
const WORLD = /\b(startTestServer|startServerProcess|createService|createTestDatabase|createScratchPostgres|openStore|openReadModelOnStore|startCli|tempDatabase)\s*\(/;

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The hooks of a file that start a world, as `hook:line` strings. */
function sharedWorldHooks(path) {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const functions = new Map();
  const visitDeclarations = (node) => {
    if (ts.isFunctionDeclaration(node) && node.name) functions.set(node.name.text, node.getText(source));
    const init = ts.isVariableDeclaration(node) ? node.initializer : undefined;
    if (init && ts.isIdentifier(node.name) && (ts.isArrowFunction(init) || ts.isFunctionExpression(init))) functions.set(node.name.text, node.getText(source));
    ts.forEachChild(node, visitDeclarations);
  };
  visitDeclarations(source);
  const startsWorld = (text, seen = new Set()) => {
    if (WORLD.test(text)) return true;
    for (const [name, body] of functions) {
      if (seen.has(name) || !new RegExp(`\\b${name}\\s*\\(`).test(text)) continue;
      seen.add(name);
      if (startsWorld(body, seen)) return true;
    }
    return false;
  };
  const hooks = [];
  const visit = (node) => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && ['before', 'beforeEach'].includes(node.expression.text)) {
      const text = node.arguments.map((a) => a.getText(source)).join(' ');
      if (startsWorld(text)) hooks.push(`${node.expression.text}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return hooks;
}

const rows = testFiles('test').sort().map((path) => ({ path, hooks: sharedWorldHooks(path) }));
const shared = rows.filter((r) => r.hooks.length > 0);
if (process.argv.includes('--list')) for (const r of shared) console.log(`${r.path}  ${r.hooks.join(' ')}`);
console.log(`${shared.length} of ${rows.length} test files share a world (a before/beforeEach hook starts a server or opens a database)`);
