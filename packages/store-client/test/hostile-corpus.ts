import { gzipSync } from 'node:zlib';
import type { StoreErrorCode } from '../src/index.js';
import { BLOCK, EOA, makeTar, padBlock, paxBody, rawHeader, type TarInput } from './helpers.js';

export interface HostileCase {
  name: string;
  code: StoreErrorCode;
  /** The gzipped archive bytes. */
  build: (outside: string) => Promise<Buffer>;
}

const MANIFEST_FIRST: TarInput = { name: 'agent.yaml', content: 'apiVersion: agenthippo.ai/v1\n' };

/** A valid-looking start (so the staging folder has content when the bad entry arrives) + entries. */
const tgz =
  (...entries: TarInput[]) =>
  async () =>
    gzipSync(await makeTar([MANIFEST_FIRST, ...entries]));
const tgzWith = (make: (outside: string) => TarInput[]) => async (outside: string) =>
  gzipSync(await makeTar([MANIFEST_FIRST, ...make(outside)]));
/** Raw tar blocks after a valid first entry, then the end-of-archive marker, gzipped. */
const raw =
  (...blocks: Buffer[]) =>
  async () =>
    gzipSync(
      Buffer.concat([
        await makeTar([MANIFEST_FIRST]).then((t) => t.subarray(0, t.length - 2 * BLOCK)),
        ...blocks,
        EOA,
      ]),
    );
const fileBlock = (
  name: string | Buffer,
  content = 'x',
  extra: Parameters<typeof rawHeader>[0] = { name: '' },
) =>
  Buffer.concat([
    rawHeader({ ...extra, name, size: Buffer.byteLength(content) }),
    padBlock(Buffer.from(content)),
  ]);
const meta = (typeflag: string, body: Buffer, name = 'PaxHeader') =>
  Buffer.concat([rawHeader({ name, typeflag, size: body.length }), padBlock(body)]);

export const HOSTILE_CASES: HostileCase[] = [
  // traversal, absolute paths, drive letters, backslashes
  {
    name: 'dot-dot traversal',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: '../evil', content: 'x' }),
  },
  {
    name: 'nested dot-dot traversal',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'a/../../evil', content: 'x' }),
  },
  {
    name: 'dot-dot directory entry',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: '../', type: 'directory' }),
  },
  {
    name: 'absolute path',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgzWith((o) => [{ name: `${o}/pwned`, content: 'x' }]),
  },
  {
    name: 'drive letter with slash',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'C:/evil', content: 'x' }),
  },
  {
    name: 'drive-relative path',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'C:evil', content: 'x' }),
  },
  {
    name: 'backslash traversal',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'a\\..\\..\\evil', content: 'x' }),
  },
  {
    name: 'UNC-style backslash path',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: '\\\\server\\share', content: 'x' }),
  },
  {
    name: 'ustar prefix traversal',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: raw(fileBlock('evil', 'x', { name: '', prefix: '../..' })),
  },
  {
    name: 'PAX path override with dot-dot (benign ustar name)',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: raw(meta('x', paxBody({ path: '../../evil' })), fileBlock('benign.txt')),
  },
  {
    name: 'PAX path override absolute',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: async (o) => raw(meta('x', paxBody({ path: `${o}/pwned` })), fileBlock('benign.txt'))(),
  },
  {
    name: 'GNU long-name override with dot-dot',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: raw(
      meta('L', Buffer.from(`../${'a'.repeat(120)}\0`), '././@LongLink'),
      fileBlock('benign.txt', 'x', { name: '', magic: 'gnu' }),
    ),
  },
  {
    name: 'global PAX path header',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(
      meta('g', paxBody({ path: '../evil' }), 'pax_global_header'),
      fileBlock('benign.txt'),
    ),
  },
  // links of every kind
  {
    name: 'symlink to an absolute path',
    code: 'ERR_ARCHIVE_LINK',
    build: tgz({ name: 'passwd', type: 'symlink', linkname: '/etc/passwd' }),
  },
  {
    name: 'symlink escaping upwards',
    code: 'ERR_ARCHIVE_LINK',
    build: tgz({ name: 'up', type: 'symlink', linkname: '../../..' }),
  },
  {
    name: 'symlink inside the pack',
    code: 'ERR_ARCHIVE_LINK',
    build: tgz({ name: 'alias.md', type: 'symlink', linkname: 'agent.yaml' }),
  },
  {
    name: 'symlink then a file through it',
    code: 'ERR_ARCHIVE_LINK',
    build: tgzWith((o) => [
      { name: 'dir', type: 'symlink', linkname: o },
      { name: 'dir/pwned', content: 'x' },
    ]),
  },
  {
    name: 'hard link to an absolute path',
    code: 'ERR_ARCHIVE_LINK',
    build: tgz({ name: 'shadow', type: 'link', linkname: '/etc/shadow' }),
  },
  {
    name: 'hard link inside the pack',
    code: 'ERR_ARCHIVE_LINK',
    build: tgz({ name: 'copy.yaml', type: 'link', linkname: 'agent.yaml' }),
  },
  {
    name: 'hard link with dot-dot',
    code: 'ERR_ARCHIVE_LINK',
    build: tgz({ name: 'x', type: 'link', linkname: '../x' }),
  },
  {
    name: 'PAX linkpath on a regular file',
    code: 'ERR_ARCHIVE_LINK',
    build: raw(meta('x', paxBody({ linkpath: '/etc/passwd' })), fileBlock('f')),
  },
  {
    name: 'GNU long link name on a symlink',
    code: 'ERR_ARCHIVE_LINK',
    build: raw(
      meta('K', Buffer.from(`/etc/${'p'.repeat(120)}\0`), '././@LongLink'),
      fileBlock('l', '', { name: '', typeflag: '2', magic: 'gnu' }),
    ),
  },
  {
    name: 'GNU long link name on a regular file',
    code: 'ERR_ARCHIVE_LINK',
    build: raw(
      meta('K', Buffer.from('/etc/passwd\0'), '././@LongLink'),
      fileBlock('f', 'x', { name: '', magic: 'gnu' }),
    ),
  },
  {
    name: 'GNU long link header with no entry',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(meta('K', Buffer.from('/etc/passwd\0'), '././@LongLink')),
  },
  // devices, FIFOs, unknown types
  {
    name: 'character device',
    code: 'ERR_ARCHIVE_ENTRY_TYPE',
    build: tgz({ name: 'null', type: 'character-device' }),
  },
  {
    name: 'block device',
    code: 'ERR_ARCHIVE_ENTRY_TYPE',
    build: tgz({ name: 'sda', type: 'block-device' }),
  },
  { name: 'FIFO', code: 'ERR_ARCHIVE_ENTRY_TYPE', build: tgz({ name: 'pipe', type: 'fifo' }) },
  {
    name: 'contiguous file type',
    code: 'ERR_ARCHIVE_ENTRY_TYPE',
    build: raw(fileBlock('c', 'x', { name: '', typeflag: '7' })),
  },
  {
    name: 'unknown type flag',
    code: 'ERR_ARCHIVE_ENTRY_TYPE',
    build: raw(fileBlock('u', 'x', { name: '', typeflag: 'Z' })),
  },
  {
    name: 'GNU sparse type',
    code: 'ERR_ARCHIVE_ENTRY_TYPE',
    build: raw(fileBlock('s', 'x', { name: '', typeflag: 'S', magic: 'gnu' })),
  },
  {
    name: 'PAX sparse file',
    code: 'ERR_ARCHIVE_ENTRY_TYPE',
    build: raw(meta('x', paxBody({ 'GNU.sparse.major': '1' })), fileBlock('s')),
  },
  // duplicates and collisions
  {
    name: 'duplicate file',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'a.txt', content: '1' }, { name: 'a.txt', content: '2' }),
  },
  {
    name: 'duplicate of the manifest',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: './agent.yaml', content: 'evil' }),
  },
  {
    name: 'file then directory of the same name',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'a', content: '1' }, { name: 'a', type: 'directory' }),
  },
  {
    name: 'file used as a parent directory',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'a', content: '1' }, { name: 'a/b', content: '2' }),
  },
  {
    name: 'directory then file of the same name',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'd/x', content: '1' }, { name: 'd', content: '2' }),
  },
  {
    name: 'duplicate directory entry',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'd', type: 'directory' }, { name: 'd/', type: 'directory' }),
  },
  {
    name: 'case collision',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'README.md', content: '1' }, { name: 'readme.md', content: '2' }),
  },
  {
    name: 'case collision of a folder',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'Dir/x', content: '1' }, { name: 'dir/y', content: '2' }),
  },
  {
    name: 'NFC/NFD collision',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'caf\u00e9', content: '1' }, { name: 'cafe\u0301', content: '2' }),
  },
  {
    name: 'ß/ss collision',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'stra\u00dfe', content: '1' }, { name: 'strasse', content: '2' }),
  },
  {
    name: 'capital ẞ/SS collision',
    code: 'ERR_ARCHIVE_PATH_COLLISION',
    build: tgz({ name: 'STRASSE', content: '1' }, { name: 'STRA\u1e9eE', content: '2' }),
  },
  // Windows-reserved names and characters
  {
    name: 'Windows CON',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'CON', content: 'x' }),
  },
  {
    name: 'Windows nul.txt',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'skills/nul.txt', content: 'x' }),
  },
  {
    name: 'Windows com1 in a folder',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'a/com1.log', content: 'x' }),
  },
  {
    name: 'Windows LPT¹',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'LPT\u00b9', content: 'x' }),
  },
  {
    name: 'trailing dot',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'file.', content: 'x' }),
  },
  {
    name: 'trailing space',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'dir /x', content: 'x' }),
  },
  {
    name: 'NTFS alternate data stream',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'agent.md:evil', content: 'x' }),
  },
  // control characters and encodings
  {
    name: 'newline in a name',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'a\nb', content: 'x' }),
  },
  {
    name: 'escape sequence in a name',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'a\u001b[31mb', content: 'x' }),
  },
  {
    name: 'bidi override in a name',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'hooks/run\u202eyaml.sh', content: 'x' }),
  },
  {
    name: 'line separator in a name',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'a\u2028b', content: 'x' }),
  },
  {
    name: 'DEL in a name',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'a\u007fb', content: 'x' }),
  },
  {
    name: 'NUL inside a PAX path',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: raw(meta('x', paxBody({ path: 'ok\u0000../../evil' })), fileBlock('f')),
  },
  {
    name: 'invalid UTF-8 name',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: raw(fileBlock(Buffer.from([0x61, 0xff, 0xfe]))),
  },
  { name: 'empty name', code: 'ERR_ARCHIVE_PATH_UNSAFE', build: raw(fileBlock('')) },
  {
    name: 'empty path component',
    code: 'ERR_ARCHIVE_PATH_UNSAFE',
    build: tgz({ name: 'a//b', content: 'x' }),
  },
  // sizes and bounds
  {
    name: 'over-long path',
    code: 'ERR_ARCHIVE_PATH_TOO_LONG',
    build: tgz({ name: `${'abcdefgh/'.repeat(110)}${'x'.repeat(200)}`, content: 'x' }),
  },
  {
    name: 'over-long name component',
    code: 'ERR_ARCHIVE_PATH_TOO_LONG',
    build: tgz({ name: 'n'.repeat(300), content: 'x' }),
  },
  {
    name: 'deep nesting',
    code: 'ERR_ARCHIVE_TOO_DEEP',
    build: tgz({ name: `${'d/'.repeat(40)}f`, content: 'x' }),
  },
  {
    name: '20,001 entries',
    code: 'ERR_ARCHIVE_TOO_MANY_ENTRIES',
    build: async () => {
      const entries: TarInput[] = [];
      for (let i = 0; i < 20_001; i++) entries.push({ name: `f/${i}` });
      return gzipSync(await makeTar(entries), { level: 1 });
    },
  },
  {
    // 700 headers, each a file 30 folders deep that no header names: 21,700 things created.
    name: 'folders only implied by file paths, past 20,000',
    code: 'ERR_ARCHIVE_TOO_MANY_ENTRIES',
    build: async () => {
      const entries: TarInput[] = [];
      for (let i = 0; i < 700; i++) entries.push({ name: `t${i}/${'d/'.repeat(29)}f` });
      return gzipSync(await makeTar(entries), { level: 1 });
    },
  },
  {
    name: 'gzip bomb',
    code: 'ERR_ARCHIVE_RATIO',
    build: raw(
      rawHeader({ name: 'zeros', size: 64 * 1024 * 1024 }),
      Buffer.alloc(64 * 1024 * 1024),
    ),
  },
  {
    name: 'entry larger than the byte limit',
    code: 'ERR_ARCHIVE_TOO_LARGE',
    build: async () =>
      gzipSync(
        Buffer.concat([rawHeader({ name: 'big', size: 600 * 1024 * 1024 }), Buffer.alloc(BLOCK)]),
      ),
  },
  {
    name: 'huge PAX header',
    code: 'ERR_ARCHIVE_META_TOO_LARGE',
    build: raw(rawHeader({ name: 'PaxHeader', typeflag: 'x', size: 64 * 1024 * 1024 })),
  },
  {
    name: 'huge GNU long name',
    code: 'ERR_ARCHIVE_META_TOO_LARGE',
    build: raw(meta('L', Buffer.alloc(1024 * 1024, 0x61), '././@LongLink')),
  },
  {
    name: 'negative size (base-256)',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(
      rawHeader({
        name: 'neg',
        size: Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]),
      }),
    ),
  },
  {
    name: 'non-numeric size',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(rawHeader({ name: 'nan', size: Buffer.from('0000000abc\0') })),
  },
  {
    name: 'non-numeric mode',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(fileBlock('m', 'x', { name: '', mode: '07z7777' })),
  },
  {
    name: 'PAX size desync',
    code: 'ERR_ARCHIVE_PAX_SIZE_MISMATCH',
    build: raw(meta('x', paxBody({ size: '1024' })), fileBlock('f', 'short')),
  },
  {
    name: 'PAX size not a number',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(meta('x', paxBody({ size: '1e3' })), fileBlock('f')),
  },
  {
    name: 'PAX key repeated',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(
      meta('x', Buffer.concat([paxBody({ path: 'a' }), paxBody({ path: '../b' })])),
      fileBlock('f'),
    ),
  },
  {
    name: 'PAX record length lies',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(meta('x', Buffer.from('99 path=a\n')), fileBlock('f')),
  },
  {
    name: 'two PAX headers for one entry',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(
      meta('x', paxBody({ path: 'a' })),
      meta('x', paxBody({ path: 'b' })),
      fileBlock('f'),
    ),
  },
  {
    name: 'PAX header with no entry',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(meta('x', paxBody({ path: 'a' }))),
  },
  {
    name: 'regular file named like a directory',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(fileBlock('dir/', 'x')),
  },
  {
    name: 'directory with content',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(fileBlock('d/', 'xx', { name: '', typeflag: '5' })),
  },
  {
    name: 'unknown header format (no magic)',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(fileBlock('v7', 'x', { name: '', magic: 'none' })),
  },
  {
    name: 'bad header checksum',
    code: 'ERR_ARCHIVE_BAD_CHECKSUM',
    build: raw(fileBlock('f', 'x', { name: '', checksum: 1234 })),
  },
  {
    name: 'truncated inside file data',
    code: 'ERR_ARCHIVE_TRUNCATED',
    build: async () =>
      gzipSync(
        (
          await makeTar([MANIFEST_FIRST, { name: 'big', content: Buffer.alloc(10_000, 1) }])
        ).subarray(0, 3000),
      ),
  },
  {
    name: 'missing end-of-archive marker',
    code: 'ERR_ARCHIVE_TRUNCATED',
    build: async () => {
      const tar = await makeTar([MANIFEST_FIRST]);
      return gzipSync(tar.subarray(0, tar.length - 2 * BLOCK));
    },
  },
  {
    name: 'truncated gzip stream',
    code: 'ERR_ARCHIVE_TRUNCATED',
    build: async () => {
      const gz = await tgz({ name: 'x', content: 'y'.repeat(5000) })();
      return gz.subarray(0, gz.length - 20);
    },
  },
  {
    name: 'trailing data after the end-of-archive marker',
    code: 'ERR_ARCHIVE_TRAILING_DATA',
    build: async () =>
      gzipSync(
        Buffer.concat([await makeTar([MANIFEST_FIRST]), Buffer.from('#!/bin/sh\nrm -rf ~\n')]),
      ),
  },
  {
    name: 'trailing garbage after the gzip stream',
    code: 'ERR_ARCHIVE_TRAILING_DATA',
    build: async () => Buffer.concat([await tgz()(), Buffer.from('<html>garbage</html>')]),
  },
  {
    name: 'a lone zero block mid-archive',
    code: 'ERR_ARCHIVE_HEADER_INVALID',
    build: raw(Buffer.alloc(BLOCK), fileBlock('hidden')),
  },
  {
    name: 'HTML page instead of gzip',
    code: 'ERR_ARCHIVE_NOT_GZIP',
    build: async () => Buffer.from('<!DOCTYPE html><html><body>Sign in to continue</body></html>'),
  },
  { name: 'empty body', code: 'ERR_ARCHIVE_NOT_GZIP', build: async () => Buffer.alloc(0) },
  {
    name: 'uncompressed tar',
    code: 'ERR_ARCHIVE_NOT_GZIP',
    build: async () => makeTar([MANIFEST_FIRST]),
  },
  {
    name: 'corrupt deflate data',
    code: 'ERR_ARCHIVE_CORRUPT',
    build: async () => {
      const gz = Buffer.from(await tgz({ name: 'x', content: 'y'.repeat(5000) })());
      for (let i = 20; i < 60; i++) gz[i] = 0xff;
      return gz;
    },
  },
];
