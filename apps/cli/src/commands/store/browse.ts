import {
  normalizeArtifactType,
  parseArtifactRef,
  type StoreArtifact,
} from '@packwarden/store-client/store';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import type { StoreFlags } from '../../shared/store-options.js';
import { openStoreAt } from './source.js';

function typeFilter(type: string | undefined): { type?: StoreArtifact['type'] } {
  if (type === undefined) return {};
  const resolved = normalizeArtifactType(type);
  if (!resolved)
    throw new CliError(`unknown artifact type "${type}"`, EXIT.usage, 'use pack, skill or mcp');
  return { type: resolved };
}

function ref(artifact: StoreArtifact): string {
  return `${artifact.type}/${artifact.slug}`;
}

export async function storeList(
  io: CliIo,
  query: string | undefined,
  flags: StoreFlags & { type?: string },
): Promise<number> {
  const filter = typeFilter(flags.type);
  const store = await openStoreAt(io, flags.store, true);
  const artifacts = query === undefined ? store.list(filter) : store.search(query, filter);
  if (flags.json) {
    printJson(io, {
      store: { url: store.url, kind: store.kind },
      ...(query === undefined ? {} : { query }),
      artifacts,
    });
    return EXIT.ok;
  }
  if (artifacts.length === 0) {
    io.stdout.write(
      query === undefined ? 'The store lists nothing.\n' : `Nothing matches "${query}".\n`,
    );
    return EXIT.ok;
  }
  // Store metadata is untrusted text: shown with its control characters escaped, never obeyed
  // (issue 9 W4); `--json` above carries it unchanged.
  const width = Math.max(...artifacts.map((artifact) => safe(ref(artifact)).length));
  for (const artifact of artifacts) {
    const description = artifact.description
      ? `  ${safe(artifact.description.replace(/\s+/g, ' ').slice(0, 80))}`
      : '';
    io.stdout.write(
      `${safe(ref(artifact)).padEnd(width)}  ${safe(artifact.latestVersion).padEnd(10)}${description}\n`,
    );
  }
  return EXIT.ok;
}

export async function storeInfo(io: CliIo, reference: string, flags: StoreFlags): Promise<number> {
  const parsed = parseArtifactRef(reference);
  const store = await openStoreAt(io, flags.store, true);
  const artifact = store.info(parsed);
  if (!artifact)
    throw new CliError(
      `${reference} is not in the store (${store.url})`,
      EXIT.failure,
      'run `packwarden store search <words>`',
    );
  if (flags.json) {
    printJson(io, { store: { url: store.url, kind: store.kind }, artifact });
    return EXIT.ok;
  }
  const rows: Array<[string, string | undefined]> = [
    ['artifact', ref(artifact)],
    ['name', artifact.displayName],
    ['description', artifact.description],
    ['author', artifact.author],
    ['tags', artifact.tags?.join(', ')],
    ['latest', artifact.latestVersion],
    ['versions', artifact.versions?.join(', ')],
    ['updated', artifact.updatedAt],
    ['store', `${store.url} (${store.kind})`],
  ];
  for (const [label, value] of rows)
    if (value) io.stdout.write(`${label.padEnd(12)} ${safe(value)}\n`);
  return EXIT.ok;
}
