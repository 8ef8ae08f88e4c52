/**
 * Module resolution for `logic.code`. A specifier resolves only when it names a module of the
 * vetted set the runner ships (sandbox/vetted/) AND the execution's `workflow.code_imports`
 * grants it. Nothing is ever read from disk or the network: vetted modules are source strings
 * compiled into the run's own isolate. Node built-ins, paths, URLs and everything else are
 * refused with a message saying why.
 */
import { builtinModules } from 'node:module';
import type ivm from 'isolated-vm';
import { vettedModules } from './vetted/index.ts';
import type { VettedModule } from './vetted/vetted-module.ts';

export type { VettedModule };

/** Vetted modules by name. */
export type VettedSet = ReadonlyMap<string, VettedModule>;

/** Indexes modules by name; a set is data the runner ships and may replace. */
export function vettedSet(modules: Iterable<VettedModule> = vettedModules): VettedSet {
  const set = new Map<string, VettedModule>();
  for (const module of modules) set.set(module.name, module);
  return set;
}

export type ImportVerdict = { ok: true; module: VettedModule } | { ok: false; message: string };

const builtins = new Set(builtinModules);

/** Decides one specifier. `granted` is `workflow.code_imports` of the execution. */
export function checkImport(specifier: string, granted: readonly string[], vetted: VettedSet): ImportVerdict {
  const quoted = JSON.stringify(specifier);
  if (specifier.startsWith('node:') || builtins.has(specifier) || builtins.has(specifier.split('/')[0] ?? '')) {
    return { ok: false, message: `${quoted} is a Node built-in; logic.code has no Node APIs.` };
  }
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(specifier)) {
    return { ok: false, message: `${quoted} is a URL; logic.code imports only vetted modules by name.` };
  }
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.includes('\\')) {
    return { ok: false, message: `${quoted} is a path; logic.code imports only vetted modules by name.` };
  }
  const module = vetted.get(specifier);
  if (!module) return { ok: false, message: `${quoted} is not a module the sandbox provides.` };
  if (!granted.includes(specifier)) {
    return { ok: false, message: `${quoted} is not granted by workflow.code_imports.` };
  }
  return { ok: true, module };
}

/** The first refused specifier's message, or null when all are allowed. */
export function refusedImport(
  specifiers: readonly string[],
  granted: readonly string[],
  vetted: VettedSet,
): string | null {
  for (const specifier of specifiers) {
    const verdict = checkImport(specifier, granted, vetted);
    if (!verdict.ok) return verdict.message;
  }
  return null;
}

/** Thrown out of the resolve callback when a nested specifier is refused. */
class ImportRefused extends Error {
  readonly code = 'import_refused';
}

/**
 * Instantiates `module` in `context`, compiling each granted vetted module it imports into the
 * same isolate (a module instance belongs to one context, so this happens per run). Synchronous:
 * linking runs no user code and vetted sources are small. Returns the compiled dependencies so
 * the caller can release them; throws `ImportRefused` for a refused specifier.
 */
export function linkModule(
  isolate: ivm.Isolate,
  context: ivm.Context,
  module: ivm.Module,
  granted: readonly string[],
  vetted: VettedSet,
): ivm.Module[] {
  const compiled = new Map<string, ivm.Module>();
  try {
    module.instantiateSync(context, (specifier) => {
      const verdict = checkImport(specifier, granted, vetted);
      if (!verdict.ok) throw new ImportRefused(verdict.message);
      let dependency = compiled.get(specifier);
      if (!dependency) {
        dependency = isolate.compileModuleSync(verdict.module.source, { filename: `vetted:${specifier}` });
        compiled.set(specifier, dependency);
      }
      return dependency;
    });
  } catch (error) {
    for (const dependency of compiled.values()) dependency.release();
    throw error;
  }
  return [...compiled.values()];
}
