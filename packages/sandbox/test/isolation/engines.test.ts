import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { loadPackEngine, type PackEngine } from '@packwarden/engines';
import { parsePackManifest } from '@packwarden/pack-manifest';
import { connectRunner, startRunnerHost, type RunEvent } from '@packwarden/runner-host';
import { afterEach, describe, expect, it } from 'vitest';
import { createConfinement, type Confinement } from '../../src/isolation/index.js';
import {
  escapes,
  HOSTILE_CUSTOM_PACK,
  HOSTILE_PACK,
  setUpHost,
  type Host,
} from './host-evidence.js';

// The hostile packs through the real engines (exec, and a custom engine hosted in its Node
// child) with confinement's wrapper, one turn each over the real frame protocol. The verdicts
// are host-side evidence, as in hostile.test.ts.

let host: Host | undefined;
let confinement: Confinement | undefined;
let runtimeParent: string | undefined;

afterEach(async () => {
  await confinement?.close();
  await host?.close();
  if (runtimeParent) await rm(runtimeParent, { recursive: true, force: true });
  host = confinement = runtimeParent = undefined;
});

async function oneTurn(
  engine: PackEngine,
  h: Host,
): Promise<{ events: RunEvent[]; text: string; outcome: unknown }> {
  const toHost = new PassThrough();
  const toDriver = new PassThrough();
  const runner = startRunnerHost({
    engine,
    runtime: { workspaceRoot: h.workspace, stateDir: h.state },
    input: toHost,
    output: toDriver,
    cancelGraceMs: 2000,
    kill: (request) => engine.kill?.(request),
  });
  const client = connectRunner({ input: toDriver, output: toHost });
  const events: RunEvent[] = [];
  const handle = client.run(
    { message: 'escape', permissions: { fileAccess: 'write' } },
    { onEvent: (event) => events.push(event) },
  );
  const outcome = await handle.outcome;
  await client.shutdown();
  await runner.done;
  const text = events.map((e) => (e.type === 'text' ? e.delta : '')).join('');
  return { events, text, outcome };
}

async function confinedEngine(fixture: string): Promise<{ h: Host; engine: PackEngine }> {
  const h = (host = await setUpHost(fixture));
  runtimeParent = await mkdtemp(join(tmpdir(), 'pw-runtime-'));
  const home = join(h.state, 'packwarden');
  await mkdir(home);
  confinement = await createConfinement(
    {
      packDir: h.pack,
      workspace: h.workspace,
      engineStateDir: h.state,
      fileAccess: 'workspace-write',
      allowOrigins: [],
    },
    { mode: 'required', runtimeParent },
  );
  const manifest = parsePackManifest(await readFile(join(h.pack, 'agent.yaml'), 'utf8'));
  const engine = await loadPackEngine({
    packDir: h.pack,
    manifest,
    home,
    env: h.env(),
    wrap: confinement.wrap,
  });
  return { h, engine };
}

describe('the hostile packs through the real engines, confined', () => {
  it('exec engine: the command runs confined, escapes fail, the turn completes', async () => {
    const { h, engine } = await confinedEngine(HOSTILE_PACK);
    const { text, outcome } = await oneTurn(engine, h);
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(text).toContain('escape.sh done');
    expect(await escapes(h, { code: 0, signal: null, stdout: text, stderr: '' })).toEqual([]);
    expect(await readFile(join(h.workspace, 'escape-sh.txt'), 'utf8')).toBe('allowed\n');
  });

  it('custom engine: the engine module and the child it starts are confined', async () => {
    const { h, engine } = await confinedEngine(HOSTILE_CUSTOM_PACK);
    const { text, outcome } = await oneTurn(engine, h);
    expect(outcome).toMatchObject({ type: 'result', stopReason: 'end_turn' });
    expect(text).toMatch(/^read refused/m);
    expect(text).toMatch(/child read refused/);
    expect(await escapes(h, { code: 0, signal: null, stdout: text, stderr: '' })).toEqual([]);
    expect(await readFile(join(h.workspace, 'engine.txt'), 'utf8')).toBe('allowed');
    expect(await readFile(join(h.workspace, 'hook.txt'), 'utf8')).toBe('allowed');
    await engine.dispose?.();
  });
});
