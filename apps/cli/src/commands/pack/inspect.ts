import { lstatSync } from 'node:fs';
import { resolve } from 'node:path';
import { computePackDigest, formatManifest, type PackDigest } from '@packwarden/pack-digest';
import type { LoadedManifest } from '@packwarden/pack-manifest';
import {
  isPackManifestError,
  listInstalledPacks,
  type ResolvedPack,
} from '@packwarden/pack-manifest/resolve';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import { resolvePackArgument } from '../../shared/pack-argument.js';

interface JsonOption {
  json?: boolean;
}

// yaml and zod cost tens of milliseconds to load: only commands that parse a manifest pay.
const manifestLibrary = () => import('@packwarden/pack-manifest');

async function loadPack(
  io: CliIo,
  ref: string,
): Promise<{ resolved: ResolvedPack; loaded: LoadedManifest }> {
  const resolved = await resolvePackArgument(io, ref);
  const { loadPackManifest } = await manifestLibrary();
  return { resolved, loaded: loadPackManifest(resolved.dir) };
}

export async function packList(io: CliIo, options: JsonOption): Promise<number> {
  const packs = await listInstalledPacks({ cwd: io.cwd, env: io.env });
  if (options.json) {
    printJson(io, { packs });
    return EXIT.ok;
  }
  if (packs.length === 0) {
    io.stdout.write(
      'No packs installed (looked in ./.packwarden/agents and $PACKWARDEN_HOME/agents).\n',
    );
    return EXIT.ok;
  }
  // Names, versions and folders come from the file system and current.txt: shown, never obeyed.
  const rows = packs.map((pack) => ({
    name: safe(pack.name),
    version: safe(pack.version ?? '-'),
    source: safe(pack.source),
    dir: safe(pack.dir),
    note: pack.problem ? `  (broken: ${safe(pack.problem)})` : '',
  }));
  const width = Math.max(...rows.map((row) => row.name.length));
  for (const row of rows) {
    io.stdout.write(
      `${row.name.padEnd(width)}  ${row.version.padEnd(12)}  ${row.source.padEnd(9)}  ${row.dir}${row.note}\n`,
    );
  }
  return EXIT.ok;
}

export async function packValidate(io: CliIo, ref: string, options: JsonOption): Promise<number> {
  try {
    const { resolved, loaded } = await loadPack(io, ref);
    const { name, version } = loaded.manifest.metadata;
    if (options.json)
      printJson(io, { valid: true, pack: { name, version }, dir: resolved.dir, issues: [] });
    else
      io.stdout.write(
        `ok: ${safe(`${name}@${version}`)} is a valid Agent Pack (${safe(loaded.file)})\n`,
      );
    return EXIT.ok;
  } catch (error) {
    if (!isPackManifestError(error)) throw error;
    if (options.json) {
      printJson(io, {
        valid: false,
        error: { code: error.code, message: error.message },
        file: error.file ?? null,
        issues: error.issues,
      });
      return EXIT.failure;
    }
    if (error.issues.length > 0) {
      io.stderr.write(`invalid: ${safe(error.file ?? ref)}\n`);
      const { formatManifestIssue } = await manifestLibrary();
      // Issue messages quote values from agent.yaml.
      for (const issue of error.issues)
        io.stderr.write(`  ${safe(formatManifestIssue(issue, error.file))}\n`);
      return EXIT.failure;
    }
    throw error;
  }
}

/**
 * Starts hashing as soon as the pack folder is known, then loads and parses the manifest while
 * the hashing threads work. A manifest error is reported first: it is the clearer one.
 */
async function digestAndLoad(
  io: CliIo,
  ref: string,
): Promise<{ resolved: ResolvedPack; loaded: LoadedManifest; digest: PackDigest }> {
  const resolved = await resolvePackArgument(io, ref);
  const hashing = computePackDigest(resolved.dir);
  hashing.catch(() => undefined);
  const { loadPackManifest } = await manifestLibrary();
  const loaded = loadPackManifest(resolved.dir);
  return { resolved, loaded, digest: await hashing };
}

export async function packDigest(
  io: CliIo,
  ref: string,
  options: JsonOption & { files?: boolean },
): Promise<number> {
  const { resolved, loaded, digest } = await digestAndLoad(io, ref);
  const { name, version } = loaded.manifest.metadata;
  if (options.json) {
    printJson(io, {
      digest: digest.digest,
      algorithm: digest.algorithm,
      pack: { name, version },
      dir: resolved.dir,
      fileCount: digest.entries.length,
      totalBytes: digest.totalBytes,
      ...(options.files ? { files: digest.entries } : {}),
    });
  } else if (options.files) {
    // Machine output, like --json: byte for byte what the digest hashes (pack-digest refuses
    // names with control characters, SPEC.md), so `sha256sum` of it is the digest.
    io.stdout.write(formatManifest(digest.entries));
  } else {
    io.stdout.write(`${digest.digest}  ${safe(`${name}@${version}`)}\n`);
  }
  return EXIT.ok;
}

export async function packInfo(io: CliIo, ref: string, options: JsonOption): Promise<number> {
  const { resolved, loaded, digest } = await digestAndLoad(io, ref);
  const { metadata, spec } = loaded.manifest;
  const signed = hasSignatureFile(resolved.dir);
  const executable = digest.entries
    .filter((entry) => entry.mode === 'x')
    .map((entry) => entry.path);
  const engineFolders = [
    ...new Set(digest.entries.map((entry) => entry.path.split('/')[0]!)),
  ].filter((top) => ['.claude', '.codex', '.agent-hippo'].includes(top));
  const info = {
    pack: { name: metadata.name, version: metadata.version },
    description: metadata.description ?? null,
    author: metadata.author ?? null,
    engine: spec.engine ?? null,
    model: spec.model ?? null,
    fileAccess: spec.permissions?.fileAccess ?? null,
    dir: resolved.dir,
    source: resolved.source,
    signatureFile: signed,
    digest: digest.digest,
    fileCount: digest.entries.length,
    totalBytes: digest.totalBytes,
    executableFiles: executable,
    engineFolders,
  };
  if (options.json) {
    printJson(io, info);
    return EXIT.ok;
  }
  const rows: Array<[string, string]> = [
    ['pack', `${metadata.name}@${metadata.version}`],
    ['description', metadata.description ?? '-'],
    ['engine', spec.engine ?? '-'],
    ['model', spec.model ?? '-'],
    ['file access', spec.permissions?.fileAccess ?? '- (not declared)'],
    ['folder', `${resolved.dir} (${resolved.source})`],
    [
      'pack.sig',
      signed ? 'present (check it with `packwarden pack verify`)' : 'absent: the pack is unsigned',
    ],
    ['files', `${digest.entries.length} (${digest.totalBytes} bytes)`],
    ['executable', executable.length === 0 ? 'none' : executable.join(', ')],
    ['engine folders', engineFolders.length === 0 ? 'none' : engineFolders.join(', ')],
    ['digest', digest.digest],
  ];
  // Every value but the digest comes from the pack (agent.yaml, file names): a description
  // holding `ESC]52;…` or `ESC[2J` is shown as text, never sent to the terminal.
  for (const [label, value] of rows) io.stdout.write(`${label.padEnd(15)} ${safe(value)}\n`);
  return EXIT.ok;
}

// One lstat, synchronous: loading node:fs/promises for it cost `pack info` ~5 M instructions
// (bin.ts loads that module on first use, issue 14).
function hasSignatureFile(dir: string): boolean {
  try {
    lstatSync(resolve(dir, 'pack.sig'));
    return true;
  } catch {
    return false;
  }
}

export async function packSchema(io: CliIo, options: { output?: string }): Promise<number> {
  const { agentManifestJsonSchema } = await manifestLibrary();
  const text = `${JSON.stringify(agentManifestJsonSchema(), null, 2)}\n`;
  if (options.output) {
    const out = resolve(io.cwd, options.output);
    const { writeFileAtomic } = await import('@packwarden/pack-manifest/fs');
    try {
      // Like every file the CLI writes: a temporary file beside it, renamed over it, so a symlink
      // planted at `out` (in a shared or checked-out folder) is replaced, never written through.
      await writeFileAtomic(out, text, { mode: 0o644 });
    } catch (cause) {
      throw new CliError(`cannot write ${out}: ${(cause as Error).message}`, EXIT.failure);
    }
    io.stderr.write(`wrote ${safe(options.output)}\n`);
  } else {
    io.stdout.write(text);
  }
  return EXIT.ok;
}
