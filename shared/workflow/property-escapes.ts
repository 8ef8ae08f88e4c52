/**
 * Unicode property escapes (`\p{…}`, `\P{…}`) one budget may hold, counted in source text before
 * anything compiles: the `logic.code` sources of one graph together (the definition check,
 * validate-graph.ts), and the sources one run hands to `RegExp`, `eval` and the `Function`
 * constructors (the sandbox's run caps, sandbox/run-caps-source.ts). V8 resolves each escape while
 * it parses a regular expression: up to ≈ 0.35 ms of the parsing thread and, within one pattern,
 * ≈ 0.9 MiB outside the isolate's heap (`\p{RGI_Emoji}` under `/v`), so a 40 KiB source of them
 * aborted the process ("Fatal process out of memory: Zone").
 */
export const MAX_PROPERTY_ESCAPES = 64;

/**
 * How many property escapes `text` holds, counting every `\p{` and `\P{` whether or not it is in
 * a regular expression. The sandbox's bootstrap embeds this function's source text, so it must
 * stay one self-contained function using nothing but its argument and built-ins.
 */
export function propertyEscapes(text: string): number {
  return text.match(/\\[pP]\{/g)?.length ?? 0;
}
