import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConfinement, type Confinement } from '../../src/isolation/index.js';

// A model origin is admitted while a turn uses it, "and only then" (docs/sandbox.md,
// "Confinement"): a process the turn left behind (a custom engine's child lives on between
// turns) must not keep reaching it through a tunnel it opened during the turn. The client here
// speaks to the confinement's real proxy socket byte for byte, as the in-sandbox relay does; the
// model server is a real HTTP server on 127.0.0.1 and the verdict is what it saw.

let root: string;
let runtimeParent: string;
let server: Server;
let origin: string;
const seen: string[] = [];
const open: Confinement[] = [];
const sockets: Socket[] = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'pw-withdrawn-'));
  runtimeParent = await mkdtemp(join(tmpdir(), 'pw-runtime-'));
  seen.length = 0;
  server = createServer((request, response) => {
    seen.push(request.url ?? '');
    response.end('model says hi');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const confinement of open.splice(0)) await confinement.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  for (const dir of [root, runtimeParent]) await rm(dir, { recursive: true, force: true });
});

async function confine(): Promise<Confinement> {
  const folders = ['pack', 'workspace', 'engine'].map((name) => join(root, name));
  const { mkdir } = await import('node:fs/promises');
  for (const folder of folders) await mkdir(folder);
  const confinement = await createConfinement(
    {
      packDir: folders[0]!,
      workspace: folders[1]!,
      engineStateDir: folders[2]!,
      fileAccess: 'read-only',
      allowOrigins: [],
    },
    { mode: 'required', runtimeParent },
  );
  open.push(confinement);
  return confinement;
}

async function proxySocketPath(): Promise<string> {
  const [runtime] = (await readdir(runtimeParent)).filter((name) => name.startsWith('pw-confine-'));
  return join(runtimeParent, runtime!, 'run', 'proxy.sock');
}

/** Reads from `socket` until `enough` says so, it closes, or 3 s pass; returns what came. */
function readUntil(socket: Socket, enough: (text: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const done = () => {
      clearTimeout(timer);
      socket.off('data', onData);
      resolve(text);
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (enough(text)) done();
    };
    const timer = setTimeout(done, 3000);
    socket.on('data', onData);
    socket.once('close', done);
  });
}

/** Opens a CONNECT tunnel to the model origin through the proxy, as confined code would. */
async function openTunnel(): Promise<Socket> {
  const socket = connect(await proxySocketPath());
  sockets.push(socket);
  // A write after the proxy closed the tunnel fails with EPIPE: what came back is the verdict.
  socket.on('error', () => {});
  const authority = origin.slice('http://'.length);
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const head = await readUntil(socket, (text) => text.includes('\r\n\r\n'));
  expect(head).toMatch(/^HTTP\/1\.1 200 /);
  return socket;
}

async function requestThrough(socket: Socket, path: string): Promise<string> {
  if (socket.destroyed) return '';
  socket.write(`GET ${path} HTTP/1.1\r\nHost: model\r\n\r\n`);
  return readUntil(socket, (text) => text.includes('model says hi'));
}

describe('a withdrawn model origin closes the tunnels opened while it was admitted', () => {
  it('admitOrigin: after the last release, a tunnel of the turn reaches the model server no more', async () => {
    const confinement = await confine();
    const release = confinement.admitOrigin(`${origin}/v1`);
    const tunnel = await openTunnel();
    expect(await requestThrough(tunnel, '/during-the-turn')).toContain('model says hi');
    release();
    const after = await requestThrough(tunnel, '/after-the-turn');
    expect(after).not.toContain('model says hi');
    expect(seen).toEqual(['/during-the-turn']);
    expect(confinement.proxyEvents.at(-1)).toMatchObject({ verdict: 'denied' });
  });

  it('allowModelOrigin: replacing the origin closes the tunnels to the old one', async () => {
    const confinement = await confine();
    confinement.allowModelOrigin(origin);
    const tunnel = await openTunnel();
    expect(await requestThrough(tunnel, '/before')).toContain('model says hi');
    confinement.allowModelOrigin('https://other.example');
    expect(await requestThrough(tunnel, '/after')).not.toContain('model says hi');
    expect(seen).toEqual(['/before']);
  });

  it('an origin still held by another turn keeps its tunnels', async () => {
    const confinement = await confine();
    const first = confinement.admitOrigin(origin);
    const second = confinement.admitOrigin(origin);
    const tunnel = await openTunnel();
    first();
    expect(await requestThrough(tunnel, '/still-held')).toContain('model says hi');
    second();
    expect(seen).toEqual(['/still-held']);
  });
});
