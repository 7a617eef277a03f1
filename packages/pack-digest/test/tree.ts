import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface TreeFile {
  path: string;
  content?: string | Buffer;
  mode?: 'f' | 'x';
  symlink?: string;
}

/** Writes files (and empty folders) under a fresh temp dir; returns its path. */
export function makeTree(files: readonly TreeFile[], folders: readonly string[] = []): string {
  const root = mkdtempSync(join(tmpdir(), 'pw-digest-'));
  writeTree(root, files, folders);
  return root;
}

export function writeTree(
  root: string,
  files: readonly TreeFile[],
  folders: readonly string[] = [],
): void {
  for (const folder of folders) mkdirSync(join(root, folder), { recursive: true });
  for (const file of files) {
    const target = join(root, file.path);
    mkdirSync(dirname(target), { recursive: true });
    if (file.symlink !== undefined) {
      symlinkSync(file.symlink, target);
    } else {
      writeFileSync(target, file.content ?? '');
      chmodSync(target, file.mode === 'x' ? 0o755 : 0o644);
    }
  }
}

export function removeTree(root: string): void {
  rmSync(root, { recursive: true, force: true });
}
