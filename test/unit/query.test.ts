import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/core/api-error.js';
import { Type } from '#typebox';
import { DEFAULT_PER_PAGE, listListings } from '../../src/http/v1/endpoints/list-listings.js';
import { MAX_PER_PAGE } from '../../src/listings/listing.js';
import { listChanges } from '../../src/http/v1/endpoints/list-changes.js';
import { compileQueryValidator, MAX_QUERY_PARAMETERS, parseQueryString, Query, queryBoundProblem, type QueryValue } from '../../src/http/v1/query.js';
import { pageCount } from '../../src/readmodel/index.js';

const MAX_INT32 = 2 ** 31 - 1;

/**
 * The validator of a schema as a function that throws its 400 (as Fastify would answer it) or
 * returns the validated values.
 */
function validator(schema: Parameters<typeof compileQueryValidator>[0]): (query: Record<string, QueryValue>) => Record<string, unknown> {
  const validate = compileQueryValidator(schema);
  return (query) => {
    const result = validate(query);
    if ('error' in result) throw result.error;
    return result.value;
  };
}

/** One D7 whole number, as `per_page` is declared but without a default or clamp. */
const oneNumber = validator(Type.Object({ n: Type.Optional(Query.wholeNumber({ minimum: 0, description: '', example: 1 })) }));
const parseIntegerParam = (name: string, value: QueryValue): unknown => {
  try {
    return oneNumber({ n: value }).n;
  } catch (error) {
    // The same rule under the parameter's own name, as the endpoints declare it.
    if (error instanceof ApiError) throw new ApiError(error.statusCode, error.code, error.message.replace('"n"', `"${name}"`));
    throw error;
  }
};

/** Asserts a 400 bad_request whose message names the parameter. */
function assertBadRequest(fn: () => unknown, name: string, label: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ApiError, `${label}: expected an ApiError, got ${String(error)}`);
    assert.equal(error.statusCode, 400, label);
    assert.equal(error.code, 'bad_request', label);
    assert.ok(error.message.includes(`"${name}"`), `${label}: message names the parameter: ${error.message}`);
    return true;
  }, label);
}

describe('parseQueryString (D7)', () => {
  it('keeps a raw + as a plus sign (not a space), and decodes %2B to +', () => {
    assert.equal(parseQueryString('page=+2').page, '+2');
    assert.equal(parseQueryString('page=%2B2').page, '+2');
    assert.equal(parseQueryString('page=%2b2').page, '+2');
    assert.equal(parseQueryString('q=a+b').q, 'a+b');
    assert.equal(parseQueryString('q=a%20b').q, 'a b');
  });

  it('turns a repeated name into an array of every value, in order', () => {
    assert.deepEqual(parseQueryString('page=1&page=2').page, ['1', '2']);
    assert.deepEqual(parseQueryString('page=1&per_page=5&page=1&page=3').page, ['1', '1', '3']);
    assert.equal(parseQueryString('page=1&page=2').per_page, undefined);
    // The name is decoded before grouping: an encoded duplicate is still a duplicate.
    assert.deepEqual(parseQueryString('page=1&p%61ge=2').page, ['1', '2']);
    assert.deepEqual(parseQueryString('page&page=').page, ['', '']);
  });

  it('keeps an undecodable value or name raw instead of throwing', () => {
    assert.equal(parseQueryString('page=%zz').page, '%zz');
    assert.equal(parseQueryString('page=%').page, '%');
    assert.equal(parseQueryString('page=%E0%A4%A').page, '%E0%A4%A');
    assert.equal(parseQueryString('%zz=1')['%zz'], '1');
    assert.equal(parseQueryString('page=%zz&per_page=%41').per_page, 'A');
  });

  it('a value that is not percent-encoded UTF-8 is a 400 naming its parameter, from the validator, and only for a name it reads', () => {
    const validate = compileQueryValidator(Type.Object({ q: Type.Optional(Type.String()), page: Type.Optional(Type.String()) }));
    for (const text of ['q=%zz', 'q=%', 'q=%E0%A4%A', 'q=%ff', 'q=50%off', 'page=1&q=%C3']) {
      const result = validate(parseQueryString(text));
      assert.ok('error' in result, text);
      assert.match(result.error.message, /^Query parameter "q" is not valid percent-encoded UTF-8/, text);
    }
    assert.deepEqual(validate(parseQueryString('q=50%25&other=%zz')), { value: { q: '50%' } });
    assert.deepEqual(validate(parseQueryString('q=caf%C3%A9')), { value: { q: 'café' } });
  });

  it('skips empty pairs, gives "" for a bare name or empty value, and keeps "=" inside values', () => {
    assert.deepEqual({ ...parseQueryString('') }, {});
    assert.deepEqual({ ...parseQueryString('&&page=2&&') }, { page: '2' });
    assert.deepEqual({ ...parseQueryString('page') }, { page: '' });
    assert.deepEqual({ ...parseQueryString('page=') }, { page: '' });
    assert.deepEqual({ ...parseQueryString('a=b=c') }, { a: 'b=c' });
    assert.deepEqual({ ...parseQueryString('=5') }, { '': '5' });
  });

  it('is safe with names such as __proto__ and constructor (nothing inherited)', () => {
    const q = parseQueryString('__proto__=1&constructor=2');
    // Its prototype is an empty object with no prototype of its own.
    const proto: object = Object.getPrototypeOf(q);
    assert.deepEqual(Reflect.ownKeys(proto), []);
    assert.equal(Object.getPrototypeOf(proto), null);
    assert.deepEqual(Object.keys(q), ['__proto__', 'constructor']);
    assert.equal(q.__proto__, '1');
    assert.equal(q.constructor, '2');
    assert.equal(parseQueryString('page=1').toString, undefined);
  });

  it('takes time linear in the query: one query of 64 times the parameters costs about 64 small ones, not 64 times more (issue 40 item 2)', () => {
    // Unbounded here (the bound is the second argument), so that the parse itself is measured. CPU
    // time, not wall time: a busy machine delays the process but does not add to its CPU time.
    const unbounded = 1e6;
    const shapes: Record<string, (n: number) => string> = {
      'one name repeated': (n) => 'a&'.repeat(n),
      'one name repeated with values': (n) => 'page=1&'.repeat(n),
      'names without "=", then one with': (n) => `${'a&'.repeat(n)}b=1`,
      'percent-encoded repeats': (n) => 'p%61ge=%31&'.repeat(n),
    };
    const cpuMs = (work: () => void): number => {
      const before = process.cpuUsage();
      work();
      const spent = process.cpuUsage(before);
      return (spent.user + spent.system) / 1000;
    };
    const [smallCount, largeCount] = [250, 16_000];
    const times = largeCount / smallCount;
    for (const [shape, make] of Object.entries(shapes)) {
      const small = make(smallCount);
      const large = make(largeCount);
      const smallOnes = () => {
        for (let i = 0; i < times; i++) parseQueryString(small, unbounded);
      };
      smallOnes(); // warm-up: compiled before it is measured
      const smallMs = Math.min(...[1, 2, 3, 4, 5].map(() => cpuMs(smallOnes)));
      const measure = () => cpuMs(() => parseQueryString(large, unbounded)) / Math.max(smallMs, 0.01);
      // A run over the bound is tried again, twice at most, in case the machine was busy; a
      // quadratic parse (about 5 s here, hundreds of times the small ones) is not.
      let ratio = measure();
      for (let run = 1; run < 3 && ratio >= 8 && ratio < 40; run++) ratio = Math.min(ratio, measure());
      // Linear is about 1 to 3 (the large one's arrays grow, and are collected, as they fill);
      // appending by copying the array was over 100.
      assert.ok(ratio < 8, `${shape}: ${largeCount} parameters took ${ratio.toFixed(1)} times as long as ${times} queries of ${smallCount}`);
      const values = Object.values(parseQueryString(large, unbounded))[0];
      assert.equal(Array.isArray(values) ? values.length : 0, largeCount, `${shape}: every value kept`);
    }
  });

  it(`does not parse a query of more than ${MAX_QUERY_PARAMETERS} parameters but marks it, which the API answers with a 400 naming the bound`, () => {
    // Parts are what `&` separates: a trailing `&` makes one more.
    const atBound = parseQueryString(`${'a=1&'.repeat(MAX_QUERY_PARAMETERS - 1)}a=1`);
    assert.equal((atBound.a as string[]).length, MAX_QUERY_PARAMETERS);
    assert.equal(queryBoundProblem(atBound), undefined);
    for (const query of [`${'a&'.repeat(MAX_QUERY_PARAMETERS)}a`, `${'x=1&'.repeat(MAX_QUERY_PARAMETERS)}page=2`, 'a&'.repeat(100_000), '&'.repeat(MAX_QUERY_PARAMETERS)]) {
      const parsed = parseQueryString(query);
      assert.deepEqual(Object.keys(parsed), [], 'nothing of it is parsed');
      const problem = queryBoundProblem(parsed);
      assert.ok(problem instanceof ApiError);
      assert.equal(problem.statusCode, 400);
      assert.equal(problem.code, 'bad_request');
      assert.match(problem.message, new RegExp(`more than ${MAX_QUERY_PARAMETERS} parameters`));
    }
    assert.equal(queryBoundProblem({}), undefined);
    assert.equal(queryBoundProblem(null), undefined);
  });
});

describe('a whole-number parameter (D7)', () => {
  it('is undefined when the parameter is absent', () => {
    assert.equal(parseIntegerParam('page', undefined), undefined);
  });

  it('accepts base-10 digits with an optional leading +, up to 2^31-1', () => {
    const accepted: Array<[string, number]> = [
      ['0', 0], ['1', 1], ['+1', 1], ['007', 7], ['+0', 0], ['20', 20], ['100', 100], ['101', 101],
      [String(MAX_INT32), MAX_INT32], [`+${MAX_INT32}`, MAX_INT32], [`000${MAX_INT32}`, MAX_INT32],
    ];
    for (const [text, n] of accepted) assert.equal(parseIntegerParam('page', text), n, text);
  });

  it('rejects every other form with 400 naming the parameter', () => {
    const rejected = [
      '', ' ', '-1', '-0', '1.0', '1.', '.5', '1e3', '1E3', ' 1', '1 ', '\t1', '1\n', '+', '++1', '+-1', '-+1',
      '0x10', '0b1', '0o7', '1_000', '1,000', 'abc', 'one', 'Infinity', 'NaN', '%2B1', '１', '١', '1a', 'a1',
      String(MAX_INT32 + 1), '4294967296', '99999999999999999999', `+${MAX_INT32 + 1}`, '9'.repeat(400),
    ];
    for (const text of rejected) assertBadRequest(() => parseIntegerParam('per_page', text), 'per_page', JSON.stringify(text));
  });

  it('rejects a parameter given twice (or more), whatever the values', () => {
    assertBadRequest(() => parseIntegerParam('page', ['1', '1']), 'page', 'twice, same value');
    assertBadRequest(() => parseIntegerParam('page', ['1', '2', '3']), 'page', 'three times');
    assertBadRequest(() => parseIntegerParam('page', ['', '']), 'page', 'twice, empty');
  });

  it('keeps its error message short even for a huge value', () => {
    try {
      parseIntegerParam('page', 'x'.repeat(10_000));
      assert.fail('expected a 400');
    } catch (error) {
      assert.ok(error instanceof ApiError);
      assert.ok(error.message.length < 200, error.message);
    }
  });
});

describe('the list endpoint\'s paging parameters (D7, spec 4.2)', () => {
  const list = validator(listListings.querystring!);
  const parse = (query: Record<string, QueryValue>) => {
    const { page, per_page: perPage } = list(query);
    return { page, perPage };
  };

  it('defaults to page 1 and per_page 20', () => {
    assert.equal(DEFAULT_PER_PAGE, 20);
    assert.equal(MAX_PER_PAGE, 100);
    assert.deepEqual(parse({}), { page: 1, perPage: 20 });
    assert.deepEqual(parse({ page: undefined, per_page: undefined }), { page: 1, perPage: 20 });
  });

  it('accepts page >= 1 and per_page 1..100 as given', () => {
    assert.deepEqual(parse({ page: '1', per_page: '1' }), { page: 1, perPage: 1 });
    assert.deepEqual(parse({ page: '+3', per_page: '+50' }), { page: 3, perPage: 50 });
    assert.deepEqual(parse({ page: '42', per_page: '100' }), { page: 42, perPage: 100 });
    assert.deepEqual(parse({ page: String(MAX_INT32) }), { page: MAX_INT32, perPage: 20 });
  });

  it('clamps per_page above 100 to 100, up to 2^31-1', () => {
    for (const text of ['101', '150', '1000', String(MAX_INT32), `+${MAX_INT32}`]) {
      assert.deepEqual(parse({ per_page: text }), { page: 1, perPage: 100 }, text);
    }
  });

  it('rejects page 0, per_page 0, values above 2^31-1, malformed values and duplicates', () => {
    assertBadRequest(() => parse({ page: '0' }), 'page', 'page=0');
    assertBadRequest(() => parse({ page: '+0' }), 'page', 'page=+0');
    assertBadRequest(() => parse({ page: '000' }), 'page', 'page=000');
    assertBadRequest(() => parse({ per_page: '0' }), 'per_page', 'per_page=0');
    assertBadRequest(() => parse({ page: String(MAX_INT32 + 1) }), 'page', 'page=2^31');
    assertBadRequest(() => parse({ per_page: String(MAX_INT32 + 1) }), 'per_page', 'per_page=2^31 is not clamped');
    assertBadRequest(() => parse({ page: '-1' }), 'page', 'page=-1');
    assertBadRequest(() => parse({ per_page: '1.5' }), 'per_page', 'per_page=1.5');
    assertBadRequest(() => parse({ page: '' }), 'page', 'page=');
    assertBadRequest(() => parse({ page: ['2', '2'] }), 'page', 'page twice');
    assertBadRequest(() => parse({ page: '1', per_page: ['10', '20'] }), 'per_page', 'per_page twice');
  });

  it('ignores unknown parameters, including malformed or repeated ones', () => {
    assert.deepEqual(parse({ page: '2', order: 'x', foo: ['1', '2'], limit: '-5' }), { page: 2, perPage: 20 });
  });

  it('works on what parseQueryString returns', () => {
    assert.deepEqual(parse(parseQueryString('page=+2&per_page=%2B500&x=%zz')), { page: 2, perPage: 100 });
    assertBadRequest(() => parse(parseQueryString('page=1&page=1')), 'page', 'duplicate through the parser');
    assertBadRequest(() => parse(parseQueryString('page=%zz')), 'page', 'undecodable');
    assertBadRequest(() => parse(parseQueryString('page=1%20')), 'page', 'trailing encoded space');
    assertBadRequest(() => parse(parseQueryString('per_page')), 'per_page', 'bare name');
  });
});

describe('pageCount (D8)', () => {
  it('is max(1, ceil(total / per_page)): never 0', () => {
    const cases: Array<[number, number, number]> = [
      [0, 20, 1], [0, 1, 1], [0, 100, 1], [1, 20, 1], [19, 20, 1], [20, 20, 1], [21, 20, 2], [40, 20, 2], [41, 20, 3],
      [100, 100, 1], [101, 100, 2], [5, 1, 5], [1, 1, 1], [MAX_INT32, 100, Math.ceil(MAX_INT32 / 100)],
    ];
    for (const [total, perPage, pages] of cases) assert.equal(pageCount(total, perPage), pages, `${total}/${perPage}`);
  });

  it('the documented read-all loop ends and covers every item exactly once, for every total', () => {
    for (let total = 0; total <= 250; total++) {
      for (const perPage of [1, 2, 3, 7, 20, 50, 99, 100]) {
        const pages = pageCount(total, perPage);
        assert.ok(pages >= 1);
        // "request page=1, 2, ... until page equals pages": each page holds the slice it is given.
        let seen = 0;
        for (let page = 1; ; page++) {
          seen += Math.max(0, Math.min(perPage, total - (page - 1) * perPage));
          if (page === pages) break;
          assert.ok(page < pages);
        }
        assert.equal(seen, total, `${total}/${perPage}`);
        // No page of the loop is empty, except the single page of an empty result.
        if (total > 0) assert.ok((pages - 1) * perPage < total);
      }
    }
  });
});

describe('the other parameter shapes (D7, D22, D23)', () => {
  const list = validator(listListings.querystring!);
  const feed = validator(listChanges.querystring!);

  it('decimals: digits with an optional dot and digits and a leading +, kept as sent', () => {
    for (const text of ['0', '12', '+4.5', '0.25', '0012.50']) assert.equal(list({ min_price: text }).min_price, text, text);
    for (const text of ['', '.5', '5.', '-1', '1e3', ' 1', '1,5', 'NaN', '+', '1.2.3']) assertBadRequest(() => list({ max_size_sqft: text }), 'max_size_sqft', JSON.stringify(text));
  });

  it('booleans: exactly true or false', () => {
    assert.equal(list({ featured: 'true' }).featured, true);
    assert.equal(list({ takeover: 'false' }).takeover, false);
    for (const text of ['', 'TRUE', '1', 'yes', 'true ']) assertBadRequest(() => list({ featured: text }), 'featured', JSON.stringify(text));
  });

  it('one of a list: sort', () => {
    assert.equal(list({ sort: '-price' }).sort, '-price');
    assertBadRequest(() => list({ sort: 'rank' }), 'sort', 'rank');
    assertBadRequest(() => list({ sort: 'Price' }), 'sort', 'Price');
  });

  it('comma-separated names: usage_type, each name of the taxonomy, exactly spelt', () => {
    assert.deepEqual(list({ usage_type: 'Office,F&B' }).usage_type, ['Office', 'F&B']);
    assert.deepEqual(list({ usage_type: 'Shared Office' }).usage_type, ['Shared Office']);
    for (const text of ['', 'office', 'Office,', ',Office', 'Office, Retail', 'Offices']) assertBadRequest(() => list({ usage_type: text }), 'usage_type', JSON.stringify(text));
    assert.throws(() => list({ usage_type: 'Offices' }), { message: /holds "Offices", which is not a usage type; use these names/ });
  });

  it('text: the cursor as sent (the feed decides what an unusable one is), once', () => {
    assert.equal(feed({ cursor: 'abc' }).cursor, 'abc');
    assertBadRequest(() => feed({ cursor: ['a', 'b'] }), 'cursor', 'twice');
  });

  it('the feed limit: 1 to 1000 (default 100), clamped above, 400 below 1 or above 2^31-1', () => {
    assert.equal(feed({}).limit, 100);
    assert.equal(feed({ limit: '1' }).limit, 1);
    assert.equal(feed({ limit: '1001' }).limit, 1000);
    assert.equal(feed({ limit: String(MAX_INT32) }).limit, 1000);
    assertBadRequest(() => feed({ limit: '0' }), 'limit', '0');
    assertBadRequest(() => feed({ limit: String(MAX_INT32 + 1) }), 'limit', '2^31');
  });

  it('the first malformed parameter in the declared order is the one named', () => {
    assert.throws(() => list({ sort: 'x', page: '0' }), { message: /"page"/ });
    assert.throws(() => list({ featured: 'x', min_price: 'y' }), { message: /"min_price"/ });
  });

  it('gives only declared parameters, nothing inherited', () => {
    const value = list(parseQueryString('__proto__=1&page=2&x=3'));
    assert.deepEqual(Object.keys(value), ['page', 'per_page']);
  });

  it('refuses a schema shape it does not know, at compile time', () => {
    assert.throws(() => compileQueryValidator(Type.Object({ when: Type.Number() })), /does not know/);
  });
});
