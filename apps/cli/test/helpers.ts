import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, type CliIo } from 'packwarden';

export const repoRoot = new URL('../../../', import.meta.url).pathname;
export const examplePack = join(repoRoot, 'examples', 'hello-pack');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process with captured output. */
export async function cli(
  argv: string[],
  options: { cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    env: options.env ?? { HOME: '/nonexistent-home' },
    cwd: options.cwd ?? repoRoot,
  };
  const code = await run(argv, io);
  return { code, stdout, stderr };
}

const temps: string[] = [];
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pw-cli-'));
  temps.push(dir);
  return dir;
}
export function cleanTemps(): void {
  temps.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true }));
}

/** A private copy of the example pack to change. */
export function copyOfExample(): string {
  const dir = join(tempDir(), 'hello-pack');
  cpSync(examplePack, dir, { recursive: true });
  return dir;
}
