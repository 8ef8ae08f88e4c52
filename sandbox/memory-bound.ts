/**
 * The operating system's bound on a sandbox child's memory (docs/sandbox.md, "Memory"). Code can
 * grow a child outside every isolate's heap bound (ICU objects behind Intl, Intl.Segmenter
 * results, resizable ArrayBuffers, the compiler's memory for huge generated code, V8's zone memory
 * for Unicode property escapes); unbounded, that ends with the kernel's OOM killer picking any
 * process of the host. The runner decides once, at start, how its children are bounded, the
 * strongest way the host offers:
 *
 * 1. `cgroup-v2`: a cgroup of its own per child with `memory.max`, where the runner can make one
 *    (a delegated cgroup v2: systemd's `Delegate=yes`, a container with its own cgroup namespace).
 *    The kernel refuses or kills past the bound; nothing is sampled.
 * 2. RLIMIT_DATA / RLIMIT_AS were measured and are not used: V8 and isolated-vm reserve address
 *    space far beyond what they touch (a child at rest ≈ 10 GiB, with 8 busy isolates ≈ 14 GiB,
 *    all counted by both limits); under RLIMIT_DATA 1.5 GiB isolate creation aborts the process,
 *    under RLIMIT_AS 4.5 GiB the context snapshot's creation does. A limit loose enough for V8
 *    bounds nothing useful, and one a little too tight aborts a child in isolate creation, which
 *    would be blamed on whoever's code ran.
 * 3. `rss-watchdog`: the parent reads each child's resident memory every `SAMPLE_MS` and kills it
 *    past the bound.
 *
 * Children also get `oom_score_adj` 1000 (sandbox/sandbox-child.ts): if the host runs out of
 * memory anyway, the kernel kills a sandbox child before the runner, the control plane or
 * PostgreSQL.
 */
import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { readFileSync, rmdirSync } from 'node:fs';
import path from 'node:path';

/** How often the watchdog reads each child's resident memory, ms. */
export const SAMPLE_MS = 100;
/**
 * Resident memory of a child beyond its isolates' heaps: Node and V8 at rest (≈ 90 MiB), the code
 * of the vetted modules, ICU data, malloc's arenas and isolated-vm's copies in flight.
 */
const MEMORY_MARGIN_MB = 256;
const CGROUP_ROOT = '/sys/fs/cgroup';

type MemoryMechanism = 'cgroup-v2' | 'rss-watchdog';

/** How a runner's sandbox children are bounded (JSON: it crosses to the engine threads). */
export interface MemoryBoundPlan {
  mechanism: MemoryMechanism;
  /** Resident memory bound of each child, MiB. */
  boundMb: number;
  /** cgroup-v2: the cgroup under which each child gets a group of its own; null otherwise. */
  cgroupDir: string | null;
  /** One line for the start-up log and the ops API. */
  detail: string;
}

/**
 * The default bound of a child (SANDBOX_MEMORY_MB unset): twice the heap bounds of all the
 * isolates it may hold (a heap at its bound plus the same again of what V8 keeps beside it: code,
 * isolated-vm's array buffers, freed pages not yet returned) plus MEMORY_MARGIN_MB. 1,280 MiB at
 * the runner's defaults (8 isolates of 64 MiB).
 */
export function defaultMemoryBoundMb(maxIsolates: number, isolateMemoryMb: number): number {
  return MEMORY_MARGIN_MB + 2 * Math.max(1, maxIsolates) * Math.max(8, isolateMemoryMb);
}

/** The watchdog's plan for `boundMb` (what a host without a delegated cgroup v2 gets). */
export function watchdogPlan(boundMb: number): MemoryBoundPlan {
  return {
    mechanism: 'rss-watchdog',
    boundMb,
    cgroupDir: null,
    detail: `resident memory sampled every ${SAMPLE_MS} ms, killed past ${boundMb} MiB`,
  };
}

/**
 * Decides how this runner's sandbox children are bounded to `boundMb` each (see the module
 * comment): a delegated cgroup v2 when one can be made here, else the watchdog. Never throws.
 */
export async function planMemoryBound(boundMb: number): Promise<MemoryBoundPlan> {
  const dir = await delegatedCgroup().catch(() => null);
  if (dir !== null) {
    return {
      mechanism: 'cgroup-v2',
      boundMb,
      cgroupDir: dir,
      detail: `cgroup v2 memory.max ${boundMb} MiB per child under ${dir}`,
    };
  }
  return watchdogPlan(boundMb);
}

/**
 * The cgroup v2 directory this process may make memory-bounded groups in, or null. The process's
 * own group (`0::/path` in /proc/self/cgroup) must offer the memory controller; cgroup v2 lets
 * only a group without processes of its own enable controllers for its children, so when memory
 * is not enabled yet the runner moves itself into a leaf group first (what a delegation expects).
 * A probe group proves that `memory.max` can be written.
 */
async function delegatedCgroup(): Promise<string | null> {
  const line = (await readFile('/proc/self/cgroup', 'utf8')).split('\n').find((l) => l.startsWith('0::'));
  if (line === undefined) return null;
  // Only a unified hierarchy mounted at the root: on hybrid hosts (v2 at /sys/fs/cgroup/unified)
  // the memory controller belongs to v1.
  await access(path.join(CGROUP_ROOT, 'cgroup.controllers'));
  const own = path.join(CGROUP_ROOT, line.slice(3).trim());
  if (!own.startsWith(CGROUP_ROOT)) return null;
  const controllers = (await readFile(path.join(own, 'cgroup.controllers'), 'utf8')).split(/\s+/);
  if (!controllers.includes('memory')) return null;
  const enabled = (await readFile(path.join(own, 'cgroup.subtree_control'), 'utf8')).split(/\s+/);
  if (!enabled.includes('memory')) {
    const leaf = path.join(own, `workspace-runner-${process.pid}`);
    await mkdir(leaf, { recursive: true });
    await writeFile(path.join(leaf, 'cgroup.procs'), String(process.pid));
    await writeFile(path.join(own, 'cgroup.subtree_control'), '+memory');
  }
  const probe = path.join(own, `workspace-sandbox-probe-${process.pid}`);
  await mkdir(probe, { recursive: true });
  try {
    await writeFile(path.join(probe, 'memory.max'), String(64 * 1024 * 1024));
  } finally {
    await rmdir(probe).catch(() => {});
  }
  return own;
}

/** A child's own cgroup (cgroup-v2 plans): made and entered right after it starts, removed once it exited. */
export class ChildCgroup {
  readonly dir: string;

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** Puts `pid` in a new group under `plan.cgroupDir` bounded to `plan.boundMb`; null when that failed. */
  static async enter(plan: MemoryBoundPlan, pid: number): Promise<ChildCgroup | null> {
    if (plan.cgroupDir === null) return null;
    const dir = path.join(plan.cgroupDir, `workspace-sandbox-${process.pid}-${pid}`);
    try {
      await mkdir(dir);
      await writeFile(path.join(dir, 'memory.max'), String(plan.boundMb * 1024 * 1024));
      // No swap: the bound is of memory, not of memory plus disk. Kill the whole group on OOM.
      await writeFile(path.join(dir, 'memory.swap.max'), '0').catch(() => {});
      await writeFile(path.join(dir, 'memory.oom.group'), '1').catch(() => {});
      await writeFile(path.join(dir, 'cgroup.procs'), String(pid));
      return new ChildCgroup(dir);
    } catch {
      await rmdir(dir).catch(() => {});
      return null;
    }
  }

  /** True when the kernel killed in this group for its memory.max (memory.events `oom_kill`). */
  oomKilled(): boolean {
    try {
      const events = readFileSync(path.join(this.dir, 'memory.events'), 'utf8');
      return Number(/^oom_kill (\d+)$/m.exec(events)?.[1] ?? 0) > 0;
    } catch {
      return false;
    }
  }

  /** Removes the (empty, its process exited) group. */
  remove(): void {
    try {
      rmdirSync(this.dir);
    } catch {
      // Already gone, or a process is still leaving it: nothing else uses the name.
    }
  }
}

/** A process's resident memory in MiB from /proc, or null when it cannot be read (gone, no /proc). */
export async function residentMb(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kib = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1];
    return kib === undefined ? null : Number(kib) / 1024;
  } catch {
    return null;
  }
}
