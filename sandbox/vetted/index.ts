/**
 * The vetted module set the runner ships: every module `workflow.code_imports` may grant. Adding
 * one means adding its source here after review; docs/sandbox.md lists them.
 */
import type { VettedModule } from './vetted-module.ts';
import { mathModule } from './math.ts';
import { uuidModule } from './uuid.ts';

export const vettedModules: readonly VettedModule[] = Object.freeze([uuidModule, mathModule]);
