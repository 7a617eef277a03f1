import { chmodSync, copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePackManifest } from '@packwarden/pack-manifest';
import type { RunEvent } from '@packwarden/runner-host';
import { fixtures, tempDir } from './helpers.js';

export interface StandinRecord {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  pid: number;
}

/**
 * A stand-in CLI from `fixtures/standins/`, copied to a temp dir: the Claude one as a `.mjs`
 * (the SDK runs it with node), the Codex one as an executable with this node in its shebang.
 */
export function standin(name: 'claude' | 'codex'): string {
  const dir = tempDir();
  const source = join(fixtures, 'standins', `${name}.mjs`);
  if (name === 'claude') {
    const path = join(dir, 'claude.mjs');
    copyFileSync(source, path);
    return path;
  }
  const path = join(dir, 'codex');
  const body = readFileSync(source, 'utf8').replace(/^#!.*\n/, '');
  writeFileSync(path, `#!${process.execPath}\n${body}`);
  chmodSync(path, 0o755);
  return path;
}

/** The environment the stand-in starts from, and where it records its invocations. */
export function standinEnv(scenario: string): {
  env: Record<string, string | undefined>;
  records: () => StandinRecord[];
} {
  const record = join(tempDir(), 'record.jsonl');
  return {
    env: { PATH: process.env.PATH, STANDIN_SCENARIO: scenario, STANDIN_RECORD: record },
    records: () =>
      existsSync(record)
        ? readFileSync(record, 'utf8')
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as StandinRecord)
        : [],
  };
}

export function sdkPack(engine: string, fileAccess?: string, model?: string) {
  return parsePackManifest(
    `apiVersion: agenthippo.ai/v1
kind: Agent
metadata: {name: sdk-pack, version: 1.0.0}
spec:
  engine: ${engine}
${fileAccess !== undefined ? `  permissions: {fileAccess: ${fileAccess}}\n` : ''}${model !== undefined ? `  model: ${model}\n` : ''}`,
  );
}

/** `--name value` or `--name=value` in an argv; `undefined` when absent. */
export function flag(argv: readonly string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (arg === name) return argv[i + 1];
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
  }
  return undefined;
}

export function thinkingOf(events: RunEvent[]): string {
  return events.map((event) => (event.type === 'thinking' ? event.delta : '')).join('');
}

/** Running (a zombie counts as dead). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

export async function waitUntil(check: () => boolean, timeoutMs = 3000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}
