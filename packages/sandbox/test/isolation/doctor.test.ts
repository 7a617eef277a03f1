import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/isolation/index.js';

describe('runDoctor', () => {
  it('proves all four guarantees on a Linux host with bubblewrap', async () => {
    const report = await runDoctor();
    expect(report).toEqual({
      schemaVersion: 1,
      guarantees: [
        { id: 'fs-read', status: 'enforced', by: 'bubblewrap' },
        { id: 'fs-write', status: 'enforced', by: 'bubblewrap' },
        { id: 'network', status: 'enforced', by: 'bubblewrap + host proxy' },
        { id: 'processes', status: 'enforced', by: 'bubblewrap' },
      ],
    });
  });
});

describe('runDoctor in a degraded environment', () => {
  it('reports every guarantee unavailable, with the cause, when namespaces cannot nest', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pw-doctor-test-'));
    const bwrapPath = join(dir, 'bwrap');
    await writeFile(
      bwrapPath,
      '#!/bin/sh\nexec /usr/bin/bwrap --unshare-user --disable-userns --dev-bind / / -- /usr/bin/bwrap "$@"\n',
    );
    await chmod(bwrapPath, 0o755);
    try {
      const report = await runDoctor({ bwrapPath });
      expect(report.schemaVersion).toBe(1);
      expect(report.guarantees.map((g) => [g.id, g.status])).toEqual([
        ['fs-read', 'unavailable'],
        ['fs-write', 'unavailable'],
        ['network', 'unavailable'],
        ['processes', 'unavailable'],
      ]);
      for (const g of report.guarantees) expect(g.reason).toMatch(/bubblewrap failed/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('believes the evidence, not the claim: a bwrap that quietly shares the network fails network', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pw-doctor-test-'));
    const bwrapPath = join(dir, 'bwrap');
    // Keeps every flag and adds --share-net right after --unshare-all: the probe still passes,
    // so confinement claims the network guarantee, and only the attempt can show the hole.
    await writeFile(
      bwrapPath,
      '#!/bin/sh\nfirst=$1\nshift\nexec /usr/bin/bwrap "$first" --share-net "$@"\n',
    );
    await chmod(bwrapPath, 0o755);
    try {
      const report = await runDoctor({ bwrapPath });
      expect(report.guarantees.find((g) => g.id === 'network')).toEqual({
        id: 'network',
        status: 'unavailable',
        reason: 'a confined process reached a host loopback listener',
      });
      expect(report.guarantees.find((g) => g.id === 'fs-read')?.status).toBe('enforced');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reports every guarantee unavailable when bwrap is not on PATH', async () => {
    const report = await runDoctor({ env: { PATH: '/nonexistent' } });
    expect(
      report.guarantees.every((g) => g.status === 'unavailable' && /not on PATH/.test(g.reason!)),
    ).toBe(true);
  });
});
