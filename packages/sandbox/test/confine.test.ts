import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadPackManifest } from '@packwarden/pack-manifest';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { SandboxError, confineSandbox, createSandboxState } from '../src/index.js';
import { agentYaml, boot, canaryEngine, cleanTemps, tempDir, writeTree } from './helpers.js';

afterEach(cleanTemps);

const withoutBwrap = { PATH: '/nonexistent-bin' };

function canaryPack(canary: string): string {
  return writeTree(join(tempDir(), 'confined'), {
    'agent.yaml': agentYaml('confined', '  engine: mine\n'),
    ...Object.fromEntries(
      Object.entries(canaryEngine('mine', canary)).map(([k, v]) => [`engines/mine/${k}`, v]),
    ),
  });
}

describe('confinement at boot (docs/sandbox.md, "Confinement")', () => {
  test('required without bubblewrap refuses boot with ERR_ISOLATION_UNAVAILABLE; no engine code loads', async () => {
    const canary = join(tempDir(), 'engine-ran');
    const stateDir = tempDir();
    const state = await createSandboxState(stateDir, undefined);
    const error = await boot(canaryPack(canary), {
      stateDir,
      confine: ({ packDir, manifest }) =>
        confineSandbox('required', { packDir, manifest, state }, withoutBwrap),
    }).catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as SandboxError).code).toBe('ERR_ISOLATION_UNAVAILABLE');
    expect((error as SandboxError).message).toMatch(/fs-read|fs-write|network|processes/);
    expect(existsSync(canary)).toBe(false);
  });

  test('auto without bubblewrap boots and names what is not enforced', async () => {
    const stateDir = tempDir();
    const state = await createSandboxState(stateDir, undefined);
    const { booted } = await boot(canaryPack(join(tempDir(), 'engine-ran')), {
      stateDir,
      confine: ({ packDir, manifest }) =>
        confineSandbox('auto', { packDir, manifest, state }, withoutBwrap),
    });
    expect(booted.degraded).toMatch(/^isolation is degraded: /);
    for (const id of ['fs-read', 'fs-write', 'network', 'processes'])
      expect(booted.degraded).toContain(id);
    await booted.confinement?.close();
  });

  test('off is silent: nothing degraded to report, commands run as given', async () => {
    const stateDir = tempDir();
    const state = await createSandboxState(stateDir, undefined);
    const { booted } = await boot(canaryPack(join(tempDir(), 'engine-ran')), {
      stateDir,
      confine: ({ packDir, manifest }) =>
        confineSandbox('off', { packDir, manifest, state }, withoutBwrap),
    });
    expect(booted.degraded).toBeUndefined();
    expect(booted.confinement?.mode).toBe('off');
  });

  test('claude and codex are confined like every engine: their CLI folders are visible read-only, writes are walled, and each turn admits its own gateway', async () => {
    const verdicts: Record<string, Awaited<ReturnType<typeof confineSandbox>>> = {};
    for (const [name, spec] of [
      ['claudy', '  engine: claude\n  permissions: {fileAccess: workspace-write}\n'],
      ['codexy', '  engine: codex\n'],
      ['execy', '  engine: exec\n  exec: {command: [./x]}\n'],
    ] as const) {
      const pack = writeTree(join(tempDir(), name), { 'agent.yaml': agentYaml(name, spec) });
      const { manifest } = loadPackManifest(pack);
      const state = await createSandboxState(tempDir(), undefined);
      verdicts[name] = await confineSandbox(
        'required',
        { packDir: pack, manifest, state },
        process.env,
      );
      await verdicts[name].confinement.close();
    }
    for (const name of ['claudy', 'codexy', 'execy']) {
      expect(verdicts[name]?.wrapEngine).toBe(true);
      expect(verdicts[name]?.degraded).toBeUndefined();
    }
    expect(verdicts.claudy?.engineOptions?.claude).toMatchObject({
      confinedWrites: true,
      onModelOrigin: expect.any(Function),
    });
    expect(verdicts.codexy?.engineOptions?.codex).toMatchObject({ confinedWrites: true });
    expect(verdicts.execy?.engineOptions).toBeUndefined();
  });

  test('without bubblewrap (auto), claude and codex run unwrapped, lean on no walls, and the run says what is not enforced', async () => {
    const pack = writeTree(join(tempDir(), 'claudy'), {
      'agent.yaml': agentYaml('claudy', '  engine: claude\n'),
    });
    const { manifest } = loadPackManifest(pack);
    const state = await createSandboxState(tempDir(), undefined);
    const confined = await confineSandbox('auto', { packDir: pack, manifest, state }, withoutBwrap);
    expect(confined.wrapEngine).toBe(false);
    expect(confined.engineOptions?.claude).toEqual({ confinedWrites: false });
    expect(confined.degraded).toMatch(/fs-write is not enforced/);
    await confined.confinement.close();
  });

  test('a network.allow that is not a list of strings is ERR_ISOLATION_POLICY_INVALID', async () => {
    const pack = writeTree(join(tempDir(), 'netty'), {
      'agent.yaml': agentYaml(
        'netty',
        '  engine: exec\n  exec: {command: [./x]}\n  permissions:\n    network: {allow: 42}\n',
      ),
    });
    const stateDir = tempDir();
    const state = await createSandboxState(stateDir, undefined);
    const error = await boot(pack, {
      stateDir,
      confine: ({ packDir, manifest }) =>
        confineSandbox('auto', { packDir, manifest, state }, withoutBwrap),
    }).catch((reason: unknown) => reason);
    // The manifest schema refuses it before confinement is asked (pack-manifest README, "Network").
    expect((error as { code?: string }).code).toBe('ERR_MANIFEST_INVALID');
  });

  test('a confined command reaches the origin the manifest allows through the proxy, and not another one', async () => {
    const hits = { allowed: 0, other: 0 };
    const listen = (name: keyof typeof hits) =>
      new Promise<Server>((resolve) => {
        const server = createServer((req, res) => {
          hits[name] += 1;
          res.end(`hello from ${name}`);
        });
        server.listen(0, '127.0.0.1', () => resolve(server));
      });
    const allowedServer = await listen('allowed');
    const otherServer = await listen('other');
    const port = (server: Server) => (server.address() as AddressInfo).port;
    try {
      const pack = writeTree(join(tempDir(), 'netty'), {
        'agent.yaml': agentYaml(
          'netty',
          `  engine: exec\n  permissions:\n    network:\n      allow: ["http://127.0.0.1:${port(allowedServer)}"]\n`,
        ),
      });
      const { manifest } = loadPackManifest(pack);
      const state = await createSandboxState(tempDir(), undefined);
      const { confinement } = await confineSandbox(
        'required',
        { packDir: pack, manifest, state },
        process.env,
      );
      try {
        const curl = (target: Server) => {
          const command = confinement.wrap({
            file: 'curl',
            args: ['-s', '-o', '-', '-w', ' %{http_code}', `http://127.0.0.1:${port(target)}/`],
            cwd: state.workspace,
            env: { PATH: '/usr/bin:/bin' },
          });
          // Not spawnSync: the proxy answers from this very process.
          return new Promise<{ stdout: string }>((resolve) => {
            const child = spawn(command.file, [...command.args], { env: command.env });
            let stdout = '';
            child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
            child.on('close', () => resolve({ stdout }));
          });
        };
        expect((await curl(allowedServer)).stdout).toBe('hello from allowed 200');
        expect((await curl(otherServer)).stdout).toMatch(/ 403$/);
        expect(hits).toEqual({ allowed: 1, other: 0 });
      } finally {
        await confinement.close();
      }
    } finally {
      allowedServer.close();
      otherServer.close();
    }
  }, 30_000);
});
