/**
 * Which IP addresses an outside call may connect to. The default policy refuses every address
 * that reaches the runner's own host, its network or its cloud provider rather than the public
 * internet. Addresses that embed an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are
 * judged by the IPv4 address they embed, so `[::ffff:127.0.0.1]` is loopback.
 */
import { BlockList, isIP } from 'node:net';

/** Why an address is refused; the words appear in the node error's message. */
export type AddressClass =
  'unspecified' | 'loopback' | 'private' | 'link_local' | 'cloud_metadata' | 'multicast' | 'reserved';

type Range = readonly [network: string, prefix: number];

/**
 * The ranges of each class (IANA special-purpose registries). Cloud metadata comes first so that
 * 169.254.169.254 is named for what it is rather than as link-local.
 */
const RANGES: Readonly<Record<AddressClass, { v4: readonly Range[]; v6: readonly Range[] }>> = {
  cloud_metadata: {
    // AWS/GCP/Azure/OpenStack, Alibaba, AWS's IPv6 endpoint.
    v4: [
      ['169.254.169.254', 32],
      ['100.100.100.200', 32],
    ],
    v6: [['fd00:ec2::254', 128]],
  },
  unspecified: { v4: [['0.0.0.0', 8]], v6: [['::', 128]] },
  loopback: { v4: [['127.0.0.0', 8]], v6: [['::1', 128]] },
  private: {
    // RFC 1918, carrier-grade NAT (RFC 6598), IETF protocol assignments, unique local IPv6, the deprecated site-local.
    v4: [
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
      ['100.64.0.0', 10],
      ['192.0.0.0', 24],
    ],
    v6: [
      ['fc00::', 7],
      ['fec0::', 10],
    ],
  },
  link_local: { v4: [['169.254.0.0', 16]], v6: [['fe80::', 10]] },
  multicast: { v4: [['224.0.0.0', 4]], v6: [['ff00::', 8]] },
  reserved: {
    // Documentation, benchmarking, 240/4 and broadcast; IPv6 discard-only and documentation.
    v4: [
      ['192.0.2.0', 24],
      ['198.18.0.0', 15],
      ['198.51.100.0', 24],
      ['203.0.113.0', 24],
      ['240.0.0.0', 4],
    ],
    v6: [
      ['100::', 64],
      ['2001:db8::', 32],
    ],
  },
};

/** Order of classification: the first class whose ranges hold the address names it. */
const ORDER: readonly AddressClass[] = [
  'cloud_metadata',
  'unspecified',
  'loopback',
  'private',
  'link_local',
  'multicast',
  'reserved',
];

/** One BlockList per class, built once: they hold only constants. */
const LISTS: ReadonlyMap<AddressClass, BlockList> = new Map(
  ORDER.map((cls) => {
    const list = new BlockList();
    for (const [net, prefix] of RANGES[cls].v4) list.addSubnet(net, prefix, 'ipv4');
    for (const [net, prefix] of RANGES[cls].v6) list.addSubnet(net, prefix, 'ipv6');
    return [cls, list];
  }),
);

/** A normalized address: its text and family, IPv6 brackets removed. */
export interface IpAddress {
  address: string;
  family: 4 | 6;
}

/** `address` as an IP address (brackets allowed), or null when it is not one. */
export function parseIp(address: string): IpAddress | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  return family === 4 || family === 6 ? { address: bare.toLowerCase(), family } : null;
}

/** The 16 bytes of an IPv6 address in text form (already checked by `isIP`). */
function ipv6Bytes(text: string): Uint8Array {
  let head = text;
  const bytes = new Uint8Array(16);
  // A trailing dotted quad (::ffff:1.2.3.4) holds the last four bytes.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(head);
  let tailBytes: number[] = [];
  if (quad) {
    tailBytes = quad.slice(1).map(Number);
    head = head.slice(0, quad.index) + '0:0';
  }
  const [left, right] = head.includes('::') ? head.split('::') : [head, undefined];
  const words = (s: string | undefined) => (s ? s.split(':').filter((w) => w !== '') : []).map((w) => parseInt(w, 16));
  const l = words(left);
  const r = words(right);
  const all = right === undefined ? l : [...l, ...new Array<number>(8 - l.length - r.length).fill(0), ...r];
  all.forEach((w, i) => {
    bytes[i * 2] = w >> 8;
    bytes[i * 2 + 1] = w & 0xff;
  });
  if (quad) bytes.set(tailBytes, 12);
  return bytes;
}

/**
 * The IPv4 address an IPv6 address carries when traffic to it reaches that IPv4 host: mapped
 * (::ffff:0:0/96), compatible (::/96, past ::1), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
 */
function embeddedIpv4(ipv6: string): string | null {
  const b = ipv6Bytes(ipv6);
  const zeros = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  const quad = (at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return quad(12);
  if (zeros(0, 12) && !zeros(12, 16) && !(zeros(12, 15) && b[15] === 1)) return quad(12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return quad(12);
  if (b[0] === 0x20 && b[1] === 0x02) return quad(2);
  return null;
}

/**
 * The class that makes `ip` a forbidden destination, or null for a public address. An IPv6
 * address embedding an IPv4 one is judged by both.
 */
export function forbiddenClass(ip: IpAddress): AddressClass | null {
  const family = ip.family === 4 ? 'ipv4' : 'ipv6';
  for (const cls of ORDER) if (LISTS.get(cls)!.check(ip.address, family)) return cls;
  if (ip.family === 6) {
    const v4 = embeddedIpv4(ip.address);
    if (v4 !== null) return forbiddenClass({ address: v4, family: 4 });
  }
  return null;
}

/**
 * Operator exemptions (`EGRESS_ALLOW_ADDRESSES`): CIDR ranges a call may reach even though the
 * default classes refuse them (an intranet service, a loopback test server).
 */
export class AddressExemptions {
  readonly #list = new BlockList();
  readonly ranges: readonly string[];

  /** `ranges`: `a.b.c.d/n`, `x::y/n`, or a bare address (one host). Throws on a malformed one. */
  constructor(ranges: readonly string[]) {
    this.ranges = ranges;
    for (const range of ranges) {
      const [net, bits, extra] = range.split('/');
      const ip = parseIp(net ?? '');
      const max = ip?.family === 4 ? 32 : 128;
      const prefix = bits === undefined ? max : Number(bits);
      if (!ip || extra !== undefined || !/^\d*$/.test(bits ?? '') || !Number.isInteger(prefix) || prefix > max)
        throw new Error(`not an address or CIDR range: ${range}`);
      this.#list.addSubnet(ip.address, prefix, ip.family === 4 ? 'ipv4' : 'ipv6');
    }
  }

  /** Whether the operator exempted `ip`. */
  has(ip: IpAddress): boolean {
    if (this.ranges.length === 0) return false;
    return this.#list.check(ip.address, ip.family === 4 ? 'ipv4' : 'ipv6');
  }
}
