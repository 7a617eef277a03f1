import { resolve } from 'node:path';
import {
  installPack,
  listOciTags,
  openPackArchive,
  pushPackFolder,
  resolvePackArtifact,
  withPulledPackArtifact,
  type InstallResult,
  type ResolvedPackArtifact,
  type Store,
} from '@packwarden/store-client';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import type { InstallFlags } from '../../shared/install-options.js';
import { resolvePackArgument } from '../../shared/pack-argument.js';
import { installPolicy } from '../../shared/trust.js';

export interface OciFlags {
  plainHttp?: boolean;
  json?: boolean;
}

/** `oci://…` arguments go to these actions; everything else to the store's. */
export function isOciArgument(reference: string): boolean {
  return reference.startsWith('oci://');
}

function clientOptions(io: CliIo, flags: OciFlags) {
  return { env: io.env, ...(flags.plainHttp ? { plainHttp: true } : {}) };
}

/** `store push <pack> oci://HOST[:PORT]/REPO[:TAG]`: the tag defaults to the pack's version. */
export async function storePush(
  io: CliIo,
  packRef: string,
  reference: string,
  flags: OciFlags,
): Promise<number> {
  if (!isOciArgument(reference))
    throw new CliError(
      `${reference} is not an oci:// reference`,
      EXIT.usage,
      'write oci://HOST[:PORT]/REPO[:TAG]',
    );
  const pack = await resolvePackArgument(io, packRef);
  const pushed = await pushPackFolder(pack.dir, reference, clientOptions(io, flags));
  if (flags.json) {
    printJson(io, { pushed });
    return EXIT.ok;
  }
  io.stdout.write(
    `pushed ${safe(pushed.meta.name)}@${safe(pushed.meta.version)} to ${safe(pushed.taggedReference)}\n  manifest ${pushed.manifestDigest}\n  layer ${pushed.layer.digest} (${pushed.layer.size} bytes, ${pushed.layer.upload})\n  digest ${pushed.meta.digest}\n`,
  );
  return EXIT.ok;
}

/** `store info oci://…`: the artifact a reference resolves to, from its checked manifest. */
export async function ociInfo(io: CliIo, reference: string, flags: OciFlags): Promise<number> {
  const resolved = await resolvePackArtifact(reference, clientOptions(io, flags));
  if (flags.json) {
    const { manifest: _manifest, ...rest } = resolved;
    printJson(io, { artifact: rest });
    return EXIT.ok;
  }
  const rows: Array<[string, string | undefined]> = [
    ['artifact', `pack/${resolved.meta.name}`],
    ['version', resolved.meta.version],
    ['description', resolved.meta.description],
    ['repository', resolved.repository],
    ['tag', resolved.tag],
    ['manifest', resolved.manifestDigest],
    ['layer', `${resolved.layer.digest} (${resolved.layer.size} bytes)`],
    ['digest', resolved.meta.digest],
    ['signer', resolved.meta.signer ?? 'unsigned'],
  ];
  for (const [label, value] of rows)
    if (value) io.stdout.write(`${label.padEnd(12)} ${safe(value)}\n`);
  return EXIT.ok;
}

/** `store list oci://HOST/REPO`: the repository's tags, and which one an untagged install takes. */
export async function ociList(io: CliIo, reference: string, flags: OciFlags): Promise<number> {
  const tags = await listOciTags(reference, clientOptions(io, flags));
  if (flags.json) {
    printJson(io, { repository: reference, tags });
    return EXIT.ok;
  }
  if (tags.length === 0) io.stdout.write('The repository has no tags.\n');
  for (const tag of tags) io.stdout.write(`${safe(tag)}\n`);
  return EXIT.ok;
}

export interface OciInstalled {
  result: InstallResult;
  artifact: ResolvedPackArtifact;
}

/**
 * Installs an `oci://` reference with every check of a store install: the layer is pulled with
 * its size and sha256 checked while streaming (OCI.md), then installed by installPack from a
 * one-pack store whose entry states the annotations' name, version and pack digest, so the
 * extracted agent.yaml must name them and the recomputed digest must equal
 * `dev.packwarden.pack.digest` (store-client README "Static stores": ERR_PACK_IDENTITY_MISMATCH,
 * ERR_PACK_DIGEST_MISMATCH) before anything is moved into place.
 */
export async function installFromOci(
  io: CliIo,
  reference: string,
  flags: InstallFlags & OciFlags,
  to: string | undefined,
  check?: (pulled: ResolvedPackArtifact) => void,
): Promise<OciInstalled> {
  const policy = await installPolicy(io, flags);
  return withPulledPackArtifact(reference, clientOptions(io, flags), async (pulled) => {
    // A lockfile's check (lock-actions.ts) runs before anything is installed.
    check?.(pulled);
    const archive = await openPackArchive(pulled.file, { env: io.env });
    const opened = archive.resolve({
      type: 'pack',
      slug: pulled.meta.name,
      version: pulled.meta.version,
    });
    if (opened.source.kind !== 'archive-file') throw new Error('unreachable: not an archive file');
    const { size, sha256, url } = opened.source;
    // The same store object, its resolve narrowed to the annotations' digest: installPack
    // finds a store's download context by identity (store-client keeps it beside the store,
    // never on it), so a copy would be refused.
    const resolveArchive = archive.resolve.bind(archive);
    const store: Store = Object.assign(archive, {
      resolve: (ref: Parameters<Store['resolve']>[0]) => {
        resolveArchive(ref);
        return {
          type: 'pack' as const,
          slug: pulled.meta.name,
          version: pulled.meta.version,
          source: { kind: 'static' as const, url, size, sha256, digest: pulled.meta.digest },
        };
      },
    });
    const result = await installPack(
      store,
      { type: 'pack', slug: pulled.meta.name, version: pulled.meta.version },
      {
        env: io.env,
        ...policy,
        ...(flags.force ? { force: true } : {}),
        ...(flags.allowDowngrade ? { allowDowngrade: true } : {}),
        ...(to === undefined ? {} : { to: resolve(io.cwd, to) }),
      },
    );
    const { file: _file, ...artifact } = pulled;
    return { result, artifact };
  });
}

/** `store install oci://…` and `pack install oci://… --to DIR`. */
export async function ociInstall(
  io: CliIo,
  reference: string,
  flags: InstallFlags & OciFlags,
  to?: string,
): Promise<number> {
  const { result, artifact } = await installFromOci(io, reference, flags, to);
  printInstalled(io, result, artifact, flags);
  return EXIT.ok;
}

export function printInstalled(
  io: CliIo,
  result: InstallResult,
  artifact: ResolvedPackArtifact,
  flags: { json?: boolean },
): void {
  if (flags.json) {
    const { manifest: _manifest, ...rest } = artifact;
    printJson(io, { source: rest, installed: result });
    return;
  }
  const signature = result.verification
    ? `, signature ${result.verification.kind}`
    : ', signature not checked (no trust root given)';
  io.stdout.write(
    `installed ${safe(result.slug)}@${safe(result.version)} into ${safe(result.dir)}${result.replaced ? ' (replaced)' : ''}\n  from ${safe(artifact.reference)} (${artifact.manifestDigest})\n  digest ${result.digest}${signature}\n`,
  );
}
