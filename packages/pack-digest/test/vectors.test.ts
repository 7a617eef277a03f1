import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import {
  computePackDigest,
  digestManifestLines,
  formatManifestLine,
} from '@packwarden/pack-digest';
import { makeTree, removeTree, type TreeFile } from './tree.js';

interface Vector {
  name: string;
  description: string;
  files: TreeFile[];
  folders?: string[];
  expected: { digest: string; manifest: string[] };
}

const vectors = JSON.parse(
  readFileSync(new URL('./fixtures/vectors.json', import.meta.url), 'utf8'),
) as Vector[];
const spec = readFileSync(new URL('../SPEC.md', import.meta.url), 'utf8');
const roots: string[] = [];
afterEach(() => roots.splice(0).forEach(removeTree));

describe('known-answer vectors', () => {
  test('there are at least 10 and SPEC.md lists every one with its digest', () => {
    expect(vectors.length).toBeGreaterThanOrEqual(10);
    for (const vector of vectors) {
      expect(spec).toContain(vector.name);
      expect(spec).toContain(vector.expected.digest);
    }
  });

  test.each(vectors.map((vector) => [vector.name, vector] as const))(
    '%s',
    async (_name, vector) => {
      const root = makeTree(vector.files, vector.folders);
      roots.push(root);
      const result = await computePackDigest(root);
      expect(result.entries.map(formatManifestLine)).toEqual(vector.expected.manifest);
      expect(result.digest).toBe(vector.expected.digest);
      // The expected manifest text itself hashes to the digest: readers can check it by hand.
      const text = `packwarden-digest/1\n${vector.expected.manifest.map((line) => `${line}\n`).join('')}`;
      expect(createHash('sha256').update(text).digest('hex')).toBe(vector.expected.digest);
      expect(digestManifestLines(vector.expected.manifest)).toBe(vector.expected.digest);
    },
  );

  test('the same vectors hashed on worker threads give the same digests', async () => {
    for (const vector of vectors) {
      const root = makeTree(vector.files, vector.folders);
      roots.push(root);
      expect((await computePackDigest(root, { threads: 2, parallel: 'always' })).digest).toBe(
        vector.expected.digest,
      );
    }
  });
});
