// bench/verify: `packwarden pack verify` on a signed 200-file pack against `node -e 0` (how
// much a verification adds to starting Node at all), and warm in-process verifyPack throughput.
//   node bench/verify/run.mjs [--runs N] [--against REF,… [--overlay PKG,… [--base REF]]]
// --against REF,… also measures packwarden built from git REF (see buildAt in ../lib.mjs): the
// CLI in the same interleaved rounds, and verifyPack in alternating in-process rounds.
import { execFileSync } from 'node:child_process';
import { createPublicKey, hash, verify } from 'node:crypto';
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  buildAt,
  cliBin,
  ensureBuilt,
  envWithoutExtraCaCerts,
  fmtMs,
  repoRoot,
  timeInterleaved,
  verdict,
  watchCpuTime,
} from '../lib.mjs';

const flag = (name) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined;
const runs = Number(flag('--runs') || 15) || 15;
const againstRefs = (flag('--against') ?? '').split(',').filter(Boolean);
const overlay = (flag('--overlay') ?? '').split(',').filter(Boolean);
const overlayBase = flag('--base') ?? 'HEAD';
ensureBuilt(['pack-digest', 'pack-manifest', 'trust-root', 'pack-signature']);
const LIBS = ['pack-signature', 'trust-root'];
const variants = [
  {
    label: '',
    cliBin,
    signature: join(repoRoot, 'packages/pack-signature/dist/index.js'),
    trustRoot: join(repoRoot, 'packages/trust-root/dist/index.js'),
  },
];
const builds = [];
if (againstRefs.length > 0) {
  variants.length = 0;
  const refs = [overlay.length > 0 ? overlayBase : 'worktree', ...againstRefs];
  for (const [i, ref] of refs.entries()) {
    const built = await buildAt(ref, {
      cli: true,
      packages: LIBS,
      overlay: i === 0 ? overlay : [],
    });
    builds.push(built.dir);
    variants.push({
      label: i === 0 && overlay.length > 0 ? `${ref}+${overlay.join('+')}` : ref,
      cliBin: built.cliBin,
      signature: built.lib('pack-signature'),
      trustRoot: built.lib('trust-root'),
    });
  }
}
const work = mkdtempSync(join(tmpdir(), 'pw-bench-verify-'));
const verifyOnce = join(repoRoot, 'bench', 'verify', 'verify-once.mjs');

try {
  // The same, as a service that bundles the libraries would run it: one ES module made by esbuild
  // (tsup's, as buildAt uses) from the built packages, zod, yaml and jose included. yaml's CommonJS
  // build requires Node built-ins, hence the `require` the banner defines.
  const verifyBundled = join(work, 'verify-once.bundled.mjs');
  {
    const esbuild = createRequire(
      realpathSync(join(repoRoot, 'node_modules', 'tsup', 'package.json')),
    )('esbuild');
    esbuild.buildSync({
      stdin: {
        contents: [
          "import { verifyPack } from './packages/pack-signature/dist/index.js';",
          "import { loadPackTrustRoot, selectTrustedKey } from './packages/trust-root/dist/index.js';",
          'const [pack, keysFile] = process.argv.slice(2);',
          'const root = await loadPackTrustRoot({ keysFile, env: {} });',
          'const selectKey = (kid, at) => selectTrustedKey(root, kid, { at });',
          'const result = await verifyPack(pack, { selectKey });',
          "if (result.kind !== 'verified') { console.error(result.message); process.exitCode = 1; }",
        ].join('\n'),
        resolveDir: repoRoot,
        sourcefile: 'verify-bundled.mjs',
        loader: 'js',
      },
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: verifyBundled,
      banner: {
        js: "import { createRequire as packwardenCreateRequire } from 'node:module'; const require = packwardenCreateRequire(import.meta.url);",
      },
      logLevel: 'error',
    });
  }

  // A signed pack of 200 files (1–4 KiB), like a real pack with skills and hooks.
  const pack = join(work, 'pack');
  mkdirSync(pack);
  writeFileSync(
    join(pack, 'agent.yaml'),
    'apiVersion: agenthippo.ai/v1\nkind: Agent\nmetadata: {name: bench, version: 1.0.0}\n',
  );
  for (let i = 1; i < 200; i++) {
    const dir = join(pack, 'skills', `s${i % 20}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${i}.md`), `${'x'.repeat(1024 + ((i * 37) % 3072))}\n`);
  }
  const cli = (...args) =>
    execFileSync(process.execPath, [cliBin, ...args], { cwd: work, encoding: 'utf8' });
  const key = JSON.parse(
    cli('pack', 'keygen', '--kid', 'bench', '-o', join(work, 'key.pem'), '--json'),
  );
  writeFileSync(join(work, 'keys.json'), JSON.stringify({ bench: key.publicKeyPem }));
  cli('pack', 'sign', pack, '--key', join(work, 'key.pem'), '--kid', 'bench');

  console.log(
    `bench/verify on ${availableParallelism()} cores, Node ${process.version}, medians of ${runs} interleaved rounds after a warm-up round\n`,
  );
  const cpuTime = watchCpuTime();
  // The environment as it is, then (when it sets NODE_EXTRA_CA_CERTS) without it: each group is
  // a baseline and the variants, in the same interleaved rounds, each ratio to its own baseline.
  const environments = [
    { label: '', env: undefined },
    ...(envWithoutExtraCaCerts
      ? [{ label: ', NODE_EXTRA_CA_CERTS unset', env: envWithoutExtraCaCerts }]
      : []),
  ];
  // Per variant: the CLI, then the libraries in a whole process (import, keys, one verifyPack):
  // what a service that imports them pays at start, most of it loading zod, yaml and jose as ES
  // modules (no target; issue 14, bench/README.md "seventh pass").
  const group = 2 * variants.length + 2;
  const timed = timeInterleaved(
    environments.flatMap(({ env }, e) => [
      { name: 'node -e 0', command: process.execPath, args: ['-e', '0'], env },
      ...variants.flatMap((variant) => [
        {
          name: 'verify',
          command: process.execPath,
          args: [variant.cliBin, 'pack', 'verify', pack, '--keys', join(work, 'keys.json')],
          env,
          baseline: e * group,
        },
        {
          name: 'library',
          command: process.execPath,
          args: [
            verifyOnce,
            pack,
            join(work, 'keys.json'),
            ...(variant.label ? [variant.signature, variant.trustRoot] : []),
          ],
          env,
          baseline: e * group,
        },
      ]),
      {
        name: 'bundled',
        command: process.execPath,
        args: [verifyBundled, pack, join(work, 'keys.json')],
        env,
        baseline: e * group,
      },
    ]),
    { runs },
  );
  const tag = (variant) => (variant.label ? ` [${variant.label}]` : '');
  environments.forEach(({ label }, e) => {
    const [baseline, ...rows] = timed.slice(e * group, (e + 1) * group);
    console.log(`${e > 0 ? '\n' : ''}CLI, signed 200-file pack, keys file${label}`);
    console.log(`    ${'node -e 0'.padEnd(40)}${fmtMs(baseline.ms)}`);
    variants.forEach((variant, i) => {
      const verify = rows[2 * i];
      console.log(
        `    ${`packwarden pack verify <pack> --keys${tag(variant)}`.padEnd(40)}${fmtMs(verify.ms)}   ${verify.ratio.toFixed(2)}×  ${verdict(verify.ratio, 1.8)}`,
      );
    });
    variants.forEach((variant, i) => {
      const library = rows[2 * i + 1];
      console.log(
        `    ${`verifyPack, whole Node process${tag(variant)}`.padEnd(40)}${fmtMs(library.ms)}   ${library.ratio.toFixed(2)}×  (imports, keys, one verifyPack; no target)`,
      );
    });
    const bundled = rows[2 * variants.length];
    console.log(
      `    ${'  the same, bundled by esbuild'.padEnd(40)}${fmtMs(bundled.ms)}   ${bundled.ratio.toFixed(2)}×  (one ES module: zod, yaml, jose inside)`,
    );
  });

  // Warm, in-process: what a control plane or sandbox that imports the libraries pays per pack.
  // Variants alternate in rounds of 1 s each, so that a busy spell hits them alike; CPU time is
  // counted too, since on a loaded machine wall time mostly measures the neighbours.
  const loops = [];
  for (const variant of variants) {
    const { verifyPack } = await import(variant.signature);
    const { loadPackTrustRoot, selectTrustedKey } = await import(variant.trustRoot);
    const root = await loadPackTrustRoot({ keysFile: join(work, 'keys.json'), env: {} });
    const selectKey = (kid, at) => selectTrustedKey(root, kid, { at });
    for (let i = 0; i < 20; i++) {
      const result = await verifyPack(pack, { selectKey });
      if (result.kind !== 'verified') throw new Error(`expected verified, got ${result.kind}`);
    }
    loops.push({ variant, verifyPack, selectKey, count: 0, wallMs: 0, cpuMs: 0 });
  }
  // The floor: what any verifier of this pack must do at the least, in the same rounds: list
  // every folder, and open (O_NOFOLLOW | O_NONBLOCK), fstat, read, SHA-256 and close every file.
  // No path rules, no pack.sig, no agent.yaml, no signature: verifyPack cannot go below it.
  const folders = [];
  const files = [];
  (function list(dir) {
    folders.push(dir);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) list(path);
      else if (entry.name !== 'pack.sig') files.push(path);
    }
  })(pack);
  const buffer = Buffer.allocUnsafe(128 * 1024);
  const flags = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;
  const floor = async () => {
    for (const dir of folders) readdirSync(dir, { withFileTypes: true, encoding: 'buffer' });
    for (const file of files) {
      const fd = openSync(file, flags);
      try {
        fstatSync(fd);
        const read = readSync(fd, buffer, 0, buffer.length, null);
        hash('sha256', buffer.subarray(0, read), 'hex');
      } finally {
        closeSync(fd);
      }
    }
  };
  loops.push({
    variant: { label: '' },
    name: 'floor: list, open, fstat, read, hash',
    verifyPack: floor,
    count: 0,
    wallMs: 0,
    cpuMs: 0,
  });
  // The floor plus the two ES256 checks of the verifier's design (pack-signature/src/es256.ts:
  // Node's ECDSA, then jose's compactVerify) over this pack's token, and nothing else: no token
  // parsing, payload schema, agent.yaml or path rules. Target 5 cannot be met where this row
  // is under 500/s (bench/README.md, "seventh pass").
  const token = readFileSync(join(pack, 'pack.sig'), 'utf8').trim();
  const [protectedHeader, payload, signature] = token.split('.');
  const signingInput = Buffer.from(`${protectedHeader}.${payload}`, 'ascii');
  const signatureBytes = Buffer.from(signature, 'base64url');
  const publicKey = createPublicKey(key.publicKeyPem);
  const requireFromSignature = createRequire(
    join(repoRoot, 'packages/pack-signature/package.json'),
  );
  const { compactVerify } = await import(
    pathToFileURL(requireFromSignature.resolve('jose/jws/compact/verify')).href
  );
  const checkBoth = async () => {
    if (
      !verify('sha256', signingInput, { key: publicKey, dsaEncoding: 'ieee-p1363' }, signatureBytes)
    )
      throw new Error('the bench token does not verify');
    await compactVerify(token, publicKey, { algorithms: ['ES256'] });
  };
  await checkBoth();
  loops.push({
    variant: { label: '' },
    name: 'floor and both ES256 checks',
    verifyPack: async () => {
      const checked = checkBoth();
      await floor();
      await checked;
    },
    count: 0,
    wallMs: 0,
    cpuMs: 0,
  });
  const rounds = Math.max(3, Math.ceil(runs / 3));
  for (let round = 0; round < rounds; round++) {
    for (const loop of loops) {
      const start = process.hrtime.bigint();
      const cpu = process.cpuUsage();
      let elapsed = 0;
      while (elapsed < 1000) {
        await loop.verifyPack(pack, { selectKey: loop.selectKey });
        loop.count++;
        elapsed = Number(process.hrtime.bigint() - start) / 1e6;
      }
      const used = process.cpuUsage(cpu);
      loop.wallMs += elapsed;
      loop.cpuMs += (used.user + used.system) / 1000;
    }
  }
  console.log(`\nIn-process, warm (trust root loaded once), ${rounds} alternating rounds of 1 s`);
  for (const loop of loops) {
    const perSecond = loop.count / (loop.wallMs / 1000);
    const perCpuSecond = loop.count / (loop.cpuMs / 1000);
    console.log(
      `    ${(loop.name ?? `verifyPack${tag(loop.variant)}`).padEnd(40)}${perSecond.toFixed(0).padStart(6)} packs/s  ${perCpuSecond.toFixed(0).padStart(6)} packs/CPU-s   (${(loop.wallMs / loop.count).toFixed(2)} ms each, ${loop.count} passes${loop.name ? '' : `; ${perSecond >= 500 ? 'ok' : 'MISSED'} (target ≥ 500/s)`})`,
    );
  }
  const spent = cpuTime();
  if (spent !== undefined) console.log(`\n${spent}`);
} finally {
  rmSync(work, { recursive: true, force: true });
  for (const dir of builds) rmSync(dir, { recursive: true, force: true });
}
