/**
 * `@ws/uuid`: RFC 9562 version 4 UUIDs and helpers. Its randomness is the sandbox's
 * `crypto.getRandomValues`, which draws from the host's CSPRNG (sandbox/host-bridge.ts).
 */
import type { VettedModule } from './vetted-module.ts';

export const uuidModule: VettedModule = {
  name: '@ws/uuid',
  version: '1.0.0',
  description: 'Version 4 UUIDs (v4, validate, version, parse, stringify, NIL).',
  source: String.raw`
const getRandomValues = globalThis.crypto.getRandomValues;
const HEX = [];
for (let i = 0; i < 256; i++) HEX.push((i < 16 ? '0' : '') + i.toString(16));
const PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const NIL = '00000000-0000-0000-0000-000000000000';

export function stringify(bytes) {
  if (!(bytes instanceof Uint8Array) || bytes.length !== 16) throw new TypeError('stringify takes 16 bytes.');
  let out = '';
  for (let i = 0; i < 16; i++) out += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + HEX[bytes[i]];
  return out;
}

export function validate(value) {
  return typeof value === 'string' && PATTERN.test(value);
}

export function parse(value) {
  if (!validate(value)) throw new TypeError('parse takes a UUID string.');
  const hex = value.replace(/-/g, '');
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 16; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

export function version(value) {
  if (!validate(value)) throw new TypeError('version takes a UUID string.');
  return parseInt(value[14], 16);
}

export function v4() {
  const bytes = getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  return stringify(bytes);
}

export default Object.freeze({ v4, validate, version, parse, stringify, NIL });
`,
};
