import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { EngineVerification } from '@packwarden/pack-signature';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import type { CommandContext } from '../../context.js';
import { addExamples } from '../../help.js';
import { addTrustRootOptions, loadTrustRootOrExit, type TrustFlags } from '../../shared/trust.js';

/**
 * `packwarden engine …`: sign and verify custom engine folders (`engine.sig`, pack-signature
 * README "Engine signatures"), for publishers of engines installed with
 * `store install engine/<id>`. Same flags and exit codes as `pack sign` / `pack verify`.
 */
export function registerEngineCommands(program: Command, { io, state }: CommandContext): void {
  const engine = program
    .command('engine')
    .description('Sign and verify custom engine folders (engine.sig)');

  const sign = engine
    .command('sign')
    .description(
      'Sign an engine folder: write engine.sig binding its id, version and digest to your key',
    )
    .argument('<dir>', 'engine folder (holds engine.manifest.json)')
    .requiredOption('--key <file>', 'private key (PKCS#8 PEM) readable only by you')
    .requiredOption('--kid <kid>', 'the key id verifiers know your public key by')
    .option('--json', 'print a JSON document')
    .addHelpText(
      'after',
      `
The engine's id is the "id" of engine.manifest.json, its version the "version" of package.json
(0.0.0 without one). The digest covers every file but engine.sig; a folder holding a pack.sig
is refused.`,
    );
  addExamples(sign, [
    'packwarden engine sign ./engines/echo --key release.pem --kid release-2026',
    'packwarden engine sign ./engines/echo --key release.pem --kid release-2026 --json',
  ]).action(async (dir: string, options: { key: string; kid: string; json?: boolean }) => {
    state.exitCode = await engineSign(io, dir, options);
  });

  const verify = addTrustRootOptions(
    engine
      .command('verify')
      .description("Verify an engine folder's engine.sig against the trust root")
      .argument('<dir>', 'engine folder')
      .option('--json', 'print a JSON document'),
  ).addHelpText(
    'after',
    `
Exit codes: 0 verified, 1 invalid (bad signature, changed content, wrong identity, malformed),
2 usage or configuration error, 3 unsigned, 4 untrusted key, 5 no trust root configured,
6 trust root unavailable (retry).`,
  );
  addExamples(verify, [
    'packwarden engine verify ./engines/echo --keys release.keys.json',
    'packwarden engine verify ./engines/echo --jwks https://example.com/.well-known/jwks.json --json',
  ]).action(async (dir: string, options: TrustFlags & { json?: boolean }) => {
    state.exitCode = await engineVerify(io, dir, options);
  });
}

/**
 * The private key, read by pack-signature with the rules of `pack sign` (its README "Key files":
 * a regular file, never a symlink, owner-only, at most 64 KiB); a refusal is exit 2 with the hints
 * of `pack sign` (`keyFileError`). Imported here, not at the top: registering commands must not
 * load the signer.
 */
async function readKey(path: string): Promise<string> {
  const [{ readPrivateKeyFile }, { keyFileError }] = await Promise.all([
    import('@packwarden/pack-signature'),
    import('../pack/key-file.js'),
  ]);
  return readPrivateKeyFile(path).catch(keyFileError('--key', path));
}

export async function engineSign(
  io: CliIo,
  dirArgument: string,
  flags: { key: string; kid: string; json?: boolean },
): Promise<number> {
  const privateKeyPem = await readKey(resolve(io.cwd, flags.key));
  const dir = resolve(io.cwd, dirArgument);
  const { signEngine } = await import('@packwarden/pack-signature');
  let signed;
  try {
    signed = await signEngine(dir, { privateKeyPem, kid: flags.kid });
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    // A bad key or kid is the operator's configuration, not the engine's fault.
    if (/KEY|KID/.test(code))
      throw new CliError((error as Error).message, EXIT.usage, undefined, {
        code: code === 'ERR_INVALID_KID' ? 'ERR_CLI_USAGE' : 'ERR_CLI_SIGNING_KEY',
        cause: error,
      });
    throw error;
  }
  const { payload } = signed;
  if (flags.json) {
    printJson(io, {
      file: signed.file,
      dir,
      kid: flags.kid,
      engine: { id: payload.engine, version: payload.engineVersion },
      digest: payload.digest,
      digestAlg: payload.digestAlg,
      iat: payload.iat,
    });
    return EXIT.ok;
  }
  io.stdout.write(
    `signed engine ${safe(`${payload.engine}@${payload.engineVersion}`)} with ${safe(flags.kid)}\n  folder ${safe(dir)}\n  digest ${payload.digest}\n  wrote  ${safe(signed.file)}\n`,
  );
  return EXIT.ok;
}

export async function engineVerify(
  io: CliIo,
  dirArgument: string,
  flags: TrustFlags & { json?: boolean },
): Promise<number> {
  const dir = resolve(io.cwd, dirArgument);
  const [{ verifyEngine, PACK_VERIFICATION_EXIT_CODES }, { selectTrustedKey }] = await Promise.all([
    import('@packwarden/pack-signature'),
    import('@packwarden/trust-root'),
  ]);
  const root = await loadTrustRootOrExit(io, flags);
  const result: EngineVerification = await verifyEngine(dir, {
    selectKey: (kid: string, at: Date) => selectTrustedKey(root, kid, { at }),
  });
  const exitCode = PACK_VERIFICATION_EXIT_CODES[result.kind];
  if (flags.json) {
    printJson(io, {
      dir,
      exitCode,
      result: {
        ...result,
        ...('iat' in result && result.iat instanceof Date ? { iat: result.iat.toISOString() } : {}),
      },
    });
    return exitCode;
  }
  if (result.kind === 'verified') {
    io.stdout.write(
      `verified  ${safe(`${result.engine}@${result.engineVersion}`)}  ${safe(dir)}  signed by ${safe(result.kid)}\n`,
    );
  } else {
    const reason = result.kind === 'invalid' ? ` (${result.reason})` : '';
    io.stderr.write(`${result.kind}${reason}  ${safe(dir)}  ${safe(result.message)}\n`);
  }
  return exitCode;
}
