import type { Command } from 'commander';
import type { CommandContext } from '../../context.js';
import { addExamples } from '../../help.js';
import { installOptions, type InstallFlags } from '../../shared/install-options.js';
import { addTrustRootOptions, type TrustFlags } from '../../shared/trust.js';
import type { KeygenFlags } from './sign.js';

/**
 * `packwarden pack …`. Each action loads its libraries when it runs, so `--help` and cheap
 * commands do not pay for yaml, zod or the hashing code.
 */
export function registerPackCommands(program: Command, context: CommandContext): void {
  const { io, state } = context;
  const pack = program
    .command('pack')
    .description('Inspect, digest, sign, verify, export and install Agent Packs')
    .addHelpText(
      'after',
      `
A <pack> is a path (./my-pack, /abs/path) or the name of an installed pack (my-pack,
my-pack@1.2.0): looked up in ./.packwarden/agents/<name>, then $PACKWARDEN_HOME/agents/<name>/
(default ~/.packwarden) following its current.txt.`,
    );

  addExamples(
    pack
      .command('list')
      .description(
        'List installed packs (workspace .packwarden/agents and $PACKWARDEN_HOME/agents)',
      )
      .option('--json', 'print a JSON document'),
    ['packwarden pack list', 'packwarden pack list --json'],
  ).action(async (options: { json?: boolean }) => {
    const { packList } = await import('./inspect.js');
    state.exitCode = await packList(io, options);
  });

  addExamples(
    pack
      .command('validate')
      .description("Check a pack's agent.yaml against the Agent Pack Specification v1")
      .argument('<pack>', 'pack path or installed pack name')
      .option('--json', 'print a JSON document')
      .addHelpText('after', '\nExit codes: 0 valid, 1 invalid or not found, 2 bad usage.'),
    ['packwarden pack validate ./my-pack', 'packwarden pack validate my-pack@1.2.0 --json'],
  ).action(async (ref: string, options: { json?: boolean }) => {
    const { packValidate } = await import('./inspect.js');
    state.exitCode = await packValidate(io, ref, options);
  });

  addExamples(
    pack
      .command('info')
      .description(
        'Show what a pack is: identity, engine, permissions, signature file, size and digest',
      )
      .argument('<pack>', 'pack path or installed pack name')
      .option('--json', 'print a JSON document'),
    ['packwarden pack info ./my-pack', 'packwarden pack info my-pack --json   # an installed pack'],
  ).action(async (ref: string, options: { json?: boolean }) => {
    const { packInfo } = await import('./inspect.js');
    state.exitCode = await packInfo(io, ref, options);
  });

  const digest = pack
    .command('digest')
    .description('Compute the Pack digest v1 of a pack: "<hex>  <name>@<version>"')
    .argument('<pack>', 'pack path or installed pack name')
    .option(
      '--files',
      'print the whole manifest the digest is the SHA-256 of (pipe it to sha256sum)',
    )
    .option('--json', 'print a JSON document (with --files: every entry)')
    .addHelpText(
      'after',
      `
The digest covers every file and symlink in the pack, dot folders included, except pack.sig at
the root. Specification: packages/pack-digest/SPEC.md.`,
    );
  addExamples(digest, [
    'packwarden pack digest ./my-pack',
    'packwarden pack digest ./my-pack --files | sha256sum   # the same hex',
    'packwarden pack digest my-pack --json',
  ]).action(async (ref: string, options: { files?: boolean; json?: boolean }) => {
    const { packDigest } = await import('./inspect.js');
    state.exitCode = await packDigest(io, ref, options);
  });

  addExamples(
    pack
      .command('schema')
      .description('Print the JSON Schema (draft 2020-12) of agent.yaml')
      .option('--json', 'the same JSON Schema (accepted for symmetry with other commands)')
      .option('-o, --output <file>', 'write it to a file instead of stdout'),
    ['packwarden pack schema', 'packwarden pack schema -o agent.schema.json'],
  ).action(async (options: { output?: string }) => {
    const { packSchema } = await import('./inspect.js');
    state.exitCode = await packSchema(io, options);
  });

  const keygen = pack
    .command('keygen')
    .description('Create an ES256 (P-256) signing key pair for pack.sig')
    .option('--kid <kid>', 'key id to sign with (default: the RFC 7638 thumbprint)')
    .option(
      '-o, --output <file>',
      'where to write the private key (PKCS#8 PEM, mode 0600)',
      'pack-signing-key.pem',
    )
    .option(
      '--public-out <file>',
      'where to write the public keys file {kid: PEM} for `pack verify --keys` (default: <output without .pem>.keys.json)',
    )
    .option('--force', 'replace existing key files')
    .option('--json', 'print a JSON document')
    .addHelpText(
      'after',
      `
Prints the public key as PEM, as a JWK and as its RFC 7638 thumbprint, and how to publish it.
Then sign with "pack sign --key release.pem --kid release-2026"; verifiers pass the public keys
file to "pack verify --keys release.keys.json".`,
    );
  addExamples(keygen, [
    'packwarden pack keygen --kid release-2026 -o release.pem   # + release.keys.json (public)',
    'packwarden pack keygen --kid ci -o keys/ci.pem --public-out public/ci.keys.json --force',
    'packwarden pack keygen --json   # pack-signing-key.pem, its kid the thumbprint',
  ]).action(async (options: KeygenFlags) => {
    const { packKeygen } = await import('./sign.js');
    state.exitCode = await packKeygen(io, options);
  });

  const sign = pack
    .command('sign')
    .description('Sign a pack: write pack.sig binding its name, version and digest to your key')
    .argument('<pack>', 'pack path or installed pack name')
    .requiredOption('--key <file>', 'private key (PKCS#8 PEM) readable only by you')
    .requiredOption('--kid <kid>', 'the key id verifiers know your public key by')
    .option(
      '--no-file-list',
      'leave the per-file list out of pack.sig (verifiers then cannot name changed files)',
    )
    .option('--json', 'print a JSON document')
    .addHelpText(
      'after',
      '\nA bare name that is both a folder here and an installed pack is refused: write ./name.',
    );
  addExamples(sign, [
    'packwarden pack sign ./my-pack --key release.pem --kid release-2026',
    'packwarden pack sign ./my-pack --key release.pem --kid release-2026 --no-file-list --json',
  ]).action(
    async (
      ref: string,
      options: { key: string; kid: string; fileList: boolean; json?: boolean },
    ) => {
      const { packSign } = await import('./sign.js');
      state.exitCode = await packSign(io, ref, options);
    },
  );

  const verify = addTrustRootOptions(
    pack
      .command('verify')
      .description("Verify packs' pack.sig against the trust root")
      .argument(
        '[packs...]',
        'pack paths or installed pack names (required unless --all or --installed)',
      )
      .option('--all <dir>', 'verify every pack folder under DIR, one line each, then a summary')
      .option(
        '--require-signed',
        'with several packs or --all: an unsigned pack fails too (also PACKWARDEN_REQUIRE_SIGNED_PACK=1)',
      )
      .option('--installed', 'with --lock FILE: report installed packs whose content drifted')
      .option(
        '--lock <file>',
        'the lockfile --installed compares with (required with --installed, refused without it)',
      )
      .option('--json', 'print a JSON document'),
  ).addHelpText(
    'after',
    `
Exit codes: 0 verified, 1 invalid (bad signature, changed content, wrong identity, malformed),
2 usage or configuration error, 3 unsigned, 4 untrusted key, 5 no trust root configured,
6 trust root unavailable (retry), 7 genuine signature over a digest whose rules are not public.
With several packs or --all: 0 when none failed, else the code of the first failure;
--all on a folder holding no pack fails (1).
--installed --lock FILE checks content against the lock, no signature: packs, --all,
--require-signed and trust-root flags beside it are refused, and PACKWARDEN_REQUIRE_SIGNED_PACK
does not apply to it. --lock without --installed is refused: nothing else reads the lock.`,
  );
  addExamples(verify, [
    'packwarden pack verify ./my-pack --jwks https://example.com/.well-known/jwks.json --pin S9FC_5c2n3eZEAD1bQ_46jn24OADyXq0kITicUEUpgs',
    'packwarden pack verify --all ./agent-packs --keys release.keys.json --require-signed --json',
    'packwarden pack verify --installed --lock packwarden.lock',
  ]).action(
    async (
      refs: string[],
      options: TrustFlags & {
        all?: string;
        requireSigned?: boolean;
        json?: boolean;
        installed?: boolean;
        lock?: string;
      },
    ) => {
      if (options.installed) {
        const { packVerifyInstalled } = await import('./verify-installed.js');
        state.exitCode = await packVerifyInstalled(io, options, refs);
        return;
      }
      const { packVerify } = await import('./verify.js');
      state.exitCode = await packVerify(io, refs, options);
    },
  );

  addExamples(
    pack
      .command('export')
      .description('Write the byte-reproducible .tar.gz of a pack (what static stores serve)')
      .argument('<pack>', 'pack path or installed pack name')
      .option('-o, --output <file>', 'the archive to write (default: <name>-<version>.tgz)')
      .option('--json', 'print a JSON document'),
    [
      'packwarden pack export ./my-pack   # my-pack-1.0.0.tgz for version 1.0.0',
      'packwarden pack export ./my-pack -o dist/my-pack.tgz --json',
    ],
  ).action(async (ref: string, options: { output?: string; json?: boolean }) => {
    const { packExport } = await import('./export.js');
    state.exitCode = await packExport(io, ref, options);
  });

  registerPackInstall(pack, context);
}

function registerPackInstall(pack: Command, { io, state }: CommandContext): void {
  addExamples(
    installOptions(
      pack
        .command('install')
        .description('Install a pack from the store, extracted flat into a folder')
        .argument(
          '<slug>',
          'the pack, as <slug> or <slug>@<version>, a local .tgz (./x.tgz) or oci://HOST/REPO[:TAG]',
        )
        .requiredOption('--to <dir>', 'the folder to extract the pack into'),
    ),
    [
      'packwarden pack install code-reviewer@1.2.0 --to ./agent --lock packwarden.lock',
      'packwarden pack install oci://ghcr.io/acme/my-pack --to ./agent   # highest semver tag',
      'packwarden pack install ./my-pack-1.0.0.tgz --to ./agent --require-signed --keys release.keys.json',
    ],
  ).action(async (slug: string, options: InstallFlags) => {
    if (options.lock !== undefined || options.frozen) {
      const { lockedInstall } = await import('../store/lock.js');
      const reference =
        /^oci:\/\/|\.(tgz|tar\.gz)$|^\.{0,2}\//i.test(slug) || slug.includes('/')
          ? slug
          : `pack/${slug}`;
      state.exitCode = await lockedInstall(io, reference, options, options.to);
      return;
    }
    if (slug.startsWith('oci://')) {
      const { ociInstall } = await import('../store/oci.js');
      if (options.to === undefined) throw new Error('unreachable: --to is required');
      state.exitCode = await ociInstall(io, slug, options, options.to);
      return;
    }
    const { packInstall } = await import('../store/install.js');
    state.exitCode = await packInstall(io, slug, options);
  });
}
