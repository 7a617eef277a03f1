// A manifest is pinned by its digest (a lockfile's `resolved`), so what it names must not depend
// on the JSON parser. The real distribution registry stores and serves a manifest whose layer
// descriptor names `digest` twice: JSON.parse (last wins) and a reader keeping the first member
// then see two different blobs under one manifest digest. The client now refuses it.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packArchive } from '../../src/build.js';
import {
  buildPackManifest,
  OCI_MANIFEST_MEDIA_TYPE,
  pullPackArtifact,
  pushPackArtifact,
  resolvePackArtifact,
  type PackArtifactMeta,
} from '../../src/oci/index.js';
import { listTree, tempDir, writePack } from '../helpers.js';
import { startRegistry, type RunningRegistry } from './registry.js';

let registry: RunningRegistry;
beforeAll(async () => {
  registry = await startRegistry();
}, 30_000);
afterAll(async () => {
  await registry?.stop();
});

const sha256 = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const opts = { plainHttp: true, credentials: false as const };

async function pushed(name: string, repo: string) {
  const dir = await writePack(await tempDir(), name, '1.0.0', { 'hooks/run.sh': `${name}\n` });
  const { archive, digest } = await packArchive(dir);
  const meta: PackArtifactMeta = { name: 'demo', version: '1.0.0', digest };
  await pushPackArtifact(archive, meta, `oci://${registry.host}/${repo}:${name}`, opts);
  return { archive, meta };
}

describe('a manifest that names a member twice', () => {
  it('served by a real registry, is ERR_OCI_MANIFEST_INVALID to resolve and pull, nothing written', async () => {
    // Two honest layers in the repository: what a reviewer audits (A) and what gets installed (B).
    const a = await pushed('audited', 'acme/dup');
    const b = await pushed('installed', 'acme/dup');
    const honest = buildPackManifest(b.meta, { digest: sha256(b.archive), size: b.archive.length });
    const text = honest.bytes
      .toString('utf8')
      .replace(
        `"digest":"${sha256(b.archive)}"`,
        `"digest":"${sha256(a.archive)}","digest":"${sha256(b.archive)}"`,
      );
    expect(text).not.toBe(honest.bytes.toString('utf8'));
    // JSON.parse keeps the last member: to it, this is the manifest of layer B.
    expect(JSON.parse(text).layers[0].digest).toBe(sha256(b.archive));
    const bytes = Buffer.from(text);
    const put = await fetch(
      `${registry.url}/v2/acme/dup/manifests/sha256:${sha256(bytes).slice(7)}`,
      {
        method: 'PUT',
        headers: { 'content-type': OCI_MANIFEST_MEDIA_TYPE },
        body: bytes,
      },
    );
    expect(put.status, await put.text()).toBe(201);
    const reference = `oci://${registry.host}/acme/dup@${sha256(bytes)}`;

    await expect(resolvePackArtifact(reference, opts)).rejects.toMatchObject({
      code: 'ERR_OCI_MANIFEST_INVALID',
    });
    const out = await tempDir();
    await expect(
      pullPackArtifact(reference, { ...opts, to: `${out}/pack.tgz` }),
    ).rejects.toMatchObject({ code: 'ERR_OCI_MANIFEST_INVALID' });
    expect(await listTree(out)).toEqual([]);
  });
});
