import type { JsonTensor } from './tensors.ts';

/** Run a model: the revision and model hash name the session (the host loads it once). */
export interface HostRequest {
  id: number;
  revisionId: string;
  sha256: string;
  inputs: Record<string, JsonTensor>;
  /** Output names to return; all when left out. */
  outputs?: string[];
  /** Most bytes the outputs may take as JSON, all together; past it the run answers `output_too_large`. */
  maxOutputBytes: number;
}

export type HostReply =
  { id: number; outputs: Record<string, JsonTensor> } | { id: number; error: { code: string; message: string } };
