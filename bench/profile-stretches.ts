/**
 * The longest busy stretches of a thread's CPU profile (a `.cpuprofile` of `--cpu-prof`, as
 * `--profile-control-plane DIR` writes): runs of samples between two idle ones, so how long the
 * event loop went without taking another request, each with the functions it spent its time in.
 *
 *   ./node_modules/.bin/node bench/profile-stretches.ts FILE.cpuprofile [--top 10] [--frames 6]
 *
 * A stretch is bounded by `(idle)` samples; `(program)` and `(garbage collector)` count as busy.
 * Each stretch lists its samples' frames with `--callers` of their callers. Sampling is 1 ms by
 * default, so a stretch is known to about that much; the samples are taken in wall-clock time, so
 * on a loaded machine a stretch includes the time the thread waited for a core.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '10' },
    frames: { type: 'string', default: '6' },
    callers: { type: 'string', default: '2' },
  },
});

/** "name file:line" of a node, the file without its folders before the project's. */
function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.replace(/^.*\/(node_modules\/|control-plane\/|shared\/)/, '$1');
  return file ? `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}` : functionName;
}

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
  // A sample's frame with its callers, innermost first: "a ← b ← c".
  const stackName = (id: number): string => {
    const names = [frameName(byId.get(id)!)];
    for (let up = parent.get(id); up && names.length <= Number(args.callers); up = parent.get(up.id))
      names.push(frameName(up));
    return names.join(' ← ');
  };
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const stretches: Array<{ ms: number; at: number; self: Map<string, number> }> = [];
  let current: { ms: number; at: number; self: Map<string, number> } | null = null;
  let clock = 0;
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample's delta is the time since the previous one: the time the previous sample stood for.
    const delta = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    clock += (profile.timeDeltas[i] ?? 0) / 1000;
    const id = profile.samples[i]!;
    if (idle.has(id)) {
      if (current !== null) stretches.push(current);
      current = null;
      continue;
    }
    busy += delta;
    current ??= { ms: 0, at: clock, self: new Map() };
    current.ms += delta;
    const name = stackName(id);
    current.self.set(name, (current.self.get(name) ?? 0) + delta);
  }
  if (current !== null) stretches.push(current);
  stretches.sort((a, b) => b.ms - a.ms);
  const lengths = stretches.map((s) => s.ms);
  const over = (ms: number) => lengths.filter((l) => l >= ms).length;
  console.log(
    `${file}: ${(clock / 1000).toFixed(1)} s, busy ${(busy / 1000).toFixed(1)} s, ${stretches.length} stretches, ≥ 10 ms: ${over(10)}, ≥ 20 ms: ${over(20)}, ≥ 50 ms: ${over(50)}`,
  );
  for (const stretch of stretches.slice(0, Number(args.top))) {
    const top = [...stretch.self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(args.frames));
    console.log(`  ${stretch.ms.toFixed(1)} ms at ${(stretch.at / 1000).toFixed(2)} s`);
    for (const [name, ms] of top) console.log(`      ${ms.toFixed(1).padStart(6)} ms  ${name}`);
  }
}
