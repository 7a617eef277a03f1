import { basename, dirname, extname, join, relative, resolve } from 'node:path';
import {
  generateKeypair,
  readPrivateKeyFile,
  signPack,
  writePrivateKeyFile,
  writePublicKeysFile,
} from '@packwarden/pack-signature';
import { CliError, EXIT } from '../../errors.js';
import { printJson, terminalSafe as safe, type CliIo } from '../../io.js';
import { resolvePackArgument } from '../../shared/pack-argument.js';
import { keyFileError } from './key-file.js';

export interface KeygenFlags {
  kid?: string;
  output: string;
  /** Where the public keys file `{kid: PEM}` goes; default `<output without .pem>.keys.json`. */
  publicOut?: string;
  force?: boolean;
  json?: boolean;
}

/** A key id the library refused is a bad flag: said in the CLI's words, exit 2. */
function kidError(kid: string, error: unknown): CliError {
  const reason = (error instanceof Error ? error.message : String(error)).replace(/^\w+: /, '');
  return new CliError(
    `--kid ${JSON.stringify(kid)} is not a usable key id: ${reason}`,
    EXIT.usage,
    'key ids are short printable names without spaces, such as release-2026 (leave --kid out to use the key thumbprint)',
    { code: 'ERR_CLI_USAGE', cause: error },
  );
}

function defaultPublicOut(output: string): string {
  const base = extname(output) === '.pem' ? basename(output, '.pem') : basename(output);
  return join(dirname(output), `${base}.keys.json`);
}

export async function packKeygen(io: CliIo, flags: KeygenFlags): Promise<number> {
  const keypair = await generateKeypair(flags.kid === undefined ? {} : { kid: flags.kid }).catch(
    (error: unknown) => {
      if ((error as { code?: string }).code === 'ERR_INVALID_KID')
        throw kidError(flags.kid ?? '', error);
      throw error;
    },
  );
  const file = resolve(io.cwd, flags.output);
  const publicFile = resolve(io.cwd, flags.publicOut ?? defaultPublicOut(flags.output));
  // The keys file every `pack verify --keys` example uses: {kid: public PEM}, not secret. Written
  // (and refused when it exists) before the private key, so a refusal leaves nothing behind.
  const force = { force: flags.force === true };
  await writePublicKeysFile(publicFile, { [keypair.kid]: keypair.publicKeyPem }, force).catch(
    keyFileError('--public-out', publicFile),
  );
  await writePrivateKeyFile(file, keypair.privateKeyPem, force).catch(keyFileError('-o', file));
  const jwks = { keys: [keypair.publicJwk] };
  const shownPublic = relative(io.cwd, publicFile) || publicFile;
  if (flags.json) {
    printJson(io, {
      kid: keypair.kid,
      privateKeyFile: file,
      publicKeysFile: publicFile,
      publicKeyPem: keypair.publicKeyPem,
      publicJwk: keypair.publicJwk,
      thumbprint: keypair.thumbprint,
    });
    return EXIT.ok;
  }
  io.stdout.write(
    [
      `Wrote the private key to ${safe(file)} (mode 0600). Keep it secret; sign with:`,
      `  packwarden pack sign <pack> --key ${safe(flags.output)} --kid ${safe(keypair.kid)}`,
      '',
      `Wrote the public keys file to ${safe(publicFile)}; verifiers use it with:`,
      `  packwarden pack verify <pack> --keys ${safe(shownPublic)}`,
      '',
      `kid:        ${safe(keypair.kid)}`,
      `thumbprint: ${keypair.thumbprint}   (RFC 7638; verifiers pin this with --pin)`,
      '',
      'Public key (PEM):',
      keypair.publicKeyPem.trimEnd(),
      '',
      'Public key (JWK):',
      JSON.stringify(keypair.publicJwk),
      '',
      'Publish it, in any of these ways:',
      `  • the keys file written above: ${safe(shownPublic)}  →  packwarden pack verify <pack> --keys ${safe(shownPublic)}`,
      `  • a JWKS at a URL you serve:  ${JSON.stringify(jwks)}`,
      `      →  packwarden pack verify <pack> --jwks https://… --pin ${keypair.thumbprint}`,
      '  • the control plane:          POST the JWK to <control plane>/api/keys; fleets set PACKWARDEN_LEASE_URL',
      '',
    ].join('\n'),
  );
  return EXIT.ok;
}

export interface SignFlags {
  key: string;
  kid: string;
  fileList: boolean;
  json?: boolean;
}

export async function packSign(io: CliIo, ref: string, flags: SignFlags): Promise<number> {
  const keyFile = resolve(io.cwd, flags.key);
  const privateKeyPem = await readPrivateKeyFile(keyFile).catch(keyFileError('--key', keyFile));
  const { dir } = await resolvePackArgument(io, ref);
  let signed;
  try {
    signed = await signPack(dir, { privateKeyPem, kid: flags.kid, fileList: flags.fileList });
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    // A bad key or kid is the operator's configuration, not the pack's fault.
    if (code === 'ERR_INVALID_KID') throw kidError(flags.kid, error);
    if (/KEY|KID/.test(code))
      throw new CliError((error as Error).message, EXIT.usage, undefined, {
        code: 'ERR_CLI_SIGNING_KEY',
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
      pack: { name: payload.pack, version: payload.packVersion },
      digest: payload.digest,
      digestAlg: payload.digestAlg,
      iat: payload.iat,
      fileList: payload.files !== undefined,
    });
    return EXIT.ok;
  }
  // The folder signed is always named: a bare name may be an installed pack, not a folder here.
  io.stdout.write(
    `signed ${safe(`${payload.pack}@${payload.packVersion}`)} with ${safe(flags.kid)}\n  folder ${safe(dir)}\n  digest ${payload.digest}\n  wrote  ${safe(signed.file)}` +
      `${payload.files === undefined ? ' (without a file list)' : ` (with the list of ${payload.files.length} files)`}\n`,
  );
  return EXIT.ok;
}
