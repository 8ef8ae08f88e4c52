/**
 * What every wsctl command works with: the selected profile, clients built from it, and output.
 * An access token about to expire is refreshed with the profile's refresh token (rotated, and the
 * new one saved before it is used), for REST calls and for every WebSocket (re)connect alike.
 */
import { createRestClient, ok, RpcClient, socketUrlOf, type Credential, type RestClient } from '../client/src/index.ts';
import { readProfiles, writeProfiles, type Profile, type ProfileFile } from './profiles.ts';
import { printableLines } from './terminal-text.ts';

/** A refusal of wsctl itself (not of the service), printed like the service's: `error: code: message`. */
export class CliError extends Error {
  readonly code: string;
  readonly exitCode: number;

  constructor(code: string, message: string, exitCode = 1) {
    super(message);
    this.code = code;
    this.exitCode = exitCode;
  }
}

export interface Output {
  /** A line on stdout. */
  out(line: string): void;
  /** A line on stderr. */
  err(line: string): void;
  /** Rewrites the progress line on stderr (a TTY), or prints it as a line (anything else). */
  progress(line: string): void;
  /** Ends a progress line left on a TTY. */
  endProgress(): void;
  /** stderr is a terminal: the progress line is redrawn in place (and on a timer). */
  readonly interactive: boolean;
}

/** Where a run of wsctl reads and writes: the process's streams, or a caller's (a test's). */
export interface Io {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  /** Read only by a command given `-` (a secret or a document on stdin). */
  stdin: AsyncIterable<Buffer | string> | Iterable<Buffer | string>;
  /** WSCTL_URL, WSCTL_PROFILE, WSCTL_CONFIG, XDG_CONFIG_HOME, HOME, and `env:NAME` secrets. */
  env: Readonly<Record<string, string | undefined>>;
  /** Calls `stop` on Ctrl-C while a command waits; returns what stops listening. */
  onInterrupt?(stop: () => void): () => void;
}

/** The process's own streams, environment and Ctrl-C. */
export function processIo(): Io {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    onInterrupt(stop) {
      process.once('SIGINT', stop);
      return () => process.off('SIGINT', stop);
    },
  };
}

/**
 * Output on `io`'s streams. Every line is escaped (terminal-text.ts) before it is written, so no
 * text from the service acts on the terminal; only wsctl's own redraw of the progress line does.
 */
export function streamOutput(io: Pick<Io, 'stdout' | 'stderr'>): Output {
  const tty = io.stderr.isTTY === true;
  let open = false;
  return {
    interactive: tty,
    out(line) {
      if (open) this.endProgress();
      io.stdout.write(`${printableLines(line)}\n`);
    },
    err(line) {
      if (open) this.endProgress();
      io.stderr.write(`${printableLines(line)}\n`);
    },
    progress(line) {
      if (tty) {
        io.stderr.write(`\r\x1b[K${printableLines(line).replace(/\n/g, '\\n')}`);
        open = true;
      } else {
        io.stderr.write(`${printableLines(line)}\n`);
      }
    },
    endProgress() {
      if (open) io.stderr.write('\r\x1b[K');
      open = false;
    },
  };
}

/** Refresh when the access token has less than this left. */
const REFRESH_MARGIN_MS = 60_000;

export class CliContext {
  readonly profileName: string;
  readonly path: string;
  readonly output: Output;
  /** The streams, environment and Ctrl-C of this run. */
  readonly io: Io;
  /** `-o json|yaml|table`; undefined: each command's default (records JSON, listings a table). */
  readonly format: 'json' | 'yaml' | 'table' | undefined;
  /** `-q`: ids only. */
  readonly quiet: boolean;
  /** The address last called, named by a connection error. */
  target: string | undefined;
  #file: ProfileFile | null = null;
  #refreshing: Promise<string> | null = null;

  constructor(options: {
    profileName: string;
    path: string;
    output: Output;
    io: Io;
    format?: 'json' | 'yaml' | 'table';
    quiet?: boolean;
  }) {
    this.profileName = options.profileName;
    this.path = options.path;
    this.output = options.output;
    this.io = options.io;
    this.format = options.format;
    this.quiet = options.quiet ?? false;
  }

  async #load(): Promise<ProfileFile> {
    this.#file ??= await readProfiles(this.path, (line) => this.output.err(line));
    return this.#file;
  }

  /** The selected profile; `not_signed_in` when there is none. */
  async profile(): Promise<Profile> {
    const profile = (await this.#load()).profiles[this.profileName];
    if (!profile)
      throw new CliError('not_signed_in', `No profile "${this.profileName}" in ${this.path}: run wsctl login.`);
    this.target = profile.url;
    return profile;
  }

  /** The selected profile, or undefined. */
  async existing(): Promise<Profile | undefined> {
    return (await this.#load()).profiles[this.profileName];
  }

  /** Stores `profile` under the selected name (mode 0600). */
  async save(profile: Profile): Promise<void> {
    const file = await this.#load();
    file.profiles[this.profileName] = profile;
    await writeProfiles(this.path, file);
  }

  /** Stores `profile` under another name (mode 0600): an acting token beside the signed-in account. */
  async saveAs(name: string, profile: Profile): Promise<void> {
    const file = await this.#load();
    file.profiles[name] = profile;
    await writeProfiles(this.path, file);
  }

  /** Removes the selected profile. */
  async remove(): Promise<boolean> {
    const file = await this.#load();
    if (!(this.profileName in file.profiles)) return false;
    delete file.profiles[this.profileName];
    await writeProfiles(this.path, file);
    return true;
  }

  /** The credential of the profile: its API key, or a token provider that refreshes. */
  async credential(): Promise<Credential> {
    const profile = await this.profile();
    if (profile.api_key) return { apiKey: profile.api_key };
    if (!profile.access_token)
      throw new CliError('not_signed_in', `Profile "${this.profileName}" holds no credential: run wsctl login.`);
    return { token: () => this.#token() };
  }

  async #token(): Promise<string> {
    const profile = await this.profile();
    const expires = profile.access_expires_at ? Date.parse(profile.access_expires_at) : Infinity;
    if (expires - Date.now() > REFRESH_MARGIN_MS || !profile.refresh_token) return profile.access_token!;
    // One refresh at a time: a refresh token is single-use (a replay revokes its family).
    this.#refreshing ??= this.#refresh(profile).finally(() => (this.#refreshing = null));
    return this.#refreshing;
  }

  async #refresh(profile: Profile): Promise<string> {
    const rest = createRestClient({ baseUrl: profile.url });
    const answer = await ok(rest.POST('/v1/auth/refresh', { body: { refresh_token: profile.refresh_token! } }));
    await this.save({ ...profile, ...tokensOf(answer) });
    return answer.access_token;
  }

  /** The typed REST client, signed in with the profile. */
  async rest(): Promise<RestClient> {
    const profile = await this.profile();
    return createRestClient({ baseUrl: profile.url, credential: await this.credential() });
  }

  /** A WebSocket JSON-RPC client, signed in with the profile (header form: this is Node). */
  async rpc(): Promise<RpcClient> {
    const profile = await this.profile();
    return RpcClient.connect({ url: socketUrlOf(profile.url), credential: await this.credential(), form: 'header' });
  }

  /** The operations API's address and token, from the profile (`wsctl ops login`). */
  async ops(): Promise<{ url: string; token: string }> {
    const profile = await this.profile();
    if (!profile.ops_url || !profile.ops_token)
      throw new CliError('not_signed_in', `Profile "${this.profileName}" has no operations API: run wsctl ops login.`);
    this.target = profile.ops_url;
    return { url: profile.ops_url, token: profile.ops_token };
  }
}

/** The profile fields of a sign-in or refresh answer. */
export function tokensOf(answer: {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  user?: { id: string };
}): Partial<Profile> {
  const fields: Partial<Profile> = {
    access_token: answer.access_token,
    refresh_token: answer.refresh_token,
    access_expires_at: new Date(Date.now() + answer.expires_in * 1000).toISOString(),
  };
  if (answer.user) fields.user_id = answer.user.id;
  return fields;
}
