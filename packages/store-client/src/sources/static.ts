import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { usableArchiveCachePath } from '../cache.js';
import { startDownloadDeadline } from '../download-deadline.js';
import { StoreError } from '../errors.js';
import { bodyStream, request, statusError } from '../http.js';
import type { StoreContext } from '../store-context.js';
import {
  ArchiveMeter,
  forward,
  IDENTITY,
  nothing,
  refuseContentEncoding,
  sha256File,
  type DownloadReport,
  type Opened,
} from './meter.js';

/**
 * A static store's archive over HTTP(S) (README "Static stores", "Transport and cache"): from the
 * content-addressed cache when a copy whose bytes match its name is there (and `useCache`), else
 * downloaded same-origin with the index's size as a hard limit, a copy written to the cache on
 * the way and kept only once the archive was read intact.
 */
export async function openStaticArchive(
  ctx: StoreContext,
  source: { url: URL; size: number; sha256: string },
  options: { idleTimeoutMs: number; downloadTimeoutMs: number; signal?: AbortSignal | undefined },
  useCache: boolean,
  report: DownloadReport,
): Promise<Opened> {
  const signal = options.signal;
  const expected = { size: source.size, sha256: source.sha256, maxBytes: source.size };
  const cached = ctx.cacheDir
    ? await usableArchiveCachePath(ctx.cacheDir, source.sha256)
    : undefined;
  if (cached && useCache) {
    const info = await stat(cached).catch(() => undefined);
    // Verified before use: a cache entry whose bytes no longer match its name is dropped.
    if (
      info?.isFile() &&
      info.size === source.size &&
      (await sha256File(cached)) !== source.sha256
    ) {
      await rm(cached, { force: true });
    } else if (info?.isFile() && info.size === source.size) {
      const meter = new ArchiveMeter(expected, (b) => report(b, source.size));
      const stream = createReadStream(cached, { highWaterMark: 64 * 1024 });
      return {
        stream: forward(stream, meter),
        meter,
        commit: nothing,
        discard: async () => {
          await rm(cached, { force: true });
        },
        fromCache: true,
      };
    }
  }
  const deadline = startDownloadDeadline(options.downloadTimeoutMs);
  const fetched = await request(source.url, {
    fetch: ctx.fetch,
    headers: IDENTITY,
    redirects: 'same-origin',
    timeoutMs: ctx.timeoutMs,
    ...(signal ? { signal } : {}),
  });
  if (!fetched.response.ok) {
    await fetched.response.body?.cancel().catch(() => undefined);
    throw statusError(fetched.url, fetched.response.status, 'the archive');
  }
  refuseContentEncoding(fetched);
  // Everything asynchronous happens before the body starts to flow: from bodyStream() on, the
  // streams are wired in one tick.
  // Its folder was made and judged above (`usableArchiveCachePath`).
  const temp = cached ? `${cached}.tmp-${randomBytes(6).toString('hex')}` : undefined;
  const body = bodyStream(fetched, {
    maxBytes: source.size,
    idleTimeoutMs: options.idleTimeoutMs,
    deadline,
    tooLarge: () =>
      new StoreError(
        'ERR_DOWNLOAD_SIZE_MISMATCH',
        `the archive is larger than the ${source.size} bytes the index states`,
      ),
    ...(signal ? { signal } : {}),
  });
  let sink: WriteStream | undefined;
  let sinkFailed = false;
  if (temp) {
    sink = createWriteStream(temp, { flags: 'wx', mode: 0o644 });
    sink.on('error', () => {
      sinkFailed = true;
    });
  }
  const meter = new ArchiveMeter(expected, (b) => report(b, source.size), sink);
  const closeSink = () =>
    new Promise<void>((r) => {
      if (!sink || sink.destroyed) return r();
      sink.once('error', () => r());
      sink.end(() => r());
    });
  return {
    stream: forward(body, meter),
    meter,
    commit: async () => {
      await closeSink();
      if (!temp || !cached) return;
      if (sinkFailed || meter.bytes !== source.size) await rm(temp, { force: true });
      else await rename(temp, cached).catch(() => rm(temp!, { force: true }));
    },
    discard: async () => {
      await closeSink();
      if (temp) await rm(temp, { force: true });
    },
    fromCache: false,
  };
}
