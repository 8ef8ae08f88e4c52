import t from 'tap';
import { credentialAuthenticator } from '../control-plane/auth/authenticate.ts';
import type { VerifiedToken } from '../control-plane/auth/tokens.ts';
import type { AppContext } from '../control-plane/context.ts';
import { ServiceError } from '../shared/errors.ts';

// A WebSocket authenticates on every frame with the same bearer token: the signature is checked
// once, the expiry and the account every time. Stand-ins count what is done per frame.
const USER = '6f0a4c1e-0000-4000-8000-000000000001';
const now = () => Math.floor(Date.now() / 1000);

function stand(verify: () => Promise<VerifiedToken>, present: () => boolean = () => true) {
  const calls = { verify: 0, accountReads: 0 };
  const ctx = {
    tokens: {
      verify: () => {
        calls.verify += 1;
        return verify();
      },
    },
    db: {
      query: async () => {
        calls.accountReads += 1;
        return { rows: present() ? [{ id: USER, kind: 'human' }] : [] };
      },
    },
  } as unknown as AppContext;
  return { ctx, calls };
}

const bearer = { type: 'bearer', token: 'the-token' } as const;

t.test('the token is verified once; the account is read on every frame', async (t) => {
  const { ctx, calls } = stand(async () => ({ kind: 'access', sub: USER, exp: now() + 3600 }));
  const authenticate = credentialAuthenticator(ctx, bearer);
  for (let i = 0; i < 3; i++)
    t.same(await authenticate(), { userId: USER, kind: 'human', credential: 'bearer', humanId: USER });
  t.same(calls, { verify: 1, accountReads: 3 });
});

t.test('once its expiry is reached the token is verified again, and refused as verification refuses it', async (t) => {
  const token: VerifiedToken = { kind: 'access', sub: USER, exp: now() + 3600 };
  const { ctx, calls } = stand(async () => {
    if (token.exp <= now()) throw new ServiceError('unauthorized', 'The token is invalid or expired.');
    return token;
  });
  const authenticate = credentialAuthenticator(ctx, bearer);
  await authenticate();
  await authenticate();
  t.equal(calls.verify, 1);
  token.exp = now();
  await t.rejects(authenticate(), { code: 'unauthorized', message: 'The token is invalid or expired.' });
  t.equal(calls.verify, 2, 'verified again at its expiry');
  t.equal(calls.accountReads, 2, 'and refused before its account was read');
});

t.test('a refused verification is not remembered', async (t) => {
  let valid = false;
  const { ctx, calls } = stand(async () => {
    if (!valid) throw new ServiceError('unauthorized', 'The token is invalid or expired.');
    return { kind: 'access', sub: USER, exp: now() + 60 };
  });
  const authenticate = credentialAuthenticator(ctx, bearer);
  await t.rejects(authenticate(), { code: 'unauthorized' });
  valid = true;
  t.equal((await authenticate()).userId, USER);
  t.equal(calls.verify, 2);
});

t.test('a deleted account is refused on the next frame without verifying again', async (t) => {
  let present = true;
  const { ctx, calls } = stand(
    async () => ({ kind: 'access', sub: USER, exp: now() + 60 }),
    () => present,
  );
  const authenticate = credentialAuthenticator(ctx, bearer);
  await authenticate();
  present = false;
  await t.rejects(authenticate(), { code: 'unauthorized', message: 'The account no longer exists.' });
  t.same(calls, { verify: 1, accountReads: 2 });
});
