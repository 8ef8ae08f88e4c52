/** The benchmark's workflow: three chained trivial `logic.code` nodes (bench/run.ts, bench/quick.ts). */
export const BENCH_GRAPH = {
  start: 'a',
  nodes: {
    a: {
      processor: 'logic.code',
      config: { code: 'export default (input) => ({ n: input.n, a: 1 })' },
      routes: { success: 'b' },
    },
    b: {
      processor: 'logic.code',
      config: { code: 'export default (input) => ({ ...input, b: 2 })' },
      routes: { success: 'c' },
    },
    c: {
      processor: 'logic.code',
      config: { code: 'export default (input) => ({ ...input, c: 3 })' },
      routes: { success: null },
    },
  },
};
