// The cost of confinement per turn: a trivial exec-engine turn (message on stdin, one JSON text
// line on stdout) started plainly (isolation off) and through createConfinement's wrapper
// (isolation required: bwrap, all namespaces, the launcher and the proxy relay), in one run, in
// interleaved rounds. Target: median overhead ≤ 150 ms per turn.
//   node bench/confinement/run.mjs [--runs N]      (builds missing dist/ folders first)
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ensureBuilt, fmtMs, repoRoot } from '../lib.mjs';

const TARGET_MS = 150;
const runsFlag = process.argv.indexOf('--runs');
const runs = runsFlag === -1 ? 15 : Number(process.argv[runsFlag + 1]);

// The sandbox's dist imports its siblings' dist.
ensureBuilt([
  'pack-manifest',
  'pack-digest',
  'pack-signature',
  'trust-root',
  'runner-host',
  'engines',
  'sandbox',
]);
const { createConfinement } = await import(join(repoRoot, 'packages/sandbox/dist/index.js'));

const root = await mkdtemp(join(tmpdir(), 'bench-confinement-'));
const dirs = {
  pack: join(root, 'pack'),
  workspace: join(root, 'workspace'),
  state: join(root, 'state'),
};
for (const dir of Object.values(dirs)) await mkdir(dir);
const confinement = await createConfinement(
  {
    packDir: dirs.pack,
    workspace: dirs.workspace,
    engineStateDir: dirs.state,
    fileAccess: 'workspace-write',
    allowOrigins: [],
  },
  { mode: 'required' },
);

const env = { PATH: '/usr/bin:/bin', HOME: dirs.state };
const turns = {
  'sh turn': {
    file: '/bin/sh',
    args: ['-c', 'read -r m; printf \'{"type":"text","delta":"%s"}\\n\' "$m"'],
    cwd: dirs.workspace,
    env,
  },
  'node turn': {
    file: process.execPath,
    args: [
      '-e',
      'let m="";process.stdin.on("data",d=>m+=d).on("end",()=>console.log(JSON.stringify({type:"text",delta:m})))',
    ],
    cwd: dirs.workspace,
    env,
  },
};

/** One turn: spawn as engines do (own process group), send the message, wait for the exit. */
function turn(command) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(command.file, command.args, {
      cwd: command.cwd,
      env: command.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 || !out.includes('"delta":"hi'))
        reject(new Error(`turn failed (${code}): ${out}${err}`));
      else resolve(performance.now() - start);
    });
    child.stdin.end('hi\n');
  });
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

try {
  console.log(`confinement overhead per turn, ${runs} interleaved rounds after one warm-up`);
  console.log(`bwrap: ${confinement.guarantees.map((g) => `${g.id}=${g.status}`).join(' ')}\n`);
  let worst = 0;
  for (const [name, plain] of Object.entries(turns)) {
    await turn(plain);
    await turn(confinement.wrap(plain));
    const off = [];
    const on = [];
    const overhead = [];
    for (let round = 0; round < runs; round++) {
      const a = await turn(plain);
      const b = await turn(confinement.wrap(plain));
      off.push(a);
      on.push(b);
      overhead.push(b - a);
    }
    const med = median(overhead);
    worst = Math.max(worst, med);
    console.log(
      `${name.padEnd(10)} off ${fmtMs(median(off))}   required ${fmtMs(median(on))}   overhead ${fmtMs(med)}  ` +
        (med <= TARGET_MS ? `ok (target ≤ ${TARGET_MS} ms)` : `MISSED (target ≤ ${TARGET_MS} ms)`),
    );
  }
  console.log(`\ncommand: node bench/confinement/run.mjs --runs ${runs}`);
  process.exitCode = worst <= TARGET_MS ? 0 : 1;
} finally {
  await confinement.close();
  await rm(root, { recursive: true, force: true });
}
