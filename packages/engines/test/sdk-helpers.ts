import { chmodSync, copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePackManifest } from '@packwarden/pack-manifest';
import type { RunEvent } from '@packwarden/runner-host';
import { loadPackEngine } from '../src/index.js';
import { fixtures, session, tempDir } from './helpers.js';

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

/**
 * The `claude` or `codex` engine of a pack (model `pack-model`), loaded as the sandbox loads it
 * but with the stand-in CLI for `scenario`, and a session on it.
 */
export async function standinTurnSetup(
  engine: 'claude' | 'codex',
  scenario: string,
  fileAccess?: string,
) {
  const { env, records } = standinEnv(scenario);
  const executable = { executablePath: standin(engine) };
  const packEngine = await loadPackEngine({
    packDir: tempDir(),
    manifest: sdkPack(engine, fileAccess, 'pack-model'),
    home: tempDir(),
    env,
    ...(engine === 'claude' ? { claude: executable } : { codex: executable }),
  });
  const runtime = { workspaceRoot: tempDir(), stateDir: tempDir() };
  return { engine: packEngine, runtime, records, s: session(packEngine, runtime) };
}

/** The tool frames of a turn, in order. */
export const toolFrames = (events: RunEvent[]) =>
  events.filter((event) => event.type === 'tool_start' || event.type === 'tool_end');

/** An SDK importer that fails as Node does when `packageName` is not installed. */
export const missingSdk = (packageName: string, importedFrom: string) => () =>
  Promise.reject(
    Object.assign(new Error(`Cannot find package '${packageName}' imported from ${importedFrom}`), {
      code: 'ERR_MODULE_NOT_FOUND',
    }),
  );
