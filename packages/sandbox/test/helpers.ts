import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadPackTrustRoot } from '@packwarden/trust-root';
import type { PackEngine } from '@packwarden/engines';
import type { EngineEmitter, EngineRunOptions } from '@packwarden/runner-host';
import { bootPack, createSandboxState, type BootPackOptions } from '../src/index.js';

const temps: string[] = [];

/** A fresh folder (real path), removed by {@link cleanTemps}. */
export function tempDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'pw-sandbox-')));
  temps.push(dir);
  return dir;
}

export function cleanTemps(): void {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Writes `files` (relative path → content) under `root`. */
export function writeTree(root: string, files: Record<string, string>): string {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

export function agentYaml(name: string, spec: string): string {
  return `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: ${name}, version: 1.0.0}\nspec:\n${spec}`;
}

/**
 * A custom engine folder whose module writes `canary` as soon as it is imported: if the canary
 * exists, the engine's code ran.
 */
export function canaryEngine(id: string, canary: string): Record<string, string> {
  return {
    'engine.manifest.json': JSON.stringify({
      version: 2,
      id,
      entry: `${id}.mjs`,
      engineExport: 'Engine',
    }),
    [`${id}.mjs`]: `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(canary)}, 'imported');\nexport class Engine { async run(turn) { writeFileSync(${JSON.stringify(canary)}, 'ran'); await turn.emitter.text('planted'); } }\n`,
  };
}

/** Boots `agent` in a fresh (or given) state dir, the way `serveSandbox` does. */
export async function boot(
  agent: string,
  options: Partial<BootPackOptions> & { stateDir?: string; workspace?: string } = {},
) {
  const state = await createSandboxState(options.stateDir ?? tempDir(), options.workspace);
  const booted = await bootPack({
    agent,
    cwd: tempDir(),
    env: { PACKWARDEN_HOME: state.packwardenHome },
    state,
    requireSigned: false,
    trustRoot: () => loadPackTrustRoot({ env: {}, cacheDir: false }),
    engineEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    execKillGraceMs: 100,
    log: () => {},
    ...options,
  });
  return { state, booted };
}

/** Runs one turn of a loaded engine (the real engine, driven the way the host drives it). */
export async function runTurn(
  engine: PackEngine,
  runtime: { workspaceRoot: string; stateDir: string },
  options: Partial<EngineRunOptions> = {},
): Promise<{ text: string; error?: unknown }> {
  let text = '';
  const emitter: EngineEmitter = {
    text: async (delta) => void (text += delta),
    thinking: async () => {},
    toolStart: async () => {},
    toolEnd: async () => {},
    progress: async () => {},
    warning: async () => {},
    session: async () => {},
    question: async () =>
      ({ outcome: 'declined' }) as Awaited<ReturnType<EngineEmitter['question']>>,
    log: () => {},
  };
  try {
    await engine.stream(
      'hi',
      { runId: 'run-1', engineId: engine.id, ...options },
      emitter,
      runtime,
      new AbortController().signal,
    );
    return { text };
  } catch (error) {
    return { text, error };
  } finally {
    await engine.dispose?.();
  }
}
