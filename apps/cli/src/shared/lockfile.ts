import { readLockfile, StoreError, type Lockfile } from '@packwarden/store-client';

/** The lockfile at `file`; a missing one is empty, or `ERR_LOCKFILE_IO` when `required`. */
export async function loadLock(file: string, required: boolean): Promise<Lockfile> {
  const lock = await readLockfile(file);
  if (lock) return lock;
  if (required)
    throw new StoreError('ERR_LOCKFILE_IO', `${file} does not exist: a frozen install needs it`, {
      subject: file,
    });
  return { lockfileVersion: 1, packs: {} };
}
