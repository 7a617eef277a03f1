// What the OCI client refuses on the local side (inputs to push, destinations of pull), before
// or without any request reaching the registry, and the temp-folder helper installs use.
import { createServer, type Server } from 'node:http';
import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packArchive } from '../../src/build.js';
import {
  pullPackArtifact,
  pushPackArtifact,
  withPulledPackArtifact,
  type PackArtifactMeta,
} from '../../src/oci/index.js';
import { tempDir, writePack } from '../helpers.js';
import { startRegistry, type RunningRegistry } from './registry.js';

const anon = { plainHttp: true, credentials: false as const };
const meta: PackArtifactMeta = { name: 'local', version: '1.0.0', digest: 'f'.repeat(64) };

describe('push refuses bad input before any request', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  });
  async function recorder() {
    const requests: string[] = [];
    const server = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.writeHead(500).end();
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { host: `127.0.0.1:${(server.address() as { port: number }).port}`, requests };
  }

  it.each([
    ['a name that is not a pack name', { ...meta, name: '../etc' }, 'ERR_OCI_MANIFEST_INVALID'],
    ['a version that is not semver', { ...meta, version: 'latest' }, 'ERR_OCI_MANIFEST_INVALID'],
    [
      'a pack digest that is not 64 hex',
      { ...meta, digest: 'sha256:x' },
      'ERR_OCI_MANIFEST_INVALID',
    ],
    [
      'a version with build metadata and no tag',
      { ...meta, version: '1.0.0+build.7' },
      'ERR_OCI_REF_INVALID',
    ],
  ])('%s', async (_why, bad, wanted) => {
    const { host, requests } = await recorder();
    await expect(
      pushPackArtifact(Buffer.from('x'), bad, `oci://${host}/r`, anon),
    ).rejects.toMatchObject({
      code: wanted,
    });
    expect(requests).toEqual([]);
  });

  it('refuses a digest reference, a symlink or a folder as the archive, and an archive over the limit', async () => {
    const { host, requests } = await recorder();
    await expect(
      pushPackArtifact(Buffer.from('x'), meta, `oci://${host}/r@sha256:${'0'.repeat(64)}`, anon),
    ).rejects.toMatchObject({ code: 'ERR_OCI_REF_INVALID' });
    const dir = await tempDir();
    await writeFile(join(dir, 'real.tgz'), 'archive');
    await symlink(join(dir, 'real.tgz'), join(dir, 'link.tgz'));
    await mkdir(join(dir, 'folder.tgz'));
    for (const path of ['link.tgz', 'folder.tgz', 'missing.tgz']) {
      await expect(
        pushPackArtifact(join(dir, path), meta, `oci://${host}/r`, anon),
      ).rejects.toMatchObject({
        code: 'ERR_OCI_IO',
      });
    }
    await expect(
      pushPackArtifact(join(dir, 'real.tgz'), meta, `oci://${host}/r`, {
        ...anon,
        limits: { maxLayerBytes: 3 },
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_BLOB_TOO_LARGE' });
    await expect(
      pushPackArtifact(Buffer.from('archive'), meta, `oci://${host}/r`, {
        ...anon,
        limits: { maxLayerBytes: 3 },
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_BLOB_TOO_LARGE' });
    await expect(
      pushPackArtifact(Buffer.from('x'), meta, `oci://${host}/r`, {
        ...anon,
        mountFrom: ['Not/Valid'],
      }),
    ).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    await expect(
      pushPackArtifact(Buffer.from('x'), meta, `oci://${host}/r`, { ...anon, chunkBytes: 0 }),
    ).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    await expect(
      pushPackArtifact(Buffer.from('x'), meta, `oci://${host}/r`, {
        ...anon,
        limits: { maxTags: -1 },
      }),
    ).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    await expect(
      pushPackArtifact(Buffer.from('x'), meta, `oci://example.com/r`, anon),
    ).rejects.toMatchObject({
      code: 'ERR_OCI_PLAIN_HTTP_REFUSED',
    });
    expect(requests).toEqual([]);
  });
});

describe('pull destinations, against the real registry', () => {
  let registry: RunningRegistry;
  let archive: Buffer;
  beforeAll(async () => {
    registry = await startRegistry();
    const dir = await writePack(join(await tempDir(), 'local'), 'local', '1.0.0', { 'a.md': 'a' });
    const packed = await packArchive(dir);
    archive = packed.archive;
    await pushPackArtifact(
      archive,
      { ...meta, digest: packed.digest },
      `oci://${registry.host}/l/local`,
      anon,
    );
  }, 30_000);
  afterAll(async () => {
    await registry?.stop();
  });

  it('a destination folder that does not exist is ERR_OCI_IO, nothing created', async () => {
    const out = await tempDir();
    await expect(
      pullPackArtifact(`oci://${registry.host}/l/local:1.0.0`, {
        ...anon,
        to: join(out, 'missing', 'p.tgz'),
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_IO' });
    expect(await readdir(out)).toEqual([]);
    await expect(
      pullPackArtifact(`oci://${registry.host}/l/local:1.0.0`, anon as never),
    ).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    });
  });

  it('withPulledPackArtifact hands over the checked archive and removes it afterwards, even on failure', async () => {
    const tmp = await tempDir();
    let seenFile = '';
    const size = await withPulledPackArtifact(
      `oci://${registry.host}/l/local`,
      { ...anon, tmpDir: tmp },
      async (p) => {
        seenFile = p.file;
        expect(p.tag).toBe('1.0.0');
        expect((await readFile(p.file)).equals(archive)).toBe(true);
        return (await stat(p.file)).size;
      },
    );
    expect(size).toBe(archive.length);
    await expect(stat(seenFile)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readdir(tmp)).toEqual([]);
    await expect(
      withPulledPackArtifact(
        `oci://${registry.host}/l/local`,
        { ...anon, tmpDir: tmp },
        async () => {
          throw new Error('install failed');
        },
      ),
    ).rejects.toThrow('install failed');
    await expect(
      withPulledPackArtifact(
        `oci://${registry.host}/l/none:1.0.0`,
        { ...anon, tmpDir: tmp },
        async () => 1,
      ),
    ).rejects.toMatchObject({ code: 'ERR_OCI_NOT_FOUND' });
    expect(await readdir(tmp)).toEqual([]);
  });
});
