import { constants } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { CliError, EXIT } from '../errors.js';

const MAX_KEY_FILE_BYTES = 64 * 1024;
const KEY_FILE = { code: 'ERR_CLI_KEY_FILE' } as const;

/**
 * Reads a private signing key, refusing one that group or others can read: a signing key that
 * leaked is a fleet that runs whatever its holder signs.
 */
export async function readPrivateKeyFile(path: string): Promise<string> {
  let info;
  try {
    info = await stat(path);
  } catch (cause) {
    throw new CliError(
      `cannot read the key file ${path}: ${(cause as Error).message}`,
      EXIT.usage,
      'create one with `packwarden pack keygen -o FILE`',
      KEY_FILE,
    );
  }
  if (!info.isFile())
    throw new CliError(`${path} is not a regular file`, EXIT.usage, undefined, KEY_FILE);
  if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
    throw new CliError(
      `the key file ${path} is readable by group or others (mode ${(info.mode & 0o777).toString(8).padStart(4, '0')}); refusing to sign with it`,
      EXIT.usage,
      `chmod 600 ${path}, and consider the key exposed if others could read it`,
      KEY_FILE,
    );
  }
  if (info.size > MAX_KEY_FILE_BYTES)
    throw new CliError(`${path} is too large to be a PEM key`, EXIT.usage, undefined, KEY_FILE);
  const handle = await open(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0)).catch(
    (cause: Error) => {
      throw new CliError(
        `cannot read the key file ${path}: ${cause.message}`,
        EXIT.usage,
        undefined,
        KEY_FILE,
      );
    },
  );
  try {
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * Writes a new private key with mode 0600 from the first byte (never a moment world-readable),
 * through a temp file renamed into place, so a crash leaves no half-written key. Refuses to
 * replace an existing file unless `force`.
 */
export async function writePrivateKeyFile(
  path: string,
  pem: string,
  force: boolean,
): Promise<void> {
  const exists = await stat(path).then(
    () => true,
    () => false,
  );
  if (exists && !force) {
    throw new CliError(
      `${path} already exists`,
      EXIT.usage,
      'choose another -o FILE, or pass --force to replace it',
      KEY_FILE,
    );
  }
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  const handle = await open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
    0o600,
  ).catch((cause: Error) => {
    throw new CliError(`cannot write ${path}: ${cause.message}`, EXIT.usage, undefined, KEY_FILE);
  });
  try {
    await handle.writeFile(pem);
    await handle.sync();
  } catch (cause) {
    await handle.close();
    await rm(temp, { force: true });
    throw cause;
  }
  await handle.close();
  await rename(temp, path);
}

/**
 * Writes a public file (a keys file: not secret, mode 0644) through a temp file renamed into
 * place; refuses to replace an existing file unless `force`.
 */
export async function writePublicFile(path: string, text: string, force: boolean): Promise<void> {
  const exists = await stat(path).then(
    () => true,
    () => false,
  );
  if (exists && !force) {
    throw new CliError(
      `${path} already exists`,
      EXIT.usage,
      'choose another --public-out FILE, or pass --force to replace it',
      KEY_FILE,
    );
  }
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    const handle = await open(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
      0o644,
    );
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (cause) {
    await rm(temp, { force: true });
    if (cause instanceof CliError) throw cause;
    throw new CliError(`cannot write ${path}: ${(cause as Error).message}`, EXIT.usage, undefined, {
      ...KEY_FILE,
      cause,
    });
  }
}
