import { spawn } from 'node:child_process';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { EMPTY_PACK_CONTENT, holdsContent, PACK_CONTENT_LIMITS } from '../src/pack-content.js';
import { readPackContent, syncWorkspace } from '../src/index.js';
import { loadPackManifest } from '@packwarden/pack-manifest';
import { copyFixture, loadPackCustomEngine, wireSession } from './contract-helpers.js';
import { cleanTemps, tempDir } from './helpers.js';

afterEach(cleanTemps);

const sync = { enabled: true, dir: '.sdkstyle', rulesFile: 'SDKSTYLE.md' };

async function content() {
  const pack = copyFixture('contract-sdk');
  return readPackContent(pack, loadPackManifest(pack).manifest);
}

describe('workspaceSync never writes through a link and never outside the workspace', () => {
  test('a sync folder that is a symlink out of the workspace fails the turn; nothing lands outside', async () => {
    const pack = copyFixture('contract-sdk');
    const workspace = tempDir();
    const outside = tempDir();
    symlinkSync(outside, join(workspace, '.sdkstyle'));
    const { engine, runtime } = await loadPackCustomEngine(pack, {
      runtime: { workspaceRoot: workspace, stateDir: tempDir() },
    });
    const s = wireSession(engine, runtime);
    const { outcome } = await s.run({ message: 'hi' });
    expect(outcome).toMatchObject({ type: 'failed', error: { code: 'workspace_sync_refused' } });
    expect(readdirSync(outside)).toEqual([]);
    await s.close();
  });

  test.each([
    [
      'the rules file is a symlink',
      (ws: string, target: string) => {
        mkdirSync(join(ws, '.sdkstyle'));
        symlinkSync(target, join(ws, '.sdkstyle', 'SDKSTYLE.md'));
      },
    ],
    [
      'the skills folder is a symlink',
      (ws: string, target: string) => {
        mkdirSync(join(ws, '.sdkstyle'));
        symlinkSync(join(target, '..'), join(ws, '.sdkstyle', 'skills'));
      },
    ],
    [
      'a skill folder is a symlink',
      (ws: string, target: string) => {
        mkdirSync(join(ws, '.sdkstyle', 'skills'), { recursive: true });
        symlinkSync(join(target, '..'), join(ws, '.sdkstyle', 'skills', 'summarise'));
      },
    ],
    [
      'a file of a skill is a symlink',
      (ws: string, target: string) => {
        mkdirSync(join(ws, '.sdkstyle', 'skills', 'summarise'), { recursive: true });
        symlinkSync(target, join(ws, '.sdkstyle', 'skills', 'summarise', 'SKILL.md'));
      },
    ],
  ])('refuses when %s, and the file it points at is untouched', async (_name, plant) => {
    const workspace = tempDir();
    const victim = join(tempDir(), 'victim.txt');
    writeFileSync(victim, 'precious\n');
    plant(workspace, victim);
    await expect(syncWorkspace(workspace, sync, await content())).rejects.toMatchObject({
      code: 'workspace_sync_refused',
    });
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(readdirSync(join(victim, '..'))).toEqual(['victim.txt']);
  });

  test('a hard link in the workspace is replaced, not written through', async () => {
    const workspace = tempDir();
    const victim = join(tempDir(), 'victim.txt');
    writeFileSync(victim, 'precious\n');
    mkdirSync(join(workspace, '.sdkstyle'));
    linkSync(victim, join(workspace, '.sdkstyle', 'SDKSTYLE.md'));
    const paths = await syncWorkspace(workspace, sync, await content());
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(readFileSync(paths.rulesFilePath ?? '', 'utf8')).toBe(
      'You summarise documents in three bullet points.\n',
    );
  });

  test('links inside the pack are not copied; files already there are kept', async () => {
    const pack = copyFixture('contract-sdk');
    const secret = join(tempDir(), 'secret.txt');
    writeFileSync(secret, 'host secret\n');
    symlinkSync(secret, join(pack, 'skills', 'summarise', 'leak.txt'));
    const workspace = tempDir();
    mkdirSync(join(workspace, '.sdkstyle'));
    writeFileSync(join(workspace, '.sdkstyle', 'mine.txt'), 'the user’s own\n');
    const paths = await syncWorkspace(
      workspace,
      { ...sync, includeRules: false },
      await readPackContent(pack, loadPackManifest(pack).manifest),
    );
    expect(paths.rulesFilePath).toBeUndefined();
    expect(readdirSync(join(workspace, '.sdkstyle', 'skills', 'summarise'))).toEqual(['SKILL.md']);
    expect(readFileSync(join(workspace, '.sdkstyle', 'mine.txt'), 'utf8')).toBe('the user’s own\n');
  });

  test('a prompt symlinked out of the pack is not read', async () => {
    const pack = copyFixture('contract-sdk');
    const secret = join(tempDir(), 'secret.txt');
    writeFileSync(secret, 'host secret\n');
    const agents = join(pack, 'AGENTS.md');
    writeFileSync(agents, '');
    const { rmSync } = await import('node:fs');
    rmSync(agents);
    symlinkSync(secret, agents);
    const read = await readPackContent(pack, loadPackManifest(pack).manifest);
    expect(read.systemPrompt).toBeUndefined();
    expect(read.warnings.join('\n')).toContain('spec.prompts.system');
    const workspace = tempDir();
    await syncWorkspace(workspace, sync, read);
    expect(existsSync(join(workspace, '.sdkstyle', 'SDKSTYLE.md'))).toBe(false);
  });

  test('with nothing to lay, only the folder is made', async () => {
    const workspace = tempDir();
    expect(await syncWorkspace(workspace, sync, EMPTY_PACK_CONTENT)).toEqual({});
    expect(readdirSync(join(workspace, '.sdkstyle'))).toEqual([]);
  });
});

/**
 * A confined engine process (alive between turns, with write access to its workspace) swapping
 * a sync folder for a symlink and back, as fast as it can, while the host lays the pack's files:
 * a real child process, racing the host's real file system calls.
 */
const SWAPPER = String.raw`
const fs = require('node:fs');
const [dir, outside] = process.argv.slice(1);
const aside = dir + '.aside';
for (;;) {
  try { fs.renameSync(dir, aside); } catch { continue; }
  try { fs.symlinkSync(outside, dir); } catch {}
  for (let spin = 0; spin < 2000; spin += 1);
  try { if (fs.lstatSync(dir).isSymbolicLink()) fs.unlinkSync(dir); } catch {}
  try { fs.renameSync(aside, dir); } catch { fs.rmSync(aside, { recursive: true, force: true }); }
}
`;

describe('workspaceSync holds the folders it checked (no swap between check and write)', () => {
  test('a skill folder swapped for a symlink out of the workspace mid-sync receives nothing outside', async () => {
    const workspace = tempDir();
    const outside = tempDir();
    const skill = join(tempDir(), 'race');
    mkdirSync(skill);
    for (let file = 0; file < 100; file += 1)
      writeFileSync(join(skill, `f${String(file).padStart(3, '0')}.md`), `skill file ${file}\n`);
    const raced = { ...EMPTY_PACK_CONTENT, skills: [{ name: 'race', dir: skill }] };
    const target = join(workspace, '.sdkstyle', 'skills', 'race');
    mkdirSync(target, { recursive: true });
    const swapper = spawn(process.execPath, ['-e', SWAPPER, target, outside], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => swapper.once('spawn', resolve));
      for (let attempt = 0; attempt < 100 && readdirSync(outside).length === 0; attempt += 1) {
        // A refusal (the link seen, the folder gone) is a right answer too: what this checks is
        // where files land.
        await syncWorkspace(workspace, { ...sync, includeRules: false }, raced).catch(() => {});
      }
    } finally {
      swapper.kill('SIGKILL');
      await new Promise((resolve) => swapper.once('exit', resolve));
    }
    expect(readdirSync(outside)).toEqual([]);
    // Without the swapper, the same sync lays every file where it belongs.
    rmSync(join(workspace, '.sdkstyle'), { recursive: true, force: true });
    await syncWorkspace(workspace, { ...sync, includeRules: false }, raced);
    expect(readdirSync(target)).toHaveLength(100);
  }, 60_000);
});

describe('empty folders are not pack content (pack-digest SPEC.md, rule 2)', () => {
  function withoutDeclaredSkills(pack: string): void {
    const manifest = join(pack, 'agent.yaml');
    writeFileSync(
      manifest,
      readFileSync(manifest, 'utf8').replace('  skills:\n    - path: ./skills/summarise\n', ''),
    );
  }

  test('a folder of skills/ that holds no file is not offered as a skill', async () => {
    const pack = copyFixture('contract-sdk');
    withoutDeclaredSkills(pack);
    mkdirSync(join(pack, 'skills', 'ghost'));
    mkdirSync(join(pack, 'skills', 'nested', 'deeper', 'still'), { recursive: true });
    mkdirSync(join(pack, 'skills', 'linked'));
    symlinkSync('../summarise/SKILL.md', join(pack, 'skills', 'linked', 'SKILL.md'));
    const read = await readPackContent(pack, loadPackManifest(pack).manifest);
    expect(read.skills.map((skill) => skill.name)).toEqual(['linked', 'summarise']);
    expect(read.warnings.join('\n')).toMatch(/skill .*ghost: holds no file/);
    expect(read.warnings.join('\n')).toMatch(/skill .*nested: holds no file/);
  });

  test('a declared skill folder that holds no file is left out with a warning', async () => {
    const pack = copyFixture('contract-sdk');
    mkdirSync(join(pack, 'skills', 'ghost', 'inner'), { recursive: true });
    const manifest = join(pack, 'agent.yaml');
    writeFileSync(
      manifest,
      readFileSync(manifest, 'utf8').replace(
        '    - path: ./skills/summarise\n',
        '    - path: ./skills/summarise\n    - ./skills/ghost\n',
      ),
    );
    const read = await readPackContent(pack, loadPackManifest(pack).manifest);
    expect(read.skills.map((skill) => skill.name)).toEqual(['summarise']);
    expect(read.warnings.join('\n')).toMatch(/skill .*ghost: holds no file/);
  });

  test('a skills/ folder of empty folders gives no skills folder at all', async () => {
    const pack = copyFixture('contract-sdk');
    withoutDeclaredSkills(pack);
    const { rmSync } = await import('node:fs');
    rmSync(join(pack, 'skills', 'summarise'), { recursive: true });
    mkdirSync(join(pack, 'skills', 'ghost'));
    const read = await readPackContent(pack, loadPackManifest(pack).manifest);
    expect(read.skills).toEqual([]);
    expect(read.skillsRoot).toBeUndefined();
  });

  test('looking for a file in a skill folder is bounded: too many empty folders hold nothing', async () => {
    const pack = copyFixture('contract-sdk');
    withoutDeclaredSkills(pack);
    const wide = join(pack, 'skills', 'wide');
    for (let i = 0; i <= PACK_CONTENT_LIMITS.maxEmptyEntries; i += 1)
      mkdirSync(join(wide, `d${i}`), { recursive: true });
    writeFileSync(join(wide, `d${PACK_CONTENT_LIMITS.maxEmptyEntries}`, 'SKILL.md'), 'late\n');
    expect(await holdsContent(wide)).toBe(false);
    expect(await holdsContent(join(pack, 'skills', 'summarise'))).toBe(true);
  });
});

describe('choices where the contract is silent (README, "The manifest")', () => {
  test('rulesFile defaults to AGENTS.md; skills and rules are included unless turned off', async () => {
    const workspace = tempDir();
    const paths = await syncWorkspace(workspace, { enabled: true, dir: '.x' }, await content());
    expect(paths.rulesFilePath).toBe(join(workspace, '.x', 'AGENTS.md'));
    expect(paths.skillsDir).toBe(join(workspace, '.x', 'skills'));
    const none = tempDir();
    expect(
      await syncWorkspace(
        none,
        { enabled: true, dir: '.x', includeRules: false, includeSkills: false },
        await content(),
      ),
    ).toEqual({});
    expect(readdirSync(join(none, '.x'))).toEqual([]);
  });

  test('promptInjection env-only and none leave the message as sent; no model anywhere leaves modelId absent', async () => {
    const pack = copyFixture('contract-sdk');
    const manifestPath = join(pack, 'engines', 'sdk-style', 'engine.manifest.json');
    const engineSource = join(pack, 'engines', 'sdk-style', 'engine.mjs');
    writeFileSync(
      engineSource,
      'export class SdkStyleEngine { async run(turn) { await turn.emitter.text(JSON.stringify({ message: turn.message, hasModel: "modelId" in turn })); } }',
    );
    for (const mode of ['env-only', 'none']) {
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
      writeFileSync(
        manifestPath,
        JSON.stringify({ ...manifest, promptInjection: { mode }, model: {} }),
      );
      const { engine, runtime } = await loadPackCustomEngine(pack);
      const s = wireSession(engine, runtime);
      const { events } = await s.run({ message: 'as sent' });
      expect(JSON.parse(events.map((e) => (e.type === 'text' ? e.delta : '')).join(''))).toEqual({
        message: 'as sent',
        hasModel: false,
      });
      await s.close();
      await engine.dispose?.();
    }
  });
});
