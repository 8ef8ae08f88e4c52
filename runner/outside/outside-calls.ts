/**
 * What an engine thread needs to let its nodes reach the outside: the egress policy with the
 * thread's concurrency gate (shared/egress/), and the reader of stored credentials. Built once per
 * engine thread from `OutsideSettings`, which cross from the runner's main thread as data.
 */
import type { Db } from '../../shared/db/db.ts';
import { parseIp } from '../../shared/egress/addresses.ts';
import { EgressGate } from '../../shared/egress/gate.ts';
import { createEgressPolicy, type EgressSettings } from '../../shared/egress/policy.ts';
import {
  socketConnect,
  type EgressConnect,
  type EgressOptions,
  type EgressResolver,
} from '../../shared/egress/request.ts';
import { credentialReader, type CredentialReader } from './credentials.ts';

/** The runner's settings of outside calls (plain data: it crosses into the engine threads). */
export interface OutsideSettings {
  egress: EgressSettings;
  /** `CREDENTIAL_KEY`: opens stored credentials. */
  credentialKey: string;
  /**
   * The seam tests control (docs/sandbox.md, "Outside calls"). `hosts`: names resolved from this
   * map only, never by the system resolver. `connectOnly`: the only addresses a socket may be
   * opened to; any other fails the call before a socket opens, whatever the policy said. Absent in
   * production (no variable sets them).
   */
  testSeam?: { hosts: Record<string, string[]>; connectOnly: string[] };
}

/** Outside calls of one engine thread. */
export interface OutsideCalls {
  egress: EgressOptions;
  credentials: CredentialReader;
}

/** The outside calls of an engine thread over its `db`. */
export function createOutsideCalls(db: Db, settings: OutsideSettings): OutsideCalls {
  const egress: EgressOptions = {
    policy: createEgressPolicy(settings.egress),
    gate: new EgressGate({ perOrg: settings.egress.callsPerOrg, total: settings.egress.callsPerThread }),
  };
  const seam = settings.testSeam;
  if (seam) {
    const resolver: EgressResolver = async (name) => {
      const answers = seam.hosts[name];
      if (!answers) throw Object.assign(new Error(`${name} is not a name of the test`), { code: 'ENOTFOUND' });
      return answers.flatMap((a) => parseIp(a) ?? []);
    };
    const connect: EgressConnect = (target) => {
      if (!seam.connectOnly.includes(target.address))
        throw new Error(`the test seam refuses to connect to ${target.address}`);
      return socketConnect(target);
    };
    egress.resolver = resolver;
    egress.connect = connect;
  }
  return { egress, credentials: credentialReader(db, settings.credentialKey) };
}
