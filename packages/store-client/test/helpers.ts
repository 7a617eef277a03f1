import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdir, mkdtemp, readdir, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack as tarPack } from 'tar-stream';
import { afterEach } from 'vitest';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

export async function tempDir(prefix = 'store-client-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export function manifest(name: string, version: string, extra = ''): string {
  return `apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata:\n  name: ${name}\n  version: ${version}\n  description: test pack ${name}\n${extra}spec:\n  engine: claude\n`;
}

/** Writes a pack folder: agent.yaml plus `files` (path → content; a leading `!` makes it executable). */
export async function writePack(
  dir: string,
  name: string,
  version: string,
  files: Record<string, string> = {},
): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'agent.yaml'), manifest(name, version));
  await writeFile(join(dir, 'AGENTS.md'), `# ${name} ${version}\n`);
  for (const [path, content] of Object.entries(files)) {
    const exec = path.startsWith('!');
    const p = join(dir, exec ? path.slice(1) : path);
    await mkdir(dirname(p), { recursive: true });
    await writeFile(p, content);
    if (exec) await chmod(p, 0o755);
  }
  return dir;
}

export interface TarInput {
  name: string;
  type?:
    | 'file'
    | 'directory'
    | 'symlink'
    | 'link'
    | 'character-device'
    | 'block-device'
    | 'fifo'
    | 'contiguous-file';
  content?: string | Buffer;
  mode?: number;
  linkname?: string;
  pax?: Record<string, string>;
}

/** A .tar (not gzipped) from tar-stream. */
export async function makeTar(entries: TarInput[]): Promise<Buffer> {
  const tar = tarPack();
  const chunks: Buffer[] = [];
  tar.on('data', (c: unknown) => {
    chunks.push(c as Buffer);
  });
  const done = new Promise<void>((res) => tar.on('end', () => res()));
  for (const e of entries) {
    const content = typeof e.content === 'string' ? Buffer.from(e.content) : e.content;
    await new Promise<void>((res, rej) => {
      const header = {
        name: e.name,
        type: e.type ?? 'file',
        mode: e.mode ?? (e.type === 'directory' ? 0o755 : 0o644),
        mtime: new Date(0),
        ...(e.linkname !== undefined ? { linkname: e.linkname } : {}),
        ...(e.pax ? { pax: e.pax } : {}),
      };
      tar.entry(header, content ?? Buffer.alloc(0), (err) => (err ? rej(err) : res()));
    });
  }
  tar.finalize();
  await done;
  return Buffer.concat(chunks);
}

export async function makeTgz(entries: TarInput[]): Promise<Buffer> {
  return gzipSync(await makeTar(entries));
}

export const BLOCK = 512;

/** A raw ustar header block; fields as given, checksum computed unless `checksum` is set. */
export function rawHeader(fields: {
  name: string | Buffer;
  typeflag?: string;
  size?: number | Buffer;
  mode?: string;
  prefix?: string;
  magic?: 'ustar' | 'gnu' | 'none';
  checksum?: number;
}): Buffer {
  const b = Buffer.alloc(BLOCK);
  (typeof fields.name === 'string' ? Buffer.from(fields.name) : fields.name).copy(b, 0, 0, 100);
  b.write((fields.mode ?? '0000644') + '\0', 100, 'latin1');
  b.write('0000000\0', 108, 'latin1');
  b.write('0000000\0', 116, 'latin1');
  if (Buffer.isBuffer(fields.size)) fields.size.copy(b, 124, 0, 12);
  else b.write((fields.size ?? 0).toString(8).padStart(11, '0') + '\0', 124, 'latin1');
  b.write('00000000000\0', 136, 'latin1');
  b.write(fields.typeflag ?? '0', 156, 'latin1');
  const magic = fields.magic ?? 'ustar';
  if (magic === 'ustar') b.write('ustar\u000000', 257, 'latin1');
  if (magic === 'gnu') b.write('ustar  \u0000', 257, 'latin1');
  if (fields.prefix) b.write(fields.prefix, 345, 'utf8');
  b.write('        ', 148, 'latin1');
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += b[i]!;
  b.write((fields.checksum ?? sum).toString(8).padStart(6, '0') + '\0 ', 148, 'latin1');
  return b;
}

export function padBlock(data: Buffer): Buffer {
  const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
  return Buffer.concat([data, Buffer.alloc(pad)]);
}

export function paxBody(records: Record<string, string>): Buffer {
  let out = '';
  for (const [key, value] of Object.entries(records)) {
    const body = ` ${key}=${value}\n`;
    let len = body.length + 1;
    while (String(len).length + Buffer.byteLength(body) !== len)
      len = String(len).length + Buffer.byteLength(body);
    out += `${len}${body}`;
  }
  return Buffer.from(out);
}

export const EOA = Buffer.alloc(BLOCK * 2);

export async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out.push(e.isDirectory() ? `${r}/` : r);
      if (e.isDirectory()) await walk(join(d, e.name), r);
    }
  };
  await walk(dir, '');
  return out.sort();
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export async function startServer(
  handler: Handler,
): Promise<{ url: string; port: number; server: Server; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    Promise.resolve(handler(req, res)).catch((e: unknown) => {
      res.statusCode = 500;
      res.end(String(e));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${port}`, port, server, requests };
}

export interface StaticServerOptions {
  /** Per-path override: return true when handled. */
  override?: (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;
  /** Serve bodies in chunks of this size with a pause between them. */
  slow?: { chunk: number; delayMs: number; paths?: RegExp };
}

/** Serves a folder over HTTP on 127.0.0.1, with ETag / If-None-Match on every file. */
export async function serveDir(dir: string, options: StaticServerOptions = {}) {
  const { readFile } = await import('node:fs/promises');
  const { createHash } = await import('node:crypto');
  return startServer(async (req, res) => {
    if (options.override && (await options.override(req, res))) return;
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    let body: Buffer;
    try {
      body = await readFile(join(dir, path));
    } catch {
      res.statusCode = 404;
      res.end('not found');
      return;
    }
    const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
    res.setHeader('etag', etag);
    if (req.headers['if-none-match'] === etag) {
      res.statusCode = 304;
      res.end();
      return;
    }
    res.setHeader('content-length', body.length);
    const slow = options.slow;
    if (!slow || (slow.paths && !slow.paths.test(path))) {
      res.end(body);
      return;
    }
    for (let i = 0; i < body.length && !res.destroyed; i += slow.chunk) {
      res.write(body.subarray(i, i + slow.chunk));
      await new Promise((r) => setTimeout(r, slow.delayMs));
    }
    res.end();
  });
}
