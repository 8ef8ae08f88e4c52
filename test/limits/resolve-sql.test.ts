import t from 'tap';
import { createDb, type Db } from '../../shared/db/db.ts';
import { LIMIT_CATALOG, OVERRIDE_LEVELS, type CatalogEntry } from '../../shared/limits/catalog.ts';
import { resolveLimit, type OverrideSet } from '../../shared/limits/resolve.ts';
import { createTestDatabase } from '../helpers/db.ts';

// create_execution resolves its limits in SQL (resolve_limit, migration 012), with the rules of
// resolveLimit and validateOverride written a second time. This pins the two to the same answer
// for every catalog entry under valid overrides and under every kind of invalid stored value.
const db: Db = createDb({ connectionString: await createTestDatabase(t), max: 2 });
t.teardown(() => db.close());

const VALUES: unknown[] = [
  0,
  1,
  7,
  60,
  59,
  61,
  870,
  871,
  1_000,
  1_001,
  10_000,
  10_001,
  86_400,
  86_401,
  2 ** 53 - 1,
  2 ** 53,
  -1,
  1.5,
  '5',
  '',
  true,
  false,
  null,
  {},
  { value: 3 },
  [],
  ['lodash'],
  ['lodash', 'date-fns'],
  ['@scope/pkg'],
  ['@scope/pkg/sub'],
  ['lodash', 'lodash'],
  ['Lodash'],
  ['lodash\n'],
  ['a/b'],
  ['node:fs'],
  ['./x'],
  [1],
  [null],
  ['x'.repeat(214)],
  ['x'.repeat(215)],
  ['.x'],
  ['x~y_z-1.2'],
];

interface Case {
  spec: CatalogEntry;
  overrides: OverrideSet;
}

function casesOf(spec: CatalogEntry): Case[] {
  const cases: Case[] = [
    { spec, overrides: {} },
    { spec, overrides: { user: {}, org: {}, blob: {} } },
  ];
  for (const value of [...VALUES, spec.default, spec.most_permissive]) {
    for (const level of OVERRIDE_LEVELS) cases.push({ spec, overrides: { [level]: { [spec.id]: value } } });
    // An invalid nearer level gives way to the next farther one; a valid nearer one wins.
    cases.push({
      spec,
      overrides: { user: { [spec.id]: spec.default }, org: { [spec.id]: 3 }, blob: { [spec.id]: value } },
    });
    cases.push({
      spec,
      overrides: { user: { [spec.id]: value }, org: { [spec.id]: ['zod'] }, blob: { [spec.id]: 'not a value' } },
    });
    cases.push({ spec, overrides: { user: { [spec.id]: true }, org: { [spec.id]: value }, blob: { other: 1 } } });
  }
  return cases;
}

t.test('resolve_limit answers as resolveLimit for every catalog entry', async (t) => {
  const cases = LIMIT_CATALOG.flatMap(casesOf);
  const { rows } = await db.query<{ resolved: { value: unknown; source: string } }>(
    `SELECT resolve_limit(c.item->'spec', c.item->'overrides') AS resolved
       FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS c (item, n) ORDER BY c.n`,
    [JSON.stringify(cases)],
  );
  t.equal(rows.length, cases.length);
  let differing = 0;
  const sources = new Set<string>();
  let clamped = 0;
  cases.forEach((c, i) => {
    const expected = resolveLimit(c.spec.id, c.overrides);
    sources.add(expected.source);
    if (
      expected.source !== 'default' &&
      c.overrides[expected.source]![c.spec.id] !== expected.value &&
      !Array.isArray(expected.value)
    )
      clamped += 1;
    const got = rows[i]!.resolved;
    if (JSON.stringify(got.value) !== JSON.stringify(expected.value) || got.source !== expected.source) {
      differing += 1;
      t.fail(`${c.spec.id} under ${JSON.stringify(c.overrides)}`, { got, expected });
    }
  });
  t.equal(differing, 0, `${cases.length} cases agree`);
  // Not vacuous: every source occurs, and some values were clamped to the most permissive one.
  t.same([...sources].sort(), ['blob', 'default', 'org', 'user']);
  t.ok(clamped > 0, `${clamped} clamped`);
});
