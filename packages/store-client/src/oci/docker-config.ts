import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Env } from '../store.js';
import { ociError } from './errors.js';

/** Credentials for one registry: a user name and password, or an identity (refresh) token. */
export type RegistryCredentials =
  { username: string; password: string } | { identityToken: string; username?: string };

export interface DockerConfigOptions {
  env?: Env;
  /** The folder holding `config.json`. Default `$DOCKER_CONFIG`, else `~/.docker`. */
  dockerConfigDir?: string;
  maxBytes?: number;
}

/** Docker Hub's credentials are stored under its v1 index URL (Docker CLI `config.json`). */
const DOCKER_HUB_KEYS = new Set(['index.docker.io', 'docker.io', 'registry-1.docker.io']);

/** `https://host:port/v1/` → `host:port`, as the Docker CLI matches `auths` keys. */
function keyHost(key: string): string {
  return key
    .replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
    .replace(/\/.*$/s, '')
    .toLowerCase();
}

export function dockerConfigPath(options: DockerConfigOptions = {}): string {
  const env = options.env ?? process.env;
  const dir =
    options.dockerConfigDir ?? env.DOCKER_CONFIG ?? join(env.HOME ?? homedir(), '.docker');
  return join(dir, 'config.json');
}

/**
 * The credentials `config.json` holds for `registry` (`host[:port]`), from its `auths` entries:
 * `auth` (base64 `user:password`), `username` + `password`, or `identitytoken`. A missing file
 * or registry means anonymous (`undefined`); a file that cannot be read or judged is an error
 * (`ERR_OCI_DOCKER_CONFIG_INVALID`), never silently anonymous. Credential helpers
 * (`credsStore`, `credHelpers`) are not run.
 */
export async function readDockerCredentials(
  registry: string,
  options: DockerConfigOptions = {},
): Promise<RegistryCredentials | undefined> {
  const file = dockerConfigPath(options);
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  const fail = (why: string, cause?: unknown): never => {
    throw ociError('ERR_OCI_DOCKER_CONFIG_INVALID', `${file}: ${why}`, {
      subject: file,
      ...(cause !== undefined ? { cause } : {}),
    });
  };
  let text: string;
  try {
    const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const info = await handle.stat();
      if (!info.isFile()) return fail('not a regular file');
      const buffer = Buffer.alloc(Math.min(info.size, maxBytes) + 1);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      if (bytesRead > maxBytes) return fail(`larger than ${maxBytes} bytes`);
      text = new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(0, bytesRead));
    } finally {
      await handle.close();
    }
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException)?.code === 'ENOENT') return undefined;
    if ((cause as { code?: string })?.code === 'ERR_OCI_DOCKER_CONFIG_INVALID') throw cause;
    return fail(`cannot be read (${(cause as Error)?.message ?? String(cause)})`, cause);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    return fail('not JSON', cause);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return fail('not a JSON object');
  const auths = (parsed as Record<string, unknown>).auths;
  if (auths === undefined) return undefined;
  if (typeof auths !== 'object' || auths === null || Array.isArray(auths))
    return fail('"auths" is not an object');
  const wanted = registry.toLowerCase();
  const isHub = DOCKER_HUB_KEYS.has(wanted);
  const keys = Object.keys(auths)
    .filter((key) => {
      const host = keyHost(key);
      return host === wanted || (isHub && DOCKER_HUB_KEYS.has(host));
    })
    // The exact `host[:port]` key first, then the rest in a fixed order.
    .sort((a, b) => Number(b === wanted) - Number(a === wanted) || (a < b ? -1 : a > b ? 1 : 0));
  for (const key of keys) {
    const entry = (auths as Record<string, unknown>)[key];
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      return fail(`auths[${JSON.stringify(key)}] is not an object`);
    const { auth, username, password, identitytoken } = entry as Record<string, unknown>;
    for (const [name, value] of Object.entries({ auth, username, password, identitytoken })) {
      if (value !== undefined && typeof value !== 'string')
        return fail(`auths[${JSON.stringify(key)}].${name} is not a string`);
    }
    if (typeof identitytoken === 'string' && identitytoken !== '') {
      return {
        identityToken: identitytoken,
        ...(typeof username === 'string' && username ? { username } : {}),
      };
    }
    if (typeof auth === 'string' && auth !== '') {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(auth) || auth.length % 4 !== 0)
        return fail(`auths[${JSON.stringify(key)}].auth is not base64`);
      const decoded = Buffer.from(auth, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon <= 0)
        return fail(`auths[${JSON.stringify(key)}].auth is not base64 of user:password`);
      return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
    }
    if (typeof username === 'string' && username !== '' && typeof password === 'string') {
      return { username, password };
    }
  }
  return undefined;
}
