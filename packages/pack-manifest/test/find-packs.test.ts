import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { findPackFolders, isPackManifestError } from '../src/resolve-entry.js';

const untyped = vi.hoisted(() => ({ on: false, made: 0 }));
vi.mock('node:fs/promises', async (actual) =>
  (await import('../../../scripts/untyped-dirents.js')).untypedFsPromises(
    await actual(),
    await import('node:fs'),
    untyped,
  ),
);

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pw-find-packs-'));
});
afterEach(() => {
  untyped.on = false;
  rmSync(root, { recursive: true, force: true });
});

function pack(...segments: string[]): string {
  const dir = join(root, ...segments);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'agent.yaml'), 'apiVersion: agenthippo.ai/v1\n');
  return dir;
}

describe('findPackFolders', () => {
  it('lists nested pack folders in byte order and does not descend into a pack', async () => {
    const b = pack('b-pack');
    const a = pack('a-pack');
    const versioned = pack('team', 'reviewer', '1.0.0');
    pack('a-pack', 'inner'); // inside a pack: part of it, not a pack of its own
    expect(await findPackFolders(root)).toEqual([a, b, versioned]);
  });

  it('returns the root when it is a pack', async () => {
    pack();
    expect(await findPackFolders(root)).toEqual([root]);
  });

  it('skips node_modules, dot folders, symlinked folders and a symlinked agent.yaml', async () => {
    pack('node_modules', 'evil');
    pack('.hidden', 'evil');
    const outside = mkdtempSync(join(tmpdir(), 'pw-find-outside-'));
    try {
      writeFileSync(join(outside, 'agent.yaml'), 'x');
      mkdirSync(join(outside, 'docs'));
      symlinkSync(join(outside, 'docs'), join(root, 'linked-docs'));
      symlinkSync(join(outside, 'missing'), join(root, 'dangling'));
      symlinkSync(outside, join(root, '.linked-hidden'));
      mkdirSync(join(root, 'linked-manifest'));
      symlinkSync(join(outside, 'agent.yaml'), join(root, 'linked-manifest', 'agent.yaml'));
      expect(await findPackFolders(root)).toEqual([]);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('refuses a symlink that leads to a pack folder instead of leaving that pack out', async () => {
    // `pack verify --all` would report every pack verified while `packwarden run linked` ran a
    // pack it never saw.
    const real = pack('a-real');
    const outside = mkdtempSync(join(tmpdir(), 'pw-find-outside-'));
    try {
      writeFileSync(join(outside, 'agent.yaml'), 'x');
      mkdirSync(join(root, 'team'));
      symlinkSync(outside, join(root, 'team', 'linked'));
      const error = await findPackFolders(root).catch((caught: unknown) => caught);
      expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_SYMLINK');
      expect((error as Error).message).toContain(join(root, 'team', 'linked'));
      // A symlink to a pack folder inside the tree is refused alike.
      rmSync(join(root, 'team', 'linked'));
      symlinkSync(real, join(root, 'team', 'linked'));
      const inside = await findPackFolders(root).catch((caught: unknown) => caught);
      expect(isPackManifestError(inside) && inside.code).toBe('ERR_PACK_SEARCH_SYMLINK');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('refuses a pack deeper than maxDepth instead of leaving it out', async () => {
    // Stopping at maxDepth left the pack out of `pack verify --all` (exit 0) while
    // `packwarden run 1/2/3` ran it.
    pack('1', '2', '3');
    mkdirSync(join(root, 'x', 'y', 'z', 'deeper'), { recursive: true });
    const error = await findPackFolders(root, { maxDepth: 2 }).catch((e: unknown) => e);
    expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_TOO_LARGE');
    expect((error as Error).message).toContain(join(root, '1', '2', '3'));
    expect(await findPackFolders(root, { maxDepth: 3 })).toEqual([join(root, '1', '2', '3')]);
    // Deep folders without a pack are searched, not refused.
    rmSync(join(root, '1'), { recursive: true });
    expect(await findPackFolders(root, { maxDepth: 2 })).toEqual([]);
  });

  it('refuses a symlink to a folder that holds a pack deeper down (also through a second link)', async () => {
    const real = pack('a-real');
    const outside = mkdtempSync(join(tmpdir(), 'pw-find-outside-'));
    const further = mkdtempSync(join(tmpdir(), 'pw-find-further-'));
    try {
      mkdirSync(join(outside, 'team', 'reviewer'), { recursive: true });
      writeFileSync(join(outside, 'team', 'reviewer', 'agent.yaml'), 'x');
      symlinkSync(outside, join(root, 'linked'));
      const error = await findPackFolders(root).catch((caught: unknown) => caught);
      expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_SYMLINK');
      expect((error as Error).message).toContain(join(root, 'linked'));

      // Two links: root/linked -> outside (no pack), outside/hop -> further/deep/pack.
      rmSync(join(outside, 'team'), { recursive: true });
      mkdirSync(join(further, 'deep', 'pack'), { recursive: true });
      writeFileSync(join(further, 'deep', 'pack', 'agent.yaml'), 'x');
      symlinkSync(further, join(outside, 'hop'));
      const chained = await findPackFolders(root).catch((caught: unknown) => caught);
      expect(isPackManifestError(chained) && chained.code).toBe('ERR_PACK_SEARCH_SYMLINK');
      expect((chained as Error).message).toContain(join(root, 'linked'));

      // Links that lead to no pack (and a loop back to a link's own folder) are still skipped.
      rmSync(join(further, 'deep'), { recursive: true });
      symlinkSync(outside, join(outside, 'loop'));
      expect(await findPackFolders(root)).toEqual([real]);
    } finally {
      rmSync(outside, { recursive: true, force: true });
      rmSync(further, { recursive: true, force: true });
    }
  });

  describe('symlinked folders', () => {
    let base: string;
    let outside: string;
    beforeEach(() => {
      base = mkdtempSync(join(tmpdir(), 'pw-find-base-'));
      outside = mkdtempSync(join(tmpdir(), 'pw-find-outside-'));
    });
    afterEach(() => {
      rmSync(base, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    });
    const failure = (dir: string, options = {}) =>
      findPackFolders(dir, options).then(
        () => undefined,
        (caught: unknown) => caught,
      );
    /** `segments` below `from`, with agent.yaml in the last when `withPack`. */
    function folder(from: string, segments: string[], withPack = false): string {
      const dir = join(from, ...segments);
      mkdirSync(dir, { recursive: true });
      if (withPack) writeFileSync(join(dir, 'agent.yaml'), 'x');
      return dir;
    }

    it('skips a loop to the root or an ancestor: its packs are listed once, without error', async () => {
      const packs = join(base, 'packs');
      const reviewer = folder(packs, ['team', 'reviewer'], true);
      symlinkSync('..', join(packs, 'up')); // the folder holding the root
      symlinkSync('..', join(packs, 'team', 'up')); // the root itself
      symlinkSync(base, join(packs, 'team', 'base')); // absolute, to the same ancestor
      expect(await findPackFolders(packs)).toEqual([reviewer]);
    });

    it('still refuses a pack beside the root reached through a link to an ancestor', async () => {
      // Skipping every link to an ancestor would reopen the hole: `packs/up -> ..` and
      // `packwarden run packs/up/elsewhere/deep` runs a pack `verify --all packs` never saw.
      const packs = join(base, 'packs');
      folder(packs, ['a'], true);
      folder(base, ['elsewhere', 'deep'], true);
      symlinkSync('..', join(packs, 'up'));
      const error = await failure(packs);
      expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_SYMLINK');
      expect((error as Error).message).toContain(join(packs, 'up', 'elsewhere', 'deep'));
    });

    it('skips a link to a folder the walk searches anyway, even one holding packs', async () => {
      const reviewer = pack('team', 'reviewer');
      const writer = pack('team', 'nested', 'writer');
      symlinkSync(join(root, 'team'), join(root, 'alias'));
      symlinkSync('nested', join(root, 'team', 'short'));
      symlinkSync(join(root, 'team', 'nested'), join(root, 'team', 'also-nested'));
      expect(await findPackFolders(root)).toEqual([writer, reviewer]);
    });

    it.each([
      ['a dot folder', ['.hidden', 'evil']],
      ['node_modules', ['node_modules', 'dep', 'evil']],
      ['a pack (a pack folder inside it)', ['a-pack', 'docs', 'evil']],
    ])(
      'refuses a link into %s of the root that holds a pack the walk never lists',
      async (_, at) => {
        pack('a-pack');
        const evil = folder(root, at, true);
        const parent = join(evil, '..');
        symlinkSync(parent, join(root, 'shown'));
        const error = await failure(root);
        expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_SYMLINK');
        expect((error as Error).message).toContain(join(root, 'shown'));
      },
    );

    it('refuses a pack reached through a link within maxDepth, and one past it', async () => {
      folder(outside, ['a', 'b', 'c'], true); // level 4 from the root, through `linked`
      symlinkSync(outside, join(root, 'linked'));
      const within = await failure(root);
      expect(isPackManifestError(within) && within.code).toBe('ERR_PACK_SEARCH_SYMLINK');
      expect((within as Error).message).toContain(join(root, 'linked', 'a', 'b', 'c'));
      // Past maxDepth the search stops reading and refuses: a pack could hide below.
      const deeper = await failure(root, { maxDepth: 3 });
      expect(isPackManifestError(deeper) && deeper.code).toBe('ERR_PACK_SEARCH_TOO_LARGE');
      expect((deeper as Error).message).toContain(join(root, 'linked', 'a', 'b', 'c'));
    });

    it('reads a link to a big unrelated tree only to maxDepth, then refuses', async () => {
      // 30 levels and 2,000 folders below the link, no pack: reading stops at the depth bound.
      folder(
        outside,
        Array.from({ length: 30 }, () => 'deep'),
      );
      for (let i = 0; i < 2000; i += 1) mkdirSync(join(outside, `wide-${i}`));
      symlinkSync(outside, join(root, 'data'));
      const error = await failure(root, { maxFolders: 1000 });
      expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_TOO_LARGE');
      expect((error as Error).message).toContain(`${join(root, 'data')}, a symlink`);
      expect((error as Error).message).toContain('more than 8 levels down');
      // A shallow tree without a pack is read in full and passes.
      rmSync(join(outside, 'deep'), { recursive: true });
      expect(await findPackFolders(root, { maxFolders: 3000 })).toEqual([]);
    });

    it('ends promptly on a link to /, with an error naming the link', async () => {
      symlinkSync('/', join(root, 'x'));
      const error = await failure(root);
      expect(isPackManifestError(error) && error.code).toMatch(
        /^ERR_(PACK_SEARCH_TOO_LARGE|PACK_SEARCH_SYMLINK|MANIFEST_IO)$/,
      );
      expect((error as Error).message).toContain(join(root, 'x'));
    }, 10_000);

    it('fails closed on an unreadable folder under a link, naming the link', async () => {
      mkdirSync(join(outside, 'locked'));
      symlinkSync(outside, join(root, 'linked'));
      let outcome: { code?: string; message?: string };
      if (process.getuid?.() !== 0) {
        chmodSync(join(outside, 'locked'), 0o000);
        try {
          outcome = ((await failure(root)) ?? {}) as typeof outcome;
        } finally {
          chmodSync(join(outside, 'locked'), 0o700);
        }
      } else {
        // Root reads every folder: the search runs as nobody, on the built package, over trees
        // nobody owns, with the locked folder still unreadable to it.
        for (const dir of [root, outside]) execFileSync('chown', ['-R', '65534:65534', dir]);
        chmodSync(join(outside, 'locked'), 0o000);
        const entry = join(import.meta.dirname, '..', 'dist', 'resolve-entry.js');
        const script = `import(${JSON.stringify(entry)}).then((m) => m.findPackFolders(${JSON.stringify(root)})).then(() => console.log('{}'), (e) => console.log(JSON.stringify({ code: e.code, message: e.message })))`;
        const out = execFileSync(
          'setpriv',
          [
            '--reuid=65534',
            '--regid=65534',
            '--clear-groups',
            '--',
            process.execPath,
            '-e',
            script,
          ],
          { encoding: 'utf8' },
        );
        outcome = JSON.parse(out) as typeof outcome;
      }
      expect(outcome.code).toBe('ERR_MANIFEST_IO');
      expect(outcome.message).toContain(`through the symlink ${join(root, 'linked')}`);
    });
  });

  it('refuses more packs than maxPacks instead of returning a shorter list', async () => {
    pack('a');
    pack('b');
    pack('c');
    const error = await findPackFolders(root, { maxPacks: 2 }).catch((e: unknown) => e);
    expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_TOO_LARGE');
  });

  it('refuses a tree of more folders than maxFolders', async () => {
    for (let i = 0; i < 5; i += 1) mkdirSync(join(root, `empty-${i}`));
    const error = await findPackFolders(root, { maxFolders: 3 }).catch((e: unknown) => e);
    expect(isPackManifestError(error) && error.code).toBe('ERR_PACK_SEARCH_TOO_LARGE');
  });

  it('fails closed on a root it cannot read', async () => {
    const missing = await findPackFolders(join(root, 'nope')).catch((e: unknown) => e);
    expect(isPackManifestError(missing) && missing.code).toBe('ERR_MANIFEST_IO');
  });
});

describe('findPackFolders without entry types from readdir (DT_UNKNOWN: NFS, FUSE, XFS without ftype)', () => {
  // None can be mounted here: readdir is the real one with each Dirent made again as Node makes
  // it for DT_UNKNOWN (type 0), so every `is…()` answers no (scripts/untyped-dirents.ts).
  beforeEach(() => {
    untyped.on = true;
  });
  it('the simulation is what such a file system gives: entries that are nothing', async () => {
    const { readdir } = await import('node:fs/promises');
    pack('a');
    const [entry] = await readdir(root, { withFileTypes: true });
    expect(entry?.name).toBe('a');
    expect([entry?.isDirectory(), entry?.isFile(), entry?.isSymbolicLink()]).toEqual([
      false,
      false,
      false,
    ]);
  });

  it('finds the same packs as with types, nested and at the root', async () => {
    const a = pack('a-pack');
    const deep = pack('team', 'reviewer', '1.0.0');
    pack('a-pack', 'inner');
    untyped.on = false;
    const typed = await findPackFolders(root);
    untyped.on = true;
    expect(typed).toEqual([a, deep]);
    expect(await findPackFolders(root)).toEqual(typed);
    expect(await findPackFolders(a)).toEqual([a]);
  });

  it('still refuses a pack too deep and a pack behind a symlink', async () => {
    pack('1', '2', '3');
    await expect(findPackFolders(root, { maxDepth: 2 })).rejects.toSatisfy(
      (error: unknown) => isPackManifestError(error) && error.code === 'ERR_PACK_SEARCH_TOO_LARGE',
    );
    rmSync(join(root, '1'), { recursive: true });
    const outside = mkdtempSync(join(tmpdir(), 'pw-find-untyped-outside-'));
    try {
      mkdirSync(join(outside, 'p'));
      writeFileSync(join(outside, 'p', 'agent.yaml'), 'x: 1\n');
      symlinkSync(outside, join(root, 'link'));
      await expect(findPackFolders(root)).rejects.toSatisfy(
        (error: unknown) => isPackManifestError(error) && error.code === 'ERR_PACK_SEARCH_SYMLINK',
      );
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
