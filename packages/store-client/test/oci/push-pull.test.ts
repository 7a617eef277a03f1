import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { computePackDigest } from '@packwarden/pack-digest';
import { generateKeypair, signPack } from '@packwarden/pack-signature';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packArchive } from '../../src/build.js';
import { extractArchive } from '../../src/extract.js';
import {
  highestSemverTag,
  listOciTags,
  OCI_EMPTY_DIGEST,
  PACK_ARTIFACT_TYPE,
  PACK_LAYER_MEDIA_TYPE,
  pullPackArtifact,
  pushPackArtifact,
  pushPackFolder,
  resolvePackArtifact,
  type PackArtifactMeta,
} from '../../src/oci/index.js';
import { tempDir, writePack } from '../helpers.js';
import { requireTool, startRegistry, type RunningRegistry } from './registry.js';

let registry: RunningRegistry;
beforeAll(async () => {
  registry = await startRegistry();
}, 30_000);
afterAll(async () => {
  await registry?.stop();
});

const sha256 = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

async function makePack(name: string, version: string, files: Record<string, string> = {}) {
  const dir = await writePack(join(await tempDir(), name), name, version, files);
  const { archive, digest } = await packArchive(dir);
  const meta: PackArtifactMeta = { name, version, description: `the ${name} pack`, digest };
  return { dir, archive, meta };
}

const opts = { plainHttp: true, credentials: false as const };

describe('push and pull against the real distribution registry (no auth)', () => {
  it('pushes a pack artifact that an independent client reads back byte for byte', async () => {
    const { archive, meta } = await makePack('reviewer', '1.2.0');
    const pushed = await pushPackArtifact(
      archive,
      meta,
      `oci://${registry.host}/acme/packs/reviewer`,
      opts,
    );
    expect(pushed.tag).toBe('1.2.0');
    expect(pushed.layer).toEqual({
      digest: sha256(archive),
      size: archive.length,
      upload: 'monolithic',
    });
    expect(pushed.reference).toBe(
      `oci://${registry.host}/acme/packs/reviewer@${pushed.manifestDigest}`,
    );

    // The independent client: plain fetch against the distribution API, none of our code.
    const base = `${registry.url}/v2/acme/packs/reviewer`;
    const m = await fetch(`${base}/manifests/1.2.0`, {
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    expect(m.status).toBe(200);
    const manifestBytes = Buffer.from(await m.arrayBuffer());
    expect(sha256(manifestBytes)).toBe(pushed.manifestDigest);
    expect(m.headers.get('docker-content-digest')).toBe(pushed.manifestDigest);
    const manifest = JSON.parse(manifestBytes.toString());
    expect(manifest).toEqual({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      artifactType: 'application/vnd.packwarden.pack.v1',
      config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: OCI_EMPTY_DIGEST, size: 2 },
      layers: [{ mediaType: PACK_LAYER_MEDIA_TYPE, digest: sha256(archive), size: archive.length }],
      annotations: {
        'org.opencontainers.image.title': 'reviewer',
        'org.opencontainers.image.version': '1.2.0',
        'org.opencontainers.image.description': 'the reviewer pack',
        'dev.packwarden.pack.digest': meta.digest,
      },
    });
    // No white space and sorted keys: the canonical serialisation.
    expect(manifestBytes.toString()).not.toMatch(/[\n\r]|": |, "/);
    expect(Object.keys(manifest)).toEqual(Object.keys(manifest).sort());
    expect(Object.keys(manifest.annotations)).toEqual(Object.keys(manifest.annotations).sort());
    const config = await fetch(`${base}/blobs/${OCI_EMPTY_DIGEST}`);
    expect(await config.text()).toBe('{}');
    const layer = await fetch(`${base}/blobs/${manifest.layers[0].digest}`);
    expect(layer.status).toBe(200);
    expect(Buffer.from(await layer.arrayBuffer()).equals(archive)).toBe(true);
  });

  it('pushPackFolder pushes a signed pack folder: its archive, agent.yaml metadata and pack.sig signer', async () => {
    const dir = await writePack(join(await tempDir(), 'signed'), 'signed', '0.9.0', {
      'x.md': 'x',
    });
    const keys = await generateKeypair();
    await signPack(dir, { privateKeyPem: keys.privateKeyPem, kid: 'release-2026' });
    const expected = await packArchive(dir);
    const pushed = await pushPackFolder(dir, `oci://${registry.host}/acme/signed`, opts);
    expect(pushed.meta).toEqual({
      name: 'signed',
      version: '0.9.0',
      description: 'test pack signed',
      digest: expected.digest,
      signer: 'release-2026',
    });
    expect(pushed.tag).toBe('0.9.0');
    const layer = await fetch(`${registry.url}/v2/acme/signed/blobs/${pushed.layer.digest}`);
    expect(Buffer.from(await layer.arrayBuffer()).equals(expected.archive)).toBe(true);
    // A malformed pack.sig is refused, not pushed as unsigned; nothing is tagged.
    await writeFile(join(dir, 'pack.sig'), 'not a jws\n');
    await expect(
      pushPackFolder(dir, `oci://${registry.host}/acme/signed:broken`, opts),
    ).rejects.toMatchObject({ code: 'ERR_PACK_INVALID' });
    const tags = await listOciTags(`oci://${registry.host}/acme/signed`, opts);
    expect(tags).toEqual(['0.9.0']);
  });

  it('re-pushing the same pack gives the same manifest digest and uploads nothing', async () => {
    const { archive, meta } = await makePack('again', '0.3.1');
    const ref = `oci://${registry.host}/acme/again`;
    const first = await pushPackArtifact(archive, meta, ref, opts);
    const second = await pushPackArtifact(archive, meta, ref, opts);
    expect(second.manifestDigest).toBe(first.manifestDigest);
    expect(second.layer.upload).toBe('present');
    // And from another repository on the registry: mounted, not uploaded again.
    const third = await pushPackArtifact(archive, meta, `oci://${registry.host}/acme/mirror`, {
      ...opts,
      mountFrom: ['acme/again'],
    });
    expect(third.layer.upload).toBe('mounted');
    expect(third.manifestDigest).toBe(first.manifestDigest);
  });

  it('immutableTags refuses to move a published version, before uploading anything', async () => {
    const ref = `oci://${registry.host}/acme/immutable`;
    const first = await makePack('immutable', '1.0.0', { 'a.md': 'one' });
    const pushed = await pushPackArtifact(first.archive, first.meta, ref, {
      ...opts,
      immutableTags: true,
    });
    // The same pack again: allowed, same digest.
    const again = await pushPackArtifact(first.archive, first.meta, ref, {
      ...opts,
      immutableTags: true,
    });
    expect(again.manifestDigest).toBe(pushed.manifestDigest);
    // Other content under the same version: refused, the tag unchanged, the new layer not uploaded.
    const second = await makePack('immutable', '1.0.0', { 'a.md': 'two' });
    await expect(
      pushPackArtifact(second.archive, second.meta, ref, { ...opts, immutableTags: true }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_TAG_EXISTS' });
    expect((await resolvePackArtifact(`${ref}:1.0.0`, opts)).manifestDigest).toBe(
      pushed.manifestDigest,
    );
    const head = await fetch(`${registry.url}/v2/acme/immutable/blobs/${sha256(second.archive)}`, {
      method: 'HEAD',
    });
    expect(head.status).toBe(404);
    // Without the option a tag moves, as registries allow.
    const moved = await pushPackArtifact(second.archive, second.meta, ref, opts);
    expect(moved.manifestDigest).not.toBe(pushed.manifestDigest);
  });

  it('pulls by tag, by digest and by highest semver tag, writing the archive that was pushed', async () => {
    const ref = `oci://${registry.host}/acme/multi`;
    const versions = ['1.0.0', '1.10.0', '1.9.3', '2.0.0-rc.1'];
    const archives = new Map<string, Buffer>();
    for (const version of versions) {
      const { archive, meta } = await makePack('multi', version, { 'notes.md': version });
      archives.set(version, archive);
      await pushPackArtifact(archive, meta, ref, opts);
    }
    const tags = await listOciTags(ref, opts);
    expect([...tags].sort()).toEqual([...versions].sort());
    expect(highestSemverTag(tags)).toBe('1.10.0');

    const out = await tempDir();
    const latest = await pullPackArtifact(ref, { ...opts, to: join(out, 'latest.tgz') });
    expect(latest.tag).toBe('1.10.0');
    expect(latest.meta.version).toBe('1.10.0');
    expect((await readFile(latest.file)).equals(archives.get('1.10.0')!)).toBe(true);

    const byTag = await pullPackArtifact(`${ref}:1.9.3`, { ...opts, to: join(out, 'tag.tgz') });
    expect((await readFile(byTag.file)).equals(archives.get('1.9.3')!)).toBe(true);

    const byDigest = await pullPackArtifact(`${ref}@${byTag.manifestDigest}`, {
      ...opts,
      to: join(out, 'digest.tgz'),
    });
    expect(byDigest.tag).toBeUndefined();
    expect(byDigest.manifestDigest).toBe(byTag.manifestDigest);
    expect((await readFile(byDigest.file)).equals(archives.get('1.9.3')!)).toBe(true);
    expect((await readdir(out)).sort()).toEqual(['digest.tgz', 'latest.tgz', 'tag.tgz']);

    // The pulled layer is an archive the installer's extractor accepts.
    const extracted = join(out, 'x');
    await extractArchive(await readFile(byDigest.file), extracted);
    expect(await readFile(join(extracted, 'notes.md'), 'utf8')).toBe('1.9.3');
    // And what comes out is the pack that went in: its recomputed digest is the annotation's.
    expect((await computePackDigest(extracted)).digest).toBe(byDigest.meta.digest);
  });

  it('uploads large blobs in chunks (PATCH with Content-Range) that read back equal', async () => {
    const { archive, meta } = await makePack('chunky', '1.0.0', {
      'data.bin': randomBytes(6000).toString('base64'),
    });
    const file = join(await tempDir(), 'chunky.tgz');
    await writeFile(file, archive);
    const pushed = await pushPackArtifact(file, meta, `oci://${registry.host}/acme/chunky`, {
      ...opts,
      chunkThresholdBytes: 0,
      chunkBytes: 1000,
    });
    expect(pushed.layer.upload).toBe('chunked');
    expect(archive.length).toBeGreaterThan(3000);
    const layer = await fetch(`${registry.url}/v2/acme/chunky/blobs/${pushed.layer.digest}`);
    expect(Buffer.from(await layer.arrayBuffer()).equals(archive)).toBe(true);
  });

  it('resolves a manifest without downloading the layer (store info)', async () => {
    const { archive, meta } = await makePack('info', '4.5.6');
    const signed = { ...meta, signer: 'release-2026' };
    const pushed = await pushPackArtifact(
      archive,
      signed,
      `oci://${registry.host}/acme/info`,
      opts,
    );
    const info = await resolvePackArtifact(`oci://${registry.host}/acme/info:4.5.6`, opts);
    expect(info.meta).toEqual(signed);
    expect(info.manifest.artifactType).toBe(PACK_ARTIFACT_TYPE);
    expect(info.manifestDigest).toBe(pushed.manifestDigest);
    expect(info.repository).toBe(`oci://${registry.host}/acme/info`);
    expect(info.reference).toBe(pushed.reference);
  });

  it('refuses a corrupted layer (tampered in the registry storage) and writes nothing', async () => {
    const { archive, meta } = await makePack('tampered', '1.0.0', { 'a.txt': 'hello' });
    const pushed = await pushPackArtifact(
      archive,
      meta,
      `oci://${registry.host}/acme/tampered`,
      opts,
    );
    const blob = registry.blobPath(pushed.layer.digest);
    const bytes = await readFile(blob);
    expect(bytes.equals(archive)).toBe(true);
    // Same length, one byte flipped: only the digest can tell.
    bytes[bytes.length - 10] = bytes[bytes.length - 10]! ^ 0xff;
    await writeFile(blob, bytes);
    const out = await tempDir();
    const to = join(out, 'pack.tgz');
    await expect(
      pullPackArtifact(`oci://${registry.host}/acme/tampered:1.0.0`, { ...opts, to }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_BLOB_DIGEST_MISMATCH' });
    expect(await readdir(out)).toEqual([]);

    // Longer than its descriptor: refused as soon as the extra byte arrives, nothing written.
    await writeFile(blob, Buffer.concat([archive, Buffer.from('extra')]));
    await expect(
      pullPackArtifact(`oci://${registry.host}/acme/tampered:1.0.0`, { ...opts, to }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_BLOB_SIZE_MISMATCH' });
    // Shorter.
    await writeFile(blob, archive.subarray(0, archive.length - 1));
    await expect(
      pullPackArtifact(`oci://${registry.host}/acme/tampered:1.0.0`, { ...opts, to }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_BLOB_SIZE_MISMATCH' });
    expect(await readdir(out)).toEqual([]);
    await expect(stat(to)).rejects.toMatchObject({ code: 'ENOENT' });
    await rm(blob);
  });

  it('a semver tag must name the version the artifact holds (push and pull)', async () => {
    const { archive, meta } = await makePack('mislabeled', '1.0.0');
    const ref = `oci://${registry.host}/acme/mislabeled`;
    await expect(pushPackArtifact(archive, meta, `${ref}:2.0.0`, opts)).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    });
    // Other tags are names, not claims: allowed.
    const stable = await pushPackArtifact(archive, meta, `${ref}:stable`, opts);
    expect((await resolvePackArtifact(`${ref}:stable`, opts)).meta.version).toBe('1.0.0');
    // A registry (here the independent client) tagging the 1.0.0 manifest as 2.0.0: refused.
    const manifest = await fetch(
      `${registry.url}/v2/acme/mislabeled/manifests/${stable.manifestDigest}`,
      {
        headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
      },
    );
    const put = await fetch(`${registry.url}/v2/acme/mislabeled/manifests/2.0.0`, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
      body: Buffer.from(await manifest.arrayBuffer()),
    });
    expect(put.status).toBe(201);
    const out = await tempDir();
    await expect(
      pullPackArtifact(`${ref}:2.0.0`, { ...opts, to: join(out, 'p.tgz') }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_MANIFEST_INVALID' });
    // Without a tag the highest semver tag (2.0.0) is taken, and refused the same way.
    await expect(resolvePackArtifact(ref, opts)).rejects.toMatchObject({
      code: 'ERR_OCI_MANIFEST_INVALID',
    });
    expect(await readdir(out)).toEqual([]);
  });

  it('refuses what is not there or not a pack', async () => {
    const out = await tempDir();
    await expect(
      resolvePackArtifact(`oci://${registry.host}/acme/nothing:1.0.0`, opts),
    ).rejects.toMatchObject({ code: 'ERR_OCI_NOT_FOUND' });
    const { archive, meta } = await makePack('present', '1.0.0');
    await pushPackArtifact(archive, meta, `oci://${registry.host}/acme/present`, opts);
    await expect(
      pullPackArtifact(`oci://${registry.host}/acme/present:9.9.9`, {
        ...opts,
        to: join(out, 'x'),
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_NOT_FOUND' });
    // A digest the registry does not hold.
    await expect(
      resolvePackArtifact(`oci://${registry.host}/acme/present@sha256:${'0'.repeat(64)}`, opts),
    ).rejects.toMatchObject({ code: 'ERR_OCI_NOT_FOUND' });
    // A plain image manifest (written by the independent client) is not a pack artifact.
    const image = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: {
          mediaType: 'application/vnd.oci.empty.v1+json',
          digest: OCI_EMPTY_DIGEST,
          size: 2,
        },
        layers: [],
      }),
    );
    const put = await fetch(`${registry.url}/v2/acme/present/manifests/image`, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
      body: image,
    });
    expect(put.status).toBe(201);
    await expect(
      pullPackArtifact(`oci://${registry.host}/acme/present:image`, {
        ...opts,
        to: join(out, 'x'),
      }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_MANIFEST_INVALID' });
    expect(await readdir(out)).toEqual([]);
  });
});

describe('without the registry binary', () => {
  it('fails (never skips) and says how to install it', () => {
    expect(() => requireTool('/nonexistent/docker-registry', 'docker-registry')).toThrow(
      /apt-get install docker-registry/,
    );
  });
});
