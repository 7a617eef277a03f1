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
  type DownloadReport,
  type Opened,
} from './meter.js';

/**
 * A version of the AgentHippo store: GitHub's tarball of the tag (README "The AgentHippo
 * store"). The token goes to the API origin only; redirects are followed without it; no size is
 * stated, so `maxDownloadBytes` bounds it.
 */
export async function openGithubTarball(
  ctx: StoreContext,
  source: { url: URL; tag: string },
  options: {
    maxDownloadBytes: number;
    idleTimeoutMs: number;
    downloadTimeoutMs: number;
    signal?: AbortSignal | undefined;
  },
  report: DownloadReport,
): Promise<Opened> {
  const signal = options.signal;
  const deadline = startDownloadDeadline(options.downloadTimeoutMs);
  const fetched = await request(source.url, {
    fetch: ctx.fetch,
    headers: {
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
      ...IDENTITY,
    },
    redirects: 'any',
    timeoutMs: ctx.timeoutMs,
    ...(ctx.githubToken ? { token: ctx.githubToken } : {}),
    ...(signal ? { signal } : {}),
  });
  if (!fetched.response.ok) {
    await fetched.response.body?.cancel().catch(() => undefined);
    throw statusError(fetched.url, fetched.response.status, `the tarball of tag ${source.tag}`);
  }
  refuseContentEncoding(fetched);
  const body = bodyStream(fetched, {
    maxBytes: options.maxDownloadBytes,
    idleTimeoutMs: options.idleTimeoutMs,
    deadline,
    tooLarge: () =>
      new StoreError(
        'ERR_DOWNLOAD_TOO_LARGE',
        `the tarball is larger than ${options.maxDownloadBytes} bytes`,
      ),
    ...(signal ? { signal } : {}),
  });
  const meter = new ArchiveMeter({ maxBytes: options.maxDownloadBytes }, (b) => report(b));
  return {
    stream: forward(body, meter),
    meter,
    commit: nothing,
    discard: nothing,
    fromCache: false,
  };
}
