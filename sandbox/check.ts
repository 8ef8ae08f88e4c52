/**
 * Static check of a `logic.code` source for check_definition / create_definition: it compiles as
 * an ES module, every static import is a vetted module granted by `workflow.code_imports`, and it
 * has a default export. Nothing of the code runs: compiling and linking execute no user code, and
 * the default export is found by linking a probe module that re-exports it.
 */
import ivm from 'isolated-vm';
import { refusedImport, linkModule, vettedSet, type VettedSet } from './modules.ts';

/** A validation error in the shape check_definition reports (`errors: [{field, message}]`). */
export interface FieldError {
  field: string;
  message: string;
}

export interface CodeCheckOptions {
  /** `workflow.code_imports` in force for the revision being checked. */
  imports: readonly string[];
  /** Where the code sits in the definition, e.g. `nodes.greet.config.code`. */
  field: string;
}

export interface CodeCheckerOptions {
  /** Heap bound of the checking isolate in MiB. Default 32. */
  memoryMb?: number;
  /** Checks after which the isolate is replaced (compiled modules are garbage). Default 200. */
  maxChecks?: number;
  vetted?: VettedSet;
}

/**
 * Checks sources in one small isolate of its own, created on first use. The process using it
 * must run with `--no-node-snapshot` like any isolated-vm user. Call `dispose()` when done.
 */
export class CodeChecker {
  readonly #memoryMb: number;
  readonly #maxChecks: number;
  readonly #vetted: VettedSet;
  #isolate: ivm.Isolate | null = null;
  #checks = 0;

  constructor(options: CodeCheckerOptions = {}) {
    this.#memoryMb = Math.max(8, options.memoryMb ?? 32);
    this.#maxChecks = Math.max(1, options.maxChecks ?? 200);
    this.#vetted = options.vetted ?? vettedSet();
  }

  /**
   * The errors of `code`, empty when it passes. Compiles on the calling thread: a source is at
   * most 256 KiB (MAX_CODE_BYTES), which V8 parses in a few milliseconds, except Unicode property
   * escapes in regular expression literals (≈ 0.35 ms each, and ≈ 0.9 MiB outside the isolate's
   * heap within one literal): the caller budgets those per graph before compiling
   * (shared/workflow/property-escapes.ts, MAX_PROPERTY_ESCAPES).
   */
  async check(code: string, options: CodeCheckOptions): Promise<FieldError[]> {
    return this.#check(code, options);
  }

  dispose(): void {
    this.#retire();
  }

  #check(code: string, { imports, field }: CodeCheckOptions): FieldError[] {
    const isolate = this.#acquire();
    let module: ivm.Module;
    try {
      module = isolate.compileModuleSync(code, { filename: 'logic.code' });
    } catch (error) {
      return [{ field, message: messageOf(error) }];
    }
    const refused = refusedImport(module.dependencySpecifiers, imports, this.#vetted);
    if (refused !== null) {
      module.release();
      return [{ field, message: refused }];
    }
    const context = isolate.createContextSync();
    const handles: Array<{ release(): void }> = [module, context];
    try {
      handles.push(...linkModule(isolate, context, module, imports, this.#vetted));
      // Linking a module that re-exports the default fails when there is none; nothing runs.
      const probe = isolate.compileModuleSync(`export { default } from ${JSON.stringify(PROBED)};`, {
        filename: 'sandbox:check',
      });
      handles.push(probe);
      try {
        probe.instantiateSync(context, () => module);
      } catch {
        return [{ field, message: 'The module has no default export.' }];
      }
      return [];
    } catch (error) {
      return [{ field, message: messageOf(error) }];
    } finally {
      for (const handle of handles.reverse()) handle.release();
    }
  }

  #acquire(): ivm.Isolate {
    if (this.#isolate?.isDisposed || this.#checks >= this.#maxChecks) this.#retire();
    this.#checks++;
    this.#isolate ??= new ivm.Isolate({ memoryLimit: this.#memoryMb });
    return this.#isolate;
  }

  #retire(): void {
    const isolate = this.#isolate;
    this.#isolate = null;
    this.#checks = 0;
    if (isolate && !isolate.isDisposed) isolate.dispose();
  }
}

/** The specifier the probe imports the checked module by; the probe imports nothing else. */
const PROBED = 'sandbox:checked-module';

/** Longest message of one problem: a syntax error in a regular expression quotes the whole pattern. */
const MAX_MESSAGE_CHARS = 500;

function messageOf(error: unknown): string {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS - 1)}…` : message;
}
