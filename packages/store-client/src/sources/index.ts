import type { ResolvedArtifact } from '../store.js';
import type { StoreContext } from '../store-context.js';
import { openGithubTarball } from './agenthippo.js';
import { openLocalArchive } from './local-archive.js';
import type { DownloadReport, Opened } from './meter.js';
import { openStaticArchive } from './static.js';

export type { Opened } from './meter.js';

/**
 * One strategy per kind of store, the same `Opened` for all (README "Install: layout and
 * guarantees", step 3): a local archive (`openPackArchive`, which OCI pulls go through, and
 * `file://` static stores), a static store over HTTP(S) with its cache, the AgentHippo store's
 * tag tarballs. What follows (staging, extraction, checks, promotion) does not depend on it.
 */
export async function openArchive(
  ctx: StoreContext,
  resolved: ResolvedArtifact,
  options: {
    maxDownloadBytes: number;
    idleTimeoutMs: number;
    downloadTimeoutMs: number;
    signal?: AbortSignal | undefined;
  },
  useCache: boolean,
  report: DownloadReport,
): Promise<Opened> {
  const source = resolved.source;
  switch (source.kind) {
    case 'archive-file':
      return openLocalArchive(source, report);
    case 'static':
      return source.url.protocol === 'file:'
        ? openLocalArchive(source, report)
        : openStaticArchive(ctx, source, options, useCache, report);
    case 'github-tarball':
      return openGithubTarball(ctx, source, options, report);
  }
}
