/** `@ws/math`: small numeric helpers over arrays of finite numbers. */
import type { VettedModule } from './vetted-module.ts';

export const mathModule: VettedModule = {
  name: '@ws/math',
  version: '1.0.0',
  description: 'Numeric helpers (sum, mean, median, percentile, stddev, min, max, clamp, round).',
  source: String.raw`
function numbers(values, name) {
  if (!Array.isArray(values)) throw new TypeError(name + ' takes an array of numbers.');
  for (const v of values) {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeError(name + ' takes finite numbers only.');
  }
  return values;
}

function nonEmpty(values, name) {
  numbers(values, name);
  if (values.length === 0) throw new RangeError(name + ' needs at least one number.');
  return values;
}

export function sum(values) {
  let total = 0;
  for (const v of numbers(values, 'sum')) total += v;
  return total;
}

export function mean(values) {
  return sum(nonEmpty(values, 'mean')) / values.length;
}

export function percentile(values, p) {
  nonEmpty(values, 'percentile');
  if (typeof p !== 'number' || !(p >= 0 && p <= 100)) throw new RangeError('percentile takes p between 0 and 100.');
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - low);
}

export function median(values) {
  return percentile(values, 50);
}

export function stddev(values) {
  const m = mean(values);
  let squares = 0;
  for (const v of values) squares += (v - m) * (v - m);
  return Math.sqrt(squares / values.length);
}

export function min(values) {
  let low = Infinity;
  for (const v of nonEmpty(values, 'min')) if (v < low) low = v;
  return low;
}

export function max(values) {
  let high = -Infinity;
  for (const v of nonEmpty(values, 'max')) if (v > high) high = v;
  return high;
}

export function clamp(value, low, high) {
  if (low > high) throw new RangeError('clamp takes low <= high.');
  return Math.min(Math.max(value, low), high);
}

export function round(value, digits = 0) {
  if (!Number.isInteger(digits) || digits < 0 || digits > 15) throw new RangeError('round takes 0 to 15 digits.');
  const factor = 10 ** digits;
  // Half away from zero, with EPSILON so 1.005 rounds to 1.01 despite its binary value.
  return (Math.sign(value) * Math.round((Math.abs(value) + Number.EPSILON) * factor)) / factor;
}

export default Object.freeze({ sum, mean, median, percentile, stddev, min, max, clamp, round });
`,
};
