/**
 * The V8 snapshot every sandbox context is made from: an isolate's heap after the bootstrap
 * (sandbox/isolate-source.ts) ran and froze the realm, so a new context costs a deserialization
 * (≈ 0.35 ms) and the lockdown's second phase (≈ 0.1 ms) instead of running the bootstrap and
 * freezing ~770 objects (≈ 1.2 ms of CPU). That cost is what a tenant the runner has not seen
 * recently pays on its first run (docs/sandbox.md, "Context reuse").
 *
 * isolated-vm marks `createSnapshot` unstable across V8 versions; that concerns snapshots kept
 * across processes, and this one lives only as long as the process that made it, on the V8 that
 * made it. What V8 does change is the realm: when it makes a context from a snapshot it adds
 * properties to a few intrinsics, and aborts the process if one of them is frozen. Which ones
 * depends on the V8 version, so a probe finds them: a first snapshot freezes nothing and records
 * every object's own keys; a context made from it shows which objects V8 extended, and the real
 * snapshot leaves exactly those (and globalThis) to the lockdown's second phase, per context.
 *
 * When a snapshot cannot be made, contexts run the bootstrap themselves (`null` here).
 */
import ivm from 'isolated-vm';
import { ISOLATE_SOURCE } from './isolate-source.ts';

/** The global the host reaches the bootstrap's functions through; wire() deletes it. */
export const BOOT_GLOBAL = 'sandbox:boot';

/** The script that runs the bootstrap and leaves its functions on `BOOT_GLOBAL`. */
export function bootScript(late: number[] | null): string {
  return `Object.defineProperty(globalThis, ${JSON.stringify(BOOT_GLOBAL)}, { value: (${ISOLATE_SOURCE})(${JSON.stringify(late)}), configurable: true });`;
}

/** Indices of the objects V8 extends when it makes a context from a snapshot. */
function probeLateObjects(): number[] {
  const snapshot = ivm.Isolate.createSnapshot([{ code: bootScript(null), filename: 'sandbox:bootstrap' }]);
  const isolate = new ivm.Isolate({ memoryLimit: 64, snapshot });
  try {
    const context = isolate.createContextSync();
    return context.evalSync(
      `(() => {
        const { objects, keys } = globalThis[${JSON.stringify(BOOT_GLOBAL)}][6];
        const changed = [];
        for (let i = 0; i < objects.length; i++) {
          if (Reflect.ownKeys(objects[i]).map(String).join('\\u0000') !== keys[i]) changed.push(i);
        }
        return changed;
      })()`,
      { copy: true },
    ) as number[];
  } finally {
    isolate.dispose();
    snapshot.release();
  }
}

let made: { snapshot: ivm.ExternalCopy<ArrayBuffer> | null; late: number[] } | undefined;

/** This process's context snapshot, made on first use (≈ 30 ms), or null when V8 refused one. */
export function contextSnapshot(): ivm.ExternalCopy<ArrayBuffer> | null {
  if (made === undefined) {
    try {
      const late = probeLateObjects();
      made = {
        snapshot: ivm.Isolate.createSnapshot([{ code: bootScript(late), filename: 'sandbox:bootstrap' }]),
        late,
      };
    } catch (error) {
      process.emitWarning(
        `No sandbox context snapshot (contexts run the bootstrap themselves): ${(error as Error).message}`,
      );
      made = { snapshot: null, late: [] };
    }
  }
  return made.snapshot;
}

/** The objects the snapshot leaves to each context's lockdown (for tests and bench). */
export function lateObjectCount(): number {
  contextSnapshot();
  return made?.late.length ?? 0;
}
