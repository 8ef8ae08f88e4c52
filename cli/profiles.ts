/**
 * The profile file: where wsctl keeps what `wsctl login` obtained, one profile per name.
 * `$WSCTL_CONFIG`, else `$XDG_CONFIG_HOME/wsctl/profiles.json`, else `~/.config/wsctl/profiles.json`.
 * It holds credentials, so it is written with mode 0600 in a 0700 directory, by a rename of a
 * file created 0600 (never a moment world-readable); a file found with looser permissions is
 * put back to 0600 with a warning before it is read.
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, open, readFile, rename } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

export interface Profile {
  /** The service's origin, `http://127.0.0.1:8080`. */
  url: string;
  user_id?: string;
  access_token?: string;
  /** ISO time the access token expires. */
  access_expires_at?: string;
  refresh_token?: string;
  api_key?: string;
  /** The operations API (`http://127.0.0.1:8081`) and its token. */
  ops_url?: string;
  ops_token?: string;
}

export interface ProfileFile {
  profiles: Record<string, Profile>;
}

/** Where the file lives for this environment. */
export function profilePath(env: Readonly<Record<string, string | undefined>>): string {
  if (env.WSCTL_CONFIG) return env.WSCTL_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'wsctl', 'profiles.json');
}

/** Reads the file (empty when absent), repairing permissions looser than 0600 first. */
export async function readProfiles(path: string, warn: (line: string) => void): Promise<ProfileFile> {
  let mode: number;
  try {
    // lstat: a symbolic link planted at the path must not have its target's mode changed or read.
    const stats = await lstat(path);
    if (!stats.isFile()) throw new Error(`${path} is not a regular file; refusing to use it as the profile file`);
    mode = stats.mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw error;
  }
  if ((mode & 0o077) !== 0) {
    await chmod(path, 0o600);
    warn(`warning: ${path} was readable by others (mode ${mode.toString(8)}); set to 600`);
  }
  const parsed = JSON.parse(await readFile(path, 'utf8')) as ProfileFile;
  if (typeof parsed !== 'object' || parsed === null || typeof parsed.profiles !== 'object') {
    throw new Error(`${path} is not a wsctl profile file`);
  }
  return parsed;
}

/** Writes the file atomically with mode 0600 (its directory 0700). */
export async function writeProfiles(path: string, file: ProfileFile): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  // An unpredictable name, created exclusively ('wx' fails on anything already there, a symbolic
  // link included), 0600 from the start (open's mode, so the umask cannot widen it), renamed over.
  const temporary = `${path}.${randomBytes(8).toString('hex')}.tmp`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(file, null, 2)}\n`);
    await handle.chmod(0o600);
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
}
