/** The success envelope: `status` beside the endpoint's own fields (docs/api.md, "Conventions"). */
export function ok<T extends Record<string, unknown>>(fields: T): { status: 'success' } & T {
  return { status: 'success', ...fields };
}
