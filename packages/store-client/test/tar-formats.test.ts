import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { extractArchive } from '../src/index.js';
import { listTree, tempDir, writePack } from './helpers.js';

describe('extractArchive with real tar formats', () => {
  for (const format of ['ustar', 'gnu', 'pax'] as const) {
    it(`reads GNU tar --format=${format} and normalises modes`, async () => {
      const dir = await tempDir();
      const src = await writePack(join(dir, 'src'), 'demo', '1.0.0', {
        '!bin/run.sh': '#!/bin/sh\n',
        'a/b/c.txt': 'hi',
      });
      execFileSync('chmod', ['6777', join(src, 'bin/run.sh')]);
      execFileSync('chmod', ['0666', join(src, 'a/b/c.txt')]);
      const tgz = join(dir, 't.tgz');
      execFileSync('tar', [`--format=${format}`, '-czf', tgz, '-C', src, '.']);
      const out = join(dir, 'out');
      const result = await extractArchive(readFileSync(tgz), out);
      expect(result.files).toBe(4);
      expect(await listTree(out)).toEqual([
        'AGENTS.md',
        'a/',
        'a/b/',
        'a/b/c.txt',
        'agent.yaml',
        'bin/',
        'bin/run.sh',
      ]);
      expect(statSync(join(out, 'bin/run.sh')).mode & 0o7777).toBe(0o755);
      expect(statSync(join(out, 'a/b/c.txt')).mode & 0o7777).toBe(0o644);
      expect(readFileSync(join(out, 'a/b/c.txt'), 'utf8')).toBe('hi');
    });
  }
});
