import t from 'tap';
import { retryable, retrySchema, retryWaitSeconds } from '../../shared/workflow/node-policy.ts';

t.test('waits grow by the factor, stop at the cap, round up, and jitter stays within half to all', async (t) => {
  const policy = retrySchema.parse({
    max_attempts: 10,
    initial_interval_seconds: 3,
    backoff_factor: 1.5,
    max_interval_seconds: 10,
  });
  t.same(
    [1, 2, 3, 4, 5].map((attempt) => retryWaitSeconds(policy, attempt)),
    [3, 5, 7, 10, 10],
  );
  const defaults = retrySchema.parse({ max_attempts: 3 });
  t.same(
    [1, 2].map((attempt) => retryWaitSeconds(defaults, attempt)),
    [1, 2],
  );
  const jittered = { ...policy, jitter: true };
  t.equal(
    retryWaitSeconds(jittered, 4, () => 0),
    5,
    'half of the capped wait',
  );
  t.equal(
    retryWaitSeconds(jittered, 4, () => 0.999),
    10,
    'at most the capped wait',
  );
});

t.test('the node’s own errors and timeouts retry; limit refusals never; on_codes narrows', async (t) => {
  const any = retrySchema.parse({ max_attempts: 2 });
  t.ok(retryable({ code: 'code_error' }, any));
  t.ok(retryable({ code: 'conflict' }, any));
  t.ok(retryable({ code: 'code_timeout', limit: { id: 'workflow.code_run_seconds', value: 1 } }, any));
  t.ok(retryable({ code: 'node_timeout' }, any));
  t.notOk(retryable({ code: 'too_many_files', limit: { id: 'workflow.thread_item_files', value: 10 } }, any));
  t.notOk(retryable({ code: 'limit_exceeded' }, any));
  const narrow = retrySchema.parse({ max_attempts: 2, on_codes: ['node_timeout', 'limit_exceeded'] });
  t.ok(retryable({ code: 'node_timeout' }, narrow));
  t.notOk(retryable({ code: 'code_error' }, narrow));
  t.notOk(retryable({ code: 'limit_exceeded' }, narrow), 'a listed limit refusal still does not retry');
});
