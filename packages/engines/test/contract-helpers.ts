import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPackManifest } from '@packwarden/pack-manifest';
import type { EngineRuntime, LoadCustomEngineOptions, PackEngine } from '../src/index.js';
import { loadCustomEngine } from '../src/index.js';
import { fixtures, hostSession, tempDir, type Session } from './helpers.js';

export interface WireSession extends Omit<Session, 'client'> {
  /** Every byte the host wrote to the driver, and every host diagnostic. */
  wire(): string;
}

/** A real runner host over in-memory streams, driven by the real client, with the wire kept. */
export function wireSession(engine: PackEngine, runtime: EngineRuntime): WireSession {
  const seen: string[] = [];
  const { run, close } = hostSession(
    engine,
    runtime,
    { logger: (entry) => seen.push(JSON.stringify(entry)) },
    (text) => seen.push(text),
  );
  return { run, wire: () => seen.join(''), close };
}

/** A copy of a fixture pack in a temp dir (tests write node_modules and plant files in it). */
export function copyFixture(name: string): string {
  const copy = join(tempDir(), name);
  cpSync(join(fixtures, name), copy, { recursive: true });
  return copy;
}

/** Writes a tiny ES package `name` into `<dir>/node_modules/<name>/`. */
export function installPackage(dir: string, name: string, source: string): void {
  const at = join(dir, 'node_modules', name);
  mkdirSync(at, { recursive: true });
  writeFileSync(
    join(at, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', type: 'module', exports: './index.js' }),
  );
  writeFileSync(join(at, 'index.js'), source);
}

/** Loads the custom engine of a pack (engine folder given, or `<pack>/engines/<spec.engine>`). */
export async function loadPackCustomEngine(
  packDir: string,
  options: Partial<LoadCustomEngineOptions> & { engineDir?: string } = {},
): Promise<{ engine: PackEngine; runtime: EngineRuntime; logs: string[] }> {
  const { manifest } = loadPackManifest(packDir);
  const runtime = options.runtime ?? { workspaceRoot: tempDir(), stateDir: tempDir() };
  const logs: string[] = [];
  const engine = await loadCustomEngine(
    options.engineDir ?? join(packDir, 'engines', manifest.spec.engine ?? ''),
    {
      pack: {
        id: manifest.metadata.name,
        version: manifest.metadata.version,
        ...(manifest.spec.permissions?.fileAccess !== undefined
          ? { fileAccess: manifest.spec.permissions.fileAccess }
          : {}),
        ...(manifest.spec.model !== undefined ? { model: manifest.spec.model } : {}),
      },
      packDir,
      packManifest: manifest,
      onLog: (level, message) => logs.push(`${level}: ${message}`),
      ...options,
      runtime,
    },
  );
  return { engine, runtime, logs };
}
