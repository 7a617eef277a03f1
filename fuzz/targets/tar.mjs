// Archive extraction (issue 16): `extractArchive` of the built @packwarden/store-client, fed
// real valid .tar.gz archives (a static store's own archive, ustar/PAX/GNU long names, folders)
// mutated at the tar level (then gzipped) or the gzip level, cut short, or followed by trailing
// bytes, each delivered in one buffer and in two random chunkings. Promises checked
// (packages/store-client/README.md "Errors" and the extraction section):
// - only typed errors (`StoreError` with a documented `ERR_ARCHIVE_*`/`ERR_TARGET_NOT_EMPTY` code);
// - the same verdict (success, or the same code) whatever the chunking;
// - bounded time per extraction;
// - nothing written outside the destination: the folder around it holds the destination only on
//   success and nothing on failure (no `.staging-*` left), and a sibling folder stays untouched.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  buildStaticStore,
  extractArchive,
  isStoreError,
} from '../../packages/store-client/dist/index.js';

const TIME_LIMIT_MS = 10_000;
const LIMITS = { maxEntries: 200, maxBytes: 4 * 1024 * 1024, maxTarBytes: 8 * 1024 * 1024 };

// --- real valid archives -------------------------------------------------------------------
const BLOCK = 512;
function header(
  name,
  { type = '0', size = 0, mode = '0000644', prefix = '', magic = 'ustar' } = {},
) {
  const b = Buffer.alloc(BLOCK);
  Buffer.from(name).copy(b, 0, 0, 100);
  b.write(`${mode}\0`, 100, 'latin1');
  b.write('0000000\0', 108, 'latin1');
  b.write('0000000\0', 116, 'latin1');
  b.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'latin1');
  b.write('00000000000\0', 136, 'latin1');
  b.write(type, 156, 'latin1');
  if (magic === 'ustar') b.write('ustar\u000000', 257, 'latin1');
  else b.write('ustar  \u0000', 257, 'latin1');
  if (prefix) b.write(prefix, 345, 'utf8');
  b.write('        ', 148, 'latin1');
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += b[i];
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return b;
}
const pad = (data) => Buffer.concat([data, Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK)]);
const file = (name, content, options = {}) => {
  const body = Buffer.from(content);
  return Buffer.concat([header(name, { ...options, size: body.length }), pad(body)]);
};
const paxRecord = (key, value) => {
  const body = ` ${key}=${value}\n`;
  let len = body.length + 1;
  while (String(len).length + Buffer.byteLength(body) !== len)
    len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
};
const EOA = Buffer.alloc(BLOCK * 2);

function handMadeTars() {
  const pax = Buffer.from(paxRecord('path', 'très/long/' + 'n'.repeat(120) + '.md'));
  const longName = Buffer.from(`gnu/${'l'.repeat(150)}.txt\0`);
  return [
    Buffer.concat([
      header('dir/', { type: '5', mode: '0000755' }),
      file('dir/a.txt', 'alpha\n'),
      file('dir/run.sh', '#!/bin/sh\necho hi\n', { mode: '0000755' }),
      file('name.md', 'prefixed', { prefix: 'deep/er' }),
      EOA,
    ]),
    Buffer.concat([
      header('PaxHeader', { type: 'x', size: pax.length }),
      pad(pax),
      file('ignored-name', 'pax content'),
      header('././@LongLink', { type: 'L', size: longName.length, magic: 'gnu' }),
      pad(longName),
      file('short', 'gnu content', { magic: 'gnu' }),
      EOA,
    ]),
  ];
}

async function storeArchive() {
  const root = mkdtempSync(join(tmpdir(), 'fuzz-tar-seed-'));
  try {
    const pack = join(root, 'packs', 'seed');
    mkdirSync(join(pack, 'skills'), { recursive: true });
    writeFileSync(
      join(pack, 'agent.yaml'),
      'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata:\n  name: seed\n  version: 1.0.0\n  description: fuzz seed\nspec:\n  engine: claude\n',
    );
    writeFileSync(join(pack, 'AGENTS.md'), '# seed\n');
    writeFileSync(join(pack, 'skills', 'a.md'), 'skill a\n'.repeat(20));
    const built = await buildStaticStore(join(root, 'packs'), { out: join(root, 'out') });
    const { readFileSync } = await import('node:fs');
    return readFileSync(join(root, 'out', built.packs[0].archive));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const SEED_TGZ = [await storeArchive(), ...handMadeTars().map((tar) => gzipSync(tar))];
const SEED_TARS = SEED_TGZ.map((tgz) => gunzipSync(tgz));

// --- inputs ----------------------------------------------------------------------------------
const mutation = (fc) =>
  fc.record({
    kind: fc.constantFrom('flip', 'insert', 'delete', 'zero-block', 'repeat-block', 'cut'),
    at: fc.nat(),
    byte: fc.integer({ min: 0, max: 255 }),
  });

function mutate(bytes, mutations) {
  let out = Buffer.from(bytes);
  for (const { kind, at, byte } of mutations) {
    const i = out.length === 0 ? 0 : at % out.length;
    if (kind === 'flip' && out.length > 0) out[i] = byte;
    else if (kind === 'insert')
      out = Buffer.concat([out.subarray(0, i), Buffer.of(byte), out.subarray(i)]);
    else if (kind === 'delete') out = Buffer.concat([out.subarray(0, i), out.subarray(i + 1)]);
    else if (kind === 'zero-block')
      out = Buffer.concat([out.subarray(0, i), Buffer.alloc(BLOCK), out.subarray(i)]);
    else if (kind === 'repeat-block') {
      const start = Math.floor(i / BLOCK) * BLOCK;
      out = Buffer.concat([out.subarray(0, start + BLOCK), out.subarray(start)]);
    } else if (kind === 'cut') out = out.subarray(0, i);
  }
  return out;
}

export const target = {
  name: 'tar',
  arbitrary: (fc) =>
    fc.record({
      seed: fc.nat({ max: SEED_TGZ.length - 1 }),
      level: fc.constantFrom('tar', 'gzip', 'none'),
      mutations: fc.array(mutation(fc), { maxLength: 4 }),
      trailer: fc.option(fc.uint8Array({ maxLength: 64 }), { nil: undefined }),
      chunksA: fc.array(fc.nat(), { maxLength: 16 }),
      chunksB: fc.array(fc.nat(), { maxLength: 64 }),
    }),
  async check(input) {
    let bytes =
      input.level === 'tar'
        ? gzipSync(mutate(SEED_TARS[input.seed], input.mutations))
        : input.level === 'gzip'
          ? mutate(SEED_TGZ[input.seed], input.mutations)
          : Buffer.from(SEED_TGZ[input.seed]);
    if (input.trailer) bytes = Buffer.concat([bytes, Buffer.from(input.trailer)]);

    const root = mkdtempSync(join(tmpdir(), 'fuzz-tar-'));
    try {
      const sibling = join(root, 'sibling');
      mkdirSync(sibling);
      writeFileSync(join(sibling, 'keep'), 'keep');
      const verdicts = [];
      for (const [name, source] of [
        ['whole', bytes],
        ['a', chunked(bytes, input.chunksA)],
        ['b', chunked(bytes, input.chunksB)],
      ]) {
        const box = join(root, `box-${name}`);
        mkdirSync(box);
        const verdict = await withDeadline(extract(source, join(box, 'dest')), name);
        verdicts.push(verdict);
        const left = readdirSync(box);
        const expected = verdict === 'ok' ? ['dest'] : [];
        if (left.join('/') !== expected.join('/')) {
          throw new Error(
            `${name}: ${verdict}, but the folder around dest holds ${JSON.stringify(left)}`,
          );
        }
      }
      if (new Set(verdicts).size !== 1) {
        throw new Error(`the verdict depends on the chunking: ${verdicts.join(' / ')}`);
      }
      const outside = readdirSync(root).sort();
      if (
        outside.join(',') !== 'box-a,box-b,box-whole,sibling' ||
        readdirSync(sibling).join() !== 'keep'
      ) {
        throw new Error(`written outside the destination: ${JSON.stringify(outside)}`);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
};

async function extract(source, dest) {
  try {
    await extractArchive(source, dest, { limits: LIMITS });
    return 'ok';
  } catch (error) {
    if (!isStoreError(error))
      throw new Error(`untyped error: ${String(error?.stack ?? error)}`, { cause: error });
    if (!/^ERR_ARCHIVE_[A-Z_]+$/.test(error.code)) {
      throw new Error(`unexpected code ${error.code}: ${error.message}`, { cause: error });
    }
    return error.code;
  }
}

function chunked(bytes, cuts) {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks = [];
  let at = 0;
  for (const point of [...points, bytes.length]) {
    if (point > at) chunks.push(bytes.subarray(at, point));
    at = Math.max(at, point);
  }
  return Readable.from(chunks);
}

async function withDeadline(promise, name) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${name}: extraction took longer than ${TIME_LIMIT_MS} ms`)),
      TIME_LIMIT_MS,
    );
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
