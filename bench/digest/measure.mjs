// Times one computePackDigest call in this process (the library as a service embeds it) and
// prints {"ms": …}. Run by bench/digest/run.mjs, which adds the peak-RSS probe.
//   node measure.mjs <pack> [<pack-digest module>]   (default: the package's dist/)
const { computePackDigest } = await import(
  process.argv[3] ?? new URL('../../packages/pack-digest/dist/index.js', import.meta.url).href
);

const start = process.hrtime.bigint();
const result = await computePackDigest(process.argv[2]);
const ms = Number(process.hrtime.bigint() - start) / 1e6;
process.stdout.write(
  `${JSON.stringify({ ms, digest: result.digest, files: result.entries.length })}\n`,
);
