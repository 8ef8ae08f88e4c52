import t from 'tap';
import { CodeChecker } from '../../sandbox/check.ts';

const checker = new CodeChecker();
t.teardown(() => checker.dispose());
const field = 'nodes.greet.config.code';

t.test('a module with a default export and granted imports passes', async (t) => {
  t.same(
    await checker.check('export default async (input, ctx) => ({ hello: input.name })', { imports: [], field }),
    [],
  );
  t.same(
    await checker.check("import { v4 } from '@ws/uuid'; export default () => v4()", { imports: ['@ws/uuid'], field }),
    [],
  );
  t.same(await checker.check('const f = () => 1; export { f as default }', { imports: [], field }), []);
});

t.test('a syntax error is reported with its position', async (t) => {
  t.same(await checker.check('export default (', { imports: [], field }), [
    { field, message: 'SyntaxError: Unexpected end of input [logic.code:1:17]' },
  ]);
  t.match(
    await checker.check('const x = require("fs"); module.exports = x;\nexport default () => {', { imports: [], field }),
    [{ field, message: /^SyntaxError/ }],
  );
});

t.test('refused imports are reported', async (t) => {
  t.same(await checker.check("import fs from 'node:fs'; export default () => 1", { imports: [], field }), [
    { field, message: '"node:fs" is a Node built-in; logic.code has no Node APIs.' },
  ]);
  t.same(await checker.check("import { v4 } from '@ws/uuid'; export default () => 1", { imports: [], field }), [
    { field, message: '"@ws/uuid" is not granted by workflow.code_imports.' },
  ]);
  t.same(await checker.check("export * from './x.js'; export default () => 1", { imports: [], field }), [
    { field, message: '"./x.js" is a path; logic.code imports only vetted modules by name.' },
  ]);
});

t.test('a module without a default export is reported', async (t) => {
  t.same(await checker.check('export const run = () => 1', { imports: [], field }), [
    { field, message: 'The module has no default export.' },
  ]);
});

t.test('checking runs none of the code', async (t) => {
  t.same(
    await checker.check('while (true) {} export default () => 1', { imports: [], field }),
    [],
    'an endless top-level loop is not run',
  );
  t.same(await checker.check('await new Promise(() => {}); export default 1', { imports: [], field }), []);
});

t.test('the checker replaces its isolate after maxChecks', async (t) => {
  const small = new CodeChecker({ maxChecks: 2 });
  t.teardown(() => small.dispose());
  for (let i = 0; i < 5; i++) t.same(await small.check('export default 1', { imports: [], field }), []);
});
