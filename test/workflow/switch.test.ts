import t from 'tap';
import { processorByName, type SwitchConfig } from '../../shared/workflow/processors.ts';
import { conditionHolds, jsonEqual, switchRoute, valueAt } from '../../shared/workflow/switch.ts';

/** Parses a config through the catalog, as validation does, so tests use only configs that pass. */
function config(raw: unknown): SwitchConfig {
  return processorByName('logic.switch')!.config.parse(raw) as SwitchConfig;
}

const input = { order: { total: 120, tags: ['vip', 'eu'], note: null }, 'a.b': 1, items: [{ sku: 'x' }] };

t.test('paths: dotted strings, arrays of keys, the whole input', async (t) => {
  t.equal(valueAt(input, 'order.total'), 120);
  t.equal(valueAt(input, 'order.tags.1'), 'eu');
  t.equal(valueAt(input, 'items.0.sku'), 'x');
  t.equal(valueAt(input, ['a.b']), 1);
  t.equal(valueAt(input, ['items', 0, 'sku']), 'x');
  t.same(valueAt(input, ''), input);
  t.equal(valueAt(input, 'order.note'), null, 'a present null is a value');
  t.type(valueAt(input, 'order.missing'), 'symbol');
  t.type(valueAt(input, 'order.tags.2'), 'symbol');
  t.type(valueAt(input, 'order.tags.01'), 'symbol', 'no lenient index parsing');
  t.type(valueAt(input, 'order.total.x'), 'symbol');
  t.type(valueAt({}, 'toString'), 'symbol', 'inherited properties are not input');
});

t.test('JSON equality ignores key order only', async (t) => {
  t.ok(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }));
  t.notOk(jsonEqual([1, 2], [2, 1]));
  t.notOk(jsonEqual({ a: 1 }, { a: 1, b: undefined }));
  t.notOk(jsonEqual(1, '1'));
  t.notOk(jsonEqual(null, {}));
  t.notOk(jsonEqual([], {}));
});

t.test('operators', async (t) => {
  const holds = (when: Record<string, unknown>) =>
    conditionHolds(config({ cases: [{ when, route: 'r' }] }).cases[0]!.when as never, input);
  t.ok(holds({ path: 'order.total', equals: 120 }));
  t.ok(holds({ path: 'order.tags', equals: ['vip', 'eu'] }));
  t.ok(holds({ path: 'order.note', equals: null }));
  t.notOk(holds({ path: 'order.missing', equals: null }), 'missing is not null');
  t.ok(holds({ path: 'order.total', not_equals: 5 }));
  t.ok(holds({ path: 'order.missing', not_equals: 5 }), 'missing differs from everything');
  t.notOk(holds({ path: 'order.total', not_equals: 120 }));
  t.ok(holds({ path: 'order.tags.0', in: ['gold', 'vip'] }));
  t.notOk(holds({ path: 'order.missing', in: [null] }));
  t.ok(holds({ path: 'order.note', exists: true }));
  t.ok(holds({ path: 'order.missing', exists: false }));
  t.notOk(holds({ path: 'order.total', exists: false }));
  t.ok(holds({ path: 'order.total', gt: 100 }));
  t.notOk(holds({ path: 'order.total', gt: 120 }));
  t.ok(holds({ path: 'order.total', gte: 120 }));
  t.ok(holds({ path: 'order.total', lt: 121 }));
  t.ok(holds({ path: 'order.total', lte: 120 }));
  t.notOk(holds({ path: 'order.tags', gt: 0 }), 'ordering holds for numbers only');
  t.notOk(holds({ path: 'order.missing', lt: 0 }));
});

t.test('the first matching case wins; conditions in a list must all hold; else the default', async (t) => {
  const routing = config({
    cases: [
      {
        when: [
          { path: 'order.total', gt: 100 },
          { path: 'order.tags.0', equals: 'vip' },
        ],
        route: 'vip-big',
      },
      { when: { path: 'order.total', gt: 100 }, route: 'big' },
      { when: { path: 'order.total', gt: 0 }, route: 'any' },
    ],
  });
  t.equal(switchRoute(routing, input), 'vip-big');
  t.equal(switchRoute(routing, { order: { total: 150, tags: [] } }), 'big');
  t.equal(switchRoute(routing, { order: { total: 1 } }), 'any');
  t.equal(switchRoute(routing, { order: { total: 0 } }), 'default');
  t.equal(switchRoute(routing, 'not an object'), 'default');
  t.equal(switchRoute(config({ cases: routing.cases, default: 'nothing' }), {}), 'nothing');
});
