/**
 * The embedded PostgreSQL's memory and checkpoint settings, sized for the machine it shares with
 * the service (docs/configuration.md, "Embedded PostgreSQL"). The server's defaults are sized for
 * the smallest machine it may meet (128 MB of shared buffers): with a year of history the hot
 * indexes outgrow that, and every write reads a page back and writes a full-page image of it.
 */
import { totalmem } from 'node:os';

const MiB = 1024 * 1024;

/** What the server is given, in MiB. */
export interface ServerMemory {
  sharedBuffersMb: number;
  effectiveCacheMb: number;
  maintenanceWorkMb: number;
}

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, Math.floor(value)));

/**
 * Shared buffers: `sharedBuffersMb` when set, else an eighth of the machine's memory, between 128
 * MiB and 2 GiB (the control plane, the runners and their sandboxes share the machine, so not the
 * quarter a dedicated server takes). The planner's cache estimate is half the machine's memory;
 * maintenance (VACUUM, index builds) gets an eighth of the shared buffers, at least 64 MiB.
 */
export function serverMemory(sharedBuffersMb?: number, machineBytes = totalmem()): ServerMemory {
  const machineMb = machineBytes / MiB;
  const shared = sharedBuffersMb && sharedBuffersMb > 0 ? sharedBuffersMb : clamp(machineMb / 8, 128, 2048);
  return {
    sharedBuffersMb: shared,
    effectiveCacheMb: clamp(machineMb / 2, shared, Number.MAX_SAFE_INTEGER),
    maintenanceWorkMb: clamp(shared / 8, 64, 1024),
  };
}

/** The `-c name=value` flags for `memory`, and checkpoints spread out enough to write fewer full-page images. */
export function serverFlags(memory: ServerMemory): string[] {
  const settings = {
    shared_buffers: `${memory.sharedBuffersMb}MB`,
    effective_cache_size: `${memory.effectiveCacheMb}MB`,
    maintenance_work_mem: `${memory.maintenanceWorkMb}MB`,
    // A checkpoint every 5 min or 1 GB of WAL (the defaults) re-logs every page first touched
    // after it in full; 15 min / 4 GB writes those images a third as often. Crash recovery
    // replays more WAL, a few seconds' worth on these disks.
    checkpoint_timeout: '15min',
    max_wal_size: '4GB',
  };
  return Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
}
