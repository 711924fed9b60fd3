import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { InjectOptions } from 'fastify';
import { loadConfig } from '../../src/config/index.js';
import type { Endpoint } from '../../src/http/v1/endpoint.js';
import { ENDPOINTS } from '../../src/http/v1/endpoints/index.js';
import { issueKey } from '../../src/auth/keys.js';
import { createService, type Service } from '../../src/service.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { TestClock } from '../support/server.js';
import { atEnd } from '../support/world.js';
import pino from 'pino';

/**
 * The query contract of every endpoint, derived from its declaration (src/http/v1/endpoints/) and
 * sent through `app.inject`: no socket is needed to check what a parameter accepts. For each
 * declared parameter: its documented example is accepted, a value of the wrong shape is 400
 * naming it, and the same parameter twice is 400 (D7). A parameter added to a declaration is
 * covered here without a new line.
 */

type Json = Record<string, unknown>;

/** A value no parameter shape accepts: text for numbers and booleans, an unknown name for lists. */
function malformed(schema: Json): string {
  switch (schema.type) {
    case 'integer':
      return '1e3';
    case 'boolean':
      return 'yes';
    case 'array':
      return 'Not-a-name';
    case 'string':
      return Array.isArray(schema.enum) ? 'not-a-value' : schema.format === 'decimal' ? '-1' : '';
    default:
      throw new Error(`no malformed value for ${JSON.stringify(schema)}`);
  }
}

const exampleText = (example: unknown): string => (Array.isArray(example) ? example.join(',') : String(example));

describe('the query contract of every endpoint, from its declaration (D7, D22, D23; app.inject)', () => {
  let service: Service;
  let key: string;

  /** Each test's own world (issue 42): a service on a fresh database with its own clock, and a key; its limit (D14) all the test's own. */
  async function world(t: TestContext): Promise<void> {
    const clock = new TestClock();
    const database = await createMigratedTestDatabase();
    atEnd(t, () => database.drop());
    // No dashboard: its own routes' schemas were two thirds of each world's start, and no test here asks it anything.
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DASHBOARD_PORT: 'off', DATABASE_URL: database.url });
    const own = await createService(config, { clock: clock.now, logger: pino({ level: 'silent' }) });
    atEnd(t, () => own.close());
    service = own;
    await service.app.ready();
    const accountId = crypto.randomUUID();
    await service.store.accounts.create({ id: accountId, name: 'Contract', kind: 'organisation', created_at: new Date(clock.now()).toISOString() });
    key = (await issueKey(service.store, { accountId, country: 'sg', label: 'contract', now: new Date(clock.now()) })).key;
    await service.store.broadcastSettled();
  }

  const call = (url: string) => {
    const options: InjectOptions = { method: 'GET', url, headers: { host: 'api.localhost', authorization: `Bearer ${key}` } };
    return service.app.inject(options);
  };
  /** A URL of the endpoint: its path parameters from their examples, then `query`. */
  const urlOf = (endpoint: Endpoint, query: string): string => {
    let path = endpoint.url;
    for (const [name, schema] of Object.entries(endpoint.params?.properties ?? {})) {
      path = path.replace(`:${name}`, exampleText((schema as unknown as { examples: unknown[] }).examples[0]));
    }
    return query === '' ? path : `${path}?${query}`;
  };

  for (const endpoint of ENDPOINTS) {
    const parameters = Object.entries(endpoint.querystring?.properties ?? {}) as Array<[string, Json]>;

    it(`${endpoint.operationId}: without parameters, the defaults (200 or the read's 404)`, async (t) => {
      await world(t);
      const response = await call(urlOf(endpoint, ''));
      assert.ok(response.statusCode === 200 || (endpoint.notFound !== undefined && response.statusCode === 404), `${response.statusCode} ${response.body}`);
    });

    for (const [name, schema] of parameters) {
      const example = exampleText((schema.examples as unknown[])[0]);
      // A parameter that needs another (radius_m needs near) is sent with that one's example.
      const needed = parameters.find(([other]) => other === schema['x-requires']);
      const needs = needed === undefined ? '' : `${needed[0]}=${encodeURIComponent(exampleText((needed[1].examples as unknown[])[0]))}&`;
      it(`${endpoint.operationId} ${name}: its documented example is accepted; a malformed value and a repeat are 400 naming it`, async (t) => {
        await world(t);
        if (schema['x-requires'] !== undefined) {
          assert.ok(needed, `${name} requires ${String(schema['x-requires'])}, which is not a parameter`);
          const alone = await call(urlOf(endpoint, `${name}=${encodeURIComponent(example)}`));
          assert.equal(alone.statusCode, 400, `${name} without ${needed[0]}: ${alone.body}`);
          assert.match(JSON.parse(alone.body).message, new RegExp(`"${name}"`));
        }
        const accepted = await call(urlOf(endpoint, `${needs}${name}=${encodeURIComponent(example)}`));
        // A cursor example is a placeholder, not a cursor: it reaches the feed, which refuses it as one (D22).
        if (name === 'cursor') assert.equal(JSON.parse(accepted.body).error, 'bad_request');
        else assert.equal(accepted.statusCode, 200, `${name}=${example}: ${accepted.body}`);

        const bad = await call(urlOf(endpoint, `${needs}${name}=${encodeURIComponent(malformed(schema))}`));
        assert.equal(bad.statusCode, 400, `${name} malformed: ${bad.body}`);
        assert.equal(JSON.parse(bad.body).error, 'bad_request');
        assert.match(JSON.parse(bad.body).message, new RegExp(`"${name}"`));

        const twice = await call(urlOf(endpoint, `${needs}${name}=${encodeURIComponent(example)}&${name}=${encodeURIComponent(example)}`));
        assert.equal(twice.statusCode, 400);
        assert.equal(JSON.parse(twice.body).message, `Query parameter "${name}" was given 2 times; give it once.`);
      });
    }

    it(`${endpoint.operationId}: a parameter it does not declare is ignored`, async (t) => {
      await world(t);
      const response = await call(urlOf(endpoint, 'not_a_parameter=1&not_a_parameter=2'));
      assert.ok(response.statusCode === 200 || response.statusCode === 404, response.body);
    });
  }
});
