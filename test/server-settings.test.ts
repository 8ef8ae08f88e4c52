import t from 'tap';
import { serverFlags, serverMemory } from '../shared/db/server-settings.ts';

const GiB = 1024 ** 3;

t.test('shared buffers are an eighth of the machine, from 128 MiB to 2 GiB, unless set', async (t) => {
  t.same(serverMemory(0, 24 * GiB), { sharedBuffersMb: 2048, effectiveCacheMb: 12288, maintenanceWorkMb: 256 });
  t.same(serverMemory(0, 8 * GiB), { sharedBuffersMb: 1024, effectiveCacheMb: 4096, maintenanceWorkMb: 128 });
  t.same(serverMemory(0, 0.5 * GiB), { sharedBuffersMb: 128, effectiveCacheMb: 256, maintenanceWorkMb: 64 });
  t.equal(serverMemory(300, 24 * GiB).sharedBuffersMb, 300, 'EMBEDDED_PG_SHARED_BUFFERS_MB wins');
  t.equal(serverMemory(undefined, 0.5 * GiB).effectiveCacheMb, 256, 'the cache estimate is never below the buffers');
});

t.test('the flags name each setting once, as -c name=value', async (t) => {
  const flags = serverFlags(serverMemory(0, 24 * GiB));
  t.same(
    flags.filter((_, i) => i % 2 === 0),
    Array(flags.length / 2).fill('-c'),
  );
  const settings = Object.fromEntries(flags.filter((_, i) => i % 2 === 1).map((f) => f.split('=')));
  t.same(settings, {
    shared_buffers: '2048MB',
    effective_cache_size: '12288MB',
    maintenance_work_mem: '256MB',
    checkpoint_timeout: '15min',
    max_wal_size: '4GB',
  });
});
