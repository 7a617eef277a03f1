import { createReadStream } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { StoreError } from '../errors.js';
import { ArchiveMeter, forward, nothing, type DownloadReport, type Opened } from './meter.js';

/**
 * A local archive: `openPackArchive`'s `.tar.gz` (OCI pulls land here too, through
 * `openPackArchive`), or an archive of a static store read from disk (`file://`). Its size and
 * SHA-256 are checked while it is read; nothing is cached.
 */
export function openLocalArchive(
  source: { url: URL; size: number; sha256: string },
  report: DownloadReport,
): Opened {
  const expected = { size: source.size, sha256: source.sha256, maxBytes: source.size };
  const meter = new ArchiveMeter(expected, (b) => report(b, source.size));
  const stream = createReadStream(fileURLToPath(source.url), { highWaterMark: 64 * 1024 });
  stream.on('error', (error) =>
    meter.destroy(
      new StoreError('ERR_STORE_FETCH', `cannot read ${source.url.href}: ${error.message}`, {
        cause: error,
      }),
    ),
  );
  return {
    stream: forward(stream, meter),
    meter,
    commit: nothing,
    discard: nothing,
    fromCache: false,
  };
}
